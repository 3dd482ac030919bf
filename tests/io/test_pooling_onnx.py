"""The pooling operations exported to ONNX (opset 17): MaxPool with
dilations and ceil_mode, AveragePool with count_include_pad and ceil_mode
(windows running past the padded edge included), GlobalAveragePool and
GlobalMaxPool for 1x1 adaptive pooling, a plain pool for adaptive sizes that
divide the input; each passes onnx's full checker and onnxruntime computes
what nn-engine computes. Adaptive sizes that do not divide the input and
divisor_override are refused by name. The fixture's pool-* graphs are in
tests/io/nn_io_fixture.c (kPools)."""
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from conftest import FIXTURE, engine_forward, fixture

EXPORTED = {
    # fixture graph: (ONNX operator, attributes it must carry)
    "pool-max": ("MaxPool", {"dilations": [2, 1], "strides": [2, 3], "pads": [1, 1, 1, 1]}),
    "pool-max-ceil": ("MaxPool", {"dilations": [1, 2], "ceil_mode": 1}),
    "pool-avg": ("AveragePool", {"count_include_pad": 1}),
    "pool-avg-exclude": ("AveragePool", {"count_include_pad": 0}),
    "pool-avg-ceil": ("AveragePool", {"count_include_pad": 1, "ceil_mode": 1}),
    "pool-avg-ceil-exclude": ("AveragePool", {"count_include_pad": 0, "ceil_mode": 1}),
    "pool-global-avg": ("GlobalAveragePool", {}),
    "pool-global-max": ("GlobalMaxPool", {}),
    "pool-adaptive-avg": ("AveragePool", {"kernel_shape": [11, 2], "strides": [11, 2]}),
    "pool-adaptive-max": ("MaxPool", {"kernel_shape": [1, 5], "strides": [1, 5]}),
}


def export(tmp_path, model):
    path = tmp_path / f"{model}.onnx"
    fixture("export", model, 0, path)
    return path


@pytest.mark.parametrize("model", sorted(EXPORTED))
def test_pooling_exports_as_its_onnx_operator(tmp_path, model):
    m = onnx.load(str(export(tmp_path, model)))
    onnx.checker.check_model(m, full_check=True)
    assert m.opset_import[0].version == 17
    (node,) = m.graph.node
    op_type, attributes = EXPORTED[model]
    assert node.op_type == op_type
    got = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    for name, value in attributes.items():
        assert got.get(name) == value, (name, got)
    if "ceil_mode" not in attributes:
        assert got.get("ceil_mode", 0) == 0


@pytest.mark.parametrize("model", sorted(EXPORTED))
@pytest.mark.parametrize("batch", [1, 3])
def test_onnxruntime_matches_engine(tmp_path, model, batch):
    path = export(tmp_path, model)
    x = np.random.default_rng(batch * 7 + len(model)).standard_normal((batch, 3, 11, 10)).astype(np.float32)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    want = engine_forward(tmp_path, model, 0, x)
    assert got.size == want.size
    np.testing.assert_allclose(got.ravel(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("model,message", [
    ("pool-adaptive-uneven", "nn_adaptive_avgpool2d to 3x4 from 11x10 has no ONNX form"),
    ("pool-divisor", "nn_avgpool2d with divisor_override 3 has no ONNX form"),
])
def test_pooling_without_onnx_form_is_refused_by_name(tmp_path, model, message):
    done = subprocess.run([str(FIXTURE), "export", model, "0", str(tmp_path / "x.onnx")], capture_output=True,
                          text=True)
    assert done.returncode != 0
    assert message in done.stderr
    assert not (tmp_path / "x.onnx").exists()
