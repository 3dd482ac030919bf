"""CustomKernel: a compute shader (GLSL, compiled when the kernel is made)
for the GPU and a Python function for the CPU, run as an operation on
tensors (include/nn_custom.h, whose prelude gives the shader NN_LOAD,
NN_STORE, NN_PARAM_FLOAT, NN_GRID ...).

    scale = CustomKernel("scale", glsl=\"\"\"
        void main() {
            uint i = NN_INDEX.x;
            if (i >= NN_GRID.x) return;
            NN_STORE(1, i, NN_LOAD(0, i) * NN_PARAM_FLOAT(0));
        }\"\"\", cpu=lambda buffers, params, grid: np.multiply(buffers[0], params.float(0), out=buffers[1]))
    y = scale(x, shape=x.shape, grid=x.numel(), params=[3.0])

The CPU function sees what the shader sees: the buffers as flat float32
arrays over the tensors' memory (an int32 tensor's: .view(np.int32)), the
call's parameters and grid; it writes its outputs in place. Or the CPU's
code is nn_engine operations (cpu_ops), which a call on the CPU runs. It runs when the
library runs the kernel (at the next read, and again at each replay of a
captured step). A kernel gives no gradient: wrap its calls in an
autograd.Function for one."""
import ctypes
import struct

import numpy as np

from . import _errors, _lib
from ._errors import check, check_ptr
from ._lib import lib
from ._structs import CustomCpuCall, CustomKernelDesc, CustomOutput
from .tensor import Tensor

_lib.declare("nn_custom_kernel_new", ctypes.c_void_p, [ctypes.POINTER(CustomKernelDesc)])
_lib.declare("nn_custom_kernel_free", None, [ctypes.c_void_p])
_lib.declare("nn_custom_glsl_prelude", ctypes.c_char_p, [ctypes.POINTER(ctypes.c_uint32)])
_lib.declare("nn_custom_glsl_available", ctypes.c_bool, [])
_lib.declare("nn_custom_call", _lib.c_tensor_p,
             [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.POINTER(CustomOutput),
              ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint32)])
_lib.declare("nn_custom_launch", ctypes.c_int,
             [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_uint, ctypes.c_void_p,
              ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint32)])

MAX_BUFFERS = 8  # NN_CUSTOM_MAX_BUFFERS
MAX_PARAMS = 48  # NN_CUSTOM_MAX_PARAMS, bytes
_CPU_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(CustomCpuCall))
_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.int32): 1}


class KernelParams:
    """A call's parameter words, read as the shader reads them:
    float(k), int(k), uint(k) are NN_PARAM_FLOAT(k), NN_PARAM_INT(k),
    NN_PARAM_UINT(k)."""

    def __init__(self, data):
        self._words = np.frombuffer(bytes(data).ljust(MAX_PARAMS, b"\0"), dtype=np.uint32)

    def float(self, k):
        return float(self._words[k:k + 1].view(np.float32)[0])

    def int(self, k):
        return int(self._words[k:k + 1].view(np.int32)[0])

    def uint(self, k):
        return int(self._words[k])


def _pack(params, who):
    """Parameter words from numbers: a float (or NumPy float) as float32, an
    int as int32 (uint32 from 2**31)."""
    data = b""
    for value in params:
        if isinstance(value, (bool, np.bool_)):
            value = int(value)
        if isinstance(value, (float, np.floating)):
            data += struct.pack("<f", float(value))
        elif isinstance(value, (int, np.integer)):
            value = int(value)
            if not -2 ** 31 <= value < 2 ** 32:
                raise ValueError(f"{who}: parameter {value} does not fit 32 bits")
            data += struct.pack("<i" if value < 2 ** 31 else "<I", value)
        else:
            raise TypeError(f"{who}: parameters are numbers; got {type(value).__name__}")
    if len(data) > MAX_PARAMS:
        raise ValueError(f"{who}: {len(data) // 4} parameter words; at most {MAX_PARAMS // 4}")
    return data


def _grid(grid, who):
    sizes = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
    if not 1 <= len(sizes) <= 3 or any(int(s) < 1 or int(s) >= 2 ** 32 for s in sizes):
        raise ValueError(f"{who}: grid {grid!r}: one to three counts, each >= 1")
    return (ctypes.c_uint32 * 3)(*(list(map(int, sizes)) + [1] * (3 - len(sizes))))


