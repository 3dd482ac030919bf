"""Layers with the seed's names: Linear and ConvLayer; Dropout; the
normalisation layers BatchNorm1d, BatchNorm2d, LayerNorm, GroupNorm; the
elementwise activations with PyTorch's names (GELU, LeakyReLU, ELU, SiLU,
ReLU6, Hardswish, Hardsigmoid, Softplus, Sigmoid, Tanh). Weights use PyTorch's
layouts (Linear w: out x in; ConvLayer filters: outC x inC x kH x kW) and
PyTorch's default initialisation: kaiming_uniform_(a=sqrt(5)) for weights,
uniform(+-1/sqrt(fan_in)) for biases, drawn from the context's seeded
generator (nn_engine.manual_seed)."""
import ctypes
import math

import numpy as np

from . import _context
from . import functional as F
from ._context import OWNED, Handle
from ._errors import check, check_ptr
from ._lib import NN_F32, lib
from .module import Module
from .tensor import Tensor


def _positive_int(value, where, name):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1 or value > 2**31 - 1:
        raise ValueError(f"{where}: {name} must be a positive int, got {value!r}")
    return value


def _parameter(shape, fan_in, weight):
    """A persistent float32 tensor that requires grad, initialised like PyTorch."""
    ctx = _context.default_context()
    dims = (ctypes.c_int64 * len(shape))(*shape)
    ptr = check_ptr(lib.nn_tensor_new(ctx.ptr, NN_F32, len(shape), dims), "nn_tensor_new")
    t = Tensor._wrap(Handle(ptr, ctx, OWNED), tuple(shape))
    if weight:
        check(lib.nn_init_kaiming_uniform(ptr, math.sqrt(5.0)), "nn_init_kaiming_uniform")
    else:
        bound = 1.0 / math.sqrt(fan_in)
        check(lib.nn_init_uniform(ptr, -bound, bound), "nn_init_uniform")
    t.requires_grad = True
    return t


