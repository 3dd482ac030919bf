"""Checkpoints between nn-engine and PyTorch: nn-engine's file loads into the
PyTorch model (load_state_dict, strict) and gives nn-engine's logits; a file
saved by PyTorch loads into nn-engine and gives PyTorch's logits."""
import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from conftest import TORCH_MODELS, engine_forward, fixture, random_input

TOL = 1e-5


@pytest.mark.parametrize("model", ["lenet", "mlp", "residual"])
def test_engine_checkpoint_loads_into_torch(tmp_path, model):
    weights = tmp_path / "engine.safetensors"
    fixture("save", model, 7, weights)
    net = TORCH_MODELS[model]()
    net.load_state_dict(load_file(str(weights)), strict=True)
    for batch in (1, 7):
        x = random_input(model, batch, seed=batch)
        with torch.no_grad():
            want = net(torch.from_numpy(x)).numpy().ravel()
        np.testing.assert_allclose(engine_forward(tmp_path, model, weights, x), want, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("model", ["lenet", "mlp", "residual"])
def test_torch_checkpoint_loads_into_engine(tmp_path, model):
    torch.manual_seed(3)
    net = TORCH_MODELS[model]()
    weights = tmp_path / "torch.safetensors"
    save_file(net.state_dict(), str(weights))
    x = random_input(model, 7, seed=11)
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy().ravel()
    np.testing.assert_allclose(engine_forward(tmp_path, model, weights, x), want, rtol=TOL, atol=TOL)


def test_torch_checkpoint_with_wrong_shapes_is_refused(tmp_path):
    net = TORCH_MODELS["mlp"]()
    state = net.state_dict()
    state["fc2.bias"] = torch.zeros(11)
    weights = tmp_path / "bad.safetensors"
    save_file(state, str(weights))
    x = random_input("mlp", 1, seed=0)
    x.astype("<f4").tofile(tmp_path / "in.bin")
    import subprocess
    from conftest import FIXTURE
    done = subprocess.run([str(FIXTURE), "forward", "mlp", str(weights), str(tmp_path / "in.bin"), "1",
                           str(tmp_path / "out.bin")], capture_output=True, text=True)
    assert done.returncode != 0
    assert "'fc2.bias' has shape [11] in the file, expected [10]" in done.stderr
    assert str(weights) in done.stderr


def test_training_state_is_a_safetensors_file(tmp_path):
    state = tmp_path / "state.safetensors"
    fixture("state", "mlp", 5, state)
    with safe_open(str(state), framework="pt") as f:
        meta = f.metadata()
        keys = set(f.keys())
    assert meta["format"] == "nn-engine-train-state"
    assert (meta["epoch"], meta["step"], meta["seed"], meta["optimizer"]) == ("1", "1", "5", "sgd")
    params = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    assert keys == params | {f"optimizer.{p}.momentum_buffer" for p in params}
    tensors = load_file(str(state))
    net = TORCH_MODELS["mlp"]()
    net.load_state_dict({k: tensors[k] for k in params}, strict=True)
    # After one step from zero momentum, each buffer is that step's gradient: not all zero.
    assert all(tensors[f"optimizer.{p}.momentum_buffer"].abs().sum() > 0 for p in params)


def test_training_state_of_a_user_module_holds_its_buffer(tmp_path):
    state = tmp_path / "state.safetensors"
    fixture("state", "residual", 5, state)
    tensors = load_file(str(state))
    net = TORCH_MODELS["residual"]()
    model_keys = set(net.state_dict())
    params = {name for name, _ in net.named_parameters()}
    assert "shift" in model_keys and "shift" not in params
    assert set(tensors) == model_keys | {f"optimizer.{p}.momentum_buffer" for p in params}
    net.load_state_dict({k: tensors[k] for k in model_keys}, strict=True)