class CustomKernel:
    """A kernel of the user's: `glsl` (the body after the prelude) or
    `spirv` (bytes of a module built with nn_custom_glsl_prelude) for Vulkan,
    and for the CPU either `cpu` (fn(buffers, params, grid), NumPy over the
    buffers) or `cpu_ops` (fn(*inputs, params=...) of nn_engine operations,
    returning the output: on a CPU tensor a call is that composition); a
    device without its code refuses it by name. local_size: the shader's
    workgroup. capturable=False: the CPU function reads state that changes
    per step, so a step capture refuses the kernel."""

    def __init__(self, name, glsl=None, spirv=None, cpu=None, local_size=(256, 1, 1), capturable=True,
                 cpu_ops=None):
        self.name = name
        self._cpu = cpu
        self._cpu_ops = cpu_ops
        self._cpu_entry = _CPU_FN(self._run_cpu) if cpu is not None else None
        local = tuple(local_size) + (1,) * (3 - len(tuple(local_size)))
        desc = CustomKernelDesc(name=name.encode(), glsl=glsl.encode() if glsl is not None else None,
                                local_size=(ctypes.c_uint32 * 3)(*local), not_capturable=not capturable)
        if self._cpu_entry is not None:
            desc.cpu = ctypes.cast(self._cpu_entry, ctypes.c_void_p)
        if spirv is not None:
            code = (ctypes.c_uint32 * (len(spirv) // 4)).from_buffer_copy(spirv[:len(spirv) // 4 * 4])
            desc.spirv = ctypes.cast(code, ctypes.POINTER(ctypes.c_uint32))
            desc.spirv_bytes = len(spirv)
        self._ptr = check_ptr(lib.nn_custom_kernel_new(ctypes.byref(desc)), "nn_custom_kernel_new")

    def __del__(self):
        if getattr(self, "_ptr", None) and lib is not None:
            lib.nn_custom_kernel_free(self._ptr)
            self._ptr = None

    def __repr__(self):
        return f"CustomKernel({self.name!r})"

    def _run_cpu(self, call_ptr):
        call = call_ptr.contents
        try:
            buffers = []
            for i in range(MAX_BUFFERS):
                address, count = call.buffers[i], call.counts[i]
                buffers.append(np.ctypeslib.as_array((ctypes.c_float * count).from_address(address))
                               if address else None)
            self._cpu(buffers[:call.buffer_count], KernelParams(ctypes.string_at(call.params, call.params_size)),
                      tuple(call.grid))
            return 0
        except BaseException as e:  # noqa: B902 - raised again by the call that ran the kernel
            _errors.keep_callback_exception(e)
            call.error = f"{type(e).__name__}: {e}".encode("utf-8", "replace")[:255]
            return 1

    def __call__(self, *inputs, shape, dtype=np.float32, grid, params=()):
        """The kernel on `inputs` (buffers 0..n-1), giving a new tensor of
        `shape` and `dtype` (buffer n, zero-filled first), run over `grid`
        invocations (an int, or up to three)."""
        who = f"CustomKernel {self.name}"
        if not inputs or not all(isinstance(t, Tensor) for t in inputs):
            raise TypeError(f"{who}: inputs are one or more Tensors")
        if self._cpu_ops is not None and inputs[0].device == "cpu":
            return self._cpu_ops(*inputs, params=tuple(params))
        dtype = np.dtype(dtype)
        if dtype not in _DTYPES:
            raise ValueError(f"{who}: the output dtype is float32 or int32, not {dtype}")
        dims = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        sizes = (ctypes.c_int64 * max(len(dims), 1))(*(dims or (1,)))
        output = CustomOutput(_DTYPES[dtype], len(dims) or 1, sizes)
        data = _pack(params, who)
        with _lib.LOCK:
            pointers = (ctypes.c_void_p * MAX_BUFFERS)(*[t._h.get() for t in inputs])
            ptr = lib.nn_custom_call(self._ptr, pointers, len(inputs), ctypes.byref(output), data or None, len(data),
                                     _grid(grid, who))
        return Tensor._result(ptr, inputs[0]._h.ctx, "nn_custom_call", dims, dtype)

    def launch(self, *tensors, written, grid, params=()):
        """The kernel run now on existing tensors, writing those whose
        positions are in `written` (an optimizer's update in place)."""
        who = f"CustomKernel {self.name}.launch"
        if not tensors or not all(isinstance(t, Tensor) for t in tensors):
            raise TypeError(f"{who}: tensors are one or more Tensors")
        mask = 0
        for i in written:
            if not 0 <= int(i) < len(tensors):
                raise ValueError(f"{who}: written {tuple(written)} names a position past the {len(tensors)} tensors")
            mask |= 1 << int(i)
        data = _pack(params, who)
        with _lib.LOCK:
            pointers = (ctypes.c_void_p * MAX_BUFFERS)(*[t._h.get() for t in tensors])
            check(lib.nn_custom_launch(self._ptr, pointers, len(tensors), mask, data or None, len(data),
                                       _grid(grid, who)), "nn_custom_launch")


def glsl_prelude(local_size=(256, 1, 1)):
    """The GLSL put before a kernel's body (the buffers, NN_LOAD, NN_STORE,
    NN_PARAM_FLOAT ...): prelude + body, compiled with glslc, is SPIR-V for
    CustomKernel(spirv=...) of that local_size."""
    local = tuple(local_size) + (1,) * (3 - len(tuple(local_size)))
    return lib.nn_custom_glsl_prelude((ctypes.c_uint32 * 3)(*local)).decode()


def glsl_available():
    """Whether GLSL compiles here (else give kernels SPIR-V)."""
    return bool(lib.nn_custom_glsl_available())


def check_devices(fn, *inputs, rtol=1e-5, atol=1e-6, devices=("cpu", "vulkan")):
    """fn(*inputs) on each device that is present, against the first's
    result (a custom kernel's GPU code against its CPU code). Returns the
    devices compared; raises AssertionError naming the worst element."""
    from ._context import devices as listed
    usable = {d.backend for d in listed() if d.usable}
    present = [d for d in devices if d in usable]
    results = []
    for device in present:
        moved = [x.to(device) if isinstance(x, Tensor) else x for x in inputs]
        results.append(fn(*moved).numpy())
    for device, got in zip(present[1:], results[1:]):
        want = results[0]
        if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            where = np.unravel_index(np.argmax(np.abs(got - want)), want.shape) if got.shape == want.shape else ()
            raise AssertionError(f"check_devices: {device} differs from {present[0]} at {where}: "
                                 f"{got[where] if where else got.shape} vs {want[where] if where else want.shape}")
    return present


