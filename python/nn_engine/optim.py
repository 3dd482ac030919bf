"""SGD over the C optimizer (torch.optim.SGD semantics plus the seed's
per-element gradient clamp)."""
import ctypes
import numbers

from . import _context, _lib
from ._errors import check, check_ptr
from ._lib import lib
from .tensor import Tensor


def _number(value, name):
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"SGD: {name} must be a number, got {type(value).__name__}")
    return float(value)


class SGD:
    """SGD(params, lr, momentum=0.0, weight_decay=0.0, nesterov=False).

    step(clip=None): clip clamps each gradient element to [-clip, clip] before
    the update, as the seed's SGD did (None: no clamp). max_grad_norm > 0
    rescales all gradients to that global L2 norm first."""

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0, nesterov=False,
                 max_grad_norm=0.0):
        if isinstance(params, Tensor):
            raise TypeError("SGD: params must be an iterable of Tensors (e.g. "
                            "model.parameters()), got a single Tensor")
        try:
            params = list(params)
        except TypeError:
            raise TypeError(f"SGD: params must be an iterable of Tensors, got "
                            f"{type(params).__name__}") from None
        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(f"SGD: parameter {i} is a {type(p).__name__}, not a Tensor")
        self.params = params
        self._clip = 0.0
        options = _lib.SgdOptions(_number(lr, "lr"), _number(momentum, "momentum"),
                                  _number(weight_decay, "weight_decay"), bool(nesterov), 0.0,
                                  _number(max_grad_norm, "max_grad_norm"))
        ptrs = (_lib.c_tensor_p * max(len(params), 1))(*[p._ptr() for p in params])
        self._ctx = params[0]._h.ctx if params else None
        self._ptr = check_ptr(lib.nn_sgd_new(ptrs, len(params), ctypes.byref(options)),
                              "nn_sgd_new")
        self._lr = options.lr
        self.momentum = options.momentum
        self.weight_decay = options.weight_decay
        self.nesterov = bool(nesterov)

    @property
    def lr(self):
        return self._lr

    @lr.setter
    def lr(self, value):
        check(lib.nn_sgd_set_lr(self._ptr, _number(value, "lr")), "nn_sgd_set_lr")
        self._lr = float(value)

    def zero_grad(self):
        check(lib.nn_sgd_zero_grad(self._ptr), "nn_sgd_zero_grad")

    def step(self, clip=None):
        if clip is None:
            clip = 0.0  # the C optimizer's "off"
        else:
            clip = _number(clip, "clip")
            if not clip > 0.0:
                raise ValueError(f"SGD.step: clip must be > 0 (None for no clamp), got {clip}")
        if clip != self._clip:
            check(lib.nn_sgd_set_clip_value(self._ptr, clip), "nn_sgd_set_clip_value")
            self._clip = clip
        check(lib.nn_sgd_step(self._ptr), "nn_sgd_step")

    def __del__(self):
        ptr = getattr(self, "_ptr", None)
        if ptr and not _context._shutting_down:
            lib.nn_sgd_free(ptr)
            self._ptr = None
