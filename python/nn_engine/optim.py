"""Optimizers over the C optimizer interface (include/nn_optim.h): every
optimizer is an Optimizer (step, zero_grad, lr); SGD has torch.optim.SGD's
semantics plus the seed's per-element gradient clamp."""
import ctypes
import numbers

from . import _context, _lib
from ._errors import check, check_ptr
from ._lib import lib
from .tensor import Tensor


def _number(value, name, owner):
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a number, got {type(value).__name__}")
    return float(value)


def _tensors(params, owner):
    if isinstance(params, Tensor):
        raise TypeError(f"{owner}: params must be an iterable of Tensors (e.g. "
                        "model.parameters()), got a single Tensor")
    try:
        params = list(params)
    except TypeError:
        raise TypeError(f"{owner}: params must be an iterable of Tensors, got "
                        f"{type(params).__name__}") from None
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{owner}: parameter {i} is a {type(p).__name__}, not a Tensor")
    return params


class Optimizer:
    """What every optimizer has: step(), zero_grad() and the learning rate
    lr (read on the device by the update, so a captured step replays with
    the rate last set). Subclasses make the C optimizer in __init__."""

    def __init__(self, params, ptr, lr):
        self.params = params
        self._ptr = ptr
        self._lr = lr
        # Held so the context outlives the optimizer, which frees its tensors there.
        self._ctx = params[0]._h.ctx if params else None

    @property
    def lr(self):
        return self._lr

    @lr.setter
    def lr(self, value):
        value = _number(value, "lr", type(self).__name__)
        check(lib.nn_optimizer_set_lr(self._ptr, value), "nn_optimizer_set_lr")
        self._lr = value

    def zero_grad(self):
        check(lib.nn_optimizer_zero_grad(self._ptr), "nn_optimizer_zero_grad")

    def step(self):
        check(lib.nn_optimizer_step(self._ptr), "nn_optimizer_step")

    def __del__(self):
        ptr = getattr(self, "_ptr", None)
        if ptr and not _context._shutting_down:
            lib.nn_optimizer_free(ptr)
            self._ptr = None


class SGD(Optimizer):
    """SGD(params, lr, momentum=0.0, weight_decay=0.0, nesterov=False).

    step(clip=None): clip clamps each gradient element to [-clip, clip] before
    the update, as the seed's SGD did (None: no clamp). max_grad_norm > 0
    rescales all gradients to that global L2 norm first."""

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0, nesterov=False,
                 max_grad_norm=0.0):
        params = _tensors(params, "SGD")
        options = _lib.SgdOptions(_number(lr, "lr", "SGD"), _number(momentum, "momentum", "SGD"),
                                  _number(weight_decay, "weight_decay", "SGD"), bool(nesterov), 0.0,
                                  _number(max_grad_norm, "max_grad_norm", "SGD"))
        ptrs = (_lib.c_tensor_p * max(len(params), 1))(*[p._ptr() for p in params])
        super().__init__(params, check_ptr(lib.nn_sgd_new(ptrs, len(params), ctypes.byref(options)),
                                           "nn_sgd_new"), options.lr)
        self._clip = 0.0
        self.momentum = options.momentum
        self.weight_decay = options.weight_decay
        self.nesterov = bool(nesterov)

    def step(self, clip=None):
        if clip is None:
            clip = 0.0  # the C optimizer's "off"
        else:
            clip = _number(clip, "clip", "SGD.step")
            if not clip > 0.0:
                raise ValueError(f"SGD.step: clip must be > 0 (None for no clamp), got {clip}")
        if clip != self._clip:
            check(lib.nn_sgd_set_clip_value(self._ptr, clip), "nn_sgd_set_clip_value")
            self._clip = clip
        super().step()


# torch.optim.lr_scheduler's place: nn_engine.optim.lr_scheduler.
from . import lr_scheduler  # noqa: E402,F401
