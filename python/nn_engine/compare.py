"""Comparisons and dtype conversions (torch.eq, torch.lt, ..., Tensor.float,
Tensor.long): nn_compare and nn_cast on the device. The engine's tensors are
float32 or int32, so a comparison's booleans are int32 0 and 1 (sum() counts
them, float() makes a fraction of them)."""
import ctypes
import numbers

import numpy as np

from . import _lib
from ._lib import NN_F32, NN_I32
from .functional import _both_scalars
from .tensor import Tensor

_compare = _lib.declare("nn_compare", _lib.c_tensor_p, [_lib.c_tensor_p, _lib.c_tensor_p, ctypes.c_int])
_cast = _lib.declare("nn_cast", _lib.c_tensor_p, [_lib.c_tensor_p, ctypes.c_int])

# nn_compare_op's values (include/nn_ops.h)
_OPS = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5}


def _operand(value, like, fn):
    """A Tensor for the other side: a number becomes a 0-dim tensor of
    like's dtype (a fraction compared with an int32 tensor makes it float)."""
    if isinstance(value, Tensor):
        return like, value
    if isinstance(value, (numbers.Real, np.number)) and not isinstance(value, bool):
        if like.dtype == np.int32 and float(value) != int(value):
            like = cast(like, np.float32)
        dtype = like.dtype
        return like, Tensor(np.array(value, dtype=dtype), dtype=dtype, device=like._h.ctx)
    if isinstance(value, bool):
        return like, Tensor(np.array(int(value), dtype=like.dtype), dtype=like.dtype, device=like._h.ctx)
    raise TypeError(f"{fn}: cannot compare a Tensor with {type(value).__name__}")


def compare(a, b, op):
    """a `op` b elementwise, broadcasting: int32 0/1. op: eq, ne, lt, le, gt, ge."""
    if not isinstance(a, Tensor):
        raise TypeError(f"{op}: input must be an nn_engine.Tensor, got {type(a).__name__}")
    a, b = _operand(b, a, op)
    if a.dtype != b.dtype:  # torch promotes int to float
        a, b = (cast(t, np.float32) for t in (a, b))
    return Tensor._result(_compare(a._ptr(), b._ptr(), _OPS[op]), a._h.ctx, "nn_compare",
                          () if _both_scalars(a, b) else None, np.dtype(np.int32))


def eq(input, other):  # noqa: A002 - torch's argument names
    return compare(input, other, "eq")


def ne(input, other):  # noqa: A002
    return compare(input, other, "ne")


def lt(input, other):  # noqa: A002
    return compare(input, other, "lt")


def le(input, other):  # noqa: A002
    return compare(input, other, "le")


def gt(input, other):  # noqa: A002
    return compare(input, other, "gt")


def ge(input, other):  # noqa: A002
    return compare(input, other, "ge")


def cast(x, dtype):
    """x as float32 or int32 (any integer dtype; a float becomes its integer
    part, truncated toward zero as torch's .long()). Itself when it has
    that dtype already."""
    target = np.dtype(dtype)
    if target.kind in "iub":
        target = np.dtype(np.int32)
    elif target != np.float32:
        raise TypeError(f"cast: the engine's tensors are float32 or int32 (any integer dtype), got {target}")
    if x.dtype == target:
        return x
    code = NN_F32 if target == np.float32 else NN_I32
    return Tensor._result(_cast(x._ptr(), code), x._h.ctx, "nn_cast", x._known_shape, target)
