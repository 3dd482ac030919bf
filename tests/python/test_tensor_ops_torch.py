"""Broadcasting arithmetic, reductions over dimensions, rearrangements and
indexing against PyTorch 1.13: values and the gradients backward gives, on
awkward shapes (batch 1, odd sizes, broadcast shapes, up to 6 dimensions),
through the functions, the Tensor operators and the Tensor methods; and the
errors bad arguments raise."""
import numpy as np
import pytest
import torch

import nn_engine as nn

RNG = np.random.default_rng(31)


def both(*shapes, distinct=False, away_from_zero=False):
    """Tensors of the given shapes for the engine and for torch, same values."""
    ours, theirs = [], []
    for shape in shapes:
        if distinct:  # no ties: a finite gradient everywhere
            x = RNG.permutation(int(np.prod(shape))).reshape(shape).astype(np.float32) * 0.01 - 1.0
        else:
            x = RNG.standard_normal(shape).astype(np.float32)
        if away_from_zero:
            x = np.where(np.abs(x) < 0.2, 0.2 + np.abs(x), x).astype(np.float32)
        ours.append(nn.Tensor(x, requires_grad=True))
        theirs.append(torch.tensor(x, requires_grad=True))
    return ours, theirs


def check(out, tout, ours, theirs, tol=1e-5):
    """Equal values, then equal gradients of sum(out * w) for a random w."""
    expected = tout.detach().numpy()
    got = out.sync()
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_allclose(got.reshape(expected.shape), expected, rtol=tol, atol=tol)
    if not tout.requires_grad:
        return
    w = RNG.uniform(-1, 1, got.shape).astype(np.float32)
    out.backward(nn.Tensor(w))
    (tout * torch.from_numpy(w.reshape(expected.shape))).sum().backward()
    for a, ta in zip(ours, theirs):
        if ta.grad is None:
            assert a.grad is None or np.all(a.grad.sync() == 0)
        else:
            np.testing.assert_allclose(a.grad.sync(), ta.grad.numpy(), rtol=tol, atol=tol)


BROADCASTS = [((3, 1, 5), (4, 1)), ((2, 3, 4, 5), (5,)), ((1,), (7, 3)), ((1, 3), (1, 3)),
              ((2, 1, 2, 1, 3, 1), (3, 1, 2, 1, 2)), ((5, 1, 3), (5, 7, 3))]
BINARY = {
    "add": (nn.add, torch.add, lambda a, b: a + b),
    "sub": (nn.sub, torch.sub, lambda a, b: a - b),
    "mul": (nn.mul, torch.mul, lambda a, b: a * b),
    "div": (nn.div, torch.div, lambda a, b: a / b),
    "maximum": (nn.maximum, torch.maximum, None),
    "minimum": (nn.minimum, torch.minimum, None),
}


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", BROADCASTS)
def test_broadcasting_binary(name, shapes):
    ours_fn, torch_fn, operator = BINARY[name]
    (a, b), (ta, tb) = both(*shapes, distinct=name in ("maximum", "minimum"), away_from_zero=name == "div")
    check(ours_fn(a, b), torch_fn(ta, tb), [a, b], [ta, tb])
    if operator:
        (a, b), (ta, tb) = both(*shapes, away_from_zero=True)
        check(operator(a, b), operator(ta, tb), [a, b], [ta, tb])


def test_maximum_ties_split_the_gradient_and_nan_propagates():
    x = np.array([1.0, 2.0, np.nan, 3.0], np.float32)
    y = np.array([1.0, 3.0, 0.0, np.nan], np.float32)
    a, b = nn.Tensor(x, requires_grad=True), nn.Tensor(y, requires_grad=True)
    ta, tb = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    out, tout = nn.maximum(a, b), torch.maximum(ta, tb)
    np.testing.assert_array_equal(np.isnan(out.sync()), np.isnan(tout.detach().numpy()))
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(a.grad.sync()[:2], ta.grad.numpy()[:2])
    np.testing.assert_allclose(b.grad.sync()[:2], tb.grad.numpy()[:2])


@pytest.mark.parametrize("scalar", [2.5, -3, 0.5])
def test_numbers_on_either_side(scalar):
    (a,), (ta,) = both((3, 1, 4), away_from_zero=True)
    for op in (lambda x, s: x + s, lambda x, s: s + x, lambda x, s: x - s, lambda x, s: s - x,
               lambda x, s: x * s, lambda x, s: s * x, lambda x, s: x / s, lambda x, s: s / x):
        a.grad = None
        ta.grad = None
        check(op(a, scalar), op(ta, scalar), [a], [ta])


def test_operand_used_twice_and_chained():
    (a, b), (ta, tb) = both((4, 3), (3,), away_from_zero=True)
    check(a * b / (b + nn.maximum(b, b)) - a, ta * tb / (tb + torch.maximum(tb, tb)) - ta, [a, b], [ta, tb])


