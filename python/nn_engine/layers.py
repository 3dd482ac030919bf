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


class Linear:
    """y = x @ w.T + b, x [N, in_features]; `w` [out, in], `b` [out]."""
    # Attribute -> PyTorch state_dict name (Model.named_parameters, export).
    _parameter_names = (("w", "weight"), ("b", "bias"))

    def __init__(self, in_features, out_features):
        self.in_features = _positive_int(in_features, "Linear", "in_features")
        self.out_features = _positive_int(out_features, "Linear", "out_features")
        self.w = _parameter((out_features, in_features), in_features, weight=True)
        self.b = _parameter((out_features,), in_features, weight=False)

    def __call__(self, x, relu=False):
        y = F.linear(x, self.w, self.b)
        return F.relu(y) if relu else y

    def __repr__(self):
        return f"Linear({self.in_features}, {self.out_features})"


class ConvLayer:
    """2-D convolution of x [N, inC, H, W]; `filters` [outC, inC / groups, kH, kW],
    `bias` [outC] (None with bias=False). kernel_size, stride, padding and
    dilation take an int or a pair (padding also 'same' or 'valid')."""
    _parameter_names = (("filters", "weight"), ("bias", "bias"))
    _name = "ConvLayer"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True):
        name = self._name
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
        self.filters = _parameter(shape, fan_in, weight=True)
        self.bias = _parameter((shape[0],), fan_in, weight=False) if bias else None

    def __call__(self, x, actType=0, relu=False):
        return F.conv2d(x, self.filters, self.bias, self.stride, self.padding, self.dilation, self.groups,
                        actType=1 if relu else actType)

    def _arguments(self):
        def single(v):
            return v[0] if isinstance(v, tuple) and v[0] == v[1] else v
        text = f"{self.in_channels}, {self.out_channels}, {single(self.kernel_size)}, stride={single(self.stride)}"
        text += f", padding={single(self.padding) if not isinstance(self.padding, str) else repr(self.padding)}"
        if self.dilation != (1, 1):
            text += f", dilation={single(self.dilation)}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text

    def __repr__(self):
        return f"{self._name}({self._arguments()})"


