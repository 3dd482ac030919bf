"""Model: parameter and buffer discovery, train/eval, the state_dict saved
and loaded as safetensors, and ONNX export (native, or the seed's
_onnx_graph hook through the onnx package)."""
import ctypes
import os
from collections import namedtuple

import numpy as np

from . import _context, _lib
from ._errors import check, last_error_message
from ._lib import lib
from .layers import ConvLayer, Linear
from .module import Module
from .paths import check_writable
from .tensor import Tensor

# What load_state_dict(strict=False) reports, as torch's NamedTuple.
IncompatibleKeys = namedtuple("IncompatibleKeys", "missing_keys unexpected_keys")


def _check_input_shape(input_shape):
    try:
        shape = [int(d) for d in input_shape]
        ok = all(int(d) == d for d in input_shape)
    except (TypeError, ValueError):
        shape, ok = [], False
    if not ok or not 1 <= len(shape) <= 4 or min(shape) < 1:
        raise ValueError(f"export: input_shape must be 1 to 4 positive ints, e.g. "
                         f"[1, 1, 28, 28], got {input_shape!r}")
    return shape


def _check_path(path):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"export: path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"export: folder {folder} does not exist")
    # A directory or FIFO is refused before the graph is built; the onnx
    # package's path would otherwise replace a FIFO with the file.
    check_writable(path)
    return path


class Model(Module):
    """The seed's name for a model: a Module (nn_engine.nn.Module) with the
    seed's helpers for models that build their ONNX graph themselves
    (_onnx_graph, _conv_onnx, _linear_onnx)."""

    @staticmethod
    def _conv_onnx(layer, name, input_name, output_name, helper, numpy_helper, initializers,
                   nodes, with_relu=False, pool=None):
        """Append the ONNX nodes of a ConvLayer to `nodes` and its weights to
        `initializers` (as '<name>.weight', '<name>.bias'): Conv, then Relu if
        with_relu, then MaxPool if pool = (kernel, stride). The last node
        writes `output_name`, which is returned."""
        if not isinstance(layer, ConvLayer):
            raise TypeError(f"_conv_onnx: layer must be a ConvLayer, got {type(layer).__name__}")
        weight, bias = f"{name}.weight", f"{name}.bias"
        initializers.append(numpy_helper.from_array(layer.filters.sync(), weight))
        if layer.bias is not None:
            initializers.append(numpy_helper.from_array(layer.bias.sync(), bias))
        stages = [("Conv", {"kernel_shape": list(layer.kernel_size), "strides": list(layer.stride),
                            "pads": _conv_pads(layer), "dilations": list(layer.dilation), "group": layer.groups},
                   [weight] + ([bias] if layer.bias is not None else []))]
        if with_relu:
            stages.append(("Relu", {}, []))
        if pool is not None:
            kernel, stride = _pool_pair(pool)
            stages.append(("MaxPool", {"kernel_shape": [kernel] * 2, "strides": [stride] * 2},
                           []))
        return _chain(stages, name, input_name, output_name, helper, nodes)

    @staticmethod
    def _linear_onnx(layer, name, input_name, output_name, helper, numpy_helper, initializers,
                     nodes, with_relu=False):
        """Append a Linear layer as Gemm (transB=1: `w` is out x in, as ONNX
        wants it) and, if with_relu, Relu; weights as '<name>.weight',
        '<name>.bias'. Returns `output_name`, which the last node writes."""
        if not isinstance(layer, Linear):
            raise TypeError(f"_linear_onnx: layer must be a Linear, got {type(layer).__name__}")
        weight, bias = f"{name}.weight", f"{name}.bias"
        initializers.append(numpy_helper.from_array(layer.w.sync(), weight))
        initializers.append(numpy_helper.from_array(layer.b.sync(), bias))
        stages = [("Gemm", {"transB": 1}, [weight, bias])]
        if with_relu:
            stages.append(("Relu", {}, []))
        return _chain(stages, name, input_name, output_name, helper, nodes)


