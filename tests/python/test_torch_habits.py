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
