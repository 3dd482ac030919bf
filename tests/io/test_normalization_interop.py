"""The normalisation layers across files: the fixture's norm model
(BatchNorm2d, GroupNorm, LayerNorm) saved by nn-engine loads into PyTorch
(strict, its int32 [1] num_batches_tracked into torch's int64 scalar) and
gives nn-engine's eval-mode output; PyTorch's checkpoint after training
steps loads into nn-engine; the ONNX export (BatchNormalization,
InstanceNormalization for GroupNorm, LayerNormalization) passes onnx's full
checker and onnxruntime computes nn-engine's output."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from safetensors.torch import load_file, save_file

from conftest import TORCH_MODELS, engine_forward, fixture, random_input

TOL = 1e-4


def test_engine_checkpoint_loads_into_torch(tmp_path):
    weights = tmp_path / "engine.safetensors"
    fixture("save", "norm", 7, weights)
    state = load_file(str(weights))
    assert state["bn.num_batches_tracked"].tolist() == [2]
    assert not torch.allclose(state["bn.running_var"], torch.ones(6))
    net = TORCH_MODELS["norm"]()
    net.load_state_dict(state, strict=True)
    assert int(net.bn.num_batches_tracked) == 2
    net.eval()
    for batch in (1, 7):
        x = random_input("norm", batch, seed=batch)
        with torch.no_grad():
            want = net(torch.from_numpy(x)).numpy().ravel()
        np.testing.assert_allclose(engine_forward(tmp_path, "norm", weights, x), want, rtol=TOL, atol=TOL)


def test_torch_checkpoint_loads_into_engine(tmp_path):
    torch.manual_seed(3)
    net = TORCH_MODELS["norm"]()
    for _ in range(3):  # running statistics and num_batches_tracked (int64) off their initial values
        net(torch.randn(4, 1, 28, 28) * 2 + 1)
    net.eval()
    weights = tmp_path / "torch.safetensors"
    save_file(net.state_dict(), str(weights))
    x = random_input("norm", 7, seed=11)
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy().ravel()
    np.testing.assert_allclose(engine_forward(tmp_path, "norm", weights, x), want, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("batch", [1, 7])
def test_onnx_export_matches_onnxruntime(tmp_path, batch):
    weights, onnx_path = tmp_path / "weights.safetensors", tmp_path / "norm.onnx"
    fixture("save", "norm", 20261121, weights)
    fixture("export", "norm", weights, onnx_path)
    model = onnx.load(str(onnx_path))
    onnx.checker.check_model(model, full_check=True)
    ops = {node.op_type for node in model.graph.node}
    assert {"BatchNormalization", "InstanceNormalization", "LayerNormalization"} <= ops
    x = random_input("norm", batch, seed=batch + 40)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    assert got.shape == (batch, 10)
    np.testing.assert_allclose(got.ravel(), engine_forward(tmp_path, "norm", weights, x), rtol=TOL, atol=TOL)