def save_state(model, path):
    """Write the state_dict as a safetensors file (atomically), under
    PyTorch's names: torch loads it with safetensors.torch.load_file. The
    input_normalization and class_names go in its metadata, as
    `nnengine train --save` writes them."""
    info = _model_info(model, "save")
    state, tensors, names = _state_arrays(model, "save", path)
    check(lib.nn_save_tensors_info(os.fsencode(path), len(state), tensors, names,
                                   ctypes.byref(info.struct) if info else None), "nn_save_tensors_info")
    return path


def load_state(model, path):
    """Load a file written by save() or `nnengine train --save` (or by
    torch's safetensors save_file(model.state_dict())): every parameter
    and buffer must be in it with its shape, and nothing else; otherwise
    nothing is loaded. The file's input_normalization and class_names,
    where it has them, replace the model's."""
    state, tensors, names = _state_arrays(model, "load", path)
    check(lib.nn_load_tensors(os.fsencode(path), len(state), tensors, names), "nn_load_tensors")
    normalization, classes = read_model_info(path)
    if normalization is not None:
        model.input_normalization = normalization
    if classes is not None:
        model.class_names = classes
    return model


def _state_arrays(model, where, path):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{where}: path must be a str or os.PathLike, got {type(path).__name__}")
    state = model._state()
    n = len(state)
    tensors = _lib.PointerArray(t._ptr() for _, t in state)
    names = (ctypes.c_char_p * max(n, 1))(*[key.encode() for key, _ in state])
    return state, tensors, names


def export_onnx(model, path, input_shape=None, model_name=None, include_preprocessing=True, input_dtype=None):
    """Write the model as ONNX (opset 17, dynamic batch dimension).

    input_dtype: None or float32 for images and features; an integer
    dtype (int32, int64) for token indices, as an Embedding first layer
    reads: the graph's input is then int32.

    A model defining _onnx_graph(input_shape, helper, TensorProto,
    numpy_helper) builds the graph itself (the seed's way, through the onnx
    package). Otherwise the library writes it natively from the graph that
    a forward pass on zeros of input_shape records; then, when the model
    has an input_normalization and include_preprocessing is true, the
    graph starts with it and takes raw pixel values 0..255 (as float),
    and class_names go into the model's metadata_props."""
    path = _check_path(path)
    if input_shape is None:
        raise ValueError("export: input_shape is required, e.g. [1, 1, 28, 28]")
    shape = _check_input_shape(input_shape)
    name = model_name if model_name is not None else type(model).__name__
    if not isinstance(name, str):
        raise TypeError(f"export: model_name must be a str, got {type(name).__name__}")
    dtype = _export_input_dtype(input_dtype)
    if hasattr(model, "_onnx_graph"):
        if dtype != np.float32:
            raise ValueError(f"export: input_dtype {np.dtype(input_dtype)}: a model exported through "
                             f"_onnx_graph takes float32 input")
        return _export_with_onnx_package(model, path, shape, name)
    return _export_native(model, path, shape, name, bool(include_preprocessing), dtype)


