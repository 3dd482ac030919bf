"""The process's default context (one device), tensor handles and steps.

C tensors come in three lifetimes, and a Python object must never outlive
the C memory it points at (using it would crash the interpreter):
- OWNED: made by Python (parameters, Tensor(data)); freed when the handle is
  garbage-collected, or by end_batch() when the tensor was tracked.
- STEP: an operation's result; the C step owns it and nn_ctx_step_end frees
  it. The handle remembers the step generation it was made in and refuses to
  be used in a later one.
- BORROWED: a gradient, owned by its tensor; valid while its parent is.

Threads: a handle is passed to library functions as itself (a _lib.Deferred),
checked and turned into its pointer inside the call under the library lock;
end_batch() holds that lock throughout, so it never frees a tensor between
another thread's check and call.
"""
import atexit
import contextlib
import ctypes
import functools
import os
import threading
import weakref
from collections import namedtuple

import numpy as np

from . import _lib
from ._errors import check, check_ptr
from ._lib import lib

OWNED, STEP, BORROWED = 0, 1, 2

_shutting_down = False


@atexit.register
def _mark_shutdown():
    # The process is ending and frees everything; C calls from __del__ during
    # interpreter teardown could run after ctypes is gone.
    global _shutting_down
    _shutting_down = True


class Context:
    """One nn_ctx: a device plus its step generation and tracked tensors."""

    def __init__(self, device, threads=0, seed=0):
        options = _lib.CtxOptions(device.encode(), threads, seed)
        self.ptr = check_ptr(lib.nn_ctx_new(ctypes.byref(options)), "nn_ctx_new")
        self.device = device
        self.threads = threads
        # "cpu" or "vulkan": what the library opened (auto resolves to one).
        self.type = self.device_name.split(" ", 1)[0].split(":", 1)[0]
        self.generation = 0
        self.tracked = weakref.WeakSet()  # OWNED handles end_batch() frees
        self.step_results = []  # weak references to this step's STEP handles (cheaper than a WeakSet)
        _contexts.add(self)

    @property
    def device_name(self):
        return lib.nn_ctx_device_name(self.ptr).decode("utf-8", "replace")

    def end_step(self):
        with _lib.LOCK:
            _lib.note_step_end()
            for handle in list(self.tracked):
                handle.release()
            self.tracked = weakref.WeakSet()
            self.step_results = []
            check(lib.nn_ctx_step_end(self.ptr), "nn_ctx_step_end")
            self.generation += 1

    def end_step_keeping_results(self):
        """End the step as PyTorch's reference counting would: every result
        Python still holds is kept (persisted: freed when garbage-collected),
        the rest of the step's tensors and its tape are freed. Tracked inputs
        stay until end_batch() or garbage collection."""
        with _lib.LOCK:
            for ref in self.step_results:
                handle = ref()
                if handle is not None and handle.ptr is not None and handle.kind == STEP \
                        and handle.generation == self.generation:
                    check(lib.nn_tensor_persist(handle.ptr), "nn_tensor_persist")
                    handle.kind = OWNED
            _lib.note_step_end()
            self.step_results = []
            check(lib.nn_ctx_step_end(self.ptr), "nn_ctx_step_end")
            self.generation += 1

    def __del__(self):
        # Handles, layers and optimizers hold a reference to their context,
        # so this runs only after everything that points into it is gone.
        if not _shutting_down and getattr(self, "ptr", None):
            lib.nn_ctx_free(self.ptr)
            self.ptr = None


_contexts = weakref.WeakSet()


_export = threading.local()


@contextlib.contextmanager
def tracing_export():
    """While an ONNX export runs the model's forward: custom functions
    (autograd.Function) record their `symbolic` composition instead."""
    _export.depth = getattr(_export, "depth", 0) + 1
    try:
        yield
    finally:
        _export.depth -= 1


def is_tracing_export():
    return getattr(_export, "depth", 0) > 0


class CallScope:
    """The parent of the handles the library lends to a Python callback (a
    custom function's backward, a custom optimizer's update): they are valid
    until the callback returns, then raise if used."""
    __slots__ = ("open",)

    def __init__(self):
        self.open = True

    def valid(self):
        return self.open


