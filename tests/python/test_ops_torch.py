"""Every function against PyTorch on random inputs of awkward sizes (odd
sizes, batch 1): forward values and the gradients backward gives."""
import warnings

import numpy as np
import pytest
import torch

import nn_engine as nn

RNG = np.random.default_rng(11)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def pair(array):
    """(nn_engine Tensor, torch tensor) with the same values, both requiring grad."""
    return (nn.Tensor(array, requires_grad=True),
            torch.tensor(array, requires_grad=True))


def check(ours, theirs, tol=1e-5):
    np.testing.assert_allclose(ours.sync(), theirs.detach().numpy(), rtol=tol, atol=tol)


def backward_both(ours, theirs):
    """Backward from sum(out * w) for a random weight w on both sides."""
    w = rand(*ours.shape)
    ours.backward(nn.Tensor(w))
    (theirs * torch.from_numpy(w)).sum().backward()


@pytest.mark.parametrize("shape", [(1, 7), (3, 5, 2), (2, 3, 5, 7)])
def test_relu(shape):
    a, ta = pair(rand(*shape))
    out, tout = nn.relu(a), torch.relu(ta)
    check(out, tout)
    backward_both(out, tout)
    check(a.grad, ta.grad)


@pytest.mark.parametrize("name", ["sigmoid", "tanh"])
@pytest.mark.parametrize("shape", [(1, 7), (3, 5, 2), (2, 3, 5, 7)])
def test_elementwise_functions(name, shape):
    """The rows of the library's shaders/unary_ops.h, each against torch's
    function of that name, with large and tiny magnitudes among the values."""
    x = rand(*shape) * 4
    x.reshape(-1)[:4] = [30.0, -30.0, 1e-4, -0.25][: x.size]
    a, ta = pair(x)
    out, tout = getattr(nn, name)(a), getattr(torch, name)(ta)
    check(out, tout, tol=2e-6)
    backward_both(out, tout)
    check(a.grad, ta.grad, tol=2e-6)


@pytest.mark.parametrize("shape", [(1, 3), (5, 11)])
def test_softmax(shape):
    a, ta = pair(rand(*shape) * 3)
    out, tout = nn.softmax(a), torch.softmax(ta, dim=-1)
    check(out, tout)
    backward_both(out, tout)
    check(a.grad, ta.grad)


@pytest.mark.parametrize("pool,stride,size", [(2, 2, 9), (3, 2, 13), (3, 1, 5)])
def test_maxpool2d(pool, stride, size):
    a, ta = pair(rand(2, 3, size, size + 2))
    out = nn.maxpool2d(a, pool_size=pool, stride=stride)
    tout = torch.nn.functional.max_pool2d(ta, pool, stride)
    check(out, tout)
    backward_both(out, tout)
    check(a.grad, ta.grad)


def test_maxpool2d_defaults_are_2_and_2():
    a = nn.Tensor(rand(1, 1, 6, 6))
    assert nn.maxpool2d(a).shape == (1, 1, 3, 3)


def test_flatten_and_add():
    a, ta = pair(rand(3, 2, 5, 3))
    b, tb = pair(rand(3, 30))
    out, tout = nn.add(nn.flatten(a, 1), b), ta.flatten(1) + tb
    check(out, tout)
    backward_both(out, tout)
    check(a.grad, ta.grad)
    check(b.grad, tb.grad)


@pytest.mark.parametrize("transA,transB", [(False, False), (True, False), (False, True),
                                           (True, True)])
def test_matmul(transA, transB):
    m, k, n = 7, 13, 5
    a, ta = pair(rand(k, m) if transA else rand(m, k))
    b, tb = pair(rand(n, k) if transB else rand(k, n))
    out = nn.matmul(a, b, transA=transA, transB=transB)
    tout = (ta.T if transA else ta) @ (tb.T if transB else tb)
    check(out, tout, 1e-4)
    backward_both(out, tout)
    check(a.grad, ta.grad, 1e-4)
    check(b.grad, tb.grad, 1e-4)


