"""NativeModule: a Module whose tree is a C module (include/nn_module.h),
such as the C zoo's (nn_engine.models) or an imported ONNX graph's. Its
parameters and buffers are the C module's tensors under its state_dict
names; forward is the C module's; train() and eval() set the C module's
mode; its children are the C module's, shown by repr and named_modules."""
import ctypes

import numpy as np

from . import _context, _lib
from ._context import BORROWED, Handle
from ._errors import check
from ._lib import LOCK, c_module_p, lib
from .module import Module
from .tensor import Tensor

_kind = _lib.declare("nn_module_kind", ctypes.c_char_p, [c_module_p])
_child_count = _lib.declare("nn_module_child_count", ctypes.c_int, [c_module_p])
_child_at = _lib.declare("nn_module_child_at", c_module_p, [c_module_p, ctypes.c_int])
_child_name = _lib.declare("nn_module_child_name", ctypes.c_char_p, [c_module_p, ctypes.c_int])
_is_training = _lib.declare("nn_module_is_training", ctypes.c_bool, [c_module_p])


class ModuleOwner:
    """The root C module: freed when its NativeModule and every Tensor over
    one of its tensors are gone (their handles name this as their parent)."""

    def __init__(self, ptr, ctx):
        self.ptr = ptr
        self.ctx = ctx

    def valid(self):
        return self.ptr is not None and getattr(self.ctx, "ptr", None) is not None

    def __del__(self):
        if self.ptr is not None and getattr(self.ctx, "ptr", None) is not None and not _context._shutting_down:
            try:
                with LOCK:
                    lib.nn_module_free(self.ptr)
            except Exception:  # interpreter teardown: ctypes may be half gone
                pass
        self.ptr = None


class NativeModule(Module):
    """A C module (the root, or a child of one: `ptr` is then borrowed
    from the root that `owner` frees). make(ctx) builds the same root on
    another context (a pointer), for to()."""

    def __init__(self, owner, ptr=None, make=None):
        super().__init__()
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_ptr", owner.ptr if ptr is None else ptr)
        object.__setattr__(self, "_kind", _kind(self._ptr).decode())
        object.__setattr__(self, "_make", make)
        object.__setattr__(self, "training", bool(_is_training(self._ptr)))

    def forward(self, x):
        x = x if isinstance(x, Tensor) else Tensor(x)
        return Tensor._result(lib.nn_module_forward(self._ptr, x._h), self._owner.ctx, f"{self._kind} forward")

    def _listing(self, count, name, tensor):
        owner = self._owner
        out = []
        for i in range(count(self._ptr)):
            handle = Handle(tensor(self._ptr, i), owner.ctx, BORROWED, parent=owner)
            out.append((name(self._ptr, i).decode(), Tensor._wrap(handle)))
        return out

    # the tree's three hooks (module.py), answered by the C module
    def named_children(self):
        return [(_child_name(self._ptr, i).decode(), NativeModule(self._owner, _child_at(self._ptr, i)))
                for i in range(_child_count(self._ptr))]

    def _own_parameters(self):
        pairs = self._listing(lib.nn_module_param_count, lib.nn_module_param_name, lib.nn_module_param)
        return [(name, t) for name, t in pairs if "." not in name]

    def _own_buffers(self):
        pairs = self._listing(lib.nn_module_buffer_count, lib.nn_module_buffer_name, lib.nn_module_buffer)
        return [(name, t) for name, t in pairs if "." not in name]

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError(f"train: mode must be a bool, got {type(mode).__name__}")
        check(lib.nn_module_set_training(self._ptr, mode), "nn_module_set_training")
        object.__setattr__(self, "training", mode)
        return self

    def to(self, *args, **kwargs):
        """The module on another device, in place: the C module is built
        again there and given this one's state and mode (Tensors taken from
        it before keep the old values: make the optimizer after moving, as
        in PyTorch). Returns self."""
        from .tensor import _device_and_dtype
        device, dtype = _device_and_dtype(args, kwargs, f"{self._kind}.to")
        if dtype is not None and dtype != np.float32:
            raise ValueError(f"{self._kind}.to: parameters are float32, not {np.dtype(dtype)}")
        if device is None:
            return self
        ctx = _context.context_for(device, f"{self._kind}.to")
        if ctx is self._owner.ctx:
            return self
        if self._make is None:
            raise ValueError(f"{self._kind}.to({device!r}): a part of a module moves with its whole model")
        moved = NativeModule(ModuleOwner(self._make(ctx), ctx), make=self._make)
        values = {name: tensor.sync() for name, tensor in self._state()}
        for name, tensor in moved._state():
            tensor.upload(values[name])
        moved.train(self.training)
        object.__setattr__(self, "_owner", moved._owner)
        object.__setattr__(self, "_ptr", moved._ptr)
        return self

    def __getattr__(self, name):
        """A child, a parameter or a buffer by its name (model.fc,
        model.fc.weight, model.bn1.running_mean), as torch's modules give them."""
        if not name.startswith("_"):
            for member_name, member in self.named_children() + self._own_parameters() + self._own_buffers():
                if member_name == name:
                    return member
        return super().__getattr__(name)

    def __setattr__(self, name, value):
        if name in ("_owner", "_ptr", "_kind", "_make"):
            raise AttributeError(f"{name} of a {type(self).__name__} is fixed")
        if isinstance(value, (Module, Tensor)):
            raise TypeError(f"{self._kind}.{name} = {type(value).__name__}(...): a module the library built runs "
                            f"its own tree, which Python cannot change; give the model what it needs when making "
                            f"it (num_classes=...), or wrap it in a Module of yours")
        super().__setattr__(name, value)

    def _get_name(self):
        return self._kind
