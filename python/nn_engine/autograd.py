"""Custom autograd functions (torch.autograd.Function) and a gradient check.

    class SiluGate(nn_engine.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return F.silu(a) * b
        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            s = F.sigmoid(a)
            return grad * b * s * (1 + a * (1 - s)), grad * a * s

    y = SiluGate.apply(a, b)

forward runs with grad mode off; its result becomes, through the library's
nn_function_apply (include/nn_custom.h), a view whose gradient is
backward's, which autograd calls while it walks the graph (grad mode off
there too). backward returns one gradient (or None) per forward argument.
A function returns one tensor. An export writes its `symbolic` composition
(torch's symbolic, as library operations) or refuses it by name."""
import ctypes
import itertools
import sys

import numpy as np

from . import _context, _errors, _lib
from ._context import BORROWED, no_grad
from ._lib import lib
from ._structs import FunctionCall, FunctionDef
from .tensor import Tensor

_lib.declare("nn_function_apply", _lib.c_tensor_p,
             [ctypes.POINTER(FunctionDef), ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, _lib.c_tensor_p,
              ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_void_p])

MAX_INPUTS = 7  # NN_FUNCTION_MAX_INPUTS
MAX_SAVED = 8

_BACKWARD = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(FunctionCall))


class FunctionCtx:
    """What forward leaves for backward: save_for_backward(*tensors) and
    saved_tensors, needs_input_grad (one flag per forward argument), and
    any attribute forward sets."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.saved_tensors = ()

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward: {type(t).__name__} is not a Tensor (keep other values as "
                                "attributes of ctx)")
        self.saved_tensors = tuple(tensors)


class _Pending:
    """A call whose backward may still run: its class, ctx, forward
    arguments and the step it belongs to (nn_ctx_step_end drops the tape,
    and with it every call of the step)."""
    __slots__ = ("cls", "fctx", "args", "ctx", "generation", "grads")

    def __init__(self, cls, fctx, args, ctx):
        self.cls, self.fctx, self.args, self.ctx, self.generation = cls, fctx, args, ctx, ctx.generation
        self.grads = ()  # backward's results: a Python-held step tensor is freed with its last Python reference


_pending = {}
_tokens = itertools.count(1)


def _forget_ended_steps():
    for token in [t for t, p in _pending.items() if p.ctx.generation != p.generation]:
        del _pending[token]


def _run_backward(call):
    pending = _pending.get(call.user or 0)
    if pending is None:
        raise RuntimeError("autograd.Function: backward was called for a step that has ended")
    scope = _context.CallScope()  # the library frees the output's gradient after
    try:
        grad = Tensor._wrap(_context.Handle(call.grad_output, pending.ctx, BORROWED, parent=scope))
        with no_grad():
            grads = pending.cls.backward(pending.fctx, grad)
        if not isinstance(grads, tuple):
            grads = (grads,)
        if len(grads) != len(pending.args):
            raise ValueError(f"{pending.cls.__name__}.backward returned {len(grads)} gradients for "
                             f"{len(pending.args)} forward arguments")
        slot = 0
        keep = []  # alive until the step ends: the library reads them after this returns
        for position, (arg, g) in enumerate(zip(pending.args, grads)):
            if not isinstance(arg, Tensor):
                if g is not None:
                    raise ValueError(f"{pending.cls.__name__}.backward returned a gradient for argument "
                                     f"{position}, which is not a tensor")
                continue
            if g is not None:
                if not isinstance(g, Tensor):
                    raise TypeError(f"{pending.cls.__name__}.backward: gradient {position} is a "
                                    f"{type(g).__name__}, not a Tensor")
                keep.append(g)
                call.grad_inputs[slot] = g._h.get()
            slot += 1
        pending.grads = tuple(keep)
        return _errors.NN_OK
    finally:
        scope.open = False


@_BACKWARD
def _backward_trampoline(call_ptr):
    """Called by the library inside nn_backward; an exception is kept and
    raised by the call that ran backward (_errors.error_for)."""
    try:
        return _run_backward(call_ptr.contents)
    except BaseException:  # noqa: B902 - re-raised by error_for in the caller's frame
        _errors.keep_callback_exception(sys.exc_info()[1])
        return _errors.NN_ERR_STATE


class Function:
    """Base class of custom autograd functions: define forward(ctx, *args)
    and backward(ctx, grad_output) as static methods, call Cls.apply(*args).
    An ONNX export writes symbolic(*args), a static method computing the
    same with library operations, where the class defines one; without, the
    export refuses the function by name."""

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("autograd.Function: define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, grad_output):
        raise NotImplementedError("autograd.Function: define backward(ctx, grad_output)")

    @classmethod
    def apply(cls, *args):
        symbolic = getattr(cls, "symbolic", None)
        if symbolic is not None and _context.is_tracing_export():
            return symbolic(*args)
        inputs = [a for a in args if isinstance(a, Tensor)]
        if len(inputs) > MAX_INPUTS:
            raise ValueError(f"{cls.__name__}.apply: {len(inputs)} tensor arguments; at most {MAX_INPUTS}")
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        fctx = FunctionCtx(needs)
        with no_grad():
            result = cls.forward(fctx, *args)
        if not isinstance(result, Tensor):
            raise TypeError(f"{cls.__name__}.forward returned {type(result).__name__}; a custom function "
                            "returns one Tensor")
        if not any(needs) or not inputs or not lib.nn_ctx_grad_enabled(result._h.ctx.ptr):
            return result
        saved = [t for t in fctx.saved_tensors if t is not None]
        if len(saved) > MAX_SAVED:
            raise ValueError(f"{cls.__name__}: {len(saved)} saved tensors; at most {MAX_SAVED}")
        _forget_ended_steps()
        token = next(_tokens)
        _pending[token] = _Pending(cls, fctx, args, result._h.ctx)
        definition = _definition(cls)
        with _lib.LOCK:
            pointers = (ctypes.c_void_p * MAX_INPUTS)(*[t._h.get() for t in inputs])
            kept = (ctypes.c_void_p * MAX_SAVED)(*[t._h.get() for t in saved])
            ptr = lib.nn_function_apply(ctypes.byref(definition), pointers, len(inputs), result._ptr(), kept,
                                        len(saved), token)
        return Tensor._result(ptr, result._h.ctx, "nn_function_apply", result._known_shape, result._known_dtype)


_definitions = {}


def _definition(cls):
    """The C definition of cls (its name and the trampoline), kept for the process."""
    found = _definitions.get(cls)
    if found is None:
        found = _definitions[cls] = FunctionDef(cls.__name__.encode(),
                                                ctypes.cast(_backward_trampoline, ctypes.c_void_p))
    return found


def gradcheck(fn, inputs, eps=1e-2, rtol=2e-2, atol=2e-3, max_elements=64, seed=0):
    """Whether fn's gradients match central finite differences (torch's
    gradcheck, in float32): for a random weighting w of fn(*inputs), each
    input's gradient of sum(w * fn(*inputs)) against (f(x + eps) - f(x - eps))
    / 2 eps at up to max_elements positions of each input that requires
    grad. Returns True, or raises AssertionError naming the input, position
    and both values."""
    rng = np.random.default_rng(seed)
    tensors = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    with no_grad():
        out = fn(*inputs)
        weight = Tensor(rng.uniform(-1, 1, out.shape).astype(np.float32), track=False, device=out.device)
    for x in tensors:
        x.zero_grad()
    loss = (fn(*inputs) * weight).sum()
    loss.backward()
    analytic = [x.grad.numpy().copy() for x in tensors]

    def value(args):
        with no_grad():
            return float(np.sum(fn(*args).numpy().astype(np.float64) * weight.numpy()))

    for k, x in enumerate(tensors):
        base = x.numpy().astype(np.float32)
        flat = base.reshape(-1)
        picks = rng.choice(flat.size, size=min(max_elements, flat.size), replace=False)
        for i in picks:
            values = []
            for step in (eps, -eps):
                moved = flat.copy()
                moved[i] += step
                shifted = Tensor(moved.reshape(base.shape), track=True, device=x.device)
                values.append(value([shifted if a is x else a for a in inputs]))
            numeric = (values[0] - values[1]) / (2 * eps)
            got = float(analytic[k].reshape(-1)[i])
            if abs(got - numeric) > atol + rtol * abs(numeric):
                raise AssertionError(f"gradcheck: input {k} at flat position {i}: backward gives {got:.6g}, "
                                     f"finite differences {numeric:.6g}")
    return True
