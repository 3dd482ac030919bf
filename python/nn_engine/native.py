"""NativeModule: a Module whose tree is a C module (include/nn_module.h),
such as the C zoo's (nn_engine.models) or an imported ONNX graph's. Its
parameters and buffers are the C module's tensors under its state_dict
names; forward is the C module's; train() and eval() set the C module's
mode; its children are the C module's, shown by repr and named_modules."""
import ctypes

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
_state_count = _lib.declare("nn_module_state_count", ctypes.c_int, [c_module_p])
_state = _lib.declare("nn_module_state", _lib.c_tensor_p, [c_module_p, ctypes.c_int])
_state_name = _lib.declare("nn_module_state_name", ctypes.c_char_p, [c_module_p, ctypes.c_int])


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
    from the root that `owner` frees)."""

    def __init__(self, owner, ptr=None):
        super().__init__()
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_ptr", owner.ptr if ptr is None else ptr)
        object.__setattr__(self, "_kind", _kind(self._ptr).decode())

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

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        join = (prefix + ".") if prefix else ""
        pairs = self._listing(lib.nn_module_param_count, lib.nn_module_param_name, lib.nn_module_param)
        return [(join + name, t) for name, t in pairs if recurse or "." not in name]

    def named_buffers(self, prefix="", recurse=True):
        join = (prefix + ".") if prefix else ""
        pairs = self._listing(lib.nn_module_buffer_count, lib.nn_module_buffer_name, lib.nn_module_buffer)
        return [(join + name, t) for name, t in pairs if recurse or "." not in name]

    def _state(self):
        """The C module's state_dict, in its order (torch's)."""
        return self._listing(_state_count, _state_name, _state)

    def named_children(self):
        return [(_child_name(self._ptr, i).decode(), NativeModule(self._owner, _child_at(self._ptr, i)))
                for i in range(_child_count(self._ptr))]

    def named_modules(self, memo=None, prefix=""):
        out = [(prefix, self)]
        for name, child in self.named_children():
            out += child.named_modules(prefix=f"{prefix}.{name}" if prefix else name)
        return out

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError(f"train: mode must be a bool, got {type(mode).__name__}")
        check(lib.nn_module_set_training(self._ptr, mode), "nn_module_set_training")
        object.__setattr__(self, "training", mode)
        return self

    def __setattr__(self, name, value):
        if name in ("_owner", "_ptr", "_kind"):
            raise AttributeError(f"{name} of a {type(self).__name__} is fixed")
        super().__setattr__(name, value)

    def _get_name(self):
        return self._kind
