"""Mixed precision (nn_engine.amp) against PyTorch: products inside
autocast take fp16/bf16 operands with fp32 sums, so a Linear or a
convolution equals PyTorch's float64 product of the operands rounded by
torch (.half()/.bfloat16()); the backward uses the precision the forward
was recorded with; GradScaler skips a step whose gradients overflow and
backs the scale off, as torch.amp.GradScaler does. Also a lock-step run
against torch's CPU autocast (bf16) within stated tolerances."""
import numpy as np
import pytest
import torch

import nn_engine
from nn_engine import amp, functional as F

DTYPES = [("float16", torch.float16), ("bfloat16", torch.bfloat16)]


def rounded(a, dtype):
    return torch.from_numpy(a).to(dtype).double()


@pytest.mark.parametrize("name,tdtype", DTYPES)
def test_linear_inside_autocast_multiplies_rounded_operands(name, tdtype):
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, (13, 37)).astype(np.float32)
    w = rng.uniform(-1, 1, (11, 37)).astype(np.float32)
    b = rng.uniform(-1, 1, 11).astype(np.float32)
    tx, tw, tb = nn_engine.Tensor(x), nn_engine.Tensor(w), nn_engine.Tensor(b)
    with amp.autocast(dtype=name):
        assert amp.get_precision() == {"float16": "fp16", "bfloat16": "bf16"}[name]
        y = F.linear(tx, tw, tb).numpy()
    assert amp.get_precision() == "fp32"
    want = (rounded(x, tdtype) @ rounded(w, tdtype).T + torch.from_numpy(b).double()).numpy()
    assert np.allclose(y, want, rtol=1e-5, atol=1e-5)
    exact = x.astype(np.float64) @ w.T.astype(np.float64) + b
    assert np.abs(y - exact).max() > 1e-4  # the operands were rounded
    plain = F.linear(tx, tw, tb).numpy()  # outside: fp32 again
    assert np.allclose(plain, exact, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,tdtype", DTYPES)
def test_conv2d_backward_keeps_the_forwards_precision(name, tdtype):
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (2, 3, 9, 7)).astype(np.float32)
    w = rng.uniform(-0.5, 0.5, (4, 3, 3, 3)).astype(np.float32)
    r = rng.uniform(-1, 1, (2, 4, 7, 5)).astype(np.float32)
    tx = nn_engine.Tensor(x, requires_grad=True)
    tw = nn_engine.Tensor(w, requires_grad=True)
    with amp.autocast(dtype=name):
        y = F.conv2d(tx, tw)
    (y * nn_engine.Tensor(r)).sum().backward()  # backward outside the block
    qx = rounded(x, tdtype).requires_grad_()
    qw = rounded(w, tdtype).requires_grad_()
    ty = torch.nn.functional.conv2d(qx, qw)
    (ty * torch.from_numpy(r).double()).sum().backward()
    assert np.allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    # The gradients' products round their operands too: dy (= r) and w or x.
    qr = rounded(r, tdtype)
    dx = torch.nn.grad.conv2d_input(x.shape, rounded(w, tdtype), qr)
    dw = torch.nn.grad.conv2d_weight(rounded(x, tdtype), w.shape, qr)
    assert np.allclose(tx.grad.numpy(), dx.numpy(), rtol=1e-5, atol=1e-5)
    assert np.allclose(tw.grad.numpy(), dw.numpy(), rtol=1e-5, atol=1e-5)


def test_autocast_refuses_unknown_dtypes_and_nests():
    with pytest.raises(ValueError, match="float16, bfloat16 or float32"):
        amp.autocast(dtype="int8")
    with amp.autocast(dtype="bfloat16"):
        with amp.autocast(dtype=torch.float16):
            assert amp.get_precision() == "fp16"
        with amp.autocast(enabled=False):
            assert amp.get_precision() == "fp32"
        assert amp.get_precision() == "bf16"
    assert amp.get_precision() == "fp32"
    assert amp.matrix_cores("float16", device="cpu") is False


def test_grad_scaler_skips_overflowing_steps_and_backs_off():
    w = nn_engine.Tensor(np.ones((2, 3), np.float32), requires_grad=True)
    opt = nn_engine.optim.SGD([w], lr=0.1)
    scaler = amp.GradScaler(init_scale=4.0, growth_interval=2)
    x = nn_engine.Tensor(np.array([[1.0, 2.0, 3.0]], np.float32))
    loss = F.linear(x, w).sum()
    opt.zero_grad()
    scaler.scale(loss).backward()
    assert np.allclose(w.grad.numpy(), 4.0 * np.array([[1, 2, 3], [1, 2, 3]]))
    scaler.step(opt)
    scaler.update()
    assert np.allclose(w.grad.numpy(), [[1, 2, 3], [1, 2, 3]])  # unscaled before the step
    assert np.allclose(w.numpy(), 1.0 - 0.1 * np.array([[1, 2, 3], [1, 2, 3]]))
    before = w.numpy().copy()
    opt.zero_grad()
    big = nn_engine.Tensor(np.array([[3e38, 1.0, 1.0]], np.float32))
    scaler.scale(F.linear(big, w).sum()).backward()  # 3e38 * 4 overflows
    scaler.step(opt)
    scaler.update()
    assert scaler.skipped_steps == 1 and scaler.get_scale() == 2.0
    assert np.array_equal(w.numpy(), before)
    for _ in range(2):  # two good steps: the scale doubles
        opt.zero_grad()
        scaler.scale(F.linear(x, w).sum()).backward()
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 4.0 and scaler.skipped_steps == 1


