"""nn_engine.optim in lock-step with torch.optim: a small CNN (conv,
BatchNorm, linear) from identical weights, 20 steps on the same random
batches; losses agree to 1e-5 (relative) and weights to 1e-4 on the CPU,
looser on Vulkan. Lion and Muon have no torch.optim class: their reference
updates are written here (lucidrains' lion-pytorch; Keller Jordan's Muon
with its auxiliary Adam, in float32)."""
import numpy as np
import pytest
import torch

import nn_engine as nn

STEPS = 20
BATCH = 7


def build_pair():
    ours = nn.Sequential(nn.Conv2d(3, 5, 3, bias=False), nn.BatchNorm2d(5), nn.ReLU(), nn.Flatten(), nn.Linear(5 * 5 * 5, 4))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 5, 3, bias=False), torch.nn.BatchNorm2d(5), torch.nn.ReLU(),
                                 torch.nn.Flatten(), torch.nn.Linear(5 * 5 * 5, 4))
    with torch.no_grad():  # BatchNorm's weight and bias away from 1 and 0
        theirs[1].weight.uniform_(0.5, 1.5)
        theirs[1].bias.uniform_(-0.2, 0.2)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def batches():
    rng = np.random.default_rng(11)
    return [(rng.standard_normal((BATCH, 3, 7, 7)).astype(np.float32), rng.integers(0, 4, BATCH).astype(np.int32))
            for _ in range(STEPS)]


