"""nn_engine.save and nn_engine.load, as torch.save and torch.load for what
training scripts save: nested dicts, lists and tuples of Tensors, NumPy
arrays, numbers, strings and None (a model's and an optimizer's
state_dict, an epoch count). The file is a safetensors file of the tensors
(tensor_0, tensor_1, ...) with the structure as JSON in its metadata: code
is never saved nor run on loading (torch.load's pickle would)."""
import ctypes
import json
import numbers
import os

import numpy as np

from . import _context, _lib
from ._errors import check
from ._lib import NN_F32, NN_MAX_DIMS, lib
from ._structs import TensorListing
from .paths import check_writable
from .tensor import Tensor

_STRUCTURE_KEY = b"nn_engine.structure"


_save_meta = _lib.declare("nn_save_tensors_meta", ctypes.c_int,
                          [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                           ctypes.c_char_p])
_list = _lib.declare("nn_list_tensors", ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(TensorListing)])
_listing_free = _lib.declare("nn_tensor_listing_free", None, [ctypes.POINTER(TensorListing)])


def _path(f, where):
    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"{where}: f must be a path (str or os.PathLike), got {type(f).__name__} (file objects "
                        f"are not supported)")
    return os.fspath(f)


def _array_tensor(array, where):
    """A Tensor holding a NumPy array that float32 or int32 holds exactly."""
    if array.dtype.kind in "iub":
        if array.size and (array.min() < -2**31 or array.max() > 2**31 - 1):
            raise ValueError(f"{where}: an integer array has values outside int32's range")
        return Tensor(array, dtype=np.int32, track=False)
    if array.dtype != np.float32:
        raise TypeError(f"{where}: a {array.dtype} array cannot be saved exactly (tensors are float32 or int32): "
                        f"convert it, e.g. array.astype(np.float32)")
    return Tensor(array, track=False)


def _encode(value, tensors, where):
    """value as JSON with each tensor replaced by its index in `tensors`."""
    if isinstance(value, Tensor):
        tensors.append(value)
        return {"tensor": len(tensors) - 1, "scalar": value._known_shape == ()}
    if isinstance(value, np.ndarray):
        original = str(value.dtype)
        tensors.append(_array_tensor(value.reshape(1) if value.ndim == 0 else value, where))
        return {"ndarray": len(tensors) - 1, "dtype": original, "scalar": value.ndim == 0}
    if value is None or isinstance(value, (bool, str)):
        return {"value": value}
    if isinstance(value, numbers.Integral):
        return {"value": int(value)}
    if isinstance(value, numbers.Real):
        return {"value": float(value)}
    if isinstance(value, dict):
        return {"dict": [[_encode(k, tensors, where), _encode(v, tensors, where)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__ if type(value) in (list, tuple) else "list":
                [_encode(item, tensors, where) for item in value]}
    hint = " (save its state_dict(), as PyTorch recommends)" if hasattr(value, "state_dict") else ""
    raise TypeError(f"{where}: cannot save a {type(value).__name__}{hint}: save holds dicts, lists, tuples, "
                    f"Tensors, NumPy arrays, numbers, strings and None")


def save(obj, f):
    """Write obj (see the module docstring) to the path f, atomically."""
    path = _path(f, "save")
    check_writable(path)
    tensors = []
    structure = json.dumps(_encode(obj, tensors, "save"), allow_nan=True)
    names = [f"tensor_{i}".encode() for i in range(len(tensors))]
    with _lib.LOCK:  # the arrays hold the tensors' pointers until the call
        pointers = _lib.PointerArray(t._ptr() for t in tensors).get()
        name_array = (ctypes.c_char_p * max(len(names), 1))(*names)
        status = _save_meta(os.fsencode(path), len(tensors), pointers, name_array, _STRUCTURE_KEY,
                            structure.encode())
    check(status, "nn_save_tensors_meta")


def _decode(value, tensors):
    kind, = value.keys() - {"dtype", "scalar"}
    if kind == "value":
        return value["value"]
    if kind == "tensor":
        tensor = tensors[value["tensor"]]
        return tensor.reshape(()).detach() if value.get("scalar") else tensor  # 0-dim: the file holds [1]
    if kind == "ndarray":
        array = tensors[value["ndarray"]].sync().astype(value["dtype"])
        return array.reshape(()) if value.get("scalar") else array
    if kind == "dict":
        return {_decode(k, tensors): _decode(v, tensors) for k, v in value["dict"]}
    if kind == "tuple":
        return tuple(_decode(item, tensors) for item in value["tuple"])
    if kind == "list":
        return [_decode(item, tensors) for item in value["list"]]
    raise ValueError(f"load: unknown entry {kind!r} in the file's structure")


def load(f, map_location=None, weights_only=None):
    """Read what save() wrote: the same structure, tensors as Tensors on
    map_location ("cpu", "vulkan", "cuda"; None: the default device) and
    arrays as NumPy arrays. weights_only is accepted for torch's scripts;
    nothing but data is ever read."""
    path = _path(f, "load")
    ctx = _context.default_context() if map_location is None else _context.context_for(map_location, "load")
    listing = TensorListing()
    try:
        check(_list(os.fsencode(path), _STRUCTURE_KEY, ctypes.byref(listing)), "nn_list_tensors")
        if listing.value is None:
            raise ValueError(f"load: {path} holds tensors but no nn_engine structure (not written by "
                             f"nn_engine.save; a model's weights file loads with Module.load)")
        entries = []
        for i in range(listing.count):
            shape = tuple(listing.shapes[i * NN_MAX_DIMS + d] for d in range(listing.ndims[i]))
            dtype = np.float32 if listing.dtypes[i] == NN_F32 else np.int32
            entries.append((listing.names[i], Tensor(np.zeros(shape, dtype), dtype=dtype, track=False, device=ctx)))
        structure = json.loads(listing.value.decode())
    finally:
        _listing_free(ctypes.byref(listing))
    with _lib.LOCK:
        pointers = _lib.PointerArray(t._ptr() for _, t in entries).get()
        names = (ctypes.c_char_p * max(len(entries), 1))(*[name for name, _ in entries])
        status = lib.nn_load_tensors(os.fsencode(path), len(entries), pointers, names)
    check(status, "nn_load_tensors")
    by_index = {}
    for name, tensor in entries:
        index = name.decode().removeprefix("tensor_")
        if not index.isdigit():
            raise ValueError(f"load: {path}: tensor {name.decode()!r} is not one nn_engine.save writes")
        by_index[int(index)] = tensor
    try:
        return _decode(structure, by_index)
    except (KeyError, ValueError, TypeError) as err:
        raise ValueError(f"load: {path}: the structure in the file is damaged ({err})") from None
