"""nn_engine.optim.lr_scheduler against torch.optim.lr_scheduler: every
scheduler's rates for 130 steps equal torch's (get_last_lr and the rate
written to the optimizer) to 1e-12 relative (the C schedules compute
torch's closed forms, torch chains its steps: they part in the last bits
of a double), SequentialLR's warm-up then cosine included; parameter
groups each from their own base; bad arguments raise naming them."""
import numpy as np
import pytest
import torch

import nn_engine as nn
from nn_engine.optim import lr_scheduler

STEPS = 130

CASES = [
    ("StepLR", lambda s, o: s.StepLR(o, step_size=7, gamma=0.7)),
    ("MultiStepLR", lambda s, o: s.MultiStepLR(o, milestones=[1, 40, 41, 90], gamma=0.3)),
    ("ExponentialLR", lambda s, o: s.ExponentialLR(o, gamma=0.97)),
    ("CosineAnnealingLR", lambda s, o: s.CosineAnnealingLR(o, T_max=STEPS)),
    ("CosineAnnealingLR-restarts", lambda s, o: s.CosineAnnealingLR(o, T_max=37, eta_min=0.001)),
    ("LinearLR", lambda s, o: s.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=23)),
    ("OneCycleLR", lambda s, o: s.OneCycleLR(o, max_lr=0.3, total_steps=STEPS, cycle_momentum=False)),
    ("OneCycleLR-linear-three-phase",
     lambda s, o: s.OneCycleLR(o, max_lr=0.4, epochs=13, steps_per_epoch=10, pct_start=0.25,
                               anneal_strategy="linear", div_factor=10.0, final_div_factor=100.0,
                               three_phase=True, cycle_momentum=False)),
    ("SequentialLR-warmup-cosine",
     lambda s, o: s.SequentialLR(o, [s.LinearLR(o, start_factor=0.05, total_iters=11),
                                     s.CosineAnnealingLR(o, T_max=STEPS - 11, eta_min=1e-4)], milestones=[11])),
]


def optimizers(lr=0.05):
    lr = float(np.float32(lr))  # the rate an nn_engine optimizer holds is float32
    param = torch.zeros(3, requires_grad=True)
    layer = nn.Linear(3, 2)
    return torch.optim.SGD([param], lr=lr), nn.SGD([layer.w, layer.b], lr=lr)


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_rates_equal_torch_for_130_steps(name, make):
    torch_opt, ours_opt = optimizers()
    theirs = make(torch.optim.lr_scheduler, torch_opt)
    ours = make(lr_scheduler, ours_opt)
    np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=1e-12, atol=0)
    seen = set()
    for step in range(STEPS - 1):
        torch_opt.step()
        theirs.step()
        ours.step()
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=1e-12, atol=0,
                                   err_msg=f"{name} step {step + 1}")
        assert ours_opt.lr == ours.get_last_lr()[0]
        seen.add(ours_opt.lr)
    assert len(seen) > 1  # the rate moved


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_every_group_follows_torch(name, make):
    """Two groups at different rates: each from its own base (OneCycleLR:
    the same max_lr), as torch's schedulers move them."""
    lrs = [float(np.float32(0.05)), float(np.float32(0.2))]
    params = [torch.zeros(3, requires_grad=True), torch.zeros(2, requires_grad=True)]
    layer = nn.Linear(3, 2)
    torch_opt = torch.optim.Adam([{"params": [params[0]], "lr": lrs[0]}, {"params": [params[1]], "lr": lrs[1]}])
    ours_opt = nn.optim.Adam([{"params": [layer.weight], "lr": lrs[0]}, {"params": [layer.bias], "lr": lrs[1]}])
    theirs, ours = make(torch.optim.lr_scheduler, torch_opt), make(lr_scheduler, ours_opt)
    for step in range(STEPS - 1):
        np.testing.assert_allclose(ours.get_last_lr(), theirs.get_last_lr(), rtol=1e-12, atol=0,
                                   err_msg=f"{name} step {step}")
        assert [g["lr"] for g in ours_opt.param_groups] == ours.get_last_lr()
        torch_opt.step(), ours_opt.step()
        theirs.step(), ours.step()


def test_state_dict_resumes_the_schedule():
    _, opt = optimizers()
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=40, eta_min=1e-3)
    for _ in range(17):
        sched.step()
    state = sched.state_dict()
    _, fresh_opt = optimizers()
    fresh = lr_scheduler.CosineAnnealingLR(fresh_opt, T_max=40, eta_min=1e-3)
    fresh.load_state_dict(state)
    assert fresh.last_epoch == 17 and fresh.get_last_lr() == sched.get_last_lr()
    sched.step(), fresh.step()
    assert fresh.get_last_lr() == sched.get_last_lr() and fresh_opt.lr == opt.lr


