"""nn_engine.save / nn_engine.load (torch.save and torch.load for training
scripts' checkpoints) and optimizers' param_groups and state_dict (issue
36): a nested checkpoint round-trips; training resumed from a saved model
and optimizer continues exactly as the uninterrupted run; group options
changed between steps reach the update, as torch's do."""
import numpy as np
import pytest
import torch

import nn_engine as ne
from nn_engine import nn


def test_nested_checkpoints_round_trip(tmp_path):
    t = ne.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    labels = ne.tensor(np.array([3, -1, 7]))
    checkpoint = {"model": {"w": t, "labels": labels}, "epoch": 7, "best": 0.9125, "name": "run 1", "none": None,
                  "flags": [True, False], "pair": (1, 2.5), 3: "int key", "array": np.arange(4, dtype=np.int64),
                  "scalar": np.array(1.5, np.float32), "inf": float("inf")}
    path = tmp_path / "checkpoint.pt"
    ne.save(checkpoint, path)
    back = ne.load(path)
    assert set(back) == set(checkpoint)
    np.testing.assert_array_equal(back["model"]["w"].numpy(), t.numpy())
    assert back["model"]["labels"].dtype == np.int32 and back["model"]["labels"].tolist() == [3, -1, 7]
    for key in ("epoch", "best", "name", "none", "flags", "pair", 3, "inf"):
        assert back[key] == checkpoint[key] and type(back[key]) is type(checkpoint[key]), key
    assert back["array"].dtype == np.int64 and back["array"].tolist() == [0, 1, 2, 3]
    assert back["scalar"].shape == () and back["scalar"] == 1.5
    assert ne.load(path, map_location="cpu")["model"]["w"].device == "cpu"

    with pytest.raises(TypeError, match="save its state_dict"):
        ne.save({"model": nn.Linear(2, 2)}, tmp_path / "bad.pt")
    with pytest.raises(TypeError, match="float64 array cannot be saved exactly"):
        ne.save(np.zeros(3), tmp_path / "bad.pt")
    with pytest.raises(TypeError, match="f must be a path"):
        ne.save({}, open(tmp_path / "file.pt", "wb"))
    assert not (tmp_path / "bad.pt").exists()
    nn.Linear(2, 2).save(tmp_path / "weights.safetensors")
    with pytest.raises(ValueError, match="no nn_engine structure"):
        ne.load(tmp_path / "weights.safetensors")
    with pytest.raises(OSError):
        ne.load(tmp_path / "missing.pt")


def model_and_data():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    y = rng.integers(0, 3, 6)
    return x, y


def make(kind, model):
    decay = [p for n, p in model.named_parameters() if n.endswith("weight")]
    rest = [p for n, p in model.named_parameters() if not n.endswith("weight")]
    if kind == "SGD":
        return ne.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    if kind == "AdamW":
        return ne.optim.AdamW([{"params": decay, "weight_decay": 0.1, "betas": (0.8, 0.95)},
                               {"params": rest, "weight_decay": 0.0, "eps": 1e-6}], lr=0.01)
    return ne.optim.RMSprop([{"params": decay}, {"params": rest, "lr": 0.003}], lr=0.01, momentum=0.5)


def steps(model, opt, count, x, y):
    for _ in range(count):
        opt.zero_grad()
        loss = ne.nn.functional.cross_entropy(model(ne.tensor(x)), ne.tensor(y))
        loss.backward()
        opt.step()


@pytest.mark.parametrize("kind", ["SGD", "AdamW", "RMSprop"])
def test_resuming_from_saved_states_continues_exactly(kind, tmp_path):
    x, y = model_and_data()
    ne.manual_seed(2)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
    initial = {k: v.numpy() for k, v in model.state_dict().items()}
    opt = make(kind, model)
    steps(model, opt, 3, x, y)
    ne.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 3}, tmp_path / "ck.pt")
    steps(model, opt, 3, x, y)
    want = {k: v.numpy() for k, v in model.state_dict().items()}

    checkpoint = ne.load(tmp_path / "ck.pt")
    fresh = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
    fresh.load_state_dict(checkpoint["model"])
    fresh_opt = make(kind, fresh)
    fresh_opt.load_state_dict(checkpoint["optimizer"])
    steps(fresh, fresh_opt, 3, x, y)
    for name, value in fresh.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), want[name], err_msg=name)
    # without the optimizer's state the run differs: the state carried something
    other = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
    other.load_state_dict(checkpoint["model"])
    steps(other, make(kind, other), 3, x, y)
    assert not np.array_equal(other[0].weight.numpy(), want["0.weight"])
    assert not np.array_equal(initial["0.weight"], want["0.weight"])

    state = opt.state_dict()
    assert set(state) == {"state", "param_groups"} and sorted(state["state"]) == list(range(4))
    assert sum(len(g["params"]) for g in state["param_groups"]) == 4
    with pytest.raises(ValueError, match="groups hold"):
        ne.optim.SGD(fresh.parameters(), lr=0.1, momentum=0.9).load_state_dict(
            {"state": {}, "param_groups": [{"params": [0]}]})


