"""Broadcasting arithmetic, reductions over dimensions, argmax/argmin and
rearrangements exported to ONNX (opset 17): each fixture graph tensor-* (see
nn_io_fixture.c) passes onnx's full checker, uses the operators named here,
keeps the batch dynamic, and onnxruntime computes what nn-engine computes at
batch 1 and 3 (int32 positions for argmax and argmin)."""
import numpy as np
import onnx
import pytest

from conftest import engine_forward
from test_onnx_interop import export, run_ort

OPERATORS = {
    "tensor-broadcast": {"Add", "Sub", "Mul", "Div", "Max", "Min"},
    "tensor-reduce": {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "Sub", "Mul", "Add"},
    "tensor-rearrange": {"Transpose", "Slice", "Gather", "Concat", "Expand", "Reshape"},
    "tensor-argmax": {"ArgMax", "Cast"},
    "tensor-argmin-all": {"ArgMin", "Cast", "Reshape"},
}


@pytest.mark.parametrize("model", sorted(OPERATORS))
def test_tensor_graph_exports_and_runs(tmp_path, model):
    weights, onnx_path = export(tmp_path, model)
    m = onnx.load(str(onnx_path))
    onnx.checker.check_model(m, full_check=True)
    assert m.opset_import[0].version == 17
    types = {n.op_type for n in m.graph.node}
    assert OPERATORS[model] <= types, types
    for batch in (1, 3):
        x = np.random.default_rng(batch + len(model)).standard_normal((batch, 2, 7, 9)).astype(np.float32)
        got = run_ort(onnx_path, x)
        want = engine_forward(tmp_path, model, weights, x)
        if model.startswith("tensor-arg"):
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got.ravel(), want.view(np.int32))
        else:
            np.testing.assert_allclose(got.ravel(), want, rtol=1e-5, atol=1e-5)
        if model == "tensor-argmax":
            assert got.shape == (batch, 2, 7)
        if model == "tensor-rearrange":
            assert got.shape == (batch, 3, 8, 2, 7)