def _conv_pads(layer):
    """ONNX pads [top, left, bottom, right] of a ConvLayer: its padding, or
    PyTorch's for 'same' (the odd one after) and 'valid'."""
    if layer.padding == "valid":
        return [0, 0, 0, 0]
    if layer.padding == "same":
        totals = [d * (k - 1) for d, k in zip(layer.dilation, layer.kernel_size)]
        return [t // 2 for t in totals] + [t - t // 2 for t in totals]
    return list(layer.padding) * 2


def _pool_pair(pool):
    try:
        kernel, stride = (int(v) for v in pool)
    except (TypeError, ValueError):
        raise ValueError(f"_conv_onnx: pool must be (kernel, stride), got {pool!r}") from None
    return kernel, stride


def _chain(stages, name, input_name, output_name, helper, nodes):
    """Nodes one after another; intermediate outputs are '<name>.<op>'."""
    current = input_name
    for i, (op, attrs, extra_inputs) in enumerate(stages):
        out = output_name if i == len(stages) - 1 else f"{name}.{op.lower()}"
        nodes.append(helper.make_node(op, [current] + extra_inputs, [out], name=f"{name}.{op}",
                                      **attrs))
        current = out
    return output_name


def _import_onnx():
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as err:
        raise ImportError(f"export: the onnx package is needed for _onnx_graph models "
                          f"(pip install onnx): {err}") from None
    return onnx, helper, TensorProto, numpy_helper


def _atomic_write(path, data):
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _export_with_onnx_package(model, path, shape, name):
    """The seed's path: _onnx_graph returns (nodes, initializers, output_name,
    output_shape) for a graph whose input is named 'input'."""
    onnx, helper, TensorProto, numpy_helper = _import_onnx()
    result = model._onnx_graph(list(shape), helper, TensorProto, numpy_helper)
    if not isinstance(result, tuple) or len(result) != 4:
        raise TypeError("_onnx_graph must return (nodes, initializers, output_name, "
                        "output_shape)")
    nodes, initializers, output_name, output_shape = result
    batch = "batch"  # dynamic batch dimension, as the seed made it
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch] + list(shape[1:]))],
        [helper.make_tensor_value_info(output_name, TensorProto.FLOAT,
                                       [batch] + list(output_shape[1:]))],
        initializer=initializers)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                   producer_name="nn_engine")
    onnx_model.ir_version = 8  # readable by onnxruntime releases of 2022 on
    onnx.checker.check_model(onnx_model)
    _atomic_write(path, onnx_model.SerializeToString())
    return path


def _export_input_dtype(input_dtype):
    """The traced input's dtype: float32, or int32 for any integer dtype."""
    if input_dtype is None:
        return np.dtype(np.float32)
    try:
        dtype = np.dtype(input_dtype)
    except TypeError:
        raise TypeError(f"export: input_dtype must be a NumPy dtype (float32, int32, int64), "
                        f"got {input_dtype!r}") from None
    if dtype == np.float32:
        return dtype
    if dtype.kind in "iu":
        return np.dtype(np.int32)
    raise TypeError(f"export: input_dtype must be float32 or an integer dtype (token indices), got {dtype}")


def _export_native(model, path, shape, name, include_preprocessing, dtype):
    if not _lib.has_symbol("nn_onnx_export"):
        raise NotImplementedError(
            f"export: native ONNX export (nn_onnx_export) is not in this build of the library "
            f"({_lib.library_path}); define _onnx_graph(input_shape, helper, TensorProto, "
            f"numpy_helper) on the model to export through the onnx package")
    # int32 state counts training batches (BatchNorm's num_batches_tracked):
    # no inference graph reads it, and torch.onnx leaves it out too.
    named, seen = [], set()
    for key, t in model._state():
        if t.dtype != np.int32 and t._h.ptr not in seen:  # a tied tensor under its first name
            seen.add(t._h.ptr)
            named.append((key, t))
    # The library walks the tape from input to output: record every
    # operation, including those before the first parameter.
    device = named[0][1]._h.ctx if named else None
    with _context.enable_grad():
        if dtype == np.float32:
            x = Tensor(np.zeros(shape, dtype=np.float32), requires_grad=True, track=False, device=device)
        else:  # indices can take no gradient; the parameters that read them record the graph
            x = Tensor(np.zeros(shape, dtype=np.int32), track=False, dtype=np.int32, device=device)
        with _context.tracing_export():
            y = model(x)
    if not isinstance(y, Tensor):
        raise TypeError(f"export: forward returned {type(y).__name__}, not a Tensor")
    n = len(named)
    names = (ctypes.c_char_p * max(n, 1))(*[key.encode() for key, _ in named])
    info = _model_info(model, "export", include_preprocessing)
    with _lib.LOCK:  # the options hold the parameters' pointers until the call
        tensors = _lib.PointerArray(t._ptr() for _, t in named).get()
        options = _lib.OnnxOptions(name.encode(), 0, False, n, tensors, names,
                                   ctypes.pointer(info.struct) if info else None)
        status = lib.nn_onnx_export(os.fsencode(path), x._ptr(), y._ptr(), ctypes.byref(options))
        message = last_error_message()
    if status != 0 and dtype == np.float32 and "does not depend on the input" in message:
        # A float trace that an Embedding converted to indices never reaches the output.
        raise RuntimeError(f"{message}; a model whose input is token indices (an Embedding first) "
                           f"exports with input_dtype=np.int64")
    check(status, "nn_onnx_export")
    return path