def in_lock_step(seed, shape, make, groups, change_at, change):
    """A Linear layer of ours and torch's, the same weights, trained 6 steps
    by make(groups(layer), module) (nn_engine.optim or torch.optim);
    change(optimizer) edits the param_groups before step change_at. The
    weights must follow torch's after every step. Returns our layer and
    optimizer."""
    rng = np.random.default_rng(seed)
    out, inp = shape
    w0, b0 = rng.standard_normal((out, inp)).astype(np.float32), rng.standard_normal(out).astype(np.float32)
    x = rng.standard_normal((7, inp)).astype(np.float32)
    ours, theirs = nn.Linear(inp, out), torch.nn.Linear(inp, out)
    ours.weight.upload(w0), ours.bias.upload(b0)
    theirs.weight.data, theirs.bias.data = torch.from_numpy(w0.copy()), torch.from_numpy(b0.copy())
    opt_ours, opt_theirs = make(groups(ours), ne.optim), make(groups(theirs), torch.optim)
    for step in range(6):
        if step == change_at:
            change(opt_ours), change(opt_theirs)
        loss_ours = ne.sum(ne.mul(ours(ne.tensor(x)), ours(ne.tensor(x))))
        loss_theirs = (theirs(torch.from_numpy(x)) ** 2).sum()
        opt_ours.zero_grad(), opt_theirs.zero_grad()
        loss_ours.backward(), loss_theirs.backward()
        opt_ours.step(), opt_theirs.step()
        # float32 sums in another order on a GPU: 1e-4; a changed option moves the weights by 1e-2
        np.testing.assert_allclose(ours.weight.numpy(), theirs.weight.detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(ours.bias.numpy(), theirs.bias.detach().numpy(), rtol=1e-4, atol=1e-5)
    return ours, opt_ours


def test_param_group_options_reach_the_update_as_torchs():
    """AdamW groups with their own betas and eps, and a group's weight decay
    and beta1 changed between steps: the weights follow torch's."""
    def change(opt):
        opt.param_groups[0]["weight_decay"] = 0.01
        opt.param_groups[1]["betas"] = (0.5, 0.99)
    ours, opt_ours = in_lock_step(
        9, (4, 3), lambda g, m: m.AdamW(g, lr=0.05),
        lambda m: [{"params": [m.weight], "betas": (0.7, 0.9), "weight_decay": 0.2},
                   {"params": [m.bias], "eps": 1e-3, "weight_decay": 0.0}], 3, change)
    assert opt_ours.defaults["betas"] == (0.9, 0.999)
    opt_ours.param_groups[0]["amsgrad"] = True
    with pytest.raises(ValueError, match="amsgrad is fixed at creation"):
        opt_ours.step()
    with pytest.raises(ValueError, match="sets amsgrad"):
        ne.optim.Adam([{"params": [ours.weight], "amsgrad": True}])
    with pytest.raises(ValueError, match="max_grad_norm takes one group"):
        ne.optim.SGD([{"params": [ours.weight]}, {"params": [ours.bias]}], lr=0.1, max_grad_norm=1.0)


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_groups_follow_torchs(nesterov):
    """SGD with a decayed group and a bias group of its own rate and momentum,
    the momentum changed between steps: the weights follow torch's."""
    def change(opt):
        opt.param_groups[0]["momentum"] = 0.8
        opt.param_groups[1]["lr"] = 0.02
    _, opt_ours = in_lock_step(
        12, (5, 4), lambda g, m: m.SGD(g, lr=0.01, momentum=0.9, nesterov=nesterov),
        lambda m: [{"params": [m.weight], "weight_decay": 5e-3},
                   {"params": [m.bias], "lr": 0.003, "momentum": 0.5, "weight_decay": 0.0}], 2, change)
    assert [len(g["params"]) for g in opt_ours.state_dict()["param_groups"]] == [1, 1]


def test_rmsprop_group_options_follow_torchs():
    """RMSprop groups of their own alpha, eps and momentum, changed between steps."""
    def change(opt):
        opt.param_groups[0]["momentum"] = 0.5
        opt.param_groups[1]["alpha"] = 0.8
    in_lock_step(13, (3, 4), lambda g, m: m.RMSprop(g, lr=0.01, weight_decay=1e-3),
                 lambda m: [{"params": [m.weight], "momentum": 0.9, "alpha": 0.9},
                            {"params": [m.bias], "eps": 1e-3}], 3, change)
