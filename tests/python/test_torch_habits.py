"""PyTorch habits the package keeps (issue 36): tensor()/from_numpy keep
integer data integer, size(dim)/numel/dim/tolist, activation methods,
no_grad as a decorator, backward() of a tensor of more than one element
raises as PyTorch's does, scalars are 0-dim tensors. Each against torch on
the same values."""
import numpy as np
import pytest
import torch

import nn_engine as ne

RNG = np.random.default_rng(36)


def test_tensor_keeps_integers_and_floats_as_torch_does():
    for data in ([[1, 2, 3], [4, 5, 6]], np.arange(7, dtype=np.int64), np.array([True, False])):
        ours, theirs = ne.tensor(data), torch.tensor(data)
        assert ours.dtype == np.int32 and not theirs.is_floating_point()
        assert ours.tolist() == theirs.long().tolist()
    floats = RNG.normal(size=(3, 5))
    ours = ne.tensor(floats, requires_grad=True)
    assert ours.dtype == np.float32 and ours.requires_grad
    np.testing.assert_array_equal(ours.sync(), floats.astype(np.float32))
    assert ne.tensor([1, 2], dtype=ne.int64).dtype == np.int32
    assert ne.tensor([1, 2], dtype=ne.float32).tolist() == [1.0, 2.0]
    labels = np.array([3, 1, 2], dtype=np.int64)
    assert ne.from_numpy(labels).dtype == np.int32 and ne.from_numpy(labels).tolist() == [3, 1, 2]
    with pytest.raises(TypeError, match="from_numpy"):
        ne.from_numpy([1, 2])
    with pytest.raises(TypeError, match="dtype"):
        ne.tensor([1], dtype="not a dtype")


def test_size_numel_dim_as_torch():
    values = RNG.normal(size=(2, 7, 3)).astype(np.float32)
    ours, theirs = ne.tensor(values), torch.tensor(values)
    assert ours.size() == tuple(theirs.size())
    for d in range(-3, 3):
        assert ours.size(d) == theirs.size(d)
    assert ours.numel() == theirs.numel() and ours.dim() == theirs.dim()
    with pytest.raises(IndexError, match="dim 3 is out of range"):
        ours.size(3)
    with pytest.raises(TypeError, match="dim must be an int"):
        ours.size(1.0)
    assert ne.tensor([[1.5, -2.0]]).tolist() == torch.tensor([[1.5, -2.0]]).tolist()