REDUCTIONS = [((3, 5, 4), 1), ((2, 3, 4, 5), (1, -1)), ((7,), None), ((1, 9), 0), ((2, 1, 3, 2, 2, 3), (0, 2, 5)),
              ((37, 3), 0), ((2, 300, 3), 1)]


@pytest.mark.parametrize("shape,dim", REDUCTIONS)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "amax", "amin"])
def test_reductions(shape, dim, keepdim, name):
    if name in ("var", "std") and dim == 0 and shape == (1, 9):
        pytest.skip("one element per output: var is NaN")
    (a,), (ta,) = both(shape, distinct=name in ("amax", "amin"))
    if dim is None and not keepdim and name in ("sum", "mean", "var", "std"):
        out, tout = getattr(a, name)(), getattr(ta, name)()
    elif name in ("amax", "amin"):
        tdim = dim if dim is not None else tuple(range(len(shape)))
        out, tout = getattr(a, name)(() if dim is None else dim, keepdim), getattr(ta, name)(tdim, keepdim)
    else:
        tdim = dim if dim is not None else tuple(range(len(shape)))
        out, tout = getattr(a, name)(dim, keepdim=keepdim), getattr(ta, name)(tdim, keepdim=keepdim)
    check(out, tout, [a], [ta], tol=2e-5)


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_correction(correction):
    (a,), (ta,) = both((4, 6))
    check(nn.var(a, 1, correction=correction), torch.var(ta, 1, correction=correction), [a], [ta])
    a.grad = None
    ta.grad = None
    check(nn.var(a, 0, unbiased=False), torch.var(ta, 0, unbiased=False), [a], [ta])


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_along_a_dimension(name):
    (a,), (ta,) = both((4, 6, 5), distinct=True)
    values, indices = getattr(a, name)(1)
    tvalues, tindices = getattr(ta, name)(1)
    np.testing.assert_array_equal(indices.sync(), tindices.numpy())
    check(values, tvalues, [a], [ta])
    assert getattr(nn, f"arg{name}")(a, 2, keepdim=True).shape == (4, 6, 1)
    np.testing.assert_array_equal(getattr(a, f"arg{name}")(2).sync(), getattr(ta, f"arg{name}")(2).numpy())
    np.testing.assert_array_equal(getattr(a, f"arg{name}")().sync(), [getattr(ta, f"arg{name}")().item()])
    whole = getattr(a, name)()
    assert whole.shape == () and whole.item() == getattr(ta, name)().item()  # 0-dim, as torch's
    assert not indices.requires_grad and indices.dtype == np.int32  # positions carry no gradient


def test_argmax_takes_the_first_of_ties():
    x = np.array([[1, 3, 3, 0], [2, 2, 1, 2]], np.float32)
    np.testing.assert_array_equal(nn.Tensor(x).argmax(1).sync(), torch.tensor(x).argmax(1).numpy())
    np.testing.assert_array_equal(nn.Tensor(x).argmin(1).sync(), torch.tensor(x).argmin(1).numpy())


REARRANGEMENTS = {
    "permute": ((2, 3, 4, 5), lambda x: x.permute(0, 2, 3, 1)),
    "permute6": ((2, 1, 3, 2, 1, 3), lambda x: x.permute(5, 3, 1, 0, 2, 4)),
    "transpose": ((3, 7, 5), lambda x: x.transpose(-1, 0)),
    "T": ((4, 3), lambda x: x.T),
    "narrow": ((4, 9, 3), lambda x: x.narrow(1, 2, 5)),
    "expand": ((3, 1, 5), lambda x: x.expand(2, 3, 4, 5)),
    "expand_keep": ((3, 1), lambda x: x.expand(-1, 6)),
    "squeeze": ((3, 1, 4, 1), lambda x: x.squeeze()),
    "squeeze_dim": ((3, 1, 4), lambda x: x.squeeze(1)),
    "unsqueeze": ((3, 4), lambda x: x.unsqueeze(-1)),
    "flatten": ((2, 3, 4, 5), lambda x: x.flatten(1, 2)),
    "reshape": ((2, 3, 4), lambda x: x.reshape(4, -1)),
    "view": ((2, 3, 4), lambda x: x.view(6, 4)),
}


@pytest.mark.parametrize("name", REARRANGEMENTS)
def test_rearrangements(name):
    shape, fn = REARRANGEMENTS[name]
    (a,), (ta,) = both(shape)
    check(fn(a), fn(ta), [a], [ta])


INDICES = [1, -1, (slice(None), 2), (slice(1, None, 2), slice(None, -1)), (Ellipsis, 0), (None, 1, Ellipsis),
           (0, slice(None), None, slice(2, 4)), (slice(-3, None),), (slice(None, None, 3), 1, -2)]


