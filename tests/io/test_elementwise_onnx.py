"""The elementwise functions of one tensor (the rows of shaders/unary_ops.h)
exported to ONNX (opset 17): each fixture model fn-NAME is one function on
an input [N, 2, 7, 9]; the file passes onnx's full checker, is written with
the operators named here, and onnxruntime computes what nn-engine computes
on values spread wide, with the kinks, clamp bounds and softplus thresholds
among them (NaN where both agree the function is undefined)."""
import os
import subprocess

import numpy as np
import onnx
import pytest

from test_onnx_interop import export, run_ort
from conftest import FIXTURE, engine_forward

# fixture model -> the ONNX operators its export must contain
OPERATORS = {
    "sigmoid": {"Sigmoid"}, "tanh": {"Tanh"}, "neg": {"Neg"}, "exp": {"Exp"}, "log": {"Log"},
    "sqrt": {"Sqrt"}, "abs": {"Abs"}, "gelu": {"Erf", "Mul", "Add"}, "gelu_tanh": {"Sigmoid", "Mul", "Add"},
    "silu": {"Sigmoid", "Mul"}, "relu6": {"Clip"}, "hardswish": {"HardSwish"},
    "hardsigmoid": {"HardSigmoid"}, "softsign": {"Softsign"}, "leaky_relu": {"LeakyRelu"}, "elu": {"Elu"},
    "softplus": {"Softplus"}, "softplus_beta": {"Softplus", "Where", "Greater"},
    "softplus_threshold": {"Softplus", "Where", "Greater"}, "clamp": {"Clip"}, "clamp_max": {"Clip"},
    "clamp_min": {"Clip"}, "pow2": {"Pow"}, "pow3": {"Pow"}, "pow_half": {"Pow"}, "add_scalar": {"Add"},
    "mul_scalar": {"Mul"}, "rsub_scalar": {"Sub"}, "rdiv_scalar": {"Div"},
}

EDGES = [0.0, 3.0, -3.0, 6.0, -0.5, 1.25, 0.75, -1.0, 1.5, 2.0, 20.0, 25.0, -25.0, 1e-4, -1e-4, 80.0]


def wide_input(batch, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((batch, 2, 7, 9)) * 4).astype(np.float32)
    flat = x.reshape(-1)
    flat[: len(EDGES)] = EDGES
    return x


@pytest.mark.parametrize("model", sorted(OPERATORS))
def test_elementwise_function_exports_and_runs(tmp_path, model):
    weights, onnx_path = export(tmp_path, f"fn-{model}")
    m = onnx.load(str(onnx_path))
    onnx.checker.check_model(m, full_check=True)
    assert m.opset_import[0].version == 17
    types = {n.op_type for n in m.graph.node}
    assert OPERATORS[model] <= types, types
    if model == "softplus":
        assert types == {"Softplus"}  # beta 1 and threshold 20: a lone Softplus is exact
    for batch in (1, 3):
        x = wide_input(batch, seed=batch * 7 + len(model))
        got = run_ort(onnx_path, x)
        want = engine_forward(tmp_path, f"fn-{model}", weights, x)
        assert got.shape == x.shape
        np.testing.assert_allclose(got.ravel(), want, rtol=1e-5, atol=1e-6)


def test_hardswish_before_opset_14_is_x_times_hardsigmoid(tmp_path):
    """HardSwish came with opset 14; an opset-13 export writes x * HardSigmoid(x)."""
    onnx_path = tmp_path / "hardswish13.onnx"
    done = subprocess.run([str(FIXTURE), "export", "fn-hardswish", "31", str(onnx_path)], capture_output=True,
                          text=True, env=dict(os.environ, NN_IO_FIXTURE_OPSET="13"))
    assert done.returncode == 0, done.stderr
    m = onnx.load(str(onnx_path))
    onnx.checker.check_model(m, full_check=True)
    assert m.opset_import[0].version == 13
    assert [n.op_type for n in m.graph.node] == ["HardSigmoid", "Mul"]
    x = wide_input(3, seed=13)
    np.testing.assert_allclose(run_ort(onnx_path, x).ravel(), engine_forward(tmp_path, "fn-hardswish", 31, x),
                               rtol=1e-5, atol=1e-6)
