"""Mixed precision, as torch.amp: `autocast` makes the products recorded
inside it (convolutions, Linear layers, matmul; not depthwise convolutions)
take fp16 or bf16 operands with fp32 sums, and `GradScaler` scales fp16
losses so that small gradients survive the rounding.

Unlike torch.autocast, results stay float32 tensors: only the operands of
each product are rounded (as tensor cores take them), so normalisation,
losses, pointwise operations and the optimizer stay fp32 without casts. A
product's backward uses the precision its forward was recorded with, inside
the block or not. On a GPU with fp16 matrix cores (`matrix_cores()`) fp16
products run on them; elsewhere they are rounded and run on the fp32 units,
with the same results.

    scaler = nn_engine.amp.GradScaler()
    with nn_engine.amp.autocast(dtype="float16"):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
"""
import ctypes

from . import _context, _lib
from ._errors import check
from ._lib import c_optimizer_p, c_tensor_p, lib
from ._structs import LossScaleOptions, LossScaleState
from .tensor import Tensor

_enable = _lib.declare("nn_optimizer_enable_loss_scaling", ctypes.c_int,
                       [c_optimizer_p, ctypes.POINTER(LossScaleOptions)])
_scale_tensor = _lib.declare("nn_optimizer_loss_scale_tensor", c_tensor_p, [c_optimizer_p])
_unscale = _lib.declare("nn_optimizer_unscale_grads", ctypes.c_int, [c_optimizer_p])
_get_state = _lib.declare("nn_optimizer_loss_scale_state", ctypes.c_int, [c_optimizer_p, ctypes.POINTER(LossScaleState)])
_set_state = _lib.declare("nn_optimizer_set_loss_scale_state", ctypes.c_int,
                          [c_optimizer_p, ctypes.POINTER(LossScaleState)])

_NAMES = {"float32": 0, "fp32": 0, "float": 0, "float16": 1, "fp16": 1, "half": 1, "bfloat16": 2, "bf16": 2}
_CANONICAL = ("fp32", "fp16", "bf16")


def _code(dtype, where):
    name = getattr(dtype, "name", dtype)  # also accepts objects with a .name such as numpy dtypes
    name = str(name).replace("torch.", "")
    if name not in _NAMES:
        raise ValueError(f"{where}: dtype must be float16, bfloat16 or float32 (or fp16, bf16, fp32), got {dtype!r}")
    return _NAMES[name]


def _apply(code):
    _context._precision = code
    for ctx in list(_context._contexts):
        if ctx.ptr:
            check(lib.nn_ctx_set_precision(ctx.ptr, code), "nn_ctx_set_precision")


def set_precision(dtype):
    """The precision of products from now on, on every device: "float16",
    "bfloat16" or "float32" (the default)."""
    _context.default_context()
    _apply(_code(dtype, "set_precision"))


def get_precision():
    """"fp32", "fp16" or "bf16"."""
    return _CANONICAL[_context._precision]


def matrix_cores(dtype="float16", device=None):
    """Whether `device` (default: the default device) runs `dtype` products
    on matrix cores (tensor cores) rather than its fp32 units."""
    ctx = _context.context_for(device, "matrix_cores") if device is not None else _context.default_context()
    return bool(lib.nn_ctx_matrix_cores(ctx.ptr, _code(dtype, "matrix_cores")))


class autocast:
    """autocast(device_type=None, dtype="float16", enabled=True): products
    recorded inside take `dtype` operands (see the module's docstring).
    device_type is accepted for torch.autocast's signature; the setting
    applies to every device. Nests; the previous setting comes back on exit."""

    def __init__(self, device_type=None, dtype="float16", enabled=True, cache_enabled=None):
        self._code = _code(dtype, "autocast") if enabled else 0
        self._enabled = bool(enabled)

    def __enter__(self):
        _context.default_context()
        self._previous = _context._precision
        _apply(self._code)  # enabled=False: fp32 inside, as torch.autocast(enabled=False)
        return self

    def __exit__(self, *exc):
        _apply(self._previous)
        return False

    def __call__(self, fn):
        def wrapped(*args, **kwargs):
            with autocast(dtype=_CANONICAL[self._code], enabled=self._enabled):
                return fn(*args, **kwargs)
        return wrapped


