"""Model.export against the declared C interface of native ONNX export
(nn_onnx_export, issue 7), before that code lands: the library is linked
with a test double (fake_onnx_export.c) that writes down what it received."""
import os
import shutil
import subprocess
import sys

import pytest

import nn_engine

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def library_with_export(tmp_path_factory):
    if nn_engine._lib.has_symbol("nn_onnx_export"):
        pytest.skip("the library has the real nn_onnx_export: test_model.py checks it")
    archive = os.path.join(os.path.dirname(nn_engine.library_path), "libnnengine.a")
    root = os.path.dirname(os.path.dirname(HERE))
    if not shutil.which("cc") or not os.path.isfile(archive):
        pytest.skip("needs cc and build/libnnengine.a next to the loaded library")
    out = str(tmp_path_factory.mktemp("lib") / "libnnengine.so")
    libs = subprocess.run(["pkg-config", "--libs", "openblas"], capture_output=True,
                          text=True).stdout.split()
    subprocess.run(["cc", "-shared", "-fPIC", "-std=c11", "-I", os.path.join(root, "include"),
                    "-I", os.path.join(root, "src"), "-o", out,
                    os.path.join(HERE, "fake_onnx_export.c"), "-Wl,--whole-archive", archive,
                    "-Wl,--no-whole-archive", *libs, "-lm", "-lpthread"], check=True)
    return out


def test_export_passes_input_output_and_named_parameters(library_with_export, tmp_path):
    code = f"""
import nn_engine as nn
from nn_engine import ConvLayer, Linear, Model, maxpool2d, flatten
class Net(Model):
    def __init__(self):
        super().__init__()
        self.c1 = ConvLayer(1, 2, 3)
        self.head = [Linear(2 * 4 * 4, 3)]
    def forward(self, x):
        return self.head[0](flatten(maxpool2d(self.c1(x, relu=True))))
Net().export({str(tmp_path / 'net.onnx')!r}, input_shape=[1, 1, 10, 10], model_name="Small")
"""
    env = dict(os.environ, NN_ENGINE_LIBRARY=library_with_export,
               PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "net.onnx").read_text().splitlines() == [
        "graph Small opset 0 static_batch 0",
        "input [1, 1, 10, 10]",
        "output [1, 3] requires_grad 1",
        "c1.weight [2, 1, 3, 3]",
        "c1.bias [2]",
        "head.0.weight [3, 32]",
        "head.0.bias [3]",
    ]
