"""Operations on Tensors: each checks its Python arguments, calls one C
operation and wraps the step-owned result. Shape and dtype rules are the C
library's; its message becomes the exception's."""
import ctypes
import math
import numbers

import numpy as np

from . import _lib
from ._arguments import (_INT_MAX, _both_scalars, _dim, _float, _implicit_dim, _int,  # noqa: F401 (compare.py's)
                         _optional, _reduced, _result, _same_shape, _tensor)
from ._lib import NN_MAX_DIMS, lib
from ._structs import ConvTranspose2dParams, Pool2dParams
from .losses import (_reduction, binary_cross_entropy_with_logits, cross_entropy,  # noqa: F401 (F.* re-exported)
                     l1_loss, mse_loss, nll_loss, smooth_l1_loss)
from .tensor import Tensor, as_host_array


def relu(x, inplace=False):
    """max(x, 0). inplace=True is accepted (torch's F.relu takes it); the
    result is a new tensor all the same, x keeps its values."""
    if type(x) is not Tensor:  # the common case stays a single check
        _tensor(x, "relu", "x")
    return _same_shape(lib.nn_relu(x._h), x, "nn_relu")


def _elementwise(name, doc, inplace=False):
    """The operation nn_<name> of one tensor, a row of the library's
    shaders/unary_ops.h, as a function of a Tensor; with inplace, taking
    torch's inplace=False argument (as relu does)."""
    function = _lib.declare(f"nn_{name}", _lib.c_tensor_p, [_lib.c_tensor_p])
    what = f"nn_{name}"

    def operation(x):
        if type(x) is not Tensor:
            _tensor(x, name, "x")
        return _same_shape(function(x._h), x, what)

    if inplace:
        plain = operation

        def operation(x, inplace=False):  # noqa: F811 - the same with torch's argument
            return plain(x)

    operation.__name__ = operation.__qualname__ = name
    operation.__doc__ = doc
    return operation


sigmoid = _elementwise("sigmoid", "1 / (1 + exp(-x)), elementwise (torch.sigmoid).")
tanh = _elementwise("tanh", "The hyperbolic tangent, elementwise (torch.tanh).")
neg = _elementwise("neg", "-x, elementwise (torch.neg).")
exp = _elementwise("exp", "e ** x, elementwise (torch.exp).")
log = _elementwise("log", "The natural logarithm, elementwise: NaN below 0, -inf at 0 (torch.log).")
sqrt = _elementwise("sqrt", "The square root, elementwise: NaN below 0 (torch.sqrt).")
abs = _elementwise("abs", "|x|, elementwise; gradient sign(x), 0 at 0 (torch.abs).")  # noqa: A001
silu = _elementwise("silu", "x * sigmoid(x), elementwise (F.silu).", inplace=True)
relu6 = _elementwise("relu6", "min(max(x, 0), 6), elementwise (F.relu6).", inplace=True)
hardswish = _elementwise("hardswish", "x * relu6(x + 3) / 6, elementwise (F.hardswish).", inplace=True)
hardsigmoid = _elementwise("hardsigmoid", "relu6(x + 3) / 6, elementwise (F.hardsigmoid).", inplace=True)
softsign = _elementwise("softsign", "x / (1 + |x|), elementwise (F.softsign).")


def _with_scalars(name, count):
    """The C function nn_<name>(x, `count` floats), a row of unary_ops.h with
    parameters; the library checks their values and names the bad one."""
    return _lib.declare(f"nn_{name}", _lib.c_tensor_p, [_lib.c_tensor_p] + [ctypes.c_float] * count)


_gelu = _lib.declare("nn_gelu", _lib.c_tensor_p, [_lib.c_tensor_p, ctypes.c_bool])
_leaky_relu = _with_scalars("leaky_relu", 1)
_elu = _with_scalars("elu", 1)
_softplus = _with_scalars("softplus", 2)
_clamp = _with_scalars("clamp", 2)
_pow_scalar = _with_scalars("pow_scalar", 1)
_add_scalar = _with_scalars("add_scalar", 1)
_mul_scalar = _with_scalars("mul_scalar", 1)
_rsub_scalar = _with_scalars("rsub_scalar", 1)
_rdiv_scalar = _with_scalars("rdiv_scalar", 1)


def gelu(x, approximate="none"):
    """x * Phi(x) (Phi the standard normal CDF), or with approximate='tanh'
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (F.gelu)."""
    px = _tensor(x, "gelu", "x")
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _same_shape(_gelu(px, approximate == "tanh"), x, "nn_gelu")


