"""Operations that move elements, with PyTorch's names: permute, transpose,
cat, stack, split, chunk, narrow, select, expand, squeeze, unsqueeze,
flatten, and Tensor indexing (integers, slices with a positive step, None,
Ellipsis). Each result is a new tensor; its gradient flows back."""
import ctypes
import numbers

from . import _lib
from ._lib import NN_MAX_DIMS, lib
from .functional import _result, _tensor, reshape
from .tensor import Tensor


def _int(value, fn, name):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{fn}: {name} must be an int, got {type(value).__name__}")
    return int(value)


def _ints(values, fn, name):
    if len(values) == 1 and not isinstance(values[0], numbers.Integral):
        values = values[0]  # permute((0, 2, 1)) as well as permute(0, 2, 1)
    try:
        return [_int(v, fn, name) for v in values]
    except TypeError:
        raise TypeError(f"{fn}: {name} must be ints, got {values!r}") from None


def permute(input, *dims):
    """Dimension d of the result is dimension dims[d] of input (torch.permute)."""
    order = _ints(dims, "permute", "dims")
    arr = (ctypes.c_int * len(order))(*order)
    return _result(lib.nn_permute(_tensor(input, "permute", "input"), arr, len(order)), input, "nn_permute")


def transpose(input, dim0, dim1):
    """input with dimensions dim0 and dim1 swapped (torch.transpose)."""
    return _result(lib.nn_transpose(_tensor(input, "transpose", "input"), _int(dim0, "transpose", "dim0"),
                                    _int(dim1, "transpose", "dim1")), input, "nn_transpose")


def _tensor_array(tensors, fn):
    if isinstance(tensors, Tensor) or not hasattr(tensors, "__len__"):
        raise TypeError(f"{fn}: tensors must be a sequence of Tensors, got {type(tensors).__name__}")
    ptrs = [_tensor(t, fn, f"tensors[{i}]") for i, t in enumerate(tensors)]
    if not ptrs:
        raise ValueError(f"{fn}: needs at least one tensor")
    return _lib.PointerArray(ptrs), len(ptrs)


def cat(tensors, dim=0):
    """The tensors joined along dim; the others must match (torch.cat)."""
    arr, n = _tensor_array(tensors, "cat")
    return _result(lib.nn_cat(arr, n, _int(dim, "cat", "dim")), tensors[0], "nn_cat")


concat = concatenate = cat


def stack(tensors, dim=0):
    """The tensors (all of one shape) along a new dimension dim (torch.stack;
    of 0-dim tensors, a 1-D one)."""
    arr, n = _tensor_array(tensors, "stack")
    if all(t._known_shape == () for t in tensors):  # each is [1] to the library: join them
        if _int(dim, "stack", "dim") not in (0, -1):
            raise IndexError(f"stack: dim {dim} is out of range for 0-dim tensors (0 or -1)")
        return _result(lib.nn_cat(arr, n, 0), tensors[0], "nn_cat")
    return _result(lib.nn_stack(arr, n, _int(dim, "stack", "dim")), tensors[0], "nn_stack")


def narrow(input, dim, start, length):
    """Elements start .. start + length - 1 along dim (torch.narrow)."""
    start, length = _int(start, "narrow", "start"), _int(length, "narrow", "length")
    if length < 1:
        raise ValueError(f"narrow: length must be >= 1, got {length}")
    return _slice(input, dim, start, start + length, 1, "narrow")


def _slice(input, dim, start, end, step, fn):
    return _result(lib.nn_slice(_tensor(input, fn, "input"), _int(dim, fn, "dim"), start, end, step), input,
                   "nn_slice")


