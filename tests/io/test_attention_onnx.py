"""Batched matmul, Linear of rank 4, Embedding and scaled dot-product
attention exported to ONNX (opset 17): the fixture's graph model
`attention` (x [N, 2, 7, 9] @ w1 + embedding of constant positions ->
linear -> causal self-attention -> @ a vector) passes onnx's full checker,
is written with MatMul, Gather, Transpose, Softmax, and onnxruntime computes
what nn-engine computes for batch 1 and 3, with the batch dynamic."""
import numpy as np
import onnx

from test_onnx_interop import export, run_ort
from conftest import engine_forward


def test_attention_graph_exports_and_runs(tmp_path):
    weights, onnx_path = export(tmp_path, "attention")
    m = onnx.load(str(onnx_path))
    onnx.checker.check_model(m, full_check=True)
    assert m.opset_import[0].version == 17
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    types = [n.op_type for n in m.graph.node]
    assert {"MatMul", "Gather", "Transpose", "Softmax", "Add", "Mul"} <= set(types), types
    assert "Gemm" not in types  # Linear of rank 4 is MatMul + Add
    assert types.count("MatMul") == 5  # x @ w1, the linear, q k^T, p v, @ readout
    for batch in (1, 3):
        rng = np.random.default_rng(batch)
        x = rng.standard_normal((batch, 2, 7, 9)).astype(np.float32)
        got = run_ort(onnx_path, x)
        want = engine_forward(tmp_path, "attention", weights, x)
        assert got.shape == (batch, 2, 7)
        np.testing.assert_allclose(got.ravel(), want, rtol=1e-4, atol=1e-5)


def test_attention_graph_static_batch(tmp_path):
    weights, onnx_path = export(tmp_path, "attention", static=True)
    x = np.random.default_rng(5).standard_normal((3, 2, 7, 9)).astype(np.float32)
    np.testing.assert_allclose(run_ort(onnx_path, x).ravel(), engine_forward(tmp_path, "attention", weights, x),
                               rtol=1e-4, atol=1e-5)