def leaky_relu(x, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x (F.leaky_relu)."""
    px = _tensor(x, "leaky_relu", "x")
    slope = _float(negative_slope, "leaky_relu", "negative_slope")
    return _same_shape(_leaky_relu(px, slope), x, "nn_leaky_relu")


def elu(x, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x) - 1) (F.elu)."""
    px = _tensor(x, "elu", "x")
    return _same_shape(_elu(px, _float(alpha, "elu", "alpha")), x, "nn_elu")


def softplus(x, beta=1, threshold=20):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold
    (F.softplus); beta must be > 0."""
    px = _tensor(x, "softplus", "x")
    b, t = _float(beta, "softplus", "beta"), _float(threshold, "softplus", "threshold")
    return _same_shape(_softplus(px, b, t), x, "nn_softplus")


def clamp(x, min=None, max=None):  # noqa: A002 - torch.clamp's argument names
    """x limited to [min, max]; either side may be None, not both. min is
    applied first, so min > max gives max (torch.clamp). The gradient is 1
    on [min, max], bounds included, 0 outside."""
    px = _tensor(x, "clamp", "x")
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must not be None")
    lo = -np.inf if min is None else _float(min, "clamp", "min")
    hi = np.inf if max is None else _float(max, "clamp", "max")
    return _same_shape(_clamp(px, lo, hi), x, "nn_clamp")


def pow(x, exponent):  # noqa: A001 - torch.pow's name
    """x ** exponent for a number exponent (torch.pow): NaN for negative x with
    a non-integer exponent; x ** 0 is 1."""
    px = _tensor(x, "pow", "x")
    return _same_shape(_pow_scalar(px, _float(exponent, "pow", "exponent")), x, "nn_pow_scalar")


def add_scalar(x, s):
    """x + s for a number s."""
    return _same_shape(_add_scalar(_tensor(x, "add_scalar", "x"), _float(s, "add_scalar", "s")), x,
                       "nn_add_scalar")


def mul_scalar(x, s):
    """x * s for a number s."""
    return _same_shape(_mul_scalar(_tensor(x, "mul_scalar", "x"), _float(s, "mul_scalar", "s")), x,
                       "nn_mul_scalar")


def rsub_scalar(x, s):
    """s - x for a number s."""
    return _same_shape(_rsub_scalar(_tensor(x, "rsub_scalar", "x"), _float(s, "rsub_scalar", "s")), x,
                       "nn_rsub_scalar")


def rdiv_scalar(x, s):
    """s / x for a number s."""
    return _same_shape(_rdiv_scalar(_tensor(x, "rdiv_scalar", "x"), _float(s, "rdiv_scalar", "s")), x,
                       "nn_rdiv_scalar")


def dropout(x, p=0.5, training=True, inplace=False):
    """PyTorch's dropout: in training, zero each element with probability p
    (0 <= p < 1) and scale the rest by 1 / (1 - p), with a mask drawn on the
    device from the generator (nn_engine.manual_seed); otherwise x unchanged."""
    px = _tensor(x, "dropout", "x")
    rate = _float(p, "dropout", "p")
    return _same_shape(lib.nn_dropout(px, rate, bool(training)), x, "nn_dropout")


def softmax(x, dim=-1):
    """Softmax along dim (F.softmax), the last dimension by default; dim may
    be negative."""
    px = _tensor(x, "softmax", "x")
    if dim is None:
        dim = _implicit_dim(x, None, "softmax")
    if dim == -1:
        return _same_shape(lib.nn_softmax(px), x, "nn_softmax")
    return _same_shape(_softmax_dim(px, _dim(dim, "softmax")), x, "nn_softmax_dim")


def maxpool2d(x, pool_size=2, stride=2, padding=0):
    """Max pooling over pool_size x pool_size windows of x [N, C, H, W]."""
    px = _tensor(x, "maxpool2d", "x")
    k = _int(pool_size, "maxpool2d", "pool_size", 1)
    s = _int(stride, "maxpool2d", "stride", 1)
    p = _int(padding, "maxpool2d", "padding", 0)
    return _result(lib.nn_maxpool2d_ex(px, k, s, p), x, "nn_maxpool2d")


def flatten(x):
    """[N, ...] -> [N, rest], sharing x's storage."""
    return _result(lib.nn_flatten(_tensor(x, "flatten", "x")), x, "nn_flatten")


def reshape(x, shape):
    """A view of x with another shape (one dimension may be -1; () for a
    one-element x: 0-dim)."""
    px = _tensor(x, "reshape", "x")
    try:
        dims = [int(d) for d in shape]
    except (TypeError, ValueError):
        raise TypeError(f"reshape: shape must be a sequence of ints, got {shape!r}") from None
    if not dims:
        if x.numel() != 1:
            raise ValueError(f"reshape: shape () holds one element, the tensor {x.numel()} (shape {x.shape})")
        return Tensor._result(lib.nn_reshape(px, 1, (ctypes.c_int64 * 1)(1)), x._h.ctx, "nn_reshape", ())
    if not 1 <= len(dims) <= NN_MAX_DIMS:
        raise ValueError(f"reshape: shape must have 1 to {NN_MAX_DIMS} dimensions, got {len(dims)}")
    arr = (ctypes.c_int64 * len(dims))(*dims)
    return _result(lib.nn_reshape(px, len(dims), arr), x, "nn_reshape")


def matmul(a, b, transA=False, transB=False):
    """a @ b with torch.matmul's rules (1-D operands, broadcasting batch
    dimensions); for 2-D tensors op(a) @ op(b), op transposing where the
    seed's flag is set."""
    pa, pb = _tensor(a, "matmul", "a"), _tensor(b, "matmul", "b")
    if a.ndim == 2 and b.ndim == 2:
        return _result(lib.nn_matmul(pa, pb, bool(transA), bool(transB)), a, "nn_matmul")
    if transA or transB:
        raise ValueError(f"matmul: transA and transB need 2-D a and b, got {a.ndim}-D and {b.ndim}-D")
    return _result(_matmul_batched(pa, pb), a, "nn_matmul_batched")


def mm(a, b):
    """a @ b for two 2-D tensors (torch.mm)."""
    _tensor(a, "mm", "a"), _tensor(b, "mm", "b")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"mm: a and b must be 2-D, got shapes {a.shape} and {b.shape} (matmul broadcasts)")
    return matmul(a, b)