def test_lock_step_with_torch_cpu_autocast_bf16():
    """A small CNN, 8 SGD steps under bf16 autocast on both sides from the
    same weights. torch's CPU autocast rounds the products' outputs to bf16
    as well (we keep them fp32), so the runs agree to bf16's resolution:
    losses within 2% relative, weights within 1e-2."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(4 * 6 * 6, 5))
    ours = nn_engine.Sequential(nn_engine.Conv2d(1, 4, 3), nn_engine.ReLU(), nn_engine.Flatten(),
                                nn_engine.Linear(4 * 6 * 6, 5))
    ours.load_state_dict({k: v.detach().numpy() for k, v in net.state_dict().items()})
    opt_t = torch.optim.SGD(net.parameters(), lr=0.05)
    opt_o = nn_engine.optim.SGD(ours.parameters(), lr=0.05)
    rng = np.random.default_rng(7)
    for _ in range(8):
        x = rng.uniform(-1, 1, (6, 1, 8, 8)).astype(np.float32)
        y = rng.integers(0, 5, 6)
        opt_t.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lt = torch.nn.functional.cross_entropy(net(torch.from_numpy(x)), torch.from_numpy(y))
        lt.backward()
        opt_t.step()
        opt_o.zero_grad()
        with amp.autocast(dtype="bfloat16"):
            lo = F.cross_entropy(ours(nn_engine.Tensor(x)), y.astype(np.int32))
        lo.backward()
        opt_o.step()
        assert abs(lo.item() - lt.item()) <= 2e-2 * abs(lt.item())
        nn_engine.end_batch()
    for name, value in net.state_dict().items():
        assert np.allclose(ours.state_dict()[name], value.detach().numpy(), atol=1e-2), name


def test_grad_scaler_unscale_then_clip_equals_an_unscaled_clipped_run():
    """unscale_ divides the gradients before step (the C scaler's
    nn_optimizer_unscale_grads); clipping them then gives the plain run's
    weights bit for bit (a power-of-two scale); the scale's state saves
    and loads; a second optimizer is refused."""
    rng = np.random.default_rng(11)
    w0, x = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((7, 5)).astype(np.float32)
    runs = []
    for scaled in (False, True):
        w = nn_engine.Tensor(w0.copy(), requires_grad=True)
        opt = nn_engine.optim.Adam([w], lr=0.01)
        scaler = amp.GradScaler(init_scale=256.0, growth_interval=3, enabled=scaled)
        for _ in range(4):
            opt.zero_grad()
            loss = (F.linear(nn_engine.Tensor(x), w) ** 2).sum()
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            nn_engine.nn.utils.clip_grad_norm_([w], max_norm=1.0)
            scaler.step(opt)
            scaler.update()
        runs.append(w.numpy())
    np.testing.assert_array_equal(runs[0], runs[1])
    assert scaler.get_scale() == 512.0 and scaler.skipped_steps == 0  # grew once after 3 good steps
    state = scaler.state_dict()
    assert state["scale"] == 512.0 and state["_growth_tracker"] == 1
    fresh = amp.GradScaler(init_scale=256.0, growth_interval=3)
    fresh.load_state_dict(state)
    assert fresh.get_scale() == 512.0
    scaler.update(new_scale=64.0)
    assert scaler.get_scale() == 64.0
    other = nn_engine.optim.SGD([nn_engine.Tensor(w0.copy(), requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="GradScaler per optimizer"):
        scaler.step(other)


def test_grad_scaler_with_a_parameter_that_gets_no_gradient():
    """A frozen parameter in the optimizer (no gradient): the scaler unscales
    the others one by one, the steps equal unscaled ones bit for bit, and an
    overflowing step is still skipped."""
    rng = np.random.default_rng(12)
    w0, x = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((7, 5)).astype(np.float32)
    runs = []
    for scaled in (False, True):
        w = nn_engine.Tensor(w0.copy(), requires_grad=True)
        frozen = nn_engine.Tensor(np.ones(3, np.float32), requires_grad=True)
        opt = nn_engine.optim.SGD([w, frozen], lr=0.05, momentum=0.9)
        scaler = amp.GradScaler(init_scale=1024.0, enabled=scaled)
        for factor in (1.0, 1.0, 1e36, 1.0):  # the third overflows once scaled; the plain run leaves it out
            if factor != 1.0 and not scaled:
                continue
            opt.zero_grad()
            scaler.scale((F.linear(nn_engine.Tensor(x), w) ** 2).sum() * factor).backward()
            before = w.numpy().copy()
            scaler.step(opt)
            scaler.update()
            if factor != 1.0:
                np.testing.assert_array_equal(w.numpy(), before)
        runs.append(w.numpy())
    assert scaler.skipped_steps == 1 and scaler.get_scale() == 512.0
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_array_equal(frozen.numpy(), np.ones(3, np.float32))
