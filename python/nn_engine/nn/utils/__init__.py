"""nn_engine.nn.utils, as torch.nn.utils: clip_grad_norm_ and
clip_grad_value_ over parameters' gradients, on the device."""
import math
import numbers

import numpy as np

from ... import functional as F
from ..._context import no_grad
from ..._errors import check
from ..._lib import lib
from ...rearrange import cat
from ...reductions import amax
from ...tensor import Tensor, tensor_list


def _gradients(parameters, fn):
    """The gradients of a Tensor or of an iterable of them (those that have one)."""
    parameters = tensor_list([parameters] if isinstance(parameters, Tensor) else parameters, fn)
    return [g for g in (p.grad for p in parameters) if g is not None]


def _write(grad, value):
    """Replace a gradient's values by `value`'s (same shape), on the device."""
    check(lib.nn_tensor_copy(grad._ptr(), value._ptr()), "nn_tensor_copy")


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale the gradients together so that their global norm (of all their
    elements together) is at most max_norm: each is multiplied by
    min(1, max_norm / (norm + 1e-6)), read on the device (no sync). Returns
    the norm before clipping, a one-element Tensor. norm_type 2, 1 or inf."""
    if not isinstance(max_norm, numbers.Real) or isinstance(max_norm, bool):
        raise TypeError(f"clip_grad_norm_: max_norm must be a number, got {type(max_norm).__name__}")
    norm_type = float(norm_type)
    if norm_type not in (1.0, 2.0, math.inf):
        raise ValueError(f"clip_grad_norm_: norm_type must be 1, 2 or inf, got {norm_type}")
    grads = _gradients(parameters, "clip_grad_norm_")
    if not grads:
        return Tensor(np.zeros(1, np.float32), track=False)
    if norm_type == math.inf:
        parts = [F.reshape(amax(F.abs(g)), [1]) for g in grads]
        total = F.reshape(amax(cat(parts, 0)), [1]) if len(parts) > 1 else parts[0]
    else:
        parts = [F.reshape(F.sum(F.abs(g) if norm_type == 1.0 else F.mul(g, g)), [1]) for g in grads]
        total = parts[0] if len(parts) == 1 else F.reshape(F.sum(cat(parts, 0)), [1])
        if norm_type == 2.0:
            total = F.sqrt(total)
    if error_if_nonfinite and not np.isfinite(total.item()):
        raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is "
                           f"{total.item()}: they cannot be clipped")
    factor = F.clamp(F.rdiv_scalar(F.add_scalar(total, 1e-6), float(max_norm)), max=1.0)
    for g in grads:
        _write(g, F.mul(g, factor))
    return total.detach()


@no_grad()
def clip_grad_value_(parameters, clip_value):
    """Clamp every gradient element to [-clip_value, clip_value]."""
    if not isinstance(clip_value, numbers.Real) or isinstance(clip_value, bool):
        raise TypeError(f"clip_grad_value_: clip_value must be a number, got {type(clip_value).__name__}")
    bound = float(clip_value)
    for g in _gradients(parameters, "clip_grad_value_"):
        _write(g, F.clamp(g, -bound, bound))
