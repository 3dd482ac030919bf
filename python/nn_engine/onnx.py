"""ONNX import: nn_engine.onnx.load(path) gives a model that runs the
file's graph with the library's operations (include/nn_io.h,
nn_onnx_import), so it trains, captures, saves and exports as any model.
Its state_dict's keys are the initializers' names (PyTorch's state_dict
names for torch.onnx exports); train() and eval() decide how BatchNorm and
Dropout behave, as in PyTorch."""
import ctypes
import os

from . import _context
from ._errors import check_ptr
from ._lib import OnnxImportOptions, PointerArray, lib
from .native import ModuleOwner, NativeModule
from .tensor import Tensor


class ImportedModel(NativeModule):
    """A model made from an ONNX file by load(): the graph's inputs in, its one output out."""

    def __init__(self, owner, path, make):
        super().__init__(owner, make=make)
        object.__setattr__(self, "path", path)

    def forward(self, *inputs):
        """The graph's output for its inputs, in the graph's order (Tensors,
        or arrays made Tensors)."""
        owner = self._owner
        xs = [x if isinstance(x, Tensor) else Tensor(x) for x in inputs]
        if len(xs) == 1:
            ptr = lib.nn_module_forward(owner.ptr, xs[0]._h)
        else:
            ptr = lib.nn_onnx_run(owner.ptr, PointerArray([x._h for x in xs]), len(xs))
        return Tensor._result(ptr, owner.ctx, "imported ONNX model")

    def __repr__(self):
        return f"ImportedModel({self.path!r}, {len(self.named_parameters())} parameters)"


def load(path, device=None, classes=None):
    """The model of the ONNX file at `path` on `device` ("cpu", "vulkan";
    None: the default device). classes=K fine-tunes on K classes: the
    classifier computing the graph's output (a Gemm, or MatMul and Add) gets
    K outputs drawn afresh as torch.nn.Linear draws them. A file that cannot
    be imported raises with the reason: a node whose operator the engine
    does not have is named with its operator and opset."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load: path must be a str or os.PathLike, got {type(path).__name__}")
    if classes is not None and (not isinstance(classes, int) or isinstance(classes, bool) or classes < 1):
        raise ValueError(f"load: classes must be a positive int, got {classes!r}")
    path = os.fspath(path)
    ctx = _context.default_context() if device is None else _context.context_for(device, "onnx.load")
    options = OnnxImportOptions(classes=classes or 0)

    def make(context):  # the file imported on `context` (to() moves the model so)
        return check_ptr(lib.nn_onnx_import_with(context.ptr, os.fsencode(path), ctypes.byref(options)),
                         "nn_onnx_import")
    return ImportedModel(ModuleOwner(make(ctx), ctx), path, make)