def bmm(a, b):
    """Batched a @ b for two 3-D tensors of one batch size (torch.bmm)."""
    _tensor(a, "bmm", "a"), _tensor(b, "bmm", "b")
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0]:
        raise ValueError(f"bmm: a and b must be 3-D with one batch size, got shapes {a.shape} and {b.shape}")
    return matmul(a, b)


def _binary(name, a, b, scalar):
    """nn_<name>(a, b) broadcasting two Tensors (NumPy's rule); a number on
    either side goes to scalar(tensor, number, tensor_first)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return Tensor._result(getattr(lib, f"nn_{name}")(a._ptr(), b._ptr()), a._h.ctx, f"nn_{name}",
                              () if _both_scalars(a, b) else None)
    if isinstance(a, Tensor) and isinstance(b, numbers.Real) and not isinstance(b, bool):
        return scalar(a, float(b), True)
    if isinstance(b, Tensor) and isinstance(a, numbers.Real) and not isinstance(a, bool):
        return scalar(b, float(a), False)
    raise TypeError(f"{name}: a and b must be Tensors or numbers, one a Tensor; got {type(a).__name__} and "
                    f"{type(b).__name__}")


def add(a, b):
    """a + b, broadcasting (torch.add); either may be a number."""
    return _binary("add", a, b, lambda t, s, first: add_scalar(t, s))


def sub(a, b):
    """a - b, broadcasting (torch.sub); either may be a number."""
    return _binary("sub", a, b, lambda t, s, first: add_scalar(t, -s) if first else rsub_scalar(t, s))


def mul(a, b):
    """a * b, broadcasting (torch.mul); either may be a number."""
    return _binary("mul", a, b, lambda t, s, first: mul_scalar(t, s))


def _reciprocal(s):
    # x / 0 is x * inf (inf, or NaN at 0), as in PyTorch.
    return 1.0 / s if s != 0 else math.copysign(math.inf, s)


def div(a, b):
    """a / b, broadcasting (torch.div); either may be a number."""
    return _binary("div", a, b, lambda t, s, first: mul_scalar(t, _reciprocal(s)) if first else rdiv_scalar(t, s))


def _no_scalar(name):
    def refuse(t, s, first):
        raise TypeError(f"{name}: needs two Tensors (as torch.{name}); for a number use clamp")
    return refuse


def maximum(a, b):
    """The larger of a and b elementwise, broadcasting; NaN propagates and ties
    split the gradient (torch.maximum)."""
    return _binary("maximum", a, b, _no_scalar("maximum"))


def minimum(a, b):
    """The smaller of a and b elementwise, broadcasting (torch.minimum)."""
    return _binary("minimum", a, b, _no_scalar("minimum"))


def scale(x, factor):
    px = _tensor(x, "scale", "x")
    return _same_shape(lib.nn_scale(px, _float(factor, "scale", "factor")), x, "nn_scale")


def sum(x):  # noqa: A001 - the seed's and NumPy's name
    """Sum of all elements, as a 0-dim tensor."""
    return _reduced(lib.nn_sum(_tensor(x, "sum", "x")), x, "nn_sum")


def mean(x):
    """Mean of all elements, as a 0-dim tensor."""
    return _reduced(lib.nn_mean(_tensor(x, "mean", "x")), x, "nn_mean")


def add_bias(x, bias):
    """x + bias along dimension 1: x [N, C] or [N, C, H, W], bias [C]."""
    px, pb = _tensor(x, "add_bias", "x"), _tensor(bias, "add_bias", "bias")
    return _same_shape(lib.nn_add_bias(px, pb), x, "nn_add_bias")


def bias_relu(x, bias):
    """relu(x + bias) (the seed fused these; here they are two operations)."""
    return relu(add_bias(x, bias))


def linear(x, weight, bias=None):
    """x @ weight.T + bias with weight [out, in] (PyTorch's layout)."""
    px, pw = _tensor(x, "linear", "x"), _tensor(weight, "linear", "weight")
    pb = None if bias is None else _tensor(bias, "linear", "bias")
    return _result(lib.nn_linear(px, pw, pb), x, "nn_linear")


def conv2d(input=None, weight=None, bias=None, stride=1, padding=0, dilation=1, groups=1, actType=0, *,
           x=None, filters=None):
    """torch.nn.functional.conv2d of input [N, C, H, W] with weight [OC, C /
    groups, KH, KW]: stride, padding (ints, pairs, or 'same' / 'valid'),
    dilation and groups as PyTorch's. The seed's names keep working: x= and
    filters= for input and weight, and actType 1 applies relu (the seed's
    fused activation; by keyword here, in order in nn_engine.conv2d)."""
    input = _seed_alias(input, x, "input", "x")
    weight = _seed_alias(weight, filters, "weight", "filters")
    px, pw = _tensor(input, "conv2d", "input"), _tensor(weight, "conv2d", "weight")
    pb = None if bias is None else _tensor(bias, "conv2d", "bias")
    if actType not in (0, 1):
        raise ValueError(f"conv2d: actType must be 0 (none) or 1 (relu), got {actType!r}")
    sh, sw = _pair(stride, "conv2d", "stride", 1)
    dh, dw = _pair(dilation, "conv2d", "dilation", 1)
    g = _int(groups, "conv2d", "groups", 1)
    trim = (0, 0)
    if isinstance(padding, str):
        (ph, pw_), trim = _string_padding(padding, weight, (sh, sw), (dh, dw))
    else:
        ph, pw_ = _pair(padding, "conv2d", "padding", 0)
    params = _lib.Conv2dParams(sh, sw, ph, pw_, dh, dw, g)
    y = _result(lib.nn_conv2d_ex(px, pw, pb, ctypes.byref(params)), input, "nn_conv2d")
    for dim, extra in ((2, trim[0]), (3, trim[1])):  # 'same' with an odd total padding: PyTorch pads one more after
        if extra:
            y = _result(_slice(y._ptr(), dim, 1, _INT_MAX, 1), input, "nn_slice")
    return relu(y) if actType == 1 else y


def seed_conv2d(x, filters, bias=None, stride=1, padding=0, actType=0, *, dilation=1, groups=1):
    """The seed engine's conv2d, nn_engine.conv2d, in its argument order:
    actType 1 applies relu. PyTorch's dilation and groups come by keyword;
    nn_engine.functional.conv2d is PyTorch's F.conv2d."""
    return conv2d(x, filters, bias, stride, padding, dilation, groups, actType)


def _seed_alias(value, alias, name, alias_name):
    if alias is None:
        return value
    if value is not None:
        raise TypeError(f"conv2d: got both {name} and its older name {alias_name}")
    return alias


def _string_padding(padding, weight, stride, dilation):
    """PyTorch's padding='valid' (none) and 'same' (output size = input size,
    stride 1): total padding dilation * (kernel - 1) per axis, the odd one
    after. Returns the symmetric padding to run and, per axis, whether one
    leading row (column) of its output is to be dropped (the odd extra one
    placed before instead of after)."""
    if padding == "valid":
        return (0, 0), (0, 0)
    if padding != "same":
        raise ValueError(f"conv2d: padding must be an int, a pair, 'same' or 'valid', got {padding!r}")
    if stride != (1, 1):
        raise ValueError(f"conv2d: padding='same' is not supported for strided convolutions (stride {stride})")
    kernel = weight.shape[2:4] if len(weight.shape) == 4 else (1, 1)
    totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
    return tuple((t + 1) // 2 for t in totals), tuple(t % 2 for t in totals)


def _labels_ptr(labels, logits, device=None):
    """An int32 C tensor of class indices: the labels Tensor itself when it is
    int32, else a converted copy (float labels, as the seed stored them, or a
    NumPy array) checked against the logits' classes. Returns (pointer,
    keepalive)."""
    if isinstance(labels, Tensor) and labels.dtype == np.int32:
        return labels._ptr(), labels
    logits_shape = logits.shape
    values = labels.sync() if isinstance(labels, Tensor) else labels
    array = as_host_array(values, np.int32, "softmax_ce: labels")
    classes = logits_shape[-1] if logits_shape else 0
    if array.size and (array.min() < 0 or array.max() >= classes):
        raise ValueError(f"softmax_ce: labels must be class indices in [0, {classes}), got "
                         f"values from {array.min()} to {array.max()}")
    copy = Tensor(array, track=False, dtype=np.int32, device=device)
    return copy._ptr(), copy


def softmax_ce(logits, labels):
    """Mean cross-entropy of softmax(logits) [N, C] against class indices
    labels [N] (an int32 or float32 Tensor, or an integer array); returns a
    0-dim Tensor."""
    pl = _tensor(logits, "softmax_ce", "logits")
    if not isinstance(labels, (Tensor, np.ndarray, list, tuple)):
        raise TypeError(f"softmax_ce: labels must be a Tensor or an array of class indices, "
                        f"got {type(labels).__name__}")
    py, keep = _labels_ptr(labels, logits, logits._h.ctx)
    result = Tensor._result(lib.nn_softmax_cross_entropy(pl, py), logits._h.ctx, "nn_softmax_cross_entropy", (),
                            np.dtype(np.float32))
    del keep  # the tape holds its own reference to the labels
    return result


# ---- normalisation (torch.nn.functional's batch_norm, layer_norm, group_norm) ----

_CUMULATIVE = -1.0  # the library's NN_BATCH_NORM_CUMULATIVE: momentum=None
_batch_norm = _lib.declare("nn_batch_norm_counted", _lib.c_tensor_p,
                           [_lib.c_tensor_p] * 6 + [ctypes.c_bool, ctypes.c_float, ctypes.c_float])
_layer_norm = _lib.declare("nn_layer_norm", _lib.c_tensor_p,
                           [_lib.c_tensor_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), _lib.c_tensor_p,
                            _lib.c_tensor_p, ctypes.c_float])
_group_norm = _lib.declare("nn_group_norm", _lib.c_tensor_p,
                           [_lib.c_tensor_p, ctypes.c_int, _lib.c_tensor_p, _lib.c_tensor_p, ctypes.c_float])


def _batch_norm_call(input, running_mean, running_var, weight, bias, training, momentum, eps,
                     num_batches_tracked=None, fn="batch_norm"):
    px = _tensor(input, fn, "input")
    rate = _CUMULATIVE if momentum is None else _float(momentum, fn, "momentum")
    if momentum is not None and not 0.0 <= rate <= 1.0:
        raise ValueError(f"{fn}: momentum must be in [0, 1] or None, got {momentum!r}")
    if momentum is None and training and running_mean is not None and num_batches_tracked is None:
        raise ValueError(f"{fn}: momentum=None (the cumulative average) needs num_batches_tracked")
    ptr = _batch_norm(px, _optional(running_mean, fn, "running_mean"), _optional(running_var, fn, "running_var"),
                      _optional(num_batches_tracked, fn, "num_batches_tracked"), _optional(weight, fn, "weight"),
                      _optional(bias, fn, "bias"), bool(training), rate, _float(eps, fn, "eps"))
    return _same_shape(ptr, input, "nn_batch_norm")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    """torch.nn.functional.batch_norm over dimension 1 of input [N, C, ...]:
    in training (or with running_mean None) the batch's statistics, and in
    training the running statistics (when given) are updated on the device
    with momentum (the variance unbiased); otherwise the running statistics."""
    return _batch_norm_call(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _shape_tuple(value, fn, name):
    dims = (value,) if isinstance(value, numbers.Integral) else tuple(value)
    if not dims or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1 for d in dims):
        raise ValueError(f"{fn}: {name} must be a positive int or a tuple of them, got {value!r}")
    return tuple(int(d) for d in dims)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.layer_norm over the trailing dimensions
    normalized_shape (an int or a tuple) of input."""
    px = _tensor(input, "layer_norm", "input")
    dims = _shape_tuple(normalized_shape, "layer_norm", "normalized_shape")
    shape = (ctypes.c_int64 * len(dims))(*dims)
    ptr = _layer_norm(px, len(dims), shape, _optional(weight, "layer_norm", "weight"),
                      _optional(bias, "layer_norm", "bias"), _float(eps, "layer_norm", "eps"))
    return _same_shape(ptr, input, "nn_layer_norm")


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.group_norm of input [N, C, ...] in num_groups groups."""
    px = _tensor(input, "group_norm", "input")
    groups = _int(num_groups, "group_norm", "num_groups", 1)
    ptr = _group_norm(px, groups, _optional(weight, "group_norm", "weight"), _optional(bias, "group_norm", "bias"),
                      _float(eps, "group_norm", "eps"))
    return _same_shape(ptr, input, "nn_group_norm")


# ---- 2-D pooling with PyTorch's arguments ----

_c_pool2d_params_p = ctypes.POINTER(Pool2dParams)
_maxpool2d_window = _lib.declare("nn_maxpool2d_window", _lib.c_tensor_p, [_lib.c_tensor_p, _c_pool2d_params_p])
_avgpool2d = _lib.declare("nn_avgpool2d", _lib.c_tensor_p,
                          [_lib.c_tensor_p, _c_pool2d_params_p, ctypes.c_bool, ctypes.c_int])
_adaptive_maxpool2d = _lib.declare("nn_adaptive_maxpool2d", _lib.c_tensor_p,
                                   [_lib.c_tensor_p, ctypes.c_int, ctypes.c_int])
_adaptive_avgpool2d = _lib.declare("nn_adaptive_avgpool2d", _lib.c_tensor_p,
                                   [_lib.c_tensor_p, ctypes.c_int, ctypes.c_int])


def _pair(value, fn, name, minimum):
    """An int or a pair of ints (height, width), as PyTorch's _pair."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{fn}: {name} must be an int or a pair of ints, got {value!r}")
        return _int(value[0], fn, name, minimum), _int(value[1], fn, name, minimum)
    v = _int(value, fn, name, minimum)
    return v, v


def _window(fn, kernel_size, stride, padding, dilation, ceil_mode):
    kh, kw = _pair(kernel_size, fn, "kernel_size", 1)
    sh, sw = (kh, kw) if stride is None or stride == [] or stride == () else _pair(stride, fn, "stride", 1)
    ph, pw = _pair(padding, fn, "padding", 0)
    dh, dw = _pair(dilation, fn, "dilation", 1)
    return Pool2dParams(kh, kw, sh, sw, ph, pw, dh, dw, bool(ceil_mode))


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """torch.nn.functional.max_pool2d of x [N, C, H, W] or [C, H, W]: padding
    never wins, the first maximum of a window wins ties, a NaN wins."""
    px = _tensor(x, "max_pool2d", "x")
    window = _window("max_pool2d", kernel_size, stride, padding, dilation, ceil_mode)
    return _result(_maxpool2d_window(px, ctypes.byref(window)), x, "nn_maxpool2d_window")


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch.nn.functional.avg_pool2d of x [N, C, H, W] or [C, H, W]."""
    px = _tensor(x, "avg_pool2d", "x")
    window = _window("avg_pool2d", kernel_size, stride, padding, 1, ceil_mode)
    divisor = 0 if divisor_override is None else _int(divisor_override, "avg_pool2d", "divisor_override", 1)
    return _result(_avgpool2d(px, ctypes.byref(window), bool(count_include_pad), divisor), x, "nn_avgpool2d")


def _output_size(fn, x, output_size):
    """(out_h, out_w) from an int or a pair whose None entries keep x's size."""
    pair = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size, output_size)
    if len(pair) != 2:
        raise ValueError(f"{fn}: output_size must be an int or a pair, got {output_size!r}")
    if any(v is None for v in pair) and len(x.shape) < 2:
        raise ValueError(f"{fn}: x must be [N, C, H, W] or [C, H, W], got shape {x.shape}")
    return tuple(x.shape[-2 + i] if v is None else _int(v, fn, "output_size", 1) for i, v in enumerate(pair))