def select(input, dim, index):
    """input[..., index, ...] along dim, which is dropped (torch.select; of a
    1-D tensor, a 0-dim one)."""
    ptr = lib.nn_select(_tensor(input, "select", "input"), _int(dim, "select", "dim"), _int(index, "select", "index"))
    return Tensor._result(ptr, input._h.ctx, "nn_select", () if input.ndim == 1 else None)


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of split_size along dim (the last may be smaller), or pieces of
    the listed sizes (torch.split)."""
    _tensor(tensor, "split", "tensor")
    dim = _int(dim, "split", "dim")
    if not -tensor.ndim <= dim < tensor.ndim:
        raise ValueError(f"split: dim {dim} is out of range for a tensor of shape {tensor.shape}")
    size = tensor.shape[dim]
    if isinstance(split_size_or_sections, numbers.Integral) and not isinstance(split_size_or_sections, bool):
        step = int(split_size_or_sections)
        if step < 1:
            raise ValueError(f"split: split_size must be >= 1, got {step}")
        sizes = [min(step, size - s) for s in range(0, size, step)]
    else:
        sizes = _ints([split_size_or_sections], "split", "split_size_or_sections")
        if any(s < 1 for s in sizes) or sum(sizes) != size:
            raise ValueError(f"split: sections {sizes} must be >= 1 and add up to {size} (dimension {dim})")
    pieces, start = [], 0
    for s in sizes:
        pieces.append(_slice(tensor, dim, start, start + s, 1, "split"))
        start += s
    return tuple(pieces)


def chunk(input, chunks, dim=0):
    """torch.chunk: at most `chunks` pieces of ceil(size / chunks) along dim."""
    chunks = _int(chunks, "chunk", "chunks")
    if chunks < 1:
        raise ValueError(f"chunk: chunks must be >= 1, got {chunks}")
    dim = _int(dim, "chunk", "dim")
    if not isinstance(input, Tensor):
        _tensor(input, "chunk", "input")
    size = input.shape[dim]
    return split(input, -(-size // chunks), dim)


def expand(input, *sizes):
    """input repeated along its dimensions of size 1 (and new leading ones);
    -1 keeps a size (torch.Tensor.expand)."""
    dims = _ints(sizes, "expand", "sizes")
    arr = (ctypes.c_int64 * len(dims))(*dims)
    return _result(lib.nn_expand(_tensor(input, "expand", "input"), len(dims), arr), input, "nn_expand")


def unsqueeze(input, dim):
    """input with a dimension of size 1 inserted at dim (torch.unsqueeze)."""
    if isinstance(input, Tensor) and input._known_shape == ():
        if _int(dim, "unsqueeze", "dim") not in (0, -1):
            raise IndexError(f"unsqueeze: dim {dim} is out of range for a 0-dim tensor (0 or -1)")
        return reshape(input, [1])
    return _result(lib.nn_unsqueeze(_tensor(input, "unsqueeze", "input"), _int(dim, "unsqueeze", "dim")), input,
                   "nn_unsqueeze")


def squeeze(input, dim=None):
    """input without dim if its size is 1, or without every dimension of size
    1 when dim is None (a tensor of one element becomes 0-dim)."""
    _tensor(input, "squeeze", "input")
    if input._known_shape == ():
        return reshape(input, ())
    if dim is not None:
        if input.ndim == 1 and input.shape[0] == 1 and _int(dim, "squeeze", "dim") in (0, -1):
            return reshape(input, ())
        return _result(lib.nn_squeeze(input._ptr(), _int(dim, "squeeze", "dim")), input, "nn_squeeze")
    return reshape(input, [d for d in input.shape if d != 1])


def flatten(input, start_dim=0, end_dim=-1):
    """Dimensions start_dim..end_dim joined into one (torch.flatten)."""
    _tensor(input, "flatten", "input")
    if input._known_shape == ():  # torch: a 0-dim tensor flattens to [1]
        return reshape(input, [1])
    n = input.ndim
    start, end = _int(start_dim, "flatten", "start_dim"), _int(end_dim, "flatten", "end_dim")
    start, end = start + n if start < 0 else start, end + n if end < 0 else end
    if not 0 <= start <= end < n:
        raise ValueError(f"flatten: start_dim {start_dim} and end_dim {end_dim} do not fit shape {input.shape}")
    joined = 1
    for d in input.shape[start:end + 1]:
        joined *= d
    return reshape(input, list(input.shape[:start]) + [joined] + list(input.shape[end + 1:]))


def _select_index(result, dim, item):
    """An integer index into dimension dim, checked against its size."""
    size = result.shape[dim]
    if not -size <= item < size:
        raise IndexError(f"Tensor indexing: index {item} is out of range for dimension {dim} of size {size}")
    return select(result, dim, item)


def _index_then_insert(x, items):
    """getitem's order when its Nones would first take x past NN_MAX_DIMS dimensions: the slices and
    integers on x's own dimensions, then the Nones at their places in the result."""
    result, dim, place, inserts = x, 0, 0, []  # place: the result's dimension an item ends up at
    for item in items:
        if item is None:
            inserts.append(place)
            place += 1
        elif isinstance(item, slice):
            result = getitem(result, (slice(None),) * dim + (item,))
            dim += 1
            place += 1
        else:
            result = _select_index(result, dim, item)
    for at in inserts:
        result = unsqueeze(result, at)
    return result


def getitem(x, index):
    """x[index] for integers, slices (step >= 1), None and Ellipsis, as PyTorch
    indexes: an integer drops its dimension, None inserts one of size 1."""
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if isinstance(item, (Tensor, list)) or hasattr(item, "__array__"):
            raise TypeError("Tensor indexing: tensor, list and array indices are not supported "
                            "(integers, slices, None and ... are)")
        if not (item is None or item is Ellipsis or isinstance(item, slice) or
                (isinstance(item, numbers.Integral) and not isinstance(item, bool))):
            raise TypeError(f"Tensor indexing: unsupported index {item!r}")
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("Tensor indexing: an index can only have a single ellipsis ('...')")
    used = len([i for i in items if i is not None and i is not Ellipsis])
    if used > x.ndim:
        raise IndexError(f"Tensor indexing: too many indices for a tensor of {x.ndim} dimensions")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (slice(None),) * (x.ndim - used) + items[at + 1:]
    nones = sum(1 for i in items if i is None)
    if x.ndim + nones > NN_MAX_DIMS:
        # The Nones inserted first would pass the dimension limit before the integers drop theirs
        # (x5d[None, None, 0:3, ..., -2] has 6 dimensions in the end): select and slice, then insert.
        return _index_then_insert(x, items)
    result, dim = x, 0  # dim: the next dimension of result that an index applies to
    for item in items:
        if item is None:
            result = unsqueeze(result, dim)
            dim += 1
        elif isinstance(item, slice):
            start, stop, step = item.start, item.stop, item.step
            step = 1 if step is None else _int(step, "Tensor indexing", "step")
            if step < 1:
                raise ValueError(f"Tensor indexing: step must be >= 1, got {step}")
            size = result.shape[dim]
            start = 0 if start is None else _int(start, "Tensor indexing", "start")
            stop = size if stop is None else _int(stop, "Tensor indexing", "stop")
            if not (start in (0, -size) and stop >= size and step == 1):
                result = _slice(result, dim, start, stop, step, "Tensor indexing")
            dim += 1
        else:
            result = _select_index(result, dim, item)  # of a 1-D tensor: 0-dim
    return result