def test_scheduled_rate_reaches_the_update():
    # the first step moves the weights; the schedule's rate 0 then leaves them
    layer = nn.Linear(3, 2)
    opt = nn.SGD([layer.w, layer.b], lr=0.5)
    sched = lr_scheduler.MultiStepLR(opt, milestones=[1], gamma=0.0)
    x = nn.Tensor(np.ones((4, 3), dtype=np.float32))
    weights = [layer.w.numpy().copy()]
    for _ in range(2):
        opt.zero_grad()
        layer(x).sum().backward()
        opt.step()
        sched.step()
        weights.append(layer.w.numpy().copy())
    assert opt.lr == 0.0
    assert not np.array_equal(weights[1], weights[0])
    np.testing.assert_array_equal(weights[2], weights[1])


def test_bad_arguments_raise_naming_them():
    _, opt = optimizers()
    with pytest.raises(ValueError, match="step_size"):
        lr_scheduler.StepLR(opt, step_size=0)
    with pytest.raises(ValueError, match="T_max"):
        lr_scheduler.CosineAnnealingLR(opt, T_max=-3)
    with pytest.raises(ValueError, match="anneal_strategy"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="square", cycle_momentum=False)
    with pytest.raises(ValueError, match="cycle_momentum"):  # Muon's momentum is fixed at creation
        muon = nn.Muon(nn.Linear(2, 2).parameters())
        lr_scheduler.OneCycleLR(muon, max_lr=1.0, total_steps=10)
        muon.step()
    with pytest.raises(ValueError, match="milestones"):
        lr_scheduler.SequentialLR(opt, [lr_scheduler.ExponentialLR(opt, 0.9)], milestones=[3])
    with pytest.raises(TypeError, match="not an Optimizer"):
        lr_scheduler.ExponentialLR(object(), 0.9)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, cycle_momentum=False)
    for _ in range(10):
        sched.step()
    with pytest.raises(ValueError, match="total_steps is 10"):
        sched.step()


@pytest.mark.parametrize("kind", ["SGD", "AdamW"])
def test_one_cycle_cycles_momentum_into_the_update_as_torch(kind):
    """OneCycleLR's momentum (SGD's momentum, AdamW's beta1) reaches every
    update: weights in lock-step with torch's for 12 steps."""
    rng = np.random.default_rng(5)
    w0, x = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((6, 3)).astype(np.float32)
    ours, theirs = nn.Linear(3, 4, bias=False), torch.nn.Linear(3, 4, bias=False)
    ours.weight.upload(w0)
    theirs.weight.data = torch.from_numpy(w0.copy())
    make = {"SGD": lambda p, m: m.SGD(p, lr=0.01, momentum=0.9, weight_decay=1e-3),
            "AdamW": lambda p, m: m.AdamW(p, lr=0.01)}[kind]
    opt_ours, opt_theirs = make(ours.parameters(), nn.optim), make(theirs.parameters(), torch.optim)
    sched_ours = lr_scheduler.OneCycleLR(opt_ours, max_lr=0.1, total_steps=12)
    sched_theirs = torch.optim.lr_scheduler.OneCycleLR(opt_theirs, max_lr=0.1, total_steps=12)
    key = "momentum" if kind == "SGD" else "betas"
    for step in range(11):
        loss_ours = nn.sum(nn.mul(ours(nn.tensor(x)), ours(nn.tensor(x))))
        loss_theirs = (theirs(torch.from_numpy(x)) ** 2).sum()
        opt_ours.zero_grad(), opt_theirs.zero_grad()
        loss_ours.backward(), loss_theirs.backward()
        opt_ours.step(), opt_theirs.step()
        sched_ours.step(), sched_theirs.step()
        np.testing.assert_allclose(opt_ours.param_groups[0][key], opt_theirs.param_groups[0][key], rtol=1e-12)
        # float32 sums in another order on a GPU: 2e-4; a momentum that missed the update: 1e-3 and more
        np.testing.assert_allclose(ours.weight.numpy(), theirs.weight.detach().numpy(), rtol=2e-4, atol=1e-5,
                                   err_msg=f"step {step}")


def test_one_cycle_gives_momentum_to_an_sgd_made_without_it_as_torch():
    """torch's OneCycleLR sets an SGD's momentum even when it was made
    without: the buffers are made then, and the weights follow torch's."""
    rng = np.random.default_rng(9)
    w0, x = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
    runs = []
    for m, s in ((nn, lr_scheduler), (torch, torch.optim.lr_scheduler)):
        w = m.tensor(w0.copy(), requires_grad=True)
        opt = m.optim.SGD([w], lr=0.1)
        sched = s.OneCycleLR(opt, max_lr=0.2, total_steps=10)
        for _ in range(9):
            opt.zero_grad()
            ((m.tensor(x) @ w.T) ** 2).mean().backward()
            opt.step()
            sched.step()
        runs.append((w.detach().numpy(), opt.param_groups[0]["momentum"]))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=2e-5, atol=1e-6)
    assert runs[0][1] == pytest.approx(runs[1][1], rel=1e-12)