class _Info:
    """An nn_model_info and the C strings it points at (kept alive with it)."""

    def __init__(self, struct, keep):
        self.struct, self._keep = struct, keep


def _normalization_pairs(value, where):
    """(mean, std) per channel from input_normalization, checked."""
    try:
        mean, std = value
        mean = [float(v) for v in np.atleast_1d(np.asarray(mean, dtype=np.float64))]
        std = [float(v) for v in np.atleast_1d(np.asarray(std, dtype=np.float64))]
    except (TypeError, ValueError):
        raise ValueError(f"{where}: input_normalization must be (mean, std), each a number or one per "
                         f"channel, got {value!r}") from None
    if len(mean) != len(std) or not 1 <= len(mean) <= _lib.NN_MODEL_INFO_MAX_CHANNELS:
        raise ValueError(f"{where}: input_normalization needs as many means as stds, 1 to "
                         f"{_lib.NN_MODEL_INFO_MAX_CHANNELS}, got {len(mean)} and {len(std)}")
    if not all(np.isfinite(mean)) or not all(np.isfinite(s) and s > 0 for s in std):
        raise ValueError(f"{where}: input_normalization: means must be finite and stds finite and > 0, "
                         f"got mean {mean}, std {std}")
    return mean, std


def _model_info(model, where, include_normalization=True):
    """The model's input_normalization and class_names as an nn_model_info,
    or None when it has neither."""
    normalization = getattr(model, "input_normalization", None) if include_normalization else None
    classes = getattr(model, "class_names", None)
    if normalization is None and classes is None:
        return None
    info = _lib.ModelInfo()
    keep = []
    if normalization is not None:
        mean, std = _normalization_pairs(normalization, where)
        info.channels = len(mean)
        info.mean[:len(mean)] = mean
        info.std[:len(std)] = std
    if classes is not None:
        if isinstance(classes, str) or not all(isinstance(c, str) and c for c in classes):
            raise ValueError(f"{where}: class_names must be a list of non-empty str, got {classes!r}")
        keep = [c.encode() for c in classes]
        info.class_count = len(keep)
        info.class_names = (ctypes.c_char_p * max(len(keep), 1))(*keep)
        keep.append(info.class_names)
    return _Info(info, keep)


def read_model_info(path):
    """(input_normalization, class_names) saved in a checkpoint's metadata:
    ((mean tuple, std tuple) or None, [str] or None)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"read_model_info: path must be a str or os.PathLike, got {type(path).__name__}")
    info = _lib.ModelInfo()
    check(lib.nn_read_model_info(os.fsencode(path), ctypes.byref(info)), "nn_read_model_info")
    try:
        normalization = None
        if info.channels > 0:
            # float32 values, written back as their shortest decimals (0.286, not 0.28600001)
            normalization = tuple(tuple(float(str(np.float32(v))) for v in values[:info.channels])
                                  for values in (info.mean, info.std))
        classes = None
        if info.class_count > 0:
            classes = [info.class_names[i].decode("utf-8", "replace") for i in range(info.class_count)]
    finally:
        lib.nn_model_info_free(ctypes.byref(info))
    return normalization, classes
