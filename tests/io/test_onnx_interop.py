"""ONNX files written by nn-engine: valid for onnx's full checker, and
onnxruntime computes what nn-engine computes (batch 1 and 7, random inputs)."""
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from conftest import CLI, FIXTURE, TORCH_MODELS, engine_forward, fixture, random_input

TOL = 1e-5


def export(tmp_path, model, static=False):
    weights = tmp_path / "weights.safetensors"
    onnx_path = tmp_path / f"{model}.onnx"
    if model in ("lenet", "mlp", "residual"):
        fixture("save", model, 20261121, weights)
    else:
        weights = 31  # graph models draw their parameters from this seed
    fixture("export", model, weights, onnx_path, *(["static"] if static else []))
    return weights, onnx_path


def run_ort(onnx_path, x):
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {session.get_inputs()[0].name: x})
    return out


@pytest.mark.parametrize("model", ["lenet", "mlp", "residual", "ops", "reduce"])
def test_export_passes_full_check(tmp_path, model):
    _, onnx_path = export(tmp_path, model)
    m = onnx.load(str(onnx_path))
    onnx.checker.check_model(m, full_check=True)
    assert m.opset_import[0].version == 17
    dims = m.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch"  # the dynamic batch dimension


@pytest.mark.parametrize("model", ["lenet", "mlp", "residual", "ops", "reduce"])
@pytest.mark.parametrize("batch", [1, 7])
def test_onnxruntime_matches_engine(tmp_path, model, batch):
    weights, onnx_path = export(tmp_path, model)
    x = random_input(model, batch, seed=batch * 101 + len(model))
    got = run_ort(onnx_path, x)
    want = engine_forward(tmp_path, model, weights, x)
    assert got.size == want.size
    np.testing.assert_allclose(got.ravel(), want, rtol=TOL, atol=TOL)
    if model != "reduce":
        assert got.shape[0] == batch


def test_initializers_carry_pytorch_names(tmp_path):
    _, onnx_path = export(tmp_path, "lenet")
    names = [t.name for t in onnx.load(str(onnx_path)).graph.initializer]
    assert names == ["c1.weight", "c1.bias", "c2.weight", "c2.bias", "l1.weight", "l1.bias",
                     "l2.weight", "l2.bias", "l3.weight", "l3.bias"]


def test_user_module_initializers_carry_its_state_dict_names(tmp_path):
    """A module written in C with a parameter and a buffer of its own: every
    state_dict entry, the buffer included, is an initializer of that name."""
    _, onnx_path = export(tmp_path, "residual")
    names = {t.name for t in onnx.load(str(onnx_path)).graph.initializer}
    state = set(TORCH_MODELS["residual"]().state_dict())
    assert "shift" in state and state <= names


def test_static_batch_export(tmp_path):
    weights, onnx_path = export(tmp_path, "lenet", static=True)
    m = onnx.load(str(onnx_path))
    onnx.checker.check_model(m, full_check=True)
    assert [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim] == [3, 1, 28, 28]
    x = random_input("lenet", 3, seed=5)
    np.testing.assert_allclose(run_ort(onnx_path, x).ravel(), engine_forward(tmp_path, "lenet", weights, x),
                               rtol=TOL, atol=TOL)


def test_cli_export_matches_engine(tmp_path):
    """`nnengine export lenet5` on weights of the same architecture (the CLI's
    lenet5 with 10 classes has nn_lenet5's names and shapes)."""
    if not CLI.exists():
        pytest.fail(f"{CLI} is missing: run `make cli` first")
    weights, onnx_path = tmp_path / "w.safetensors", tmp_path / "cli.onnx"
    fixture("save", "lenet", 99, weights)
    done = subprocess.run([str(CLI), "export", "lenet5", "--weights", str(weights), "--onnx", str(onnx_path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    onnx.checker.check_model(onnx.load(str(onnx_path)), full_check=True)
    for batch in (1, 7):
        x = random_input("lenet", batch, seed=40 + batch)
        np.testing.assert_allclose(run_ort(onnx_path, x).ravel(), engine_forward(tmp_path, "lenet", weights, x),
                                   rtol=TOL, atol=TOL)


@pytest.mark.skipif(os.environ.get("NN_ENGINE_TEST_VULKAN") == "0", reason="NN_ENGINE_TEST_VULKAN=0: no Vulkan device")
def test_fused_layers_export_as_their_nodes(tmp_path):
    """On Vulkan (lavapipe in CI), LeNet-5's Conv2d -> ReLU -> MaxPool2d run
    as one fused operation, and so do its last Linear -> ReLU -> Linear; the
    export must be the same Conv, Relu, MaxPool and Gemm, Relu, Gemm nodes as
    the CPU's unfused layers, and onnxruntime must compute what the engine
    computes on Vulkan."""
    weights = tmp_path / "weights.safetensors"
    fixture("save", "lenet", 20261122, weights)
    graphs = {}
    for device in ("cpu", "vulkan"):
        path = tmp_path / f"lenet-{device}.onnx"
        fixture("export", "lenet", weights, path, device=device)
        m = onnx.load(str(path))
        onnx.checker.check_model(m, full_check=True)
        graphs[device] = m.graph
    ops = [n.op_type for n in graphs["vulkan"].node]
    assert ops == [n.op_type for n in graphs["cpu"].node]
    assert ops[:6] == ["Conv", "Relu", "MaxPool"] * 2
    assert ops[-3:] == ["Gemm", "Relu", "Gemm"]
    for fused, plain in zip(graphs["vulkan"].node, graphs["cpu"].node):
        assert fused.attribute == plain.attribute
    x = random_input("lenet", 5, seed=77)
    got = run_ort(tmp_path / "lenet-vulkan.onnx", x)
    want = engine_forward(tmp_path, "lenet", weights, x, device="vulkan")
    np.testing.assert_allclose(got.ravel(), want, rtol=1e-4, atol=1e-4)
    # The Vulkan forward ran the fused kernels (the profile names them).
    inp = tmp_path / "in.bin"
    done = subprocess.run([str(FIXTURE), "forward", "lenet", str(weights), str(inp), "5", str(tmp_path / "o.bin")],
                          capture_output=True, text=True,
                          env=dict(os.environ, NN_IO_FIXTURE_DEVICE="vulkan", NN_ENGINE_VULKAN_PROFILE="1"))
    assert done.returncode == 0 and "conv+pool forward" in done.stderr, done.stderr
    assert "linear head forward" in done.stderr, done.stderr


def test_elementwise_functions_export_as_their_operators(tmp_path):
    """The rows of shaders/unary_ops.h used by the ops graph (sigmoid, tanh)
    export as their ONNX operators (onnxruntime's agreement is checked above)."""
    _, onnx_path = export(tmp_path, "ops")
    types = [n.op_type for n in onnx.load(str(onnx_path)).graph.node]
    assert "Sigmoid" in types and "Tanh" in types
