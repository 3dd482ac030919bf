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
import math

from . import _context
from ._errors import check
from ._lib import lib

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
    """torch.amp.GradScaler: scale(loss) multiplies the loss by the scale;
    step(optimizer) divides the gradients by it and runs the step only when
    they are all finite (one read from the device per step), skipping and
    counting the step otherwise; update() halves the scale after a skipped
    step and doubles it after `growth_interval` good ones."""

    def __init__(self, device=None, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if not init_scale > 0 or not growth_factor > 1 or not 0 < backoff_factor < 1 or growth_interval < 1:
            raise ValueError("GradScaler: init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1 and "
                             "growth_interval >= 1 are required")
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._enabled = bool(enabled)
        self._good_steps = 0
        self._found_inf = None  # for the current step: None until checked
        self._unscaled = set()
        self.skipped_steps = 0

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def scale(self, loss):
        return loss * self._scale if self._enabled else loss

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale (once per step) and
        note whether any is infinite or NaN."""
        if not self._enabled or id(optimizer) in self._unscaled:
            return
        self._unscaled.add(id(optimizer))
        total = None
        inverse = 1.0 / self._scale
        with _context.no_grad():
            for p in optimizer.params:
                g = p.grad
                if g is None:
                    continue
                unscaled = g * inverse
                check(lib.nn_tensor_copy(g._ptr(), unscaled._ptr()), "nn_tensor_copy")
                part = unscaled.abs().sum()
                total = part if total is None else total + part
            found = total is not None and not math.isfinite(total.item())
        self._found_inf = bool(found) or bool(self._found_inf)

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(...) unless a gradient was infinite or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        self.unscale_(optimizer)
        if self._found_inf:
            self.skipped_steps += 1
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        elif self._found_inf:
            self._scale *= self._backoff_factor
            self._good_steps = 0
        else:
            self._good_steps += 1
            if self._good_steps == self._growth_interval:
                self._scale *= self._growth_factor
                self._good_steps = 0
        self._found_inf = None
        self._unscaled = set()

    def state_dict(self):
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._good_steps}

    def load_state_dict(self, state):
        self._scale = float(state["scale"])
        self._growth_factor = float(state["growth_factor"])
        self._backoff_factor = float(state["backoff_factor"])
        self._growth_interval = int(state["growth_interval"])
        self._good_steps = int(state["_growth_tracker"])
