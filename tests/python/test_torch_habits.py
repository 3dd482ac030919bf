"""PyTorch habits the package keeps (issue 36): tensor()/from_numpy keep
integer data integer, size(dim)/numel/dim/tolist, activation methods,
no_grad as a decorator, backward() of a tensor of more than one element
raises as PyTorch's does. Each against torch on the same values."""
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