def adaptive_avg_pool2d(x, output_size):
    """torch.nn.functional.adaptive_avg_pool2d: output (i, j) averages rows
    [floor(i H / oh), ceil((i + 1) H / oh)) and likewise columns."""
    px = _tensor(x, "adaptive_avg_pool2d", "x")
    oh, ow = _output_size("adaptive_avg_pool2d", x, output_size)
    return _result(_adaptive_avgpool2d(px, oh, ow), x, "nn_adaptive_avgpool2d")


def adaptive_max_pool2d(x, output_size):
    """torch.nn.functional.adaptive_max_pool2d (without return_indices)."""
    px = _tensor(x, "adaptive_max_pool2d", "x")
    oh, ow = _output_size("adaptive_max_pool2d", x, output_size)
    return _result(_adaptive_maxpool2d(px, oh, ow), x, "nn_adaptive_maxpool2d")


# ---- softmax / log_softmax along any dimension (the losses are losses.py's) ----

_softmax_dim = _lib.declare("nn_softmax_dim", _lib.c_tensor_p, [_lib.c_tensor_p, ctypes.c_int])
_log_softmax = _lib.declare("nn_log_softmax", _lib.c_tensor_p, [_lib.c_tensor_p, ctypes.c_int])
def log_softmax(x, dim=None):
    """log(softmax(x)) along dim (F.log_softmax), computed as x - max -
    log(sum(exp(x - max))), never through the softmax."""
    px = _tensor(x, "log_softmax", "x")
    return _same_shape(_log_softmax(px, _implicit_dim(x, dim, "log_softmax")), x, "nn_log_softmax")


