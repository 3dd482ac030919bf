"""Step capture and replay (the C library's step runner, nn_step.h) for Python.

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
- each call ends the batch (end_batch()), as a training step does;
- a call whose train_step raises counts for nothing (a failed recording is
  dropped): the next call runs the way it would have.
"""
import ctypes
import functools
import weakref

import numpy as np

from . import _context
from ._errors import NN_ERR_STATE, NN_OK, check, check_ptr
from ._lib import NN_STEP_RECORD, NN_STEP_REPLAY, StepFn, StepOptions, lib
from .tensor import Tensor


class CapturedStep:
    """A training step that is recorded on its second call and replayed after.
    The library's step runner (nn_step.h) decides which call does what: it
    calls train_step back for the warm-up and the recorded call, and replays
    the recording for the others."""

    _runner = None  # nn_step_runner *, made on the first call
    _ctx = None

    def __init__(self, fn, warmup=1):
        if not callable(fn):
            raise TypeError(f"capture: expected a function, got {type(fn).__name__}")
        if not isinstance(warmup, int) or warmup < 1:
            raise ValueError(f"capture: warmup must be an int >= 1, got {warmup!r}")
        if warmup > 2**31 - 1:
            raise ValueError(f"capture: warmup must be at most 2**31 - 1, got {warmup!r}")
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._warmup = warmup
        self._step_fn = _step_fn_of(weakref.ref(self))
        self._call = None      # (phase, arguments) of the call the runner is making
        self._returned = None  # what train_step returned to the runner
        self._error = None     # what train_step raised, to raise after the runner returns
        self._inputs = None    # the recorded call's tensor arguments (kept alive)
        self._frozen = None    # its other arguments
        self._outputs = None   # what it returned

    @property
    def command_count(self):
        """Commands in the recorded step (0 before it is recorded)."""
        return lib.nn_step_runner_command_count(self._runner) if self._runner else 0

    def __call__(self, *args):
        runner = self._runner_on(next((a._h.ctx for a in args if isinstance(a, Tensor)), None) or
                                 _context.default_context())
        phase = lib.nn_step_runner_phase(runner)
        if phase == NN_STEP_REPLAY:
            self._write_inputs(args)
            self._run(runner, phase, None)
            return self._outputs
        if phase != NN_STEP_RECORD:
            return self._run(runner, phase, [_as_tensor(a, i) for i, a in enumerate(args)])
        # Made before the recording starts: their uploads must not be replayed.
        inputs = [_as_tensor(a, i, keep=True) if _is_tensor_arg(a) else None for i, a in enumerate(args)]
        outputs = self._run(runner, phase, [t if t is not None else a for t, a in zip(inputs, args)])
        self._inputs = inputs
        self._frozen = [None if t is not None else a for t, a in zip(inputs, args)]
        self._outputs = outputs
        return outputs

    def _runner_on(self, ctx):
        """The runner, made on the context of the first call's tensors (the default one without)."""
        if self._runner is None:
            options = StepOptions(warmup=self._warmup, eager=False)
            self._runner = check_ptr(lib.nn_step_runner_new(ctx.ptr, self._step_fn, None,
                                                            ctypes.byref(options)),
                                     "nn_step_runner_new")
            self._ctx = ctx
        return self._runner

    def _run(self, runner, phase, call_args):
        """One step through the runner; returns what train_step returned (if
        it was called) and raises what it raised."""
        self._call = (phase, call_args)
        try:
            status = lib.nn_step_runner_run(runner, 1)
        finally:
            self._call = None
        returned, self._returned = self._returned, None
        error, self._error = self._error, None
        if error is not None:
            raise error
        check(status, "nn_step_runner_run")
        return returned

    def _step(self):
        """The step function the runner calls, eagerly or while recording:
        train_step on the call's arguments, its results kept past the batch,
        the batch ended. ctypes would only print an exception raised here, so
        it is kept for _run to raise, and the runner told of a failure."""
        try:
            phase, call_args = self._call
            with _context.keep_step():  # the runner ends the step
                outputs = self._fn(*call_args)
            _persist(outputs)
            if phase == NN_STEP_RECORD:
                self._ctx.end_step()
            else:
                _context.end_batch()
            self._returned = outputs
            return NN_OK
        except BaseException as error:  # KeyboardInterrupt too: _run raises it
            self._error = error
            return NN_ERR_STATE

    def _write_inputs(self, args):
        """This call's tensor arguments into the recorded call's inputs."""
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

    def __del__(self):
        if self._runner and not _context._shutting_down and self._ctx is not None and self._ctx.ptr:
            lib.nn_step_runner_free(self._runner)
        self._runner = None


def _step_fn_of(step_ref):
    """The C step function (nn_step_fn) of a CapturedStep, holding it weakly
    so that the two make no reference cycle; the runner calls it only from
    inside the CapturedStep's own call."""
    return StepFn(lambda _user: step_ref()._step())


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
            copy = Tensor(np.zeros(a.shape, dtype=a.dtype), track=False, dtype=a.dtype, device=a._h.ctx)
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
