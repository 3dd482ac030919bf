"""Model.export against the declared C interface of native ONNX export
(nn_onnx_export, issue 7), before that code lands: a test double
(fake_onnx_export.c), built into a small library over libnnengine.so, writes
down what it received."""
import os
import shutil
import subprocess
import sys

import pytest

import nn_engine

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def library_with_export(tmp_path_factory):
    """A small library holding only the test double and depending on the
    loaded libnnengine.so: ctypes finds every other symbol through it."""
    if nn_engine._lib.has_symbol("nn_onnx_export"):
        pytest.skip("the library has the real nn_onnx_export: test_model.py checks it")
    if not shutil.which("cc"):
        pytest.skip("needs a C compiler")
    folder = os.path.dirname(nn_engine.library_path)
    root = os.path.dirname(os.path.dirname(HERE))
    out = str(tmp_path_factory.mktemp("lib") / "libnnengine_with_export.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-std=c11", "-I", os.path.join(root, "include"),
                    "-I", os.path.join(root, "src"), "-o", out,
                    os.path.join(HERE, "fake_onnx_export.c"), "-L", folder,
                    f"-l:{os.path.basename(nn_engine.library_path)}", f"-Wl,-rpath,{folder}"],
                   check=True)
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
        return self.head[0](flatten(maxpool2d(self.c1(x, relu=True)), 1))
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