class Linear(Module):
    """y = x @ weight.T + bias over the last dimension of x [..., in_features];
    `weight` [out, in], `bias` [out] (None with bias=False). The seed's
    names for them, `w` and `b`, are the same tensors."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features = _positive_int(in_features, "Linear", "in_features")
        self.out_features = _positive_int(out_features, "Linear", "out_features")
        self.weight = _parameter((out_features, in_features), in_features, weight=True)
        self.bias = _parameter((out_features,), in_features, weight=False) if bias else None

    w = property(lambda self: self.weight, lambda self, value: setattr(self, "weight", value))
    b = property(lambda self: self.bias, lambda self, value: setattr(self, "bias", value))

    def forward(self, x, relu=False):
        y = F.linear(x, self.weight, self.bias)
        return F.relu(y) if relu else y

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class ConvLayer(Module):
    """2-D convolution of x [N, inC, H, W]; `weight` (the seed's `filters`)
    [outC, inC / groups, kH, kW], `bias` [outC] (None with bias=False).
    kernel_size, stride, padding and dilation take an int or a pair
    (padding also 'same' or 'valid')."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True):
        super().__init__()
        name = type(self).__name__
        self.in_channels = _positive_int(in_channels, name, "in_channels")
        self.out_channels = _positive_int(out_channels, name, "out_channels")
        self.kernel_size = F._pair(kernel_size, name, "kernel_size", 1)
        self.stride = F._pair(stride, name, "stride", 1)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: padding must be an int, a pair, 'same' or 'valid', got {padding!r}")
            if padding == "same" and self.stride != (1, 1):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = F._pair(padding, name, "padding", 0)
        self.dilation = F._pair(dilation, name, "dilation", 1)
        self.groups = _positive_int(groups, name, "groups")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: groups ({groups}) must divide in_channels ({in_channels}) and "
                             f"out_channels ({out_channels})")
        fan_in = in_channels // groups * self.kernel_size[0] * self.kernel_size[1]
        self._make_parameters((out_channels, in_channels // groups) + self.kernel_size, fan_in, bias)

    def _make_parameters(self, shape, fan_in, bias):
        self.weight = _parameter(shape, fan_in, weight=True)
        self.bias = _parameter((shape[0],), fan_in, weight=False) if bias else None

    filters = property(lambda self: self.weight, lambda self, value: setattr(self, "weight", value))

    def forward(self, x, actType=0, relu=False):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups,
                        actType=1 if relu else actType)

    def extra_repr(self):
        return _conv_repr(self)


def _conv_repr(layer, output_padding=None):
    """torch's extra_repr of a convolution: the settings that differ from the defaults."""
    padding = layer.padding if isinstance(layer.padding, str) else tuple(layer.padding)
    text = (f"{layer.in_channels}, {layer.out_channels}, kernel_size={tuple(layer.kernel_size)}, "
            f"stride={tuple(layer.stride)}")
    if padding != (0, 0):
        text += f", padding={padding}"
    if tuple(layer.dilation) != (1, 1):
        text += f", dilation={tuple(layer.dilation)}"
    if output_padding is not None and tuple(output_padding) != (0, 0):
        text += f", output_padding={tuple(output_padding)}"
    if layer.groups != 1:
        text += f", groups={layer.groups}"
    if layer.bias is None:
        text += ", bias=False"
    return text


class Conv2d(ConvLayer):
    """torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride=1,
    padding=0, dilation=1, groups=1, bias=True): `weight` [out, in / groups,
    kH, kW] and `bias` [out] under PyTorch's state_dict names."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros"):
        if padding_mode != "zeros":
            raise ValueError(f"Conv2d: padding_mode must be 'zeros', got {padding_mode!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose2d(Module):
    """torch.nn.ConvTranspose2d(in_channels, out_channels, kernel_size,
    stride=1, padding=0, output_padding=0, groups=1, bias=True, dilation=1):
    `weight` [in, out / groups, kH, kW], `bias` [out]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros"):
        super().__init__()
        name = "ConvTranspose2d"
        if padding_mode != "zeros":
            raise ValueError(f"{name}: padding_mode must be 'zeros', got {padding_mode!r}")
        self.in_channels = _positive_int(in_channels, name, "in_channels")
        self.out_channels = _positive_int(out_channels, name, "out_channels")
        self.kernel_size = F._pair(kernel_size, name, "kernel_size", 1)
        self.stride = F._pair(stride, name, "stride", 1)
        self.padding = F._pair(padding, name, "padding", 0)
        self.output_padding = F._pair(output_padding, name, "output_padding", 0)
        self.dilation = F._pair(dilation, name, "dilation", 1)
        self.groups = _positive_int(groups, name, "groups")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: groups ({groups}) must divide in_channels ({in_channels}) and "
                             f"out_channels ({out_channels})")
        # PyTorch's fan_in for this layout: weight.size(1) * kH * kW
        fan_in = out_channels // groups * self.kernel_size[0] * self.kernel_size[1]
        self.weight = _parameter((in_channels, out_channels // groups) + self.kernel_size, fan_in, weight=True)
        self.bias = _parameter((out_channels,), fan_in, weight=False) if bias else None

    def forward(self, x):
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)

    def extra_repr(self):
        return _conv_repr(self, self.output_padding)


class Upsample(Module):
    """torch.nn.Upsample(size=None, scale_factor=None, mode='nearest',
    align_corners=None): F.interpolate as a layer. No parameters."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None):
        super().__init__()
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners

    def forward(self, x):
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners)

    def extra_repr(self):
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class Dropout(Module):
    """Dropout(p) as a layer: active while `training` is set (Module.train(),
    the default), the identity after Module.eval(). No parameters. inplace:
    as _Activation's."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        self.p = F._float(p, "Dropout", "p")
        if not 0.0 <= self.p < 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1), got {p!r}")
        self.inplace = bool(inplace)

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


# ---- normalisation ----

