"""Step capture and replay (the C library's nn_capture.h) for Python.

    step = nn_engine.capture(train_step)     # or @nn_engine.capture

    for x, y in batches:
        loss = step(x, y)                    # the same loss Tensor each time
    print(loss.item())

The first call runs train_step eagerly (it creates the gradients and momentum
buffers); the second runs it while recording every kernel launch; later calls
copy their tensor arguments into the recorded inputs and replay the recording:
no Python, no graph building, no allocation, and on Vulkan one resubmitted
command buffer. The results equal the eager ones bit for bit.

Rules, as for CUDA graphs and tinygrad's TinyJit:
- tensor arguments (Tensor or NumPy arrays) must keep their shapes and dtypes;
  other arguments are frozen at the recorded call (a change raises);
- train_step must not read values back (.sync(), .numpy(), .item()) - read
  the returned tensors after the call instead;
- train_step returns a Tensor, a tuple/list of Tensors, or None; the returned
  Tensors are the same objects on every replayed call, refreshed in place;
- each call ends the batch (end_batch()), as a training step does.
"""
import functools

import numpy as np

from . import _context
from ._errors import check, check_ptr
from ._lib import lib
from .tensor import Tensor


class CapturedStep:
    """A training step that is recorded on its second call and replayed after."""

    def __init__(self, fn, warmup=1):
        if not callable(fn):
            raise TypeError(f"capture: expected a function, got {type(fn).__name__}")
        if not isinstance(warmup, int) or warmup < 1:
            raise ValueError(f"capture: warmup must be an int >= 1, got {warmup!r}")
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._warmup = warmup
        self._calls = 0
        self._capture = None
        self._ctx = None
        self._inputs = None    # the recorded call's tensor arguments (kept alive)
        self._frozen = None    # its other arguments
        self._outputs = None   # what it returned

    @property
    def command_count(self):
        """Commands in the recorded step (0 before it is recorded)."""
        return lib.nn_capture_command_count(self._capture) if self._capture else 0

    def __call__(self, *args):
        self._calls += 1
        if self._capture is not None:
            return self._replay(args)
        if self._calls <= self._warmup:
            outputs = self._fn(*[_as_tensor(a, i) for i, a in enumerate(args)])
            _persist(outputs)
            _context.end_batch()
            return outputs
        return self._record(args)

    def _record(self, args):
        ctx = _context.default_context()
        inputs = [_as_tensor(a, i, keep=True) if _is_tensor_arg(a) else None for i, a in enumerate(args)]
        call_args = [t if t is not None else a for t, a in zip(inputs, args)]
        check(lib.nn_capture_begin(ctx.ptr), "nn_capture_begin")
        try:
            outputs = self._fn(*call_args)
            _persist(outputs)
            ctx.end_step()
        except BaseException:
            # Stop recording and drop what was recorded; the step's error propagates.
            lib.nn_capture_free(lib.nn_capture_end(ctx.ptr))
            raise
        self._capture = check_ptr(lib.nn_capture_end(ctx.ptr), "nn_capture_end")
        self._ctx = ctx
        self._inputs = inputs
        self._frozen = [None if t is not None else a for t, a in zip(inputs, args)]
        self._outputs = outputs
        return outputs

    def _replay(self, args):
        if len(args) != len(self._inputs):
            raise TypeError(f"{self.__name__}: recorded with {len(self._inputs)} arguments, called "
                            f"with {len(args)}")
        for i, (arg, recorded) in enumerate(zip(args, self._inputs)):
            if recorded is None:
                if not _same(arg, self._frozen[i]):
                    raise ValueError(f"{self.__name__}: argument {i} is not a tensor and differs from "
                                     "the recorded call's; a replayed step cannot change it")
                continue
            if arg is recorded:
                continue
            if isinstance(arg, Tensor):
                if arg.shape != recorded.shape or arg.dtype != recorded.dtype:
                    raise ValueError(f"{self.__name__}: argument {i} has shape {arg.shape} "
                                     f"{arg.dtype}, the recorded call's {recorded.shape} "
                                     f"{recorded.dtype}")
                check(lib.nn_tensor_copy(recorded._ptr(), arg._ptr()), "nn_tensor_copy")
            else:
                array = np.ascontiguousarray(arg, dtype=recorded.dtype)
                if array.shape != recorded.shape:
                    raise ValueError(f"{self.__name__}: argument {i} has shape {array.shape}, the "
                                     f"recorded call's {recorded.shape}")
                check(lib.nn_tensor_write(recorded._ptr(), array.ctypes.data, array.nbytes),
                      "nn_tensor_write")
        check(lib.nn_replay(self._capture, 1), "nn_replay")
        return self._outputs

    def __del__(self):
        if self._capture and not _context._shutting_down and self._ctx is not None and self._ctx.ptr:
            lib.nn_capture_free(self._capture)
        self._capture = None


def capture(fn=None, *, warmup=1):
    """Capture a training step (see the module docstring). Works as a call,
    capture(fn), or a decorator, @capture or @capture(warmup=2)."""
    if fn is None:
        return lambda f: CapturedStep(f, warmup)
    return CapturedStep(fn, warmup)


def _is_tensor_arg(a):
    return isinstance(a, (Tensor, np.ndarray))


def _as_tensor(a, index, keep=False):
    """Tensor arguments as Tensors (NumPy arrays are uploaded); kept ones
    survive end_batch (they are the recorded step's inputs)."""
    if isinstance(a, Tensor):
        if keep:
            copy = Tensor(np.zeros(a.shape, dtype=a.dtype), track=False, dtype=a.dtype)
            check(lib.nn_tensor_copy(copy._ptr(), a._ptr()), "nn_tensor_copy")
            return copy
        return a
    if isinstance(a, np.ndarray):
        dtype = np.int32 if a.dtype.kind in "iu" else np.float32
        return Tensor(a, track=not keep, dtype=dtype)
    return a


def _persist(outputs):
    if isinstance(outputs, Tensor):
        outputs.persist()
    elif isinstance(outputs, (tuple, list)):
        for o in outputs:
            if isinstance(o, Tensor):
                o.persist()
    elif outputs is not None:
        raise TypeError(f"capture: the step must return a Tensor, a tuple or list of Tensors, or "
                        f"None; got {type(outputs).__name__}")


def _same(a, b):
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else np.array_equal(a, b)
    except (TypeError, ValueError):
        return a is b