class Conv2d(ConvLayer):
    """torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride=1,
    padding=0, dilation=1, groups=1, bias=True): `weight` [out, in / groups,
    kH, kW] and `bias` [out] under PyTorch's state_dict names."""
    _parameter_names = (("weight", "weight"), ("bias", "bias"))
    _name = "Conv2d"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros"):
        if padding_mode != "zeros":
            raise ValueError(f"Conv2d: padding_mode must be 'zeros', got {padding_mode!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)

    @property
    def weight(self):
        return self.filters

    @weight.setter
    def weight(self, value):
        self.filters = value

    def __call__(self, x):
        return F.conv2d(x, self.filters, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose2d:
    """torch.nn.ConvTranspose2d(in_channels, out_channels, kernel_size,
    stride=1, padding=0, output_padding=0, groups=1, bias=True, dilation=1):
    `weight` [in, out / groups, kH, kW], `bias` [out]."""
    _parameter_names = (("weight", "weight"), ("bias", "bias"))

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros"):
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

    def __call__(self, x):
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)

    def __repr__(self):
        return (f"ConvTranspose2d({self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}, output_padding={self.output_padding}, "
                f"groups={self.groups}, dilation={self.dilation}, bias={self.bias is not None})")


class Upsample:
    """torch.nn.Upsample(size=None, scale_factor=None, mode='nearest',
    align_corners=None): F.interpolate as a layer. No parameters."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None):
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners

    def __call__(self, x):
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners)

    def __repr__(self):
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"Upsample({what}, mode={self.mode!r})"


class Dropout:
    """Dropout(p) as a layer: active while `training` is set (Model.train(),
    the default), the identity after Model.eval(). No parameters."""

    def __init__(self, p=0.5):
        self.p = F._float(p, "Dropout", "p")
        if not 0.0 <= self.p < 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1), got {p!r}")
        self.training = True

    def __call__(self, x):
        return F.dropout(x, self.p, self.training)

    def __repr__(self):
        return f"Dropout(p={self.p})"


# ---- normalisation ----

def _filled(shape, value, requires_grad):
    return Tensor(np.full(shape, value, dtype=np.float32), requires_grad=requires_grad, track=False)


class _Normalization:
    """Shared by the normalisation layers: `weight` and `bias` parameters (or
    None), buffers kept in `_buffers` under PyTorch's state_dict names and read
    as attributes (as Model.register_buffer keeps them), and `training`."""

    def __init__(self):
        self.training = True
        self._buffers = {}

    def __getattr__(self, name):
        buffers = self.__dict__.get("_buffers", {})
        if name in buffers:
            return buffers[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

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
            self._buffers["running_mean"] = _filled((self.num_features,), 0.0, False)
            self._buffers["running_var"] = _filled((self.num_features,), 1.0, False)
            self._buffers["num_batches_tracked"] = Tensor(np.zeros(1, dtype=np.int32), dtype=np.int32, track=False)

    def __call__(self, x):
        name = type(self).__name__
        if isinstance(x, Tensor) and x.ndim not in self._dims:
            wanted = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"{name}: expected {wanted} input (got {x.ndim}D input)")
        b = self._buffers
        return F._batch_norm_call(x, b.get("running_mean"), b.get("running_var"), self.weight, self.bias,
                                  self.training, self.momentum, self.eps, b.get("num_batches_tracked"), name)

    def __repr__(self):
        return (f"{type(self).__name__}({self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats})")


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

    def __call__(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def __repr__(self):
        return (f"LayerNorm({self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine})")


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

    def __call__(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def __repr__(self):
        return f"GroupNorm({self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine})"
class MaxPool2d:
    """torch.nn.MaxPool2d as a layer (F.max_pool2d). No parameters."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        F._window("MaxPool2d", kernel_size, stride, padding, dilation, ceil_mode)  # checked now, not at the call
        self.kernel_size, self.stride, self.padding = kernel_size, kernel_size if stride is None else stride, padding
        self.dilation, self.ceil_mode = dilation, bool(ceil_mode)

    def __call__(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def __repr__(self):
        return (f"MaxPool2d(kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode})")


class AvgPool2d:
    """torch.nn.AvgPool2d as a layer (F.avg_pool2d). No parameters."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        F._window("AvgPool2d", kernel_size, stride, padding, 1, ceil_mode)
        if divisor_override is not None:
            F._int(divisor_override, "AvgPool2d", "divisor_override", 1)
        self.kernel_size, self.stride, self.padding = kernel_size, kernel_size if stride is None else stride, padding
        self.ceil_mode, self.count_include_pad = bool(ceil_mode), bool(count_include_pad)
        self.divisor_override = divisor_override

    def __call__(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)

    def __repr__(self):
        return f"AvgPool2d(kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding})"


class AdaptiveAvgPool2d:
    """torch.nn.AdaptiveAvgPool2d(output_size): an int or a pair, None keeping the input's size."""

    def __init__(self, output_size):
        self.output_size = output_size

    def __call__(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def __repr__(self):
        return f"AdaptiveAvgPool2d(output_size={self.output_size})"


class AdaptiveMaxPool2d:
    """torch.nn.AdaptiveMaxPool2d(output_size): an int or a pair, None keeping the input's size."""

    def __init__(self, output_size):
        self.output_size = output_size

    def __call__(self, x):
        return F.adaptive_max_pool2d(x, self.output_size)

    def __repr__(self):
        return f"AdaptiveMaxPool2d(output_size={self.output_size})"
class _Activation:
    """An elementwise function as a layer (PyTorch's module of that name): no
    parameters, the same in training and evaluation."""

    def __call__(self, x):
        return self._apply(x)

    def _apply(self, x):
        raise NotImplementedError

    def _arguments(self):
        return ""

    def __repr__(self):
        return f"{type(self).__name__}({self._arguments()})"


class GELU(_Activation):
    """x * Phi(x), or its tanh approximation with approximate='tanh'."""

    def __init__(self, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def _apply(self, x):
        return F.gelu(x, self.approximate)

    def _arguments(self):
        return f"approximate={self.approximate!r}"


class LeakyReLU(_Activation):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope=0.01):
        self.negative_slope = F._float(negative_slope, "LeakyReLU", "negative_slope")

    def _apply(self, x):
        return F.leaky_relu(x, self.negative_slope)

    def _arguments(self):
        return f"negative_slope={self.negative_slope}"


class ELU(_Activation):
    """x where x > 0, else alpha * (exp(x) - 1)."""

    def __init__(self, alpha=1.0):
        self.alpha = F._float(alpha, "ELU", "alpha")

    def _apply(self, x):
        return F.elu(x, self.alpha)

    def _arguments(self):
        return f"alpha={self.alpha}"


class Softplus(_Activation):
    """log(1 + exp(beta x)) / beta, linear where beta x > threshold."""

    def __init__(self, beta=1, threshold=20):
        self.beta = F._float(beta, "Softplus", "beta")
        self.threshold = F._float(threshold, "Softplus", "threshold")
        if not self.beta > 0 or not math.isfinite(self.beta):
            raise ValueError(f"Softplus: beta must be finite and > 0, got {beta!r}")

    def _apply(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def _arguments(self):
        return f"beta={self.beta}, threshold={self.threshold}"


def _parameterless(name, function, doc):
    layer = type(name, (_Activation,), {"_apply": staticmethod(function), "__doc__": doc})
    layer.__module__ = __name__
    return layer


SiLU = _parameterless("SiLU", F.silu, "x * sigmoid(x).")
ReLU6 = _parameterless("ReLU6", F.relu6, "min(max(x, 0), 6).")
Hardswish = _parameterless("Hardswish", F.hardswish, "x * relu6(x + 3) / 6.")
Hardsigmoid = _parameterless("Hardsigmoid", F.hardsigmoid, "relu6(x + 3) / 6.")
Sigmoid = _parameterless("Sigmoid", F.sigmoid, "1 / (1 + exp(-x)).")
Tanh = _parameterless("Tanh", F.tanh, "The hyperbolic tangent.")