class TorchLion(torch.optim.Optimizer):
    """lucidrains/lion-pytorch's update."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                exp_avg = state["exp_avg"]
                p.mul_(1 - group["lr"] * group["weight_decay"])
                update = exp_avg.clone().mul_(beta1).add(p.grad, alpha=1 - beta1).sign_()
                p.add_(update, alpha=-group["lr"])
                exp_avg.mul_(beta2).add_(p.grad, alpha=1 - beta2)


def newton_schulz5(g, steps=5):
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g.T if g.size(0) > g.size(1) else g
    x = x / (x.norm() + 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if g.size(0) > g.size(1) else x


class TorchMuon(torch.optim.Optimizer):
    """Keller Jordan's MuonWithAuxAdam (float32): matrices (convolution
    weights as rows x rest) by Muon, the rest by Adam with decoupled decay."""

    def __init__(self, groups):
        super().__init__(groups, {})

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if group["use_muon"]:
                    if not state:
                        state["momentum_buffer"] = torch.zeros_like(p)
                    m, beta = state["momentum_buffer"], group["momentum"]
                    m.lerp_(p.grad, 1 - beta)
                    update = p.grad.clone().lerp_(m, beta)
                    matrix = update.reshape(len(update), -1)
                    update = newton_schulz5(matrix) * max(1, matrix.size(0) / matrix.size(1)) ** 0.5
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                    p.add_(update.reshape(p.shape), alpha=-group["lr"])
                else:
                    if not state:
                        state.update(exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p), step=0)
                    state["step"] += 1
                    beta1, beta2 = group["betas"]
                    state["exp_avg"].lerp_(p.grad, 1 - beta1)
                    state["exp_avg_sq"].lerp_(p.grad.square(), 1 - beta2)
                    m = state["exp_avg"] / (1 - beta1 ** state["step"])
                    v = state["exp_avg_sq"] / (1 - beta2 ** state["step"])
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                    p.add_(m / (v.sqrt() + group["eps"]), alpha=-group["lr"])


def split_by_rank(model):
    params = list(model.parameters())
    return [p for p in params if p.ndim >= 2], [p for p in params if p.ndim < 2]


def no_decay_groups(params, ours):
    """Parameter groups: decay on matrices, none on biases and norms."""
    matrices, others = split_by_rank(params) if not isinstance(params, list) else params
    return [{"params": matrices, "weight_decay": 0.05}, {"params": others, "weight_decay": 0.0, "lr": 2e-3}]


CONFIGS = {
    "sgd-nesterov": (lambda m: nn.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                                            weight_decay=1e-3),
                     lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                                               weight_decay=1e-3)),
    "adam": (lambda m: nn.optim.Adam(m.parameters(), lr=3e-3, weight_decay=1e-2),
             lambda m: torch.optim.Adam(m.parameters(), lr=3e-3, weight_decay=1e-2)),
    "adam-amsgrad": (lambda m: nn.optim.Adam(m.parameters(), lr=3e-3, betas=(0.8, 0.99), amsgrad=True),
                     lambda m: torch.optim.Adam(m.parameters(), lr=3e-3, betas=(0.8, 0.99), amsgrad=True)),
    "adamw-groups": (lambda m: nn.optim.AdamW(no_decay_groups(m, True), lr=3e-3),
                     lambda m: torch.optim.AdamW(no_decay_groups(m, False), lr=3e-3)),
    "adamw-maximize": (lambda m: nn.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.1, maximize=True),
                       lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.1, maximize=True)),
    "rmsprop": (lambda m: nn.optim.RMSprop(m.parameters(), lr=1e-3, weight_decay=1e-3),
                lambda m: torch.optim.RMSprop(m.parameters(), lr=1e-3, weight_decay=1e-3)),
    "rmsprop-centered-momentum": (
        lambda m: nn.optim.RMSprop(m.parameters(), lr=1e-3, alpha=0.9, momentum=0.8, centered=True),
        lambda m: torch.optim.RMSprop(m.parameters(), lr=1e-3, alpha=0.9, momentum=0.8, centered=True)),
    "lion": (lambda m: nn.optim.Lion(m.parameters(), lr=3e-4, weight_decay=0.1),
             lambda m: TorchLion(m.parameters(), lr=3e-4, weight_decay=0.1)),
    "muon": (lambda m: nn.optim.Muon(m.parameters(), lr=0.02, weight_decay=0.01, adamw_lr=3e-3),
             lambda m: TorchMuon([
                 dict(params=split_by_rank(m)[0], use_muon=True, lr=0.02, momentum=0.95, weight_decay=0.01),
                 dict(params=split_by_rank(m)[1], use_muon=False, lr=3e-3, betas=(0.9, 0.95), eps=1e-10,
                      weight_decay=0.0)])),
}


@pytest.fixture(params=["cpu", "vulkan"])
def device(request):
    if request.param == "vulkan":
        try:
            nn.set_device("vulkan")
        except Exception as err:  # no Vulkan device in this build or machine
            pytest.skip(f"vulkan: {err}")
    else:
        nn.set_device("cpu")
    yield request.param
    nn.set_device("cpu")


@pytest.mark.parametrize("name", list(CONFIGS))
def test_optimizer_lockstep_with_torch(name, device):
    loss_rel, weight_tol = (1e-5, 1e-4) if device == "cpu" else (1e-3, 1e-3)
    ours, theirs = build_pair()
    make_ours, make_theirs = CONFIGS[name]
    opt, torch_opt = make_ours(ours), make_theirs(theirs)
    torch_params = dict(theirs.named_parameters())
    for step, (xb, yb) in enumerate(batches()):
        opt.zero_grad()
        loss = nn.softmax_ce(ours(nn.Tensor(xb)), nn.Tensor(yb))
        loss.backward()
        opt.step()
        torch_opt.zero_grad()
        torch_loss = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(xb)), torch.from_numpy(yb).long())
        torch_loss.backward()
        torch_opt.step()
        assert float(loss.item()) == pytest.approx(float(torch_loss.item()), rel=loss_rel), f"loss at step {step}"
        for key, p in ours.named_parameters():
            np.testing.assert_allclose(p.sync(), torch_params[key].detach().numpy(), rtol=weight_tol,
                                       atol=weight_tol, err_msg=f"{name}: {key} after step {step}")
        nn.end_batch()


def test_group_lr_is_settable_between_steps():
    ours, theirs = build_pair()
    opt = nn.optim.Adam(no_decay_groups(ours, True), lr=1e-2)
    torch_opt = torch.optim.Adam(no_decay_groups(theirs, False), lr=1e-2)
    torch_params = dict(theirs.named_parameters())
    for step, (xb, yb) in enumerate(batches()[:6]):
        for group, torch_group in zip(opt.param_groups, torch_opt.param_groups):
            group["lr"] = torch_group["lr"] = torch_group["lr"] * 0.5  # as a scheduler would
        opt.zero_grad()
        nn.softmax_ce(ours(nn.Tensor(xb)), nn.Tensor(yb)).backward()
        opt.step()
        torch_opt.zero_grad()
        torch.nn.functional.cross_entropy(theirs(torch.from_numpy(xb)), torch.from_numpy(yb).long()).backward()
        torch_opt.step()
        nn.end_batch()
    for key, p in ours.named_parameters():
        np.testing.assert_allclose(p.sync(), torch_params[key].detach().numpy(), rtol=1e-4, atol=1e-4)


def test_optimizer_arguments_are_checked():
    ours, _ = build_pair()
    with pytest.raises(Exception, match="betas"):
        nn.optim.Adam(ours.parameters(), betas=(1.5, 0.9))
    with pytest.raises(Exception, match="alpha"):
        nn.optim.RMSprop(ours.parameters(), alpha=2.0)
    with pytest.raises(ValueError, match="use_muon"):
        nn.optim.Muon([{"params": list(ours.parameters())}])
    with pytest.raises(Exception, match="Muon updates matrices"):
        nn.optim.Muon([{"params": list(ours.parameters()), "use_muon": True}])
    with pytest.raises(ValueError, match="unknown keys"):
        nn.optim.Adam([{"params": list(ours.parameters()), "momentum": 0.9}])
