"""The losses with PyTorch's F.* arguments: each checks its Python
arguments, calls one C loss and wraps the result, 0-dim when reduced."""
import ctypes

import numpy as np

from . import _lib
from ._arguments import _INT_MAX, _float, _int, _optional, _tensor
from .tensor import Tensor

_mse_loss = _lib.declare("nn_mse_loss", _lib.c_tensor_p, [_lib.c_tensor_p, _lib.c_tensor_p, ctypes.c_int])
_l1_loss = _lib.declare("nn_l1_loss", _lib.c_tensor_p, [_lib.c_tensor_p, _lib.c_tensor_p, ctypes.c_int])
_smooth_l1_loss = _lib.declare("nn_smooth_l1_loss", _lib.c_tensor_p,
                               [_lib.c_tensor_p, _lib.c_tensor_p, ctypes.c_int, ctypes.c_float])
_bce_with_logits = _lib.declare("nn_binary_cross_entropy_with_logits", _lib.c_tensor_p,
                                [_lib.c_tensor_p] * 4 + [ctypes.c_int])
_nll_loss = _lib.declare("nn_nll_loss", _lib.c_tensor_p,
                         [_lib.c_tensor_p, _lib.c_tensor_p, _lib.c_tensor_p, ctypes.c_int, ctypes.c_int])
_cross_entropy = _lib.declare("nn_cross_entropy", _lib.c_tensor_p,
                              [_lib.c_tensor_p, _lib.c_tensor_p, _lib.c_tensor_p, ctypes.c_int, ctypes.c_int,
                               ctypes.c_float])

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}  # the C enum nn_reduction


def _reduction(fn, size_average, reduce, reduction):
    """reduction as the C enum; the deprecated size_average and reduce,
    when given, decide as in PyTorch."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else "mean" if size_average else "sum"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{fn}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    return _REDUCTIONS[reduction]


def _loss_result(ptr, like, what, reduction):
    """A loss: 0-dim when reduced (mean or sum), as torch's."""
    return Tensor._result(ptr, like._h.ctx, what, () if reduction != _REDUCTIONS["none"] else None)


def _target(target, fn, float_allowed, device=None):
    """A target Tensor; an array of whole numbers becomes an int32 Tensor
    (class indices), of floats a float32 one where float targets are taken."""
    if isinstance(target, Tensor):
        return target
    array = np.asarray(target)
    if array.dtype.kind in "iub":
        return Tensor(array, dtype=np.int32, device=device)
    if float_allowed and array.dtype.kind == "f":
        return Tensor(array, device=device)
    raise TypeError(f"{fn}: target must be an nn_engine.Tensor or an array of class indices, got "
                    f"{type(target).__name__}")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """(input - target) ** 2, reduced (F.mse_loss)."""
    r = _reduction("mse_loss", size_average, reduce, reduction)
    return _loss_result(_mse_loss(_tensor(input, "mse_loss", "input"), _tensor(target, "mse_loss", "target"), r),
                        input, "nn_mse_loss", r)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    """|input - target|, reduced (F.l1_loss)."""
    r = _reduction("l1_loss", size_average, reduce, reduction)
    return _loss_result(_l1_loss(_tensor(input, "l1_loss", "input"), _tensor(target, "l1_loss", "target"), r),
                        input, "nn_l1_loss", r)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):  # noqa: A002
    """0.5 d ** 2 / beta where |d| < beta, else |d| - 0.5 beta, d = input -
    target, reduced (F.smooth_l1_loss); beta 0 is l1_loss."""
    r = _reduction("smooth_l1_loss", size_average, reduce, reduction)
    b = _float(beta, "smooth_l1_loss", "beta")
    return _loss_result(_smooth_l1_loss(_tensor(input, "smooth_l1_loss", "input"),
                                        _tensor(target, "smooth_l1_loss", "target"), r, b),
                        input, "nn_smooth_l1_loss", r)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                     reduction="mean", pos_weight=None):
    """Binary cross-entropy of sigmoid(input) against target, in a form that
    cannot overflow; weight broadcasts to input, pos_weight along the last
    dimension (F.binary_cross_entropy_with_logits)."""
    fn = "binary_cross_entropy_with_logits"
    r = _reduction(fn, size_average, reduce, reduction)
    return _loss_result(_bce_with_logits(_tensor(input, fn, "input"), _tensor(target, fn, "target"),
                                         _optional(weight, fn, "weight"), _optional(pos_weight, fn, "pos_weight"), r),
                        input, "nn_binary_cross_entropy_with_logits", r)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
             reduction="mean"):
    """-weight[t] * input[n, t, ...] for log-probabilities input [N, C, ...]
    and class indices target [N, ...] (F.nll_loss); the mean divides by the
    weights of the targets that are not ignore_index."""
    r = _reduction("nll_loss", size_average, reduce, reduction)
    t = _target(target, "nll_loss", False, input._h.ctx if isinstance(input, Tensor) else None)
    index = _int(ignore_index, "nll_loss", "ignore_index", -_INT_MAX - 1)
    return _loss_result(_nll_loss(_tensor(input, "nll_loss", "input"), t._ptr(), _optional(weight, "nll_loss", "weight"),
                                  r, index), input, "nn_nll_loss", r)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,  # noqa: A002
                  reduction="mean", label_smoothing=0.0):
    """nll_loss(log_softmax(input, 1), target) for class indices, or -sum_c
    weight[c] target[c] log_softmax(input)[c] for class probabilities (a
    float target of input's shape), with label_smoothing (F.cross_entropy)."""
    r = _reduction("cross_entropy", size_average, reduce, reduction)
    t = _target(target, "cross_entropy", True, input._h.ctx if isinstance(input, Tensor) else None)
    index = _int(ignore_index, "cross_entropy", "ignore_index", -_INT_MAX - 1)
    smoothing = _float(label_smoothing, "cross_entropy", "label_smoothing")
    return _loss_result(_cross_entropy(_tensor(input, "cross_entropy", "input"), t._ptr(),
                                       _optional(weight, "cross_entropy", "weight"), r, index, smoothing),
                        input, "nn_cross_entropy", r)
