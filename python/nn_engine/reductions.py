"""Reductions with PyTorch's names and arguments: sum, mean, max, min,
argmax, argmin, var and std over all dimensions or the ones given, with
keepdim. A reduction of every dimension gives a 0-dim tensor, as torch's."""
import collections
import ctypes
import numbers

from ._lib import lib
from .functional import _reduced, _result, _tensor, sqrt
from .tensor import Tensor

# torch.return_types.max / min: (values, indices).
ValuesIndices = collections.namedtuple("ValuesIndices", ["values", "indices"])


def _dims(dim, fn):
    """dim (None, an int or a sequence of ints) as a C array and its length
    (0 = every dimension); the library checks the range and repeats."""
    if dim is None:
        return None, 0
    try:
        dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
    except TypeError:
        dims = [dim]
    if any(isinstance(d, bool) or not isinstance(d, numbers.Integral) for d in dims):
        raise TypeError(f"{fn}: dim must be an int or a sequence of ints, got {dim!r}")
    if not dims:  # torch: an empty list reduces everything
        return None, 0
    return (ctypes.c_int * len(dims))(*[int(d) for d in dims]), len(dims)


def _reduce(cname, fn, x, dim, keepdim, *extra):
    px = _tensor(x, fn, "input")
    dims, count = _dims(dim, fn)
    ptr = getattr(lib, cname)(px, dims, count, *extra, bool(keepdim))
    every = count == 0 or len({d % x.ndim for d in dims[:count]}) == x.ndim  # out-of-range dims: C refused
    return _reduced(ptr, x, cname) if every and not keepdim else _result(ptr, x, cname)


def sum(input, dim=None, keepdim=False):  # noqa: A001 - torch.sum's name
    """The sum over dim (all dimensions when None) (torch.sum)."""
    if dim is None and not keepdim:
        return _reduced(lib.nn_sum(_tensor(input, "sum", "input")), input, "nn_sum")
    return _reduce("nn_sum_dims", "sum", input, dim, keepdim)


def mean(input, dim=None, keepdim=False):
    """The mean over dim (all dimensions when None) (torch.mean)."""
    if dim is None and not keepdim:
        return _reduced(lib.nn_mean(_tensor(input, "mean", "input")), input, "nn_mean")
    return _reduce("nn_mean_dims", "mean", input, dim, keepdim)


def _extreme(name, input, dim, keepdim):
    from . import functional as F
    if isinstance(dim, Tensor):  # torch.max(a, b): the elementwise maximum
        return (F.maximum if name == "max" else F.minimum)(input, dim)
    values = _reduce(f"nn_{name}_dims", name, input, dim, keepdim)
    if dim is None:
        return values
    if not isinstance(dim, numbers.Integral) or isinstance(dim, bool):
        raise TypeError(f"{name}: dim must be an int, got {dim!r} (amax/amin take several)")
    indices = _reduce(f"nn_arg{name}_dims", f"arg{name}", input, dim, keepdim)
    return ValuesIndices(values, indices)


def max(input, dim=None, keepdim=False):  # noqa: A001 - torch.max's name
    """torch.max: the largest element (dim None), or (values, indices) along
    dim, or the elementwise maximum of two tensors. NaN propagates; the
    gradient goes to the first largest element."""
    return _extreme("max", input, dim, keepdim)


def min(input, dim=None, keepdim=False):  # noqa: A001 - torch.min's name
    """torch.min, as max."""
    return _extreme("min", input, dim, keepdim)


def amax(input, dim=(), keepdim=False):
    """The largest element over the dimensions in dim (all when empty)."""
    return _reduce("nn_max_dims", "amax", input, dim, keepdim)


def amin(input, dim=(), keepdim=False):
    """The smallest element over the dimensions in dim (all when empty)."""
    return _reduce("nn_min_dims", "amin", input, dim, keepdim)


def argmax(input, dim=None, keepdim=False):
    """The index of the first largest element along dim (in the flattened
    input when None), as int32 (torch.argmax)."""
    return _reduce("nn_argmax_dims", "argmax", input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    """The index of the first smallest element (torch.argmin)."""
    return _reduce("nn_argmin_dims", "argmin", input, dim, keepdim)


def _correction(fn, unbiased, correction):
    if correction is not None:
        if unbiased is not None:
            raise TypeError(f"{fn}: give unbiased or correction, not both")
        if not isinstance(correction, numbers.Real) or isinstance(correction, bool) or correction < 0:
            raise ValueError(f"{fn}: correction must be a number >= 0, got {correction!r}")
        return float(correction)
    return 1.0 if unbiased is None or unbiased else 0.0


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """sum((x - mean)^2) / (n - correction) over dim (torch.var; correction 1
    by default, unbiased=False means 0)."""
    return _reduce("nn_var_dims", "var", input, dim, keepdim, _correction("var", unbiased, correction))


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The square root of var (torch.std)."""
    return sqrt(var(input, dim, unbiased, keepdim, correction=correction))
