"""softmax / log_softmax along any dimension and the losses (mse, l1,
smooth_l1, binary_cross_entropy_with_logits, nll_loss, cross_entropy with
class indices and probabilities) against PyTorch 1.13: values and the
input's gradient (of sum(loss * r)) for every reduction, at awkward sizes
(C = 7, N = 1, spatial [N, C, 3, 5]) with ignore_index hits, class weights
and label smoothing 0.1; the module classes; the errors."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
TF = torch.nn.functional

import nn_engine as nn  # noqa: E402
from nn_engine import Tensor  # noqa: E402
from nn_engine import functional as F  # noqa: E402

RNG = np.random.default_rng(11)
REDUCTIONS = ["none", "mean", "sum"]


def _data(*shape, lo=-3.0, hi=3.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def _targets(n_shape, classes, ignore_index=-100):
    t = RNG.integers(0, classes, size=n_shape).astype(np.int32)
    t.reshape(-1)[1::4] = ignore_index  # ignore_index hits
    return t


def _compare(ours, theirs, x, rtol=1e-4, atol=1e-5):
    """ours(Tensor x) and theirs(torch x): values, and the gradient of x."""
    xo = Tensor(x, requires_grad=True)
    yo = ours(xo)
    xt = torch.from_numpy(x).requires_grad_()
    yt = theirs(xt)
    r = _data(*(yt.shape if yt.dim() else (1,)), lo=-1, hi=1)
    np.testing.assert_allclose(yo.numpy().ravel(), yt.detach().numpy().ravel(), rtol=rtol, atol=atol)
    nn.sum(nn.mul(nn.reshape(yo, (-1,)), Tensor(r.ravel()))).backward()
    (yt.reshape(-1) * torch.from_numpy(r.ravel())).sum().backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("shape,dim", [((3, 7, 5), 0), ((3, 7, 5), 1), ((3, 7, 5), -1), ((2, 7, 3, 5), -3),
                                       ((1, 7), 0), ((13,), 0)])
def test_softmax_and_log_softmax_along_any_dimension(shape, dim):
    x = _data(*shape)
    _compare(lambda t: F.softmax(t, dim), lambda t: TF.softmax(t, dim), x)
    _compare(lambda t: F.log_softmax(t, dim), lambda t: TF.log_softmax(t, dim), x)
    _compare(nn.Softmax(dim), torch.nn.Softmax(dim), x)
    _compare(nn.LogSoftmax(dim), torch.nn.LogSoftmax(dim), x)


def test_softmax_keeps_its_seed_form_and_log_softmax_is_stable():
    x = _data(4, 7)
    np.testing.assert_allclose(nn.softmax(Tensor(x)).numpy(), TF.softmax(torch.from_numpy(x), -1).numpy(), rtol=1e-5,
                               atol=1e-7)
    big = np.array([[1000.0, 0.0, -1000.0]], dtype=np.float32)
    np.testing.assert_allclose(F.log_softmax(Tensor(big), 1).numpy(), [[0.0, -1000.0, -2000.0]])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(3, 7, 5), (1, 13)])
def test_regression_losses(reduction, shape):
    x, t = _data(*shape), _data(*shape)
    t.reshape(-1)[:3] = x.reshape(-1)[:3] + np.float32(0.25)  # inside smooth_l1's quadratic part
    to, tt = Tensor(t), torch.from_numpy(t)
    _compare(lambda a: F.mse_loss(a, to, reduction=reduction), lambda a: TF.mse_loss(a, tt, reduction=reduction), x)
    _compare(lambda a: F.l1_loss(a, to, reduction=reduction), lambda a: TF.l1_loss(a, tt, reduction=reduction), x)
    for beta in (1.0, 0.5, 0.0):
        _compare(lambda a: F.smooth_l1_loss(a, to, reduction=reduction, beta=beta),
                 lambda a: TF.smooth_l1_loss(a, tt, reduction=reduction, beta=beta), x)
    _compare(lambda a: nn.MSELoss(reduction=reduction)(a, to), lambda a: torch.nn.MSELoss(reduction=reduction)(a, tt), x)
    _compare(lambda a: nn.L1Loss(reduction=reduction)(a, to), lambda a: torch.nn.L1Loss(reduction=reduction)(a, tt), x)
    _compare(lambda a: nn.SmoothL1Loss(reduction=reduction, beta=0.5)(a, to),
             lambda a: torch.nn.SmoothL1Loss(reduction=reduction, beta=0.5)(a, tt), x)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_with_logits(reduction, weighted):
    x, t = _data(3, 5, 7, lo=-30, hi=30), _data(3, 5, 7, lo=0, hi=1)
    w, pw = _data(7, lo=0.2, hi=2), _data(7, lo=0.5, hi=3)
    ours_w = dict(weight=Tensor(w), pos_weight=Tensor(pw)) if weighted else {}
    theirs_w = dict(weight=torch.from_numpy(w), pos_weight=torch.from_numpy(pw)) if weighted else {}
    _compare(lambda a: F.binary_cross_entropy_with_logits(a, Tensor(t), reduction=reduction, **ours_w),
             lambda a: TF.binary_cross_entropy_with_logits(a, torch.from_numpy(t), reduction=reduction, **theirs_w), x)
    _compare(lambda a: nn.BCEWithLogitsLoss(reduction=reduction, **ours_w)(a, Tensor(t)),
             lambda a: torch.nn.BCEWithLogitsLoss(reduction=reduction, **theirs_w)(a, torch.from_numpy(t)), x)


CLASS_SHAPES = [(5, 7), (1, 7), (2, 7, 3, 5)]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", CLASS_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 3])
def test_nll_loss(reduction, shape, weighted, ignore_index):
    x = _data(*shape, lo=-5, hi=0)
    t = _targets((shape[0],) + shape[2:], shape[1], ignore_index)
    w = _data(shape[1], lo=0.2, hi=2)
    wo, wt = (Tensor(w), torch.from_numpy(w)) if weighted else (None, None)
    tt = torch.from_numpy(t.astype(np.int64))
    _compare(lambda a: F.nll_loss(a, Tensor(t, dtype=np.int32), wo, ignore_index=ignore_index, reduction=reduction),
             lambda a: TF.nll_loss(a, tt, wt, ignore_index=ignore_index, reduction=reduction), x)
    _compare(lambda a: nn.NLLLoss(wo, ignore_index=ignore_index, reduction=reduction)(a, t),
             lambda a: torch.nn.NLLLoss(wt, ignore_index=ignore_index, reduction=reduction)(a, tt), x)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", CLASS_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_with_class_indices(reduction, shape, weighted, smoothing):
    x = _data(*shape)
    t = _targets((shape[0],) + shape[2:], shape[1], ignore_index=2)
    w = _data(shape[1], lo=0.2, hi=2)
    wo, wt = (Tensor(w), torch.from_numpy(w)) if weighted else (None, None)
    tt = torch.from_numpy(t.astype(np.int64))
    _compare(lambda a: F.cross_entropy(a, t, wo, ignore_index=2, reduction=reduction, label_smoothing=smoothing),
             lambda a: TF.cross_entropy(a, tt, wt, ignore_index=2, reduction=reduction, label_smoothing=smoothing), x)
    _compare(lambda a: nn.CrossEntropyLoss(wo, reduction=reduction, label_smoothing=smoothing)(a, t),
             lambda a: torch.nn.CrossEntropyLoss(wt, reduction=reduction, label_smoothing=smoothing)(a, tt), x)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", CLASS_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_with_class_probabilities(reduction, shape, weighted, smoothing):
    x = _data(*shape)
    p = _data(*shape, lo=0.05, hi=1)
    p /= p.sum(axis=1, keepdims=True)
    w = _data(shape[1], lo=0.2, hi=2)
    wo, wt = (Tensor(w), torch.from_numpy(w)) if weighted else (None, None)
    _compare(lambda a: F.cross_entropy(a, Tensor(p), wo, reduction=reduction, label_smoothing=smoothing),
             lambda a: TF.cross_entropy(a, torch.from_numpy(p), wt, reduction=reduction, label_smoothing=smoothing), x)


def test_legacy_size_average_and_reduce_pick_the_reduction():
    x, t = _data(4, 7), _data(4, 7)
    for size_average, reduce in [(None, None), (False, None), (None, False), (True, True)]:
        _compare(lambda a: F.mse_loss(a, Tensor(t), size_average, reduce),
                 lambda a: TF.mse_loss(a, torch.from_numpy(t), size_average, reduce), x)


def test_bad_targets_and_arguments_raise_with_the_message():
    x = Tensor(_data(4, 7))
    with pytest.raises(ValueError, match="target 7 at position 2 is outside \\[0, 7\\) and is not ignore_index -100"):
        F.cross_entropy(x, np.array([1, 0, 7, 2], dtype=np.int32)).numpy()
    with pytest.raises(ValueError, match="nn_nll_loss: target \\[5\\] must be input \\[4, 7\\]"):
        F.nll_loss(x, np.zeros(5, dtype=np.int32))
    with pytest.raises(ValueError, match="reduction must be 'none', 'mean' or 'sum'"):
        F.mse_loss(x, x, reduction="average")
    with pytest.raises(ValueError, match="nn_log_softmax: dim 2 is out of range"):
        F.log_softmax(x, 2)
    with pytest.raises(ValueError, match="label_smoothing 1.5"):
        F.cross_entropy(x, np.zeros(4, dtype=np.int32), label_smoothing=1.5)