def _filled(shape, value, requires_grad):
    return Tensor(np.full(shape, value, dtype=np.float32), requires_grad=requires_grad, track=False)


class _Normalization(Module):
    """Shared by the normalisation layers: `weight` and `bias` parameters (or
    None); buffers (Module.register_buffer) under PyTorch's state_dict names."""

    def _affine(self, shape, weight, bias):
        self.weight = _filled(shape, 1.0, True) if weight else None
        self.bias = _filled(shape, 0.0, True) if bias else None


class _BatchNorm(_Normalization):
    _dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True):
        super().__init__()
        name = type(self).__name__
        self.num_features = _positive_int(num_features, name, "num_features")
        self.eps = F._float(eps, name, "eps")
        if momentum is not None and not 0.0 <= F._float(momentum, name, "momentum") <= 1.0:
            raise ValueError(f"{name}: momentum must be in [0, 1] or None, got {momentum!r}")
        self.momentum = momentum
        self.affine = bool(affine)
        self.track_running_stats = bool(track_running_stats)
        self._affine((self.num_features,), self.affine, self.affine)
        if self.track_running_stats:
            self.register_buffer("running_mean", _filled((self.num_features,), 0.0, False))
            self.register_buffer("running_var", _filled((self.num_features,), 1.0, False))
            self.register_buffer("num_batches_tracked", Tensor(np.zeros(1, dtype=np.int32), dtype=np.int32,
                                                               track=False))

    def forward(self, x):
        name = type(self).__name__
        if isinstance(x, Tensor) and x.ndim not in self._dims:
            wanted = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"{name}: expected {wanted} input (got {x.ndim}D input)")
        b = self._buffers
        return F._batch_norm_call(x, b.get("running_mean"), b.get("running_var"), self.weight, self.bias,
                                  self.training, self.momentum, self.eps, b.get("num_batches_tracked"), name)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """torch.nn.BatchNorm1d over [N, C] or [N, C, L]: batch statistics while
    training (updating running_mean, running_var and num_batches_tracked),
    the running statistics after Model.eval()."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """torch.nn.BatchNorm2d over [N, C, H, W]."""
    _dims = (4,)


class LayerNorm(_Normalization):
    """torch.nn.LayerNorm over the trailing dimensions normalized_shape."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
        super().__init__()
        self.normalized_shape = F._shape_tuple(normalized_shape, "LayerNorm", "normalized_shape")
        self.eps = F._float(eps, "LayerNorm", "eps")
        self.elementwise_affine = bool(elementwise_affine)
        self._affine(self.normalized_shape, self.elementwise_affine, self.elementwise_affine and bool(bias))

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(_Normalization):
    """torch.nn.GroupNorm(num_groups, num_channels) over [N, C, ...]."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True):
        super().__init__()
        self.num_groups = _positive_int(num_groups, "GroupNorm", "num_groups")
        self.num_channels = _positive_int(num_channels, "GroupNorm", "num_channels")
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels {num_channels} must be divisible by num_groups {num_groups}")
        self.eps = F._float(eps, "GroupNorm", "eps")
        self.affine = bool(affine)
        self._affine((self.num_channels,), self.affine, self.affine)

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class MaxPool2d(Module):
    """torch.nn.MaxPool2d as a layer (F.max_pool2d). No parameters."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        super().__init__()
        F._window("MaxPool2d", kernel_size, stride, padding, dilation, ceil_mode)  # checked now, not at the call
        self.kernel_size, self.stride, self.padding = kernel_size, kernel_size if stride is None else stride, padding
        self.dilation, self.ceil_mode = dilation, bool(ceil_mode)

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """torch.nn.AvgPool2d as a layer (F.avg_pool2d). No parameters."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        F._window("AvgPool2d", kernel_size, stride, padding, 1, ceil_mode)
        if divisor_override is not None:
            F._int(divisor_override, "AvgPool2d", "divisor_override", 1)
        self.kernel_size, self.stride, self.padding = kernel_size, kernel_size if stride is None else stride, padding
        self.ceil_mode, self.count_include_pad = bool(ceil_mode), bool(count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """torch.nn.AdaptiveAvgPool2d(output_size): an int or a pair, None keeping the input's size."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    """torch.nn.AdaptiveMaxPool2d(output_size): an int or a pair, None keeping the input's size."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_max_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class _Activation(Module):
    """An elementwise function as a layer (PyTorch's module of that name): no
    parameters, the same in training and evaluation. inplace=True is
    accepted as torch's modules take it; the result is a new tensor all the
    same (the input keeps its values), which is what a model that uses the
    layer's output sees."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = bool(inplace)

    def forward(self, x):
        return self._apply(x)

    def _apply(self, x):
        raise NotImplementedError

    def _arguments(self):
        return "inplace=True" if getattr(self, "inplace", False) else ""

    def extra_repr(self):
        return self._arguments()


class GELU(_Activation):
    """x * Phi(x), or its tanh approximation with approximate='tanh'."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def _apply(self, x):
        return F.gelu(x, self.approximate)

    def _arguments(self):
        return f"approximate={self.approximate!r}"


