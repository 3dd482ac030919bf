"""The argument checks every operation module shares (functional.py,
losses.py, reductions.py, ...): a Tensor's handle named in the error, ints
and floats as C takes them, dims, and the Tensor a C result becomes."""
import numbers

from .tensor import Tensor

_INT_MAX = 2**31 - 1


def _tensor(value, fn, name):
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}: {name} must be an nn_engine.Tensor, got {type(value).__name__}")
    return value._ptr()


def _int(value, fn, name, minimum):
    if type(value) is int and minimum <= value <= _INT_MAX:  # the common case, without the ABC check
        return value
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be an int, got {type(value).__name__}")
    if not minimum <= value <= _INT_MAX:
        raise ValueError(f"{fn}: {name} must be >= {minimum}, got {value}")
    return int(value)


def _float(value, fn, name):
    if type(value) is float:  # the common case, without the ABC check
        return value
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be a number, got {type(value).__name__}")
    return float(value)


def _result(ptr, like, what):
    return Tensor._result(ptr, like._h.ctx, what)


# A 0-dim tensor (torch's scalar) is the library's one-element [1] tensor
# with the Python shape (): full reductions and reduced losses make one, and
# an elementwise result of 0-dim operands is one.
def _reduced(ptr, like, what):
    """A full reduction's result: a 0-dim tensor."""
    return Tensor._result(ptr, like._h.ctx, what, ())


def _both_scalars(a, b):
    return a._known_shape == () and b._known_shape == ()


def _same_shape(ptr, like, what):
    """The result of an elementwise operation: like's shape and dtype (asked
    of the library later, if ever, when like has not learnt them yet)."""
    return Tensor._result(ptr, like._h.ctx, what, like._known_shape, like._known_dtype)


def _optional(value, fn, name):
    return None if value is None else _tensor(value, fn, name)


def _dim(value, fn):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{fn}: dim must be an int, got {type(value).__name__}")
    return int(value)


def _implicit_dim(x, dim, fn):
    """PyTorch's choice when dim is None: 0 for 0-, 1- and 3-D inputs, else 1."""
    if dim is None:
        return 0 if len(x.shape) in (0, 1, 3) else 1
    return _dim(dim, fn)
