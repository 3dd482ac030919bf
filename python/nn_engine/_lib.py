"""Loading libnnengine.so and declaring the C signatures.

Every C function the package calls is declared here with its argtypes and
restype, so that ctypes converts (and refuses) arguments instead of passing
whatever it is given: a wrong declaration is how ctypes code crashes.
"""
import ctypes
import os
import sys
import threading

# The C structs' mirrors, generated from the headers (scripts/ctypes_structs.py).
from ._structs import (AdamOptions, Conv2dParams, CtxOptions, Dataset, DeviceInfo, LionOptions,  # noqa: F401
                       ModelInfo, MuonOptions, OnnxImportOptions, OnnxOptions, ParamGroup, RmspropOptions,
                       SgdOptions, StepOptions)

c_tensor_p = ctypes.c_void_p  # nn_tensor * (opaque)
c_ctx_p = ctypes.c_void_p     # nn_ctx *
c_optimizer_p = ctypes.c_void_p  # nn_optimizer *
c_step_runner_p = ctypes.c_void_p  # nn_step_runner *
c_module_p = ctypes.c_void_p  # nn_module *
c_status = ctypes.c_int       # nn_status
c_i64_p = ctypes.POINTER(ctypes.c_int64)
c_int_p = ctypes.POINTER(ctypes.c_int)

NN_MAX_DIMS = 6
NN_F32 = 0
NN_I32 = 1

# enum nn_step_phase (include/nn_step.h)
NN_STEP_EAGER = 0
NN_STEP_RECORD = 1
NN_STEP_REPLAY = 2

# nn_step_fn: nn_status (*)(void *user)
StepFn = ctypes.CFUNCTYPE(c_status, ctypes.c_void_p)

NN_MODEL_INFO_MAX_CHANNELS = 8  # include/nn_io.h