def test_activation_methods_match_torch():
    values = RNG.normal(size=(4, 9)).astype(np.float32)
    ours, theirs = ne.tensor(values), torch.tensor(values)
    np.testing.assert_allclose(ours.relu().sync(), theirs.relu().numpy())
    for dim in (0, 1, -1):
        np.testing.assert_allclose(ours.softmax(dim).sync(), theirs.softmax(dim).numpy(), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(ours.log_softmax(dim).sync(), theirs.log_softmax(dim).numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_no_grad_decorates_functions_and_nests():
    w = ne.tensor(RNG.normal(size=(3, 3)), requires_grad=True)

    @ne.no_grad()
    def frozen(t):
        return t * 2

    @ne.enable_grad()
    def recorded(t):
        return t * 2

    assert not frozen(w).requires_grad
    with ne.no_grad():
        assert recorded(w).requires_grad  # enable_grad inside no_grad, as torch's
        assert not (w * 2).requires_grad
    assert (w * 2).requires_grad and frozen.__name__ == "frozen"


def test_backward_of_a_larger_tensor_needs_its_gradient():
    values = RNG.normal(size=(2, 3)).astype(np.float32)
    ours = ne.tensor(values, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only"):
        (theirs * 2).backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only"):
        (ours * 2).backward()
    weights = RNG.normal(size=(2, 3)).astype(np.float32)
    (ours * ours).backward(weights)
    (theirs * theirs).backward(torch.tensor(weights))
    np.testing.assert_allclose(ours.grad.sync(), theirs.grad.numpy(), rtol=1e-6)


SCALAR_CASES = [
    ("cross_entropy", lambda m, x, y: m.nn.functional.cross_entropy(x, y)),
    ("mse_loss", lambda m, x, y: m.nn.functional.mse_loss(x, x * 0.5)),
    ("mse_loss none", lambda m, x, y: m.nn.functional.mse_loss(x, x * 0.5, reduction="none")),
    ("sum", lambda m, x, y: x.sum()),
    ("mean", lambda m, x, y: x.mean()),
    ("max", lambda m, x, y: x.max()),
    ("amax over all", lambda m, x, y: x.amax(dim=(0, 1))),
    ("argmax", lambda m, x, y: x.argmax()),
    ("sum over dim 1", lambda m, x, y: x.sum(dim=1)),
    ("accuracy", lambda m, x, y: (x.argmax(1) == y).sum()),
    ("loss arithmetic", lambda m, x, y: x.sum() * 2 + x.mean() / 3 - 1),
    ("loss compared", lambda m, x, y: x.sum() > 0),
    ("scalar and vector", lambda m, x, y: x.sum() * x[0]),
    ("stacked losses", lambda m, x, y: m.stack([x.sum(), x.mean(), x.max()])),
    ("number", lambda m, x, y: m.tensor(2.5) * 2),
    ("element", lambda m, x, y: x[1, 2]),
    ("element of a row", lambda m, x, y: x[1][2]),
    ("unsqueezed", lambda m, x, y: x.sum().unsqueeze(0)),
    ("squeezed", lambda m, x, y: x[:1, :1].squeeze()),
    ("squeezed dim", lambda m, x, y: x[0, :1].squeeze(0)),
    ("reshaped to ()", lambda m, x, y: x[:1, :1].reshape(())),
    ("flattened", lambda m, x, y: x.sum().flatten()),
    ("detached", lambda m, x, y: x.sum().detach()),
    ("cast", lambda m, x, y: x.sum().long()),
    ("relu of a scalar", lambda m, x, y: x.sum().relu()),
]


@pytest.mark.parametrize("name,make", SCALAR_CASES, ids=[c[0] for c in SCALAR_CASES])
def test_scalars_are_0_dim_as_torch(name, make):
    """Full reductions, reduced losses, numbers and single elements are 0-dim
    (shape ()), elementwise results of 0-dim operands stay 0-dim, and
    stacking them makes a vector: shapes and values as torch's."""
    x, y = RNG.normal(size=(4, 5)).astype(np.float32), np.array([0, 3, 4, 3])
    ours = make(ne, ne.tensor(x), ne.tensor(y))
    theirs = make(torch, torch.tensor(x), torch.tensor(y))
    assert ours.shape == tuple(theirs.shape) and ours.dim() == theirs.dim(), (ours.shape, tuple(theirs.shape))
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.array(ours.tolist()), np.array(theirs.tolist()), rtol=1e-6, atol=1e-6)
    assert isinstance(ours.tolist(), list) == isinstance(theirs.tolist(), list)  # a number for a 0-dim tensor


def test_a_0_dim_parameter_trains_saves_and_refuses_bad_reshapes(tmp_path):
    scale = ne.tensor(2.0, requires_grad=True)
    x = ne.tensor(RNG.normal(size=(3, 4)).astype(np.float32))
    (scale * x).sum().backward()
    assert scale.grad.shape == () and scale.grad.item() == pytest.approx(float(x.sum().item()), rel=1e-6)
    with pytest.raises(ValueError, match="shape \\(\\) holds one element"):
        x.reshape(())
    with pytest.raises(IndexError, match="0-dim"):
        scale.unsqueeze(1)
    ne.save({"scale": scale, "steps": ne.tensor(7)}, tmp_path / "state.nn")
    back = ne.load(tmp_path / "state.nn")
    assert back["scale"].shape == () and back["scale"].item() == 2.0
    assert back["steps"].shape == () and back["steps"].item() == 7


INPLACE_CASES = [
    ("add_ alpha", lambda t, o: t.add_(o, alpha=0.5)),
    ("sub_", lambda t, o: t.sub_(o)),
    ("mul_ number", lambda t, o: t.mul_(3.0)),
    ("div_ broadcast", lambda t, o: t.div_(o[0:1] + 3.0)),
    ("clamp_", lambda t, o: t.clamp_(min=-0.5, max=0.5)),
    ("pow_", lambda t, o: t.abs_().pow_(1.5)),
    ("neg_ exp_", lambda t, o: t.neg_().exp_()),
    ("sqrt_", lambda t, o: t.abs_().sqrt_()),
    ("relu_ sigmoid_ tanh_", lambda t, o: t.relu_().sigmoid_().tanh_()),
    ("fill_ zero_", lambda t, o: t.fill_(2.5).mul_(o).zero_().add_(1.0)),
    ("copy_", lambda t, o: t.copy_(o)),
    ("copy_ broadcast", lambda t, o: t.copy_(o[1])),
    ("+= -= *= /=", lambda t, o: _augmented(t, o)),
]


def _augmented(t, o):
    t += o
    t -= 0.25
    t *= o
    t /= 2.0
    return t


@pytest.mark.parametrize("name,op", INPLACE_CASES, ids=[c[0] for c in INPLACE_CASES])
def test_in_place_operations_change_the_tensor_as_torch(name, op):
    x, o = RNG.normal(size=(3, 4)).astype(np.float32), RNG.normal(size=(3, 4)).astype(np.float32)
    ours, theirs = ne.tensor(x), torch.tensor(x)
    ours_id, theirs_id = id(ours), id(theirs)
    got, want = op(ours, ne.tensor(o)), op(theirs, torch.tensor(o))
    assert id(got) == ours_id and id(want) == theirs_id  # the same tensor, changed
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)


def test_a_hand_written_sgd_step_under_no_grad_trains_as_torch():
    """PyTorch's first tutorial: w -= lr * w.grad under no_grad, then
    w.grad.zero_(); five steps in lock-step with torch."""
    w0, x = RNG.normal(size=(3, 5)).astype(np.float32), RNG.normal(size=(8, 5)).astype(np.float32)
    y = RNG.normal(size=(8, 3)).astype(np.float32)
    runs = []
    for m in (ne, torch):
        w = m.tensor(w0.copy(), requires_grad=True)
        for _ in range(5):
            loss = ((m.tensor(x) @ w.T - m.tensor(y)) ** 2).mean()
            loss.backward()
            with m.no_grad():
                w -= 0.1 * w.grad
                w.grad.zero_()
        runs.append(w.detach().numpy())
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-5, atol=1e-6)


def test_in_place_where_grad_is_recorded_refuses_or_rebinds():
    w = ne.tensor(RNG.normal(size=(2, 3)).astype(np.float32), requires_grad=True)
    with pytest.raises(RuntimeError, match="mul_: in-place operations are not recorded by autograd"):
        w.mul_(2.0)
    with pytest.raises(RuntimeError, match="zero_"):
        w.zero_()
    # total += loss binds total to total + loss: the gradient reaches both terms, as torch's
    total = ne.tensor(0.0)
    for scale in (1.0, 2.0):
        total += (w * scale).sum()
    total.backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full((2, 3), 3.0))
    a = ne.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="the result has shape \\(2, 2, 3\\), the tensor \\(2, 3\\)"):
        a.add_(ne.tensor(np.ones((2, 1, 3), np.float32)))