class Handle(_lib.Deferred):
    """A C tensor pointer with its lifetime rule (see the module docstring)."""
    __slots__ = ("ptr", "ctx", "kind", "generation", "parent", "__weakref__")

    def __init__(self, ptr, ctx, kind, parent=None):
        self.ptr = ptr
        self.ctx = ctx
        self.kind = kind
        self.parent = parent
        with _lib.LOCK:
            # A step result whose step another thread ended since the call
            # that returned it is born freed.
            alive = kind != STEP or _lib.last_results_alive()
            self.generation = ctx.generation if alive else -1
            if kind == STEP and alive:
                ctx.step_results.append(weakref.ref(self))

    def valid(self):
        if self.ptr is None:
            return False
        if self.kind == STEP:
            return self.generation == self.ctx.generation
        if self.kind == BORROWED:
            return self.parent.valid()
        return True

    def get(self):
        """The pointer, or a RuntimeError explaining why it is gone. Valid
        until the library lock is released: called by the library call
        itself (Deferred), or under _lib.LOCK."""
        ptr = self.ptr
        if ptr is not None and (self.kind == OWNED or self.valid()):  # OWNED: the fast path
            return ptr
        if self.kind == STEP:
            raise RuntimeError(
                "this tensor was the result of an operation in an earlier step and was "
                "freed by end_batch()/release_all_buffers(); read what you need (.sync()) "
                "before ending the batch, or keep it with .persist()")
        if self.kind == BORROWED:
            raise RuntimeError("this gradient belongs to a tensor that has been freed")
        raise RuntimeError(
            "this tensor was freed by end_batch()/release_all_buffers() (it was made "
            "with track=True, the default); pass track=False to keep it across batches")

    def release(self):
        """Free an OWNED tensor now (end_batch on tracked tensors)."""
        if self.kind == OWNED and self.ptr is not None:
            lib.nn_tensor_free(self.ptr)
        self.ptr = None

    def persist(self):
        """Keep the tensor past end_batch(): a STEP tensor becomes OWNED, a
        tracked OWNED one is no longer tracked."""
        with _lib.LOCK:
            self.get()
            if self.kind == OWNED:
                self.ctx.tracked.discard(self)
                return
            if self.kind == BORROWED:
                raise RuntimeError("a gradient belongs to its tensor and cannot be persisted")
            check(lib.nn_tensor_persist(self), "nn_tensor_persist")
            self.kind = OWNED

    def __del__(self):
        # A context freed first (a garbage-collected cycle finalises in any
        # order) has freed this tensor with it.
        if _shutting_down or self.ptr is None or getattr(self.ctx, "ptr", None) is None:
            return
        try:
            with _lib.LOCK:  # not while another thread's end_batch() frees the step
                kind = self.kind
                if kind == OWNED or (kind == STEP and self.generation == self.ctx.generation):
                    # Freeing a step tensor early is allowed (the tape keeps what
                    # backward needs) and returns its memory before the step ends.
                    lib.nn_tensor_free(self.ptr)
                self.ptr = None
        except Exception:  # interpreter teardown: ctypes may be half gone
            self.ptr = None


# ---- the default context -------------------------------------------------

_DEVICES = ("cpu", "vulkan", "auto")
# PyTorch's name for the GPU, so that scripts' device lines run unchanged: the GPU here is Vulkan's.
_ALIASES = {"cuda": "vulkan"}
_default = None
_seed = None  # manual_seed(), else $NN_ENGINE_SEED, else 0
_threads = 0
_precision = 0  # nn_precision of products on every context (amp.set_precision, amp.autocast)


def _initial_seed():
    if _seed is not None:
        return _seed
    text = os.environ.get("NN_ENGINE_SEED") or "0"
    try:
        seed = int(text)
        if not 0 <= seed < 2**64:
            raise ValueError
    except ValueError:
        raise ValueError(f"NN_ENGINE_SEED must be an int in [0, 2**64), got {text!r}") from None
    return seed


def _check_device_name(device, where="set_device"):
    """The device's name as the library knows it ("cuda:1" is "vulkan:1"),
    or an exception naming what is wrong."""
    if not isinstance(device, str):
        raise TypeError(f"{where}: device must be a str ('cpu', 'vulkan' or 'auto'), "
                        f"got {type(device).__name__}")
    base, colon, index = device.partition(":")
    base = _ALIASES.get(base, base)
    if base not in _DEVICES:
        raise ValueError(f"{where}: unknown device '{device}' (choose from "
                         f"{', '.join(_DEVICES)}, or 'cuda' for the GPU)")
    return base + colon + index


# The context of each device opened so far, by (name, threads): asking for a
# device again (set_device, .to) gives the same context, so that tensors made
# before and after work together; "auto" is also kept under what it opened.
_opened = weakref.WeakValueDictionary()


def _open(device, threads):
    ctx = _opened.get((device, threads))
    if ctx is None or ctx.ptr is None:
        ctx = Context(device, threads, _initial_seed())
        same = _opened.get((ctx.type, threads))
        if device == "auto" and same is not None and same.ptr is not None:
            ctx = same  # "auto" chose a device opened already by name: one context for it (the new one is freed)
        else:
            check(lib.nn_ctx_set_precision(ctx.ptr, _precision), "nn_ctx_set_precision")
            _opened.setdefault((ctx.type, threads), ctx)
        _opened[(device, threads)] = ctx
    return ctx


def context_for(device, where="to"):
    """The context for `device` ("cpu", "vulkan", "vulkan:1", "auto" or a
    Context), opened on first use with the default context's threads."""
    if isinstance(device, Context):
        return device
    device = _check_device_name(device, where)
    if _default is not None and device in (_default.device, _default.type):
        return _default
    return _open(device, _threads)