class LeakyReLU(_Activation):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__(inplace)
        self.negative_slope = F._float(negative_slope, "LeakyReLU", "negative_slope")

    def _apply(self, x):
        return F.leaky_relu(x, self.negative_slope)

    def _arguments(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(_Activation):
    """x where x > 0, else alpha * (exp(x) - 1)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(inplace)
        self.alpha = F._float(alpha, "ELU", "alpha")

    def _apply(self, x):
        return F.elu(x, self.alpha)

    def _arguments(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(_Activation):
    """log(1 + exp(beta x)) / beta, linear where beta x > threshold."""

    def __init__(self, beta=1, threshold=20):
        super().__init__()
        self.beta = F._float(beta, "Softplus", "beta")
        self.threshold = F._float(threshold, "Softplus", "threshold")
        if not self.beta > 0 or not math.isfinite(self.beta):
            raise ValueError(f"Softplus: beta must be finite and > 0, got {beta!r}")

    def _apply(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def _arguments(self):
        return f"beta={self.beta}, threshold={self.threshold}"


def _parameterless(name, function, doc, inplace=True):
    """A layer class for `function`, taking inplace=False where torch's does."""
    def init(self, inplace=False):
        _Activation.__init__(self, inplace)

    def init_without(self):
        _Activation.__init__(self)
    layer = type(name, (_Activation,), {"_apply": staticmethod(function), "__doc__": doc,
                                        "__init__": init if inplace else init_without})
    layer.__module__ = __name__
    return layer


ReLU = _parameterless("ReLU", F.relu, "max(x, 0).")
SiLU = _parameterless("SiLU", F.silu, "x * sigmoid(x).")
ReLU6 = _parameterless("ReLU6", F.relu6, "min(max(x, 0), 6).")
Hardswish = _parameterless("Hardswish", F.hardswish, "x * relu6(x + 3) / 6.")
Hardsigmoid = _parameterless("Hardsigmoid", F.hardsigmoid, "relu6(x + 3) / 6.")
Sigmoid = _parameterless("Sigmoid", F.sigmoid, "1 / (1 + exp(-x)).", inplace=False)
Tanh = _parameterless("Tanh", F.tanh, "The hyperbolic tangent.", inplace=False)


class Identity(_Activation):
    """x itself; any arguments are ignored, as torch's Identity ignores them."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    @staticmethod
    def _apply(x):
        return x


# ---- softmax along a dimension, and losses (PyTorch's modules) ----


class Softmax(_Activation):
    """Softmax along dim (None: PyTorch's implicit choice)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def _apply(self, x):
        return F.softmax(x, F._implicit_dim(x, self.dim, "Softmax"))

    def _arguments(self):
        return f"dim={self.dim}"


class LogSoftmax(_Activation):
    """log_softmax along dim (None: PyTorch's implicit choice)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def _apply(self, x):
        return F.log_softmax(x, self.dim)

    def _arguments(self):
        return f"dim={self.dim}"


class _Loss(Module):
    """A loss function as a module: called with (input, target)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        F._reduction(type(self).__name__, size_average, reduce, reduction)  # refuse a bad one now
        if size_average is not None or reduce is not None:
            reduction = {0: "none", 1: "mean", 2: "sum"}[F._reduction("", size_average, reduce, reduction)]
        self.reduction = reduction



class MSELoss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):  # noqa: A002
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class NLLLoss(_Loss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input, target):  # noqa: A002
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(size_average, reduce, reduction)
        self.weight, self.ignore_index, self.label_smoothing = weight, ignore_index, label_smoothing

    def forward(self, input, target):  # noqa: A002
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)
# ---- embedding and attention ----