@pytest.mark.parametrize("batch,stride,padding,k", [(1, 1, 0, 3), (3, 2, 1, 5), (2, 4, 2, 11)])
def test_conv_layer(batch, stride, padding, k):
    layer = nn.ConvLayer(3, 5, k, stride=stride, padding=padding)
    size = 23
    x, tx = pair(rand(batch, 3, size, size - 2))
    tw = torch.tensor(layer.filters.sync(), requires_grad=True)
    tb = torch.tensor(layer.bias.sync(), requires_grad=True)
    out = layer(x, relu=True)
    tout = torch.relu(torch.nn.functional.conv2d(tx, tw, tb, stride=stride, padding=padding))
    check(out, tout, 1e-4)
    backward_both(out, tout)
    check(x.grad, tx.grad, 1e-4)
    check(layer.filters.grad, tw.grad, 1e-4)
    check(layer.bias.grad, tb.grad, 1e-4)


@pytest.mark.parametrize("batch", [1, 9])
def test_linear_layer(batch):
    layer = nn.Linear(17, 6)
    assert layer.w.shape == (6, 17) and layer.b.shape == (6,)
    x, tx = pair(rand(batch, 17))
    tw = torch.tensor(layer.w.sync(), requires_grad=True)
    tb = torch.tensor(layer.b.sync(), requires_grad=True)
    out, tout = layer(x), torch.nn.functional.linear(tx, tw, tb)
    check(out, tout, 1e-5)
    backward_both(out, tout)
    check(x.grad, tx.grad, 1e-5)
    check(layer.w.grad, tw.grad, 1e-5)
    check(layer.b.grad, tb.grad, 1e-5)


@pytest.mark.parametrize("labels_as", ["int32 tensor", "float tensor", "int64 array"])
def test_softmax_ce(labels_as):
    logits, tlogits = pair(rand(7, 5) * 2)
    y = RNG.integers(0, 5, 7)
    labels = {"int32 tensor": lambda: nn.Tensor(y, dtype=np.int32),
              "float tensor": lambda: nn.Tensor(y.astype(np.float32)),
              "int64 array": lambda: y}[labels_as]()
    loss = nn.softmax_ce(logits, labels)
    tloss = torch.nn.functional.cross_entropy(tlogits, torch.from_numpy(y))
    assert loss.shape == tloss.shape == ()
    assert loss.item() == pytest.approx(tloss.item(), rel=1e-6)
    loss.backward()
    tloss.backward()
    check(logits.grad, tlogits.grad)


def test_initialisation_follows_pytorch_bounds():
    """kaiming_uniform(a=sqrt(5)) -> weights within 1/sqrt(fan_in), and so are
    the biases; the values spread over that range."""
    layer = nn.ConvLayer(4, 8, 3)
    bound = 1 / np.sqrt(4 * 9)
    for p in (layer.filters.sync(), layer.bias.sync()):
        assert np.abs(p).max() <= bound + 1e-7
    assert np.abs(layer.filters.sync()).max() > 0.9 * bound
    w = nn.Linear(300, 200).w.sync()
    assert abs(w.std() - (1 / np.sqrt(300)) / np.sqrt(3)) < 2e-3


def test_manual_seed_repeats_initialisation():
    nn.manual_seed(123)
    a = nn.Linear(5, 4).w.sync()
    nn.manual_seed(123)
    b = nn.Linear(5, 4).w.sync()
    nn.manual_seed(124)
    c = nn.Linear(5, 4).w.sync()
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_result_grads_kept_only_when_retained_as_in_torch():
    a, ta = pair(rand(3, 5))
    h, th = nn.relu(a), torch.relu(ta)
    g, tg = h * 2.0, th * 2.0
    h.retain_grad()
    th.retain_grad()
    backward_both(g, tg)
    check(h.grad, th.grad)
    check(a.grad, ta.grad)
    assert g.grad is None
    with warnings.catch_warnings():  # torch warns when a non-leaf's .grad is read
        warnings.simplefilter("ignore")
        assert tg.grad is None