class GradScaler:
    """torch.amp.GradScaler over the optimizer's own loss scaler (the C one,
    include/nn_optim.h): scale(loss) multiplies the loss by the scale, which
    lives on the device; step(optimizer) runs the step, which divides the
    gradients by the scale and, when one is infinite or NaN, leaves the
    parameters as they were, counts the step as skipped and backs the scale
    off; after growth_interval good steps in a row it grows. All of it runs
    on the device (a captured step replays it); update() has nothing left
    to do but take a new_scale. The scaler joins the first optimizer it
    steps (or unscales) and serves that one only."""

    def __init__(self, device=None, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if not init_scale > 0 or not growth_factor > 1 or not 0 < backoff_factor < 1 or growth_interval < 1:
            raise ValueError("GradScaler: init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1 and "
                             "growth_interval >= 1 are required")
        self._options = LossScaleOptions(float(init_scale), float(growth_factor), float(backoff_factor),
                                         int(growth_interval))
        self._enabled = bool(enabled)
        self._optimizer = None  # the optimizer whose scaler holds the scale
        self._state = LossScaleState(float(init_scale), 0, 0)  # until then
        self._scale_tensor = None

    def is_enabled(self):
        return self._enabled

    def _join(self, optimizer, what):
        if self._optimizer is optimizer:
            return
        if self._optimizer is not None:
            raise ValueError(f"GradScaler.{what}: this scaler serves the optimizer it first stepped (its scale "
                             "lives in that optimizer); make a GradScaler per optimizer")
        check(_enable(optimizer._ptr, ctypes.byref(self._options)), "nn_optimizer_enable_loss_scaling")
        check(_set_state(optimizer._ptr, ctypes.byref(self._state)), "nn_optimizer_set_loss_scale_state")
        self._optimizer = optimizer
        handle = _context.Handle(_scale_tensor(optimizer._ptr), optimizer._ctx, _context.BORROWED, parent=optimizer)
        self._scale_tensor = Tensor._wrap(handle)

    def _read_state(self):
        if self._optimizer is not None:
            check(_get_state(self._optimizer._ptr, ctypes.byref(self._state)), "nn_optimizer_loss_scale_state")
        return self._state

    def get_scale(self):
        return float(self._read_state().scale) if self._enabled else 1.0

    @property
    def skipped_steps(self):
        return int(self._read_state().skipped_steps)

    def scale(self, loss):
        """loss times the scale (the device's value once the scaler has joined its optimizer)."""
        if not self._enabled:
            return loss
        return loss * (self._scale_tensor if self._scale_tensor is not None else self._state.scale)

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale now (once per step),
        to clip or read them before step()."""
        if not self._enabled:
            return
        self._join(optimizer, "unscale_")
        check(_unscale(optimizer._ptr), "nn_optimizer_unscale_grads")

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(), which skips itself on the device when a gradient
        overflowed."""
        if self._enabled:
            self._join(optimizer, "step")
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """The scale moved in step(); new_scale replaces it."""
        if not self._enabled or new_scale is None:
            return
        value = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        state = self._read_state()
        state.scale = value
        if self._optimizer is not None:
            check(_set_state(self._optimizer._ptr, ctypes.byref(state)), "nn_optimizer_set_loss_scale_state")

    def state_dict(self):
        state = self._read_state()
        return {"scale": float(state.scale), "growth_factor": self._options.growth_factor,
                "backoff_factor": self._options.backoff_factor, "growth_interval": self._options.growth_interval,
                "_growth_tracker": int(state.good_steps)}

    def load_state_dict(self, state):
        options = LossScaleOptions(float(state["scale"]), float(state["growth_factor"]),
                                   float(state["backoff_factor"]), int(state["growth_interval"]))
        if self._optimizer is not None and [getattr(options, f) for f, _ in options._fields_[1:]] != \
                [getattr(self._options, f) for f, _ in options._fields_[1:]]:
            raise ValueError("GradScaler.load_state_dict: the saved growth_factor, backoff_factor and growth_interval "
                             "differ from those of the optimizer this scaler serves")
        self._options = options
        current = self._read_state()
        self._state = LossScaleState(float(state["scale"]), int(state["_growth_tracker"]), current.skipped_steps)
        if self._optimizer is not None:
            check(_set_state(self._optimizer._ptr, ctypes.byref(self._state)), "nn_optimizer_set_loss_scale_state")
