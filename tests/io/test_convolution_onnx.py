"""Convolution extensions exported to ONNX (opset 17): Conv with group and
dilations (grouped, depthwise with multiplier 2), ConvTranspose with
output_padding and group, Resize for nearest (asymmetric + floor, as
PyTorch's nearest) and bilinear (pytorch_half_pixel or align_corners), by
scales or by sizes taken from the input's own N and C; each passes onnx's
full checker and onnxruntime computes what nn-engine computes, at batch 1
and 3 (the batch stays free). The fixture's convx-* graphs are in
tests/io/nn_io_fixture.c (kConvx)."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest

from conftest import engine_forward, fixture

EXPORTED = {
    # fixture graph: (ONNX operator, attributes it must carry)
    "convx-grouped": ("Conv", {"group": 2, "dilations": [2, 1], "strides": [2, 1], "pads": [1, 0, 1, 0],
                               "kernel_shape": [3, 2]}),
    "convx-depthwise": ("Conv", {"group": 6, "dilations": [1, 1], "strides": [2, 2]}),
    "convx-transpose": ("ConvTranspose", {"group": 2, "output_padding": [1, 0], "strides": [2, 2],
                                          "pads": [1, 1, 1, 1]}),
    "convx-nearest": ("Resize", {"mode": b"nearest", "coordinate_transformation_mode": b"asymmetric",
                                 "nearest_mode": b"floor"}),
    "convx-nearest-size": ("Resize", {"mode": b"nearest", "nearest_mode": b"floor"}),
    "convx-bilinear": ("Resize", {"mode": b"linear", "coordinate_transformation_mode": b"pytorch_half_pixel"}),
    "convx-bilinear-corners": ("Resize", {"mode": b"linear", "coordinate_transformation_mode": b"align_corners"}),
    "convx-bilinear-scale": ("Resize", {"mode": b"linear", "coordinate_transformation_mode": b"pytorch_half_pixel"}),
}


def export(tmp_path, model):
    path = tmp_path / f"{model}.onnx"
    fixture("export", model, 5, path)
    return path


@pytest.mark.parametrize("model", sorted(EXPORTED))
def test_convolution_exports_as_its_onnx_operator(tmp_path, model):
    m = onnx.load(str(export(tmp_path, model)))
    onnx.checker.check_model(m, full_check=True)
    assert m.opset_import[0].version == 17
    op_type, attributes = EXPORTED[model]
    (node,) = [n for n in m.graph.node if n.op_type == op_type]
    got = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    for name, value in attributes.items():
        assert got.get(name) == value, (name, got)


@pytest.mark.parametrize("model", sorted(EXPORTED))
@pytest.mark.parametrize("batch", [1, 3])
def test_onnxruntime_matches_engine(tmp_path, model, batch):
    path = export(tmp_path, model)
    x = np.random.default_rng(batch * 11 + len(model)).standard_normal((batch, 6, 11, 10)).astype(np.float32)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    want = engine_forward(tmp_path, model, 5, x)
    assert got.size == want.size
    np.testing.assert_allclose(got.ravel(), want, rtol=1e-5, atol=1e-5)