# ---- batched matmul, embedding, scaled dot-product attention ----

_matmul_batched = _lib.declare("nn_matmul_batched", _lib.c_tensor_p, [_lib.c_tensor_p, _lib.c_tensor_p])
_embedding = _lib.declare("nn_embedding", _lib.c_tensor_p, [_lib.c_tensor_p, _lib.c_tensor_p, ctypes.c_int])
_sdpa = _lib.declare("nn_scaled_dot_product_attention", _lib.c_tensor_p,
                     [_lib.c_tensor_p] * 4 + [ctypes.c_bool, ctypes.c_float])
_transpose = _lib.declare("nn_transpose", _lib.c_tensor_p, [_lib.c_tensor_p, ctypes.c_int, ctypes.c_int])
_slice = _lib.declare("nn_slice", _lib.c_tensor_p,
                      [_lib.c_tensor_p, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64])
_mean_dims = _lib.declare("nn_mean_dims", _lib.c_tensor_p,
                          [_lib.c_tensor_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_bool])


def _indices_ptr(indices, fn, device=None):
    """An int32 C tensor of indices: the Tensor itself when int32, else a
    converted copy (integer arrays, whole-valued floats). Returns (pointer,
    keepalive)."""
    if isinstance(indices, Tensor) and indices.dtype == np.int32:
        return indices._ptr(), indices
    if not isinstance(indices, (Tensor, np.ndarray, list, tuple)):
        raise TypeError(f"{fn}: input must be a Tensor or an array of indices, got {type(indices).__name__}")
    values = indices.sync() if isinstance(indices, Tensor) else indices
    copy = Tensor(as_host_array(values, np.int32, f"{fn}: input"), track=False, dtype=np.int32, device=device)
    return copy._ptr(), copy