# name: (restype, [argtypes]). Optional symbols may be missing from a build.
_SIGNATURES = {
    # nn_error.h
    "nn_last_error": (ctypes.c_char_p, []),
    "nn_last_status": (c_status, []),
    "nn_clear_error": (None, []),
    "nn_status_name": (ctypes.c_char_p, [c_status]),
    # nn_context.h
    "nn_ctx_new": (c_ctx_p, [ctypes.POINTER(CtxOptions)]),
    "nn_ctx_free": (None, [c_ctx_p]),
    "nn_ctx_device_name": (ctypes.c_char_p, [c_ctx_p]),
    "nn_ctx_threads": (ctypes.c_int, [c_ctx_p]),
    "nn_ctx_sync": (c_status, [c_ctx_p]),
    "nn_ctx_manual_seed": (c_status, [c_ctx_p, ctypes.c_uint64]),
    "nn_ctx_set_grad_enabled": (ctypes.c_bool, [c_ctx_p, ctypes.c_bool]),
    "nn_ctx_set_precision": (c_status, [c_ctx_p, ctypes.c_int]),
    "nn_ctx_precision": (ctypes.c_int, [c_ctx_p]),
    "nn_ctx_matrix_cores": (ctypes.c_bool, [c_ctx_p, ctypes.c_int]),
    "nn_ctx_grad_enabled": (ctypes.c_bool, [c_ctx_p]),
    "nn_ctx_step_end": (c_status, [c_ctx_p]),
    "nn_ctx_step_tensor_count": (ctypes.c_int64, [c_ctx_p]),
    "nn_ctx_tape_length": (ctypes.c_int64, [c_ctx_p]),
    # nn_step.h (capture and replay, through the step runner)
    "nn_step_runner_new": (c_step_runner_p, [c_ctx_p, StepFn, ctypes.c_void_p,
                                             ctypes.POINTER(StepOptions)]),
    "nn_step_runner_run": (c_status, [c_step_runner_p, ctypes.c_int64]),
    "nn_step_runner_phase": (ctypes.c_int, [c_step_runner_p]),
    "nn_step_runner_steps": (ctypes.c_int64, [c_step_runner_p]),
    "nn_step_runner_command_count": (ctypes.c_int64, [c_step_runner_p]),
    "nn_step_runner_free": (None, [c_step_runner_p]),
    # nn_devices.h
    "nn_list_devices": (ctypes.c_int, [ctypes.POINTER(DeviceInfo), ctypes.c_int]),
    # nn_tensor.h
    "nn_tensor_new": (c_tensor_p, [c_ctx_p, ctypes.c_int, ctypes.c_int, c_i64_p]),
    "nn_tensor_from_data": (c_tensor_p, [c_ctx_p, ctypes.c_int, ctypes.c_int, c_i64_p,
                                         ctypes.c_void_p]),
    "nn_tensor_free": (None, [c_tensor_p]),
    "nn_tensor_persist": (c_status, [c_tensor_p]),
    "nn_tensor_write": (c_status, [c_tensor_p, ctypes.c_void_p, ctypes.c_size_t]),
    "nn_tensor_copy": (c_status, [c_tensor_p, c_tensor_p]),
    "nn_tensor_read": (c_status, [c_tensor_p, ctypes.c_void_p, ctypes.c_size_t]),
    "nn_tensor_fill": (c_status, [c_tensor_p, ctypes.c_float]),
    "nn_tensor_dtype": (ctypes.c_int, [c_tensor_p]),
    "nn_tensor_ndim": (ctypes.c_int, [c_tensor_p]),
    "nn_tensor_shape": (ctypes.c_int, [c_tensor_p, c_i64_p]),
    "nn_tensor_numel": (ctypes.c_int64, [c_tensor_p]),
    "nn_tensor_set_requires_grad": (c_status, [c_tensor_p, ctypes.c_bool]),
    "nn_tensor_requires_grad": (ctypes.c_bool, [c_tensor_p]),
    "nn_tensor_grad": (c_tensor_p, [c_tensor_p]),
    "nn_tensor_zero_grad": (c_status, [c_tensor_p]),
    "nn_tensor_retain_grad": (c_status, [c_tensor_p]),
    "nn_backward": (c_status, [c_tensor_p]),
    # nn_ops.h
    "nn_matmul": (c_tensor_p, [c_tensor_p, c_tensor_p, ctypes.c_bool, ctypes.c_bool]),
    "nn_add_bias": (c_tensor_p, [c_tensor_p, c_tensor_p]),
    "nn_linear": (c_tensor_p, [c_tensor_p, c_tensor_p, c_tensor_p]),
    "nn_conv2d": (c_tensor_p, [c_tensor_p, c_tensor_p, c_tensor_p, ctypes.c_int, ctypes.c_int]),
    "nn_conv2d_ex": (c_tensor_p, [c_tensor_p, c_tensor_p, c_tensor_p,
                                  ctypes.POINTER(Conv2dParams)]),
    "nn_maxpool2d": (c_tensor_p, [c_tensor_p, ctypes.c_int, ctypes.c_int]),
    "nn_maxpool2d_ex": (c_tensor_p, [c_tensor_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]),
    "nn_flatten": (c_tensor_p, [c_tensor_p]),
    "nn_reshape": (c_tensor_p, [c_tensor_p, ctypes.c_int, c_i64_p]),
    "nn_relu": (c_tensor_p, [c_tensor_p]),
    "nn_dropout": (c_tensor_p, [c_tensor_p, ctypes.c_float, ctypes.c_bool]),
    "nn_softmax": (c_tensor_p, [c_tensor_p]),
    "nn_softmax_cross_entropy": (c_tensor_p, [c_tensor_p, c_tensor_p]),
    "nn_add": (c_tensor_p, [c_tensor_p, c_tensor_p]),
    "nn_mul": (c_tensor_p, [c_tensor_p, c_tensor_p]),
    "nn_sub": (c_tensor_p, [c_tensor_p, c_tensor_p]),
    "nn_div": (c_tensor_p, [c_tensor_p, c_tensor_p]),
    "nn_maximum": (c_tensor_p, [c_tensor_p, c_tensor_p]),
    "nn_minimum": (c_tensor_p, [c_tensor_p, c_tensor_p]),
    "nn_sum_dims": (c_tensor_p, [c_tensor_p, c_int_p, ctypes.c_int, ctypes.c_bool]),
    "nn_mean_dims": (c_tensor_p, [c_tensor_p, c_int_p, ctypes.c_int, ctypes.c_bool]),
    "nn_max_dims": (c_tensor_p, [c_tensor_p, c_int_p, ctypes.c_int, ctypes.c_bool]),
    "nn_min_dims": (c_tensor_p, [c_tensor_p, c_int_p, ctypes.c_int, ctypes.c_bool]),
    "nn_argmax_dims": (c_tensor_p, [c_tensor_p, c_int_p, ctypes.c_int, ctypes.c_bool]),
    "nn_argmin_dims": (c_tensor_p, [c_tensor_p, c_int_p, ctypes.c_int, ctypes.c_bool]),
    "nn_var_dims": (c_tensor_p, [c_tensor_p, c_int_p, ctypes.c_int, ctypes.c_double, ctypes.c_bool]),
    "nn_permute": (c_tensor_p, [c_tensor_p, c_int_p, ctypes.c_int]),
    "nn_transpose": (c_tensor_p, [c_tensor_p, ctypes.c_int, ctypes.c_int]),
    "nn_slice": (c_tensor_p, [c_tensor_p, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]),
    "nn_select": (c_tensor_p, [c_tensor_p, ctypes.c_int, ctypes.c_int64]),
    "nn_cat": (c_tensor_p, [ctypes.POINTER(c_tensor_p), ctypes.c_int, ctypes.c_int]),
    "nn_stack": (c_tensor_p, [ctypes.POINTER(c_tensor_p), ctypes.c_int, ctypes.c_int]),
    "nn_expand": (c_tensor_p, [c_tensor_p, ctypes.c_int, c_i64_p]),
    "nn_unsqueeze": (c_tensor_p, [c_tensor_p, ctypes.c_int]),
    "nn_squeeze": (c_tensor_p, [c_tensor_p, ctypes.c_int]),
    "nn_scale": (c_tensor_p, [c_tensor_p, ctypes.c_float]),
    "nn_sum": (c_tensor_p, [c_tensor_p]),
    "nn_mean": (c_tensor_p, [c_tensor_p]),
    # nn_layers.h (initialisers only: layers are built from tensors in Python)
    "nn_init_uniform": (c_status, [c_tensor_p, ctypes.c_float, ctypes.c_float]),
    "nn_init_xavier_uniform": (c_status, [c_tensor_p, ctypes.c_float]),
    "nn_init_kaiming_uniform": (c_status, [c_tensor_p, ctypes.c_float]),
    # nn_data.h (the IDX reader; image folders are read with Pillow, in colour)
    "nn_dataset_load_idx": (c_status, [ctypes.c_char_p, ctypes.c_char_p,
                                       ctypes.POINTER(Dataset)]),
    "nn_dataset_free": (None, [ctypes.POINTER(Dataset)]),
    # nn_optim.h
    "nn_sgd_new": (c_optimizer_p, [ctypes.POINTER(c_tensor_p), ctypes.c_int,
                             ctypes.POINTER(SgdOptions)]),
    "nn_sgd_set_clip_value": (c_status, [c_optimizer_p, ctypes.c_float]),
    "nn_sgd_set_max_grad_norm": (c_status, [c_optimizer_p, ctypes.c_float]),
    "nn_optimizer_step": (c_status, [c_optimizer_p]),
    "nn_optimizer_zero_grad": (c_status, [c_optimizer_p]),
    "nn_optimizer_set_lr": (c_status, [c_optimizer_p, ctypes.c_float]),
    "nn_optimizer_lr": (ctypes.c_float, [c_optimizer_p]),
    "nn_optimizer_name": (ctypes.c_char_p, [c_optimizer_p]),
    "nn_optimizer_free": (None, [c_optimizer_p]),
    "nn_optimizer_group_count": (ctypes.c_int, [c_optimizer_p]),
    "nn_optimizer_set_group_lr": (c_status, [c_optimizer_p, ctypes.c_int, ctypes.c_float]),
    "nn_optimizer_group_lr": (ctypes.c_float, [c_optimizer_p, ctypes.c_int]),
    "nn_adam_new_groups": (c_optimizer_p, [ctypes.POINTER(ParamGroup), ctypes.c_int, ctypes.POINTER(AdamOptions)]),
    "nn_adamw_new_groups": (c_optimizer_p, [ctypes.POINTER(ParamGroup), ctypes.c_int, ctypes.POINTER(AdamOptions)]),
    "nn_rmsprop_new_groups": (c_optimizer_p, [ctypes.POINTER(ParamGroup), ctypes.c_int,
                                              ctypes.POINTER(RmspropOptions)]),
    "nn_lion_new_groups": (c_optimizer_p, [ctypes.POINTER(ParamGroup), ctypes.c_int, ctypes.POINTER(LionOptions)]),
    "nn_muon_new_groups": (c_optimizer_p, [ctypes.POINTER(ParamGroup), ctypes.c_int, ctypes.POINTER(MuonOptions)]),
    # nn_io.h (Model.save / Model.load)
    "nn_save_tensors": (c_status, [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(c_tensor_p),
                                   ctypes.POINTER(ctypes.c_char_p)]),
    "nn_load_tensors": (c_status, [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(c_tensor_p),
                                   ctypes.POINTER(ctypes.c_char_p)]),
    # nn_io.h: the normalisation and class names saved with the weights
    "nn_save_tensors_info": (c_status, [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(c_tensor_p),
                                        ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ModelInfo)]),
    "nn_read_model_info": (c_status, [ctypes.c_char_p, ctypes.POINTER(ModelInfo)]),
    "nn_model_info_free": (None, [ctypes.POINTER(ModelInfo)]),
    # nn_io.h: output paths checked before a run (nn_engine.check_writable)
    "nn_check_writable_path": (c_status, [ctypes.c_char_p]),
    # nn_io.h and nn_module.h: an imported ONNX graph's module (nn_engine.onnx)
    "nn_onnx_import": (c_module_p, [c_ctx_p, ctypes.c_char_p]),
    "nn_onnx_import_with": (c_module_p, [c_ctx_p, ctypes.c_char_p, ctypes.POINTER(OnnxImportOptions)]),
    "nn_onnx_run": (c_tensor_p, [c_module_p, ctypes.POINTER(c_tensor_p), ctypes.c_int]),
    "nn_module_forward": (c_tensor_p, [c_module_p, c_tensor_p]),
    "nn_module_set_training": (c_status, [c_module_p, ctypes.c_bool]),
    "nn_module_param_count": (ctypes.c_int, [c_module_p]),
    "nn_module_param": (c_tensor_p, [c_module_p, ctypes.c_int]),
    "nn_module_param_name": (ctypes.c_char_p, [c_module_p, ctypes.c_int]),
    "nn_module_buffer_count": (ctypes.c_int, [c_module_p]),
    "nn_module_buffer": (c_tensor_p, [c_module_p, ctypes.c_int]),
    "nn_module_buffer_name": (ctypes.c_char_p, [c_module_p, ctypes.c_int]),
    "nn_module_free": (None, [c_module_p]),
}

