"""In-place operations, as torch.Tensor's add_, mul_, clamp_, zero_, copy_
and x += y: the out-of-place result is computed and copied into the
tensor's storage on the device, which marks the tensor written (a backward
that would need its old values is refused, as torch's version counter
refuses it).

Autograd does not record an in-place operation here. So where gradients
are recorded through one (grad mode on and an operand that requires grad),
the methods raise, naming the out-of-place form and no_grad(); x += y then
binds x to the new tensor x + y instead, which is what autograd needs (only
another reference to the old tensor differs from torch). Under no_grad()
they run in place: a hand-written update (w -= lr * w.grad), running
averages, masks."""
import numpy as np

from ._errors import check
from ._lib import lib
from .tensor import Tensor


def _records_grad(tensor, operands):
    if not lib.nn_ctx_grad_enabled(tensor._h.ctx.ptr):
        return False
    return tensor.requires_grad or any(isinstance(o, Tensor) and o.requires_grad for o in operands)


def _write(tensor, result, name):
    """tensor's values <- result's (same shape and dtype)."""
    if result.shape != tensor.shape:
        raise ValueError(f"{name}: the result has shape {result.shape}, the tensor {tensor.shape} (in place, the "
                         f"other operand must broadcast to the tensor's shape)")
    if result.dtype != tensor.dtype:
        raise TypeError(f"{name}: the result is {result.dtype}, the tensor {tensor.dtype} (in place keeps the "
                        f"tensor's dtype)")
    check(lib.nn_tensor_copy(tensor._ptr(), result._ptr()), "nn_tensor_copy")


def refuse_if_recording(tensor, operands, name):
    if _records_grad(tensor, operands):
        raise RuntimeError(f"{name}: in-place operations are not recorded by autograd, and this one involves a "
                           f"tensor that requires grad; run it under nn_engine.no_grad() (as a hand-written update "
                           f"is), or write it out of place (x = x + y)")


def apply(tensor, name, compute, *operands):
    """tensor <- compute() in place (compute makes the out-of-place result
    from tensor and operands); returns tensor."""
    from ._context import no_grad
    refuse_if_recording(tensor, operands, name)
    with no_grad():
        _write(tensor, compute(), name)
    return tensor


def augmented(tensor, other, op, name):
    """x op= other: in place when no gradient is recorded through it; else
    x op other, a new tensor (Python binds x to it)."""
    if _records_grad(tensor, (other,)):
        return op(tensor, other)
    return apply(tensor, name, lambda: op(tensor, other), other)


def fill(tensor, value, name="fill_"):
    """Every element <- value (a number), in place."""
    refuse_if_recording(tensor, (), name)
    if tensor.dtype == np.float32:
        check(lib.nn_tensor_fill(tensor._ptr(), float(value)), "nn_tensor_fill")
    else:
        tensor.upload(np.full(tensor.shape, value, dtype=tensor.dtype))
    return tensor


def copy(tensor, source):
    """tensor <- source (a Tensor of the same dtype broadcasting to its shape,
    an array or a number), in place (torch.Tensor.copy_)."""
    if not isinstance(source, Tensor):
        refuse_if_recording(tensor, (), "copy_")
        tensor.upload(np.broadcast_to(np.asarray(source, dtype=tensor.dtype), tensor.shape))
        return tensor
    if source.shape == tensor.shape:
        return apply(tensor, "copy_", lambda: source, source)
    if source.numel() == tensor.numel() == 1:  # a 0-dim tensor into a [1] one, or back
        return apply(tensor, "copy_", lambda: source.reshape(tensor.shape), source)
    return apply(tensor, "copy_", lambda: source.expand(*tensor.shape), source)