_init_normal = F._lib.declare("nn_init_normal", ctypes.c_int, [F._lib.c_tensor_p, ctypes.c_float, ctypes.c_float])


class Embedding(Module):
    """A lookup table (torch.nn.Embedding): `weight` [num_embeddings,
    embedding_dim] drawn from N(0, 1) (the context's generator), the row
    padding_idx zeroed and never trained. Called on integer indices of any
    shape: [..., embedding_dim]."""
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False):
        super().__init__()
        self.num_embeddings = _positive_int(num_embeddings, "Embedding", "num_embeddings")
        self.embedding_dim = _positive_int(embedding_dim, "Embedding", "embedding_dim")
        for name, value, default in (("max_norm", max_norm, None), ("scale_grad_by_freq", scale_grad_by_freq, False),
                                     ("sparse", sparse, False)):
            if value != default:
                raise ValueError(f"Embedding: {name}={value!r} is not supported (only {default!r})")
        padding = F._padding_index(padding_idx, num_embeddings, "Embedding")
        self.padding_idx = None if padding_idx is None else padding
        ctx = _context.default_context()
        dims = (ctypes.c_int64 * 2)(num_embeddings, embedding_dim)
        ptr = check_ptr(lib.nn_tensor_new(ctx.ptr, NN_F32, 2, dims), "nn_tensor_new")
        self.weight = Tensor._wrap(Handle(ptr, ctx, OWNED), (num_embeddings, embedding_dim))
        check(_init_normal(ptr, 0.0, 1.0), "nn_init_normal")
        if self.padding_idx is not None:
            values = self.weight.sync()
            values[self.padding_idx] = 0.0
            self.weight.upload(values)
        self.weight.requires_grad = True

    def forward(self, input):  # noqa: A002 - torch's name
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention with its parameter names (in_proj_weight
    [3E, E], in_proj_bias [3E], out_proj.weight, out_proj.bias), so torch's
    state_dict loads: query [N, L, E] with batch_first=True, [L, N, E]
    otherwise; key and value [N, S, E]. Returns (output, weights): the
    attention weights averaged over heads ([N, L, S]; per head with
    average_attn_weights=False), None unless need_weights. attn_mask: an
    additive float mask [L, S] or [N * num_heads, L, S] (or boolean, True
    masking out, as torch's). No dropout, no key_padding_mask, no bias_kv."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False):
        super().__init__()
        self.embed_dim = _positive_int(embed_dim, "MultiheadAttention", "embed_dim")
        self.num_heads = _positive_int(num_heads, "MultiheadAttention", "num_heads")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                             f"({num_heads})")
        for name, value, default in (("dropout", dropout, 0.0), ("add_bias_kv", add_bias_kv, False),
                                     ("add_zero_attn", add_zero_attn, False), ("kdim", kdim, None),
                                     ("vdim", vdim, None)):
            if value != default and not (name.endswith("dim") and value == embed_dim):
                raise ValueError(f"MultiheadAttention: {name}={value!r} is not supported (only {default!r})")
        self.batch_first = bool(batch_first)
        self.head_dim = embed_dim // num_heads
        # torch's initialisation: xavier_uniform_ in_proj_weight, zero biases, Linear's out_proj.weight
        self.in_proj_weight = _parameter((3 * embed_dim, embed_dim), embed_dim, weight=True)
        check(lib.nn_init_xavier_uniform(self.in_proj_weight._ptr(), 1.0), "nn_init_xavier_uniform")
        self.in_proj_bias = _filled((3 * embed_dim,), 0.0, True) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim)
        if bias:
            self.out_proj.bias.upload(np.zeros(embed_dim, np.float32))
        else:
            self.out_proj.bias = None

    def _project(self, x, part):
        e = self.embed_dim
        w = F._sliced(self.in_proj_weight, 0, part * e, (part + 1) * e)
        b = None if self.in_proj_bias is None else F._sliced(self.in_proj_bias, 0, part * e, (part + 1) * e)
        y = F.linear(x, w, b)  # [N, T, E] -> [N, heads, T, head_dim]
        return F._transposed(F.reshape(y, (x.shape[0], x.shape[1], self.num_heads, self.head_dim)), 1, 2)

    def _mask(self, attn_mask, n, length, source):
        if not isinstance(attn_mask, Tensor):
            array = np.asarray(attn_mask)
            if array.dtype == np.bool_:
                array = np.where(array, -np.inf, 0.0)  # torch's MultiheadAttention: True masks out
            attn_mask = Tensor(np.ascontiguousarray(array, dtype=np.float32), track=False,
                               device=self.in_proj_weight.device)
        if attn_mask.shape == (length, source):
            return attn_mask
        if attn_mask.shape == (n * self.num_heads, length, source):
            return F.reshape(attn_mask, (n, self.num_heads, length, source))
        raise ValueError(f"MultiheadAttention: attn_mask must be [{length}, {source}] or "
                         f"[{n * self.num_heads}, {length}, {source}], got {tuple(attn_mask.shape)}")

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                 average_attn_weights=True, is_causal=False):
        if key_padding_mask is not None:
            raise ValueError("MultiheadAttention: key_padding_mask is not supported (pass an attn_mask)")
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, Tensor) or t.ndim != 3:
                raise ValueError(f"MultiheadAttention: {name} must be a 3-D Tensor, got "
                                 f"{getattr(t, 'shape', type(t).__name__)}")
        if not self.batch_first:
            query, key, value = (F._transposed(t, 0, 1) for t in (query, key, value))
        n, length, source = query.shape[0], query.shape[1], key.shape[1]
        q, k, v = self._project(query, 0), self._project(key, 1), self._project(value, 2)
        if not need_weights:  # the fused attention: no [N, heads, L, S] weights in memory
            mask = None if attn_mask is None else self._mask(attn_mask, n, length, source)
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal and mask is None)
            return self._merge(heads, n, length), None
        scores = F.mul_scalar(F.matmul(q, F._transposed(k, -1, -2)), 1.0 / math.sqrt(self.head_dim))
        if attn_mask is not None:
            scores = F.add(scores, self._mask(attn_mask, n, length, source))
        elif is_causal:
            causal = np.triu(np.full((length, source), -np.inf, np.float32), 1)
            scores = F.add(scores, Tensor(causal, track=False, device=scores.device))
        weights = F.softmax(scores)  # [N, heads, L, S]
        out = self._merge(F.matmul(weights, v), n, length)  # from [N, heads, L, head_dim]
        return out, (F._mean_over(weights, 1) if average_attn_weights else weights)

    def _merge(self, heads, n, length):
        """The heads [N, heads, L, head_dim] side by side, through out_proj."""
        merged = F.reshape(F._transposed(heads, 1, 2), (n, length, self.embed_dim))
        out = F.linear(merged, self.out_proj.weight, self.out_proj.bias)
        return F._transposed(out, 0, 1) if not self.batch_first else out

    def extra_repr(self):
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"