@pytest.mark.parametrize("index", INDICES, ids=[repr(i) for i in INDICES])
def test_indexing(index):
    (a,), (ta,) = both((5, 4, 6))
    check(a[index], ta[index], [a], [ta])


def test_indexing_with_nones_past_the_dimension_limit_on_the_way():
    # Issue 40, item 15: the Nones were inserted first, and x5d[None, None, 0:3, ..., -2] was refused with
    # "already has 6 dimensions" although its result has 6 (the integer drops one).
    (a,), (ta,) = both((4, 3, 2, 5, 3))
    for index in [(None, None, slice(0, 3), Ellipsis, -2), (1, None, Ellipsis, None, slice(1, None))]:
        check(a[index], ta[index], [a], [ta])


def test_cat_stack_split_chunk():
    (a, b, c), (ta, tb, tc) = both((2, 3, 4), (2, 5, 4), (2, 1, 4))
    check(nn.cat([a, b, c], 1), torch.cat([ta, tb, tc], 1), [a, b, c], [ta, tb, tc])
    many, tmany = both(*[(1, 3)] * 7)
    check(nn.cat(many, 0), torch.cat(tmany, 0), many, tmany)
    (a, b), (ta, tb) = both((3, 5), (3, 5))
    check(nn.stack([a, b], -1), torch.stack([ta, tb], -1), [a, b], [ta, tb])
    (a,), (ta,) = both((7, 4))
    pieces, tpieces = a.split(3), ta.split(3)
    assert [p.shape for p in pieces] == [tuple(p.shape) for p in tpieces]
    check(pieces[2] * 2 + pieces[0][:1], tpieces[2] * 2 + tpieces[0][:1], [a], [ta])
    assert [p.shape for p in nn.split(a, [1, 2, 1], 1)] == [(7, 1), (7, 2), (7, 1)]
    assert [p.shape for p in a.chunk(3, 1)] == [tuple(p.shape) for p in ta.chunk(3, 1)]


ERRORS = [
    (lambda a: a + nn.Tensor(np.ones(5, np.float32)), ValueError, r"nn_add: shapes \[3, 4\] and \[5\]"),
    (lambda a: nn.maximum(a, 2.0), TypeError, "clamp"),
    (lambda a: a.sum(2), ValueError, "dimension 2 is out of range"),
    (lambda a: a.mean((0, 0)), ValueError, "listed twice"),
    (lambda a: a.sum("x"), TypeError, "dim must be an int"),
    (lambda a: a.var(1, correction=-1), ValueError, "correction"),
    (lambda a: a.permute(0, 0), ValueError, "appears twice"),
    (lambda a: a.transpose(0, 2), ValueError, "dim1 2 is out of range"),
    (lambda a: a[3], IndexError, "out of range"),
    (lambda a: a[::-1], ValueError, "step must be >= 1"),
    (lambda a: a[0, 0, 0], IndexError, "too many indices"),
    (lambda a: a[[0, 1]], TypeError, "not supported"),
    (lambda a: a[1:1], ValueError, "empty"),
    (lambda a: a.expand(6, 4), ValueError, "cannot expand"),
    (lambda a: nn.cat([], 0), ValueError, "at least one"),
    (lambda a: nn.cat([a, nn.Tensor(np.ones((2, 3), np.float32))], 0), ValueError, r"tensors\[1\]"),
    (lambda a: a.split([1, 1], 0), ValueError, "add up to 3"),
    (lambda a: a ** a, TypeError, "not supported between two tensors"),
]


@pytest.mark.parametrize("fn,error,message", ERRORS)
def test_errors_name_the_problem(fn, error, message):
    a = nn.Tensor(np.ones((3, 4), np.float32))
    with pytest.raises(error, match=message):
        fn(a)


@pytest.mark.parametrize("op", ["add", "sub"])
def test_gradient_handed_on_by_add_survives_a_later_reader(op):
    """h = a (+|-) exp(a) with a also read by a later operation: add hands dy
    on to one input without a copy; the other input's rule must still see dy
    unchanged when the later reader has added into a's gradient."""
    (x,), (tx,) = both((3, 5))

    def graph(lib, x):
        a = x * 2.0
        b = a.exp()
        c = a * 3.0
        h = a + b if op == "add" else a - b
        return h, c

    w1 = RNG.uniform(-1, 1, (3, 5)).astype(np.float32)
    w2 = RNG.uniform(-1, 1, (3, 5)).astype(np.float32)
    h, c = graph(nn, x)
    th, tc = graph(torch, tx)
    ((h * nn.Tensor(w1)).sum() + (c * nn.Tensor(w2)).sum()).backward()
    ((th * torch.from_numpy(w1)).sum() + (tc * torch.from_numpy(w2)).sum()).backward()
    np.testing.assert_allclose(x.grad.sync(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