def _padding_index(padding_idx, num, fn):
    """PyTorch's padding_idx (None, or in [-num, num): negative counts from
    the end) as the library's (-1 for none)."""
    if padding_idx is None:
        return -1
    index = _int(padding_idx, fn, "padding_idx", -num) if isinstance(padding_idx, numbers.Integral) else None
    if index is None or not -num <= index < num:
        raise ValueError(f"{fn}: padding_idx must be within num_embeddings ({num}), got {padding_idx!r}")
    return index + num if index < 0 else index


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,  # noqa: A002 - torch's names
              scale_grad_by_freq=False, sparse=False):
    """Rows of weight [num, dim] picked by integer indices of any shape
    (F.embedding): [..., dim]. Row padding_idx gets no gradient; an index
    outside [0, num) raises at the read."""
    pw = _tensor(weight, "embedding", "weight")
    for name, value, default in (("max_norm", max_norm, None), ("scale_grad_by_freq", scale_grad_by_freq, False),
                                 ("sparse", sparse, False)):
        if value != default:
            raise ValueError(f"embedding: {name}={value!r} is not supported (only {default!r})")
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D [num_embeddings, embedding_dim], got shape "
                         f"{tuple(weight.shape)}")
    padding = _padding_index(padding_idx, weight.shape[0], "embedding")
    pi, keep = _indices_ptr(input, "embedding", weight._h.ctx)
    result = _result(_embedding(pi, pw, padding), weight, "nn_embedding")
    del keep  # the tape holds its own reference to the indices
    return result


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """softmax(query key^T * scale + attn_mask) value over the last two
    dimensions (F.scaled_dot_product_attention): attn_mask an additive float
    Tensor broadcastable to [..., L, S] (a boolean array is converted:
    False -> -inf); scale None means 1 / sqrt(E). No dropout."""
    fn = "scaled_dot_product_attention"
    pq, pk, pv = _tensor(query, fn, "query"), _tensor(key, fn, "key"), _tensor(value, fn, "value")
    if _float(dropout_p, fn, "dropout_p") != 0.0:
        raise ValueError(f"{fn}: dropout_p must be 0.0 (attention dropout is not supported), got {dropout_p!r}")
    s = 0.0 if scale is None else _float(scale, fn, "scale")
    if scale is not None and not s > 0.0:
        raise ValueError(f"{fn}: scale must be > 0, got {scale!r}")
    keep = None
    if attn_mask is not None and not isinstance(attn_mask, Tensor):
        array = np.asarray(attn_mask)
        if array.dtype == np.bool_:
            array = np.where(array, 0.0, -np.inf)
        keep = Tensor(as_host_array(array, np.float32, f"{fn}: attn_mask"), track=False,
                      device=query._h.ctx if isinstance(query, Tensor) else None)
        attn_mask = keep
    pm = None if attn_mask is None else _tensor(attn_mask, fn, "attn_mask")
    result = _result(_sdpa(pq, pk, pv, pm, bool(is_causal), s), query, "nn_scaled_dot_product_attention")
    del keep
    return result