def default_context():
    """The process's context, opened on first use on set_device()'s choice,
    else $NN_ENGINE_DEVICE, else "auto"."""
    global _default
    if _default is None:
        device = os.environ.get("NN_ENGINE_DEVICE") or "auto"
        try:
            device = _check_device_name(device)
        except ValueError as err:
            raise ValueError(f"NN_ENGINE_DEVICE: {err}") from None
        _default = _open(device, _threads)
    return _default


def torch_device(type, index=None):  # noqa: A002 - torch.device's argument name
    """torch.device("cuda"), torch.device("cpu"), torch.device("cuda", 1):
    the device's name, checked, as every device argument here takes it."""
    name = type if index is None else f"{type}:{int(index)}"
    _check_device_name(name, "device")
    return name


def set_device(device, threads=0):
    """Make `device` ("cpu", "vulkan" or "auto") the default for new tensors
    and layers, opening it now so that an unusable device fails here with the
    library's reason. A device opened before (by set_device or .to()) is
    used again, so tensors made on it before still work with new ones;
    tensors on another device must be moved with .to() first."""
    global _default, _threads
    device = _check_device_name(device)
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 0:
        raise ValueError(f"set_device: threads must be an int >= 0 (0 = one per core), "
                         f"got {threads!r}")
    _default = _open(device, threads)
    _threads = threads
    return _default.device_name


def get_device():
    """The default context's device, as the library describes it."""
    return default_context().device_name


def manual_seed(seed):
    """Seed the generators: the device's, which layer initialisers, rand and
    randn draw from, and the host's (randint, randperm)."""
    global _seed, _host_generator
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise ValueError(f"manual_seed: seed must be an int in [0, 2**64), got {seed!r}")
    _seed = seed
    _host_generator = None
    if _default is not None:
        check(lib.nn_ctx_manual_seed(_default.ptr, seed), "nn_ctx_manual_seed")


_host_generator = None


def host_generator():
    """The host's generator (creation.py's randint, randperm), from the seed."""
    global _host_generator
    if _host_generator is None:
        _host_generator = np.random.default_rng(_initial_seed())
    return _host_generator


def end_batch():
    """End the training step: free every operation result of the step and the
    tensors made with track=True (as the seed did), and drop the autograd
    tape. Parameters, track=False tensors and persisted results stay."""
    end_batch._count += 1
    for ctx in list(_contexts):
        ctx.end_step()


end_batch._count = 0
# The seed flushed its GPU queue every flush_interval batches; here each
# backend decides when to submit, so the attribute is kept only for scripts
# that set it.
end_batch.flush_interval = 1


# Automatic step ends (PyTorch's scripts never call end_batch()): after a
# backward and after a host read, when no graph awaits a backward and one
# thread alone has used the library since the step began, the step ends
# keeping what Python holds. Paused while a captured step runs (its runner
# ends the step) and inside keep_step().
_auto_end = threading.local()


class keep_step:
    """Context manager: no automatic step end inside (a captured step's
    function; code that reads values between a forward and a later
    backward of another graph)."""

    def __enter__(self):
        _auto_end.paused = getattr(_auto_end, "paused", 0) + 1
        return self

    def __exit__(self, *exc):
        _auto_end.paused -= 1
        return False


def step_may_end(ctx):
    """End ctx's step keeping Python's results (Context.end_step_keeping_results)
    when nothing on the tape awaits a backward and one thread alone uses the
    library: ending it then loses nothing anyone could still use."""
    if getattr(_auto_end, "paused", 0) or ctx.ptr is None:
        return
    with _lib.LOCK:
        if _lib.one_caller_this_step() and lib.nn_ctx_tape_length(ctx.ptr) == 0:
            ctx.end_step_keeping_results()


def release_all_buffers():
    """The seed's name for end_batch()."""
    for ctx in list(_contexts):
        ctx.end_step()


class no_grad:
    """Context manager, or decorator of a function: operations inside record
    nothing for backward, on every device opened so far."""
    _enabled = False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with type(self)():  # an instance per call: calls may nest or run in threads
                return fn(*args, **kwargs)
        return wrapped

    def __enter__(self):
        default_context()
        self._previous = [(ctx, lib.nn_ctx_set_grad_enabled(ctx.ptr, self._enabled))
                          for ctx in list(_contexts) if ctx.ptr]
        return self

    def __exit__(self, *exc):
        for ctx, previous in self._previous:
            if ctx.ptr:
                lib.nn_ctx_set_grad_enabled(ctx.ptr, previous)
        return False


class enable_grad(no_grad):
    """Context manager or decorator: operations inside are recorded (the default)."""
    _enabled = True


Device = namedtuple("Device", "backend index name kind detail usable reason")


def devices():
    """Every device the library knows of, usable or not (then with a reason)."""
    count = lib.nn_list_devices(None, 0)
    if count <= 0:
        return []
    infos = (_lib.DeviceInfo * count)()
    count = min(count, lib.nn_list_devices(infos, count))

    def text(raw):
        return raw.decode("utf-8", "replace")

    return [Device(text(d.backend), d.index, text(d.name), text(d.kind), text(d.detail),
                   bool(d.usable), text(d.reason)) for d in infos[:count]]
