"""Creation functions as torch's (zeros, ones, full, empty, the *_like
forms, arange, linspace, eye, rand, randn, randint, randperm) and mm/bmm:
shapes, integer or float dtypes and values against torch; the random ones
by their range and moments, reproducible under manual_seed; bad sizes and
arguments refused by name."""
import numpy as np
import pytest
import torch

import nn_engine as ne

CASES = [
    ("zeros varargs", lambda m: m.zeros(2, 3)),
    ("zeros tuple", lambda m: m.zeros((4, 1, 3))),
    ("zeros 0-dim", lambda m: m.zeros(())),
    ("ones list", lambda m: m.ones([3])),
    ("ones int", lambda m: m.ones(2, 2, dtype=m.int64)),
    ("full float", lambda m: m.full((2, 3), 1.5)),
    ("full int", lambda m: m.full((3,), 7)),
    ("empty", lambda m: m.empty(2, 5).fill_(0.5)),  # torch.empty is uninitialised (NaNs possible)
    ("zeros_like", lambda m: m.zeros_like(m.ones(3, 4))),
    ("ones_like int", lambda m: m.ones_like(m.arange(4))),
    ("full_like", lambda m: m.full_like(m.zeros(2, 2), 3.25)),
    ("arange n", lambda m: m.arange(7)),
    ("arange start end step", lambda m: m.arange(2, 11, 3)),
    ("arange floats", lambda m: m.arange(0.5, 2.0, 0.25)),
    ("arange negative step", lambda m: m.arange(5, -3, -2)),
    ("arange float dtype", lambda m: m.arange(4, dtype=m.float32)),
    ("linspace", lambda m: m.linspace(-1, 1, 9)),
    ("eye", lambda m: m.eye(3)),
    ("eye rect", lambda m: m.eye(2, 4)),
    ("mm", lambda m: m.mm(m.arange(6, dtype=m.float32).reshape(2, 3), m.linspace(0, 1, 12).reshape(3, 4))),
    ("bmm", lambda m: m.bmm(m.linspace(-1, 1, 24).reshape(2, 3, 4), m.linspace(0, 2, 16).reshape(2, 4, 2))),
]


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_creation_matches_torch(name, make):
    ours, theirs = make(ne), make(torch)
    assert ours.shape == tuple(theirs.shape), (ours.shape, tuple(theirs.shape))
    assert (ours.dtype == np.int32) == (not theirs.is_floating_point())  # torch's int64 is int32 here
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)


def test_random_draws_are_in_range_reproducible_and_may_require_grad():
    ne.manual_seed(5)
    u, n = ne.rand(200, 50), ne.randn(40, 250, requires_grad=True)
    i, p = ne.randint(-3, 4, (1000,)), ne.randperm(37)
    assert u.shape == (200, 50) and n.shape == (40, 250) and n.requires_grad and not u.requires_grad
    assert u.numpy().min() >= 0 and u.numpy().max() < 1 and abs(u.numpy().mean() - 0.5) < 0.01
    assert abs(n.numpy().mean()) < 0.02 and abs(n.numpy().std() - 1) < 0.02
    assert i.dtype == np.int32 and set(i.tolist()) == set(range(-3, 4))
    assert sorted(p.tolist()) == list(range(37)) and p.tolist() != list(range(37))
    assert ne.randint(10, (3, 2)).shape == (3, 2)
    ne.manual_seed(5)
    again = [ne.rand(200, 50), ne.randn(40, 250), ne.randint(-3, 4, (1000,)), ne.randperm(37)]
    for first, second in zip([u, n, i, p], again):
        np.testing.assert_array_equal(first.numpy(), second.numpy())


@pytest.mark.parametrize("call,error,words", [
    (lambda: ne.zeros(0, 3), ValueError, "zeros: the size must be whole numbers >= 1"),
    (lambda: ne.ones(2.5), ValueError, "ones: the size"),
    (lambda: ne.arange(0), ValueError, "arange: no values"),
    (lambda: ne.arange(0, 5, 0), ValueError, "step must not be 0"),
    (lambda: ne.randint(5, 5, (2,)), ValueError, "randint: high"),
    (lambda: ne.randint(5), TypeError, "randint: give"),
    (lambda: ne.rand(3, dtype=ne.int64), TypeError, "rand: draws float32"),
    (lambda: ne.zeros(2, dtype="not a dtype"), TypeError, "zeros: dtype"),
    (lambda: ne.zeros_like(np.zeros(3)), TypeError, "zeros_like: expected an nn_engine.Tensor"),
    (lambda: ne.mm(ne.zeros(2, 3, 4), ne.zeros(4, 2)), ValueError, "mm: a and b must be 2-D"),
    (lambda: ne.bmm(ne.zeros(2, 3, 4), ne.zeros(3, 4, 2)), ValueError, "bmm: a and b must be 3-D"),
])
def test_bad_arguments_are_refused_by_name(call, error, words):
    with pytest.raises(error, match=words):
        call()
