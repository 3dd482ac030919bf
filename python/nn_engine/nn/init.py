"""nn_engine.nn.init, as torch.nn.init: fill a tensor in place, drawing
from the context's seeded generator (nn_engine.manual_seed); each returns
the tensor. Fans follow PyTorch's: fan_in = size(1) * receptive field,
fan_out = size(0) * receptive field."""
import ctypes
import math

import numpy as np

from .. import _lib
from .._errors import check
from .._lib import lib
from ..tensor import Tensor

_normal = _lib.declare("nn_init_normal", ctypes.c_int, [_lib.c_tensor_p, ctypes.c_float, ctypes.c_float])

_GAINS = {"linear": 1.0, "conv1d": 1.0, "conv2d": 1.0, "conv3d": 1.0, "sigmoid": 1.0, "tanh": 5.0 / 3,
          "relu": math.sqrt(2.0), "selu": 3.0 / 4}


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (torch's table)."""
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity not in _GAINS:
        raise ValueError(f"calculate_gain: unknown nonlinearity {nonlinearity!r} (choose from "
                         f"{', '.join(sorted(_GAINS))}, leaky_relu)")
    return _GAINS[nonlinearity]


def _checked(tensor, fn):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{fn}: tensor must be an nn_engine.Tensor, got {type(tensor).__name__}")
    if tensor.dtype != np.float32:
        raise TypeError(f"{fn}: tensor must be float32, got {tensor.dtype}")
    return tensor


def _fans(tensor, fn):
    shape = tensor.shape
    if len(shape) < 2:
        raise ValueError(f"{fn}: fan in and fan out need a tensor of 2 or more dimensions, got shape {shape}")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def _fan(tensor, mode, fn):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{fn}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(tensor, fn)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0):
    check(lib.nn_init_uniform(_checked(tensor, "uniform_")._ptr(), float(a), float(b)), "nn_init_uniform")
    return tensor


def normal_(tensor, mean=0.0, std=1.0):
    check(_normal(_checked(tensor, "normal_")._ptr(), float(mean), float(std)), "nn_init_normal")
    return tensor


def constant_(tensor, val):
    _checked(tensor, "constant_").upload(np.full(tensor.shape, float(val), dtype=np.float32))
    return tensor


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0):
    fan_in, fan_out = _fans(_checked(tensor, "xavier_uniform_"), "xavier_uniform_")
    bound = float(gain) * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain=1.0):
    fan_in, fan_out = _fans(_checked(tensor, "xavier_normal_"), "xavier_normal_")
    return normal_(tensor, 0.0, float(gain) * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    fan = _fan(_checked(tensor, "kaiming_uniform_"), mode, "kaiming_uniform_")
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    fan = _fan(_checked(tensor, "kaiming_normal_"), mode, "kaiming_normal_")
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """N(mean, std^2) truncated to [a, b]: normal draws from the context's
    generator, those outside [a, b] drawn again (torch draws by inverse CDF:
    the same law, other values)."""
    _checked(tensor, "trunc_normal_")
    if not a < b:
        raise ValueError(f"trunc_normal_: a ({a}) must be below b ({b})")
    values = np.empty(tensor.numel(), dtype=np.float32)
    filled = 0
    draw = Tensor(np.zeros(tensor.shape, np.float32), track=False, device=tensor._h.ctx)
    for _ in range(1000):
        normal_(draw, mean, std)
        fresh = draw.sync().reshape(-1)
        fresh = fresh[(fresh >= a) & (fresh <= b)][:values.size - filled]
        values[filled:filled + fresh.size] = fresh
        filled += fresh.size
        if filled == values.size:
            break
    else:
        raise ValueError(f"trunc_normal_: [{a}, {b}] holds too little of N({mean}, {std}^2) to draw from")
    tensor.upload(values.reshape(tensor.shape))
    return tensor
