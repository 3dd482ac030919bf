"""Tensors made from a size, as torch's creation functions: zeros, ones,
full, empty and their *_like forms, arange, linspace, eye; rand and randn
drawn on the device from the generator manual_seed seeds (as layers'
initial weights are); randint and randperm drawn on the host from a
generator manual_seed seeds too. A size is given as torch takes it:
zeros(2, 3), zeros((2, 3)), zeros([2, 3]); () is a 0-dim tensor. Integer
dtypes are int32 on the device, the rest float32; `device` and
`requires_grad` as in torch."""
import numbers

import numpy as np

from . import _context
from .tensor import Tensor

__all__ = ["zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange",
           "linspace", "eye", "rand", "randn", "randint", "randperm"]


def _size(size, fn):
    """zeros(2, 3) / zeros((2, 3)) / zeros([2, 3]) as a tuple of ints."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1 for d in size):
        raise ValueError(f"{fn}: the size must be whole numbers >= 1 (the engine has no empty tensors), got "
                         f"{size!r}")
    return tuple(int(d) for d in size)


def _dtype(dtype, default, fn):
    if dtype is None:
        return np.dtype(default)
    try:
        kind = np.dtype(dtype).kind
    except TypeError:
        raise TypeError(f"{fn}: dtype must be a NumPy dtype such as float32 or int64, got {dtype!r}") from None
    return np.dtype(np.int32 if kind in "iub" else np.float32)


def _made(values, dtype, device, requires_grad):
    return Tensor(np.asarray(values, dtype=dtype), requires_grad=requires_grad, track=False, dtype=dtype,
                  device=device)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of `size` holding fill_value (an int makes an int32 tensor, as torch's int64)."""
    default = np.int32 if isinstance(fill_value, numbers.Integral) and not isinstance(fill_value, bool) \
        else np.float32
    dtype = _dtype(dtype, default, "full")
    return _made(np.full(_size((size,), "full"), fill_value), dtype, device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _made(np.zeros(_size(size, "zeros")), _dtype(dtype, np.float32, "zeros"), device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _made(np.ones(_size(size, "ones")), _dtype(dtype, np.float32, "ones"), device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    """zeros: the device's memory is never handed out uninitialised."""
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def _like(fn, tensor, dtype, device):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{fn}: expected an nn_engine.Tensor, got {type(tensor).__name__}")
    return tensor.shape, tensor.dtype if dtype is None else dtype, tensor._h.ctx if device is None else device


def zeros_like(input, *, dtype=None, device=None, requires_grad=False):  # noqa: A002 - torch's names
    shape, dtype, device = _like("zeros_like", input, dtype, device)
    return zeros(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    shape, dtype, device = _like("ones_like", input, dtype, device)
    return ones(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    shape, dtype, device = _like("full_like", input, dtype, device)
    return full(shape, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    return zeros_like(input, dtype=dtype, device=device, requires_grad=requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """start, start + step, ... below end (arange(n): 0 .. n - 1); whole
    numbers make an int32 tensor, as torch's int64."""
    if end is None:
        start, end = 0, start
    whole = all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in (start, end, step))
    if step == 0:
        raise ValueError("arange: step must not be 0")
    values = np.arange(start, end, step, dtype=np.float64)
    if values.size == 0:
        raise ValueError(f"arange: no values from {start} to {end} by {step} (the engine has no empty tensors)")
    return _made(values, _dtype(dtype, np.int32 if whole else np.float32, "arange"), device, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    if not isinstance(steps, numbers.Integral) or steps < 1:
        raise ValueError(f"linspace: steps must be a whole number >= 1, got {steps!r}")
    return _made(np.linspace(start, end, int(steps)), _dtype(dtype, np.float32, "linspace"), device, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    rows, cols = _size((n, n if m is None else m), "eye")
    return _made(np.eye(rows, cols), _dtype(dtype, np.float32, "eye"), device, requires_grad)


def _drawn(size, fn, dtype, device, requires_grad, draw):
    if _dtype(dtype, np.float32, fn) != np.float32:
        raise TypeError(f"{fn}: draws float32 values, got dtype {dtype!r}")
    t = zeros(*size, device=device)
    draw(t)
    if requires_grad:
        t.requires_grad = True
    return t


def rand(*size, dtype=None, device=None, requires_grad=False):
    """Uniform on [0, 1), drawn on the device."""
    from .nn.init import uniform_
    return _drawn(size, "rand", dtype, device, requires_grad, lambda t: uniform_(t, 0.0, 1.0))


def randn(*size, dtype=None, device=None, requires_grad=False):
    """Normal with mean 0 and variance 1, drawn on the device."""
    from .nn.init import normal_
    return _drawn(size, "randn", dtype, device, requires_grad, lambda t: normal_(t, 0.0, 1.0))


def randint(low, high=None, size=None, *, dtype=None, device=None, requires_grad=False):
    """Whole numbers in [low, high) (randint(high, size) starts at 0), int32."""
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    if size is None or high is None:
        raise TypeError("randint: give randint(high, size) or randint(low, high, size)")
    if not high > low:
        raise ValueError(f"randint: high ({high}) must be above low ({low})")
    values = _context.host_generator().integers(low, high, _size((size,), "randint"))
    return _made(values, _dtype(dtype, np.int32, "randint"), device, requires_grad)


def randperm(n, *, dtype=None, device=None, requires_grad=False):
    """0 .. n - 1 in a random order, int32."""
    _size((n,), "randperm")
    return _made(_context.host_generator().permutation(int(n)), _dtype(dtype, np.int32, "randperm"), device,
                 requires_grad)