# Symbols that a build may lack; callers check has_symbol() and say so.
_OPTIONAL = {
    # include/nn_io.h, native ONNX export (issue 7)
    "nn_onnx_export": (c_status, [ctypes.c_char_p, c_tensor_p, c_tensor_p,
                                  ctypes.POINTER(OnnxOptions)]),
}


# The library's file name: Linux's shared object, or the Windows wheel's DLL
# (it needs only Windows' own DLLs, so no os.add_dll_directory is needed).
LIBRARY_NAME = "nnengine.dll" if sys.platform == "win32" else "libnnengine.so"


def _candidates():
    """Where to look for the library, in order: NN_ENGINE_LIBRARY, the copy
    shipped inside the installed package (the wheel), then build/ of the
    source tree this package sits in (the development path: PYTHONPATH=python)."""
    env = os.environ.get("NN_ENGINE_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    return [
        os.path.join(here, LIBRARY_NAME),
        os.path.join(os.path.dirname(os.path.dirname(here)), "build", LIBRARY_NAME),
    ]


def _load():
    tried = []
    for path in _candidates():
        if not os.path.isfile(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as err:
            tried.append(f"{path} ({err})")
    raise ImportError(
        f"nn_engine: cannot load {LIBRARY_NAME}; tried: " + "; ".join(tried) +
        ". Build it with `make lib` in the nn-engine source tree, or point "
        "NN_ENGINE_LIBRARY at the file.")


class Deferred:
    """An argument that becomes its pointer inside the call, under the
    library lock (a tensor handle, _context.Handle; a PointerArray): its
    validity check and the call are one step, so another thread's
    end_batch() cannot free the tensor between them. Subclasses define
    get(), which returns the pointer or raises."""
    __slots__ = ()


class PointerArray(Deferred):
    """An nn_tensor ** argument: the handles' pointers, gathered inside the
    call."""
    __slots__ = ("handles",)

    def __init__(self, handles):
        self.handles = list(handles)

    def get(self):
        return (c_tensor_p * max(len(self.handles), 1))(*[h.get() for h in self.handles])


# Step ends (end_batch) so far, and per thread the count at its last call:
# the step results a call returned are alive while the two are equal.
_steps_ended = 0
_calls = threading.local()
# The thread that has called the library since the last step end, and
# whether another has too (then no step ends by itself: _context.step_may_end).
_step_caller, _step_callers_many = None, False


def note_step_end():
    """Count a step end; called under LOCK before its tensors are freed."""
    global _steps_ended, _step_caller, _step_callers_many
    _steps_ended += 1
    _step_caller, _step_callers_many = None, False


def one_caller_this_step():
    """Whether a single thread has called the library since the last step end."""
    return not _step_callers_many


def last_results_alive():
    """Whether no step has ended since this thread's last library call, so
    that the step tensors it returned still exist (call under LOCK)."""
    return getattr(_calls, "steps_ended", -1) == _steps_ended


class _SerialisedFunction:
    """A C function called under the library lock (see _SerialisedLibrary),
    its Deferred arguments resolved there."""
    __slots__ = ("_fn",)

    def __init__(self, fn):
        self._fn = fn

    restype = property(lambda self: self._fn.restype, lambda self, value: setattr(self._fn, "restype", value))
    argtypes = property(lambda self: self._fn.argtypes, lambda self, value: setattr(self._fn, "argtypes", value))

    def __call__(self, *args):
        global _step_caller, _step_callers_many
        with LOCK:
            _calls.steps_ended = _steps_ended
            caller = threading.get_ident()
            if caller != _step_caller:
                _step_callers_many = _step_caller is not None
                _step_caller = caller
            return self._fn(*[a.get() if isinstance(a, Deferred) else a for a in args])


class _SerialisedLibrary:
    """The threading rule, Python side: a C context belongs to one thread at
    a time (the C library refuses a second thread with an error), so Python
    threads take turns: every call holds one re-entrant lock. ctypes drops
    the GIL during the call, so threads that do not call the library (data
    loading, numpy) keep running meanwhile."""

    def __init__(self, cdll):
        self._cdll = cdll

    def __getattr__(self, name):
        function = _SerialisedFunction(getattr(self._cdll, name))  # AttributeError when missing
        setattr(self, name, function)  # found once; later lookups are plain attributes
        return function


LOCK = threading.RLock()
_cdll, library_path = _load()
lib = _SerialisedLibrary(_cdll)

_missing = [name for name in _SIGNATURES if not hasattr(lib, name)]
if _missing:
    raise ImportError(f"nn_engine: {library_path} lacks {', '.join(_missing)}: "
                      "it is older than this package; rebuild it with `make lib`")

for _name, (_restype, _argtypes) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes

for _name, (_restype, _argtypes) in _OPTIONAL.items():
    if hasattr(lib, _name):
        _fn = getattr(lib, _name)
        _fn.restype = _restype
        _fn.argtypes = _argtypes


def has_symbol(name):
    """Whether the loaded library exports `name` (optional features)."""
    return hasattr(lib, name)


def declare(name, restype, argtypes):
    """Set the signature of a function the package declares where it uses
    it (functional.py's elementwise functions); ImportError when the
    library lacks it."""
    if not hasattr(lib, name):
        raise ImportError(f"nn_engine: {library_path} lacks {name}: it is older than this package; "
                          "rebuild it with `make lib`")
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = argtypes
    return fn