def _transposed(x, dim0, dim1):
    return _result(_transpose(x._ptr(), dim0, dim1), x, "nn_transpose")


def _sliced(x, dim, start, end):
    return _result(_slice(x._ptr(), dim, start, end, 1), x, "nn_slice")


def _mean_over(x, dim):
    dims = (ctypes.c_int * 1)(dim)
    return _result(_mean_dims(x._ptr(), dims, 1, False), x, "nn_mean_dims")
# ---- convolution extensions: transposed convolution, resampling ----

_slice = _lib.declare("nn_slice", _lib.c_tensor_p, [_lib.c_tensor_p, ctypes.c_int, ctypes.c_int64, ctypes.c_int64,
                                                    ctypes.c_int64])


_conv_transpose2d = _lib.declare("nn_conv_transpose2d", _lib.c_tensor_p,
                                 [_lib.c_tensor_p, _lib.c_tensor_p, _lib.c_tensor_p,
                                  ctypes.POINTER(ConvTranspose2dParams)])
_interpolate = _lib.declare("nn_interpolate", _lib.c_tensor_p,
                            [_lib.c_tensor_p, ctypes.c_int, ctypes.c_int, ctypes.c_double, ctypes.c_double,
                             ctypes.c_int, ctypes.c_bool])
_INTERPOLATE_MODES = {"nearest": 0, "bilinear": 1}


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.nn.functional.conv_transpose2d of input [N, C, H, W] with weight
    [C, OC / groups, KH, KW] (output_padding below the stride)."""
    px, pw = _tensor(input, "conv_transpose2d", "input"), _tensor(weight, "conv_transpose2d", "weight")
    pb = None if bias is None else _tensor(bias, "conv_transpose2d", "bias")
    sh, sw = _pair(stride, "conv_transpose2d", "stride", 1)
    ph, pw_ = _pair(padding, "conv_transpose2d", "padding", 0)
    oph, opw = _pair(output_padding, "conv_transpose2d", "output_padding", 0)
    dh, dw = _pair(dilation, "conv_transpose2d", "dilation", 1)
    g = _int(groups, "conv_transpose2d", "groups", 1)
    params = ConvTranspose2dParams(sh, sw, ph, pw_, oph, opw, dh, dw, g)
    return _result(_conv_transpose2d(px, pw, pb, ctypes.byref(params)), input, "nn_conv_transpose2d")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None):
    """torch.nn.functional.interpolate of input [N, C, H, W], modes 'nearest'
    and 'bilinear': by size (an int or a pair) or scale_factor (a number or a
    pair; the output is floor(size * factor) and, unless
    recompute_scale_factor, the factor maps positions back, as PyTorch's)."""
    fn = "interpolate"
    px = _tensor(input, fn, "input")
    if mode not in _INTERPOLATE_MODES:
        raise ValueError(f"{fn}: mode must be 'nearest' or 'bilinear', got {mode!r}")
    if align_corners is not None and mode == "nearest":
        raise ValueError(f"{fn}: align_corners option can only be set with the interpolating mode 'bilinear'")
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{fn}: give either size or scale_factor, not {'both' if size is not None else 'neither'}")
    out_h = out_w = 0
    scale_h = scale_w = 0.0
    if size is not None:
        out_h, out_w = _pair(size, fn, "size", 1)
    else:
        factors = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor, scale_factor)
        if len(factors) != 2:
            raise ValueError(f"{fn}: scale_factor must be a number or a pair, got {scale_factor!r}")
        scale_h, scale_w = (_float(f, fn, "scale_factor") for f in factors)
        if recompute_scale_factor:
            if len(input.shape) != 4:
                raise ValueError(f"{fn}: input must be [N, C, H, W], got shape {input.shape}")
            out_h, out_w = int(math.floor(input.shape[2] * scale_h)), int(math.floor(input.shape[3] * scale_w))
            scale_h = scale_w = 0.0
    ptr = _interpolate(px, out_h, out_w, scale_h, scale_w, _INTERPOLATE_MODES[mode], bool(align_corners))
    return _result(ptr, input, "nn_interpolate")
