"""Tensor (the seed's API over a C tensor) and ReusableTensor."""
import ctypes
import math
import numbers

import numpy as np

from . import _context
from ._context import BORROWED, OWNED, STEP, Handle
from ._errors import check, check_ptr
from ._lib import NN_F32, NN_I32, NN_MAX_DIMS, lib
from .tensor_methods import TensorMethods

_DTYPES = {np.dtype(np.float32): NN_F32, np.dtype(np.int32): NN_I32}
_NP_DTYPES = {NN_F32: np.dtype(np.float32), NN_I32: np.dtype(np.int32)}


def as_host_array(data, dtype, where):
    """`data` as a C-contiguous float32 (or int32) array the library accepts,
    or an exception naming what is wrong with it."""
    if isinstance(data, Tensor):
        raise TypeError(f"{where}: data is already an nn_engine.Tensor; use it directly "
                        "(or .sync() to get its values)")
    try:
        array = np.asarray(data)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{where}: cannot make an array of the data: {err}") from None
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{where}: data must be numeric (float or integer), got dtype "
                        f"{array.dtype}")
    target = np.dtype(np.float32) if dtype is None else np.dtype(dtype)
    if target not in _DTYPES:
        raise TypeError(f"{where}: dtype must be float32 or int32, got {target}")
    if array.ndim > NN_MAX_DIMS:
        raise ValueError(f"{where}: tensors have at most {NN_MAX_DIMS} dimensions, got "
                         f"{array.ndim} (shape {array.shape})")
    if array.size == 0:
        raise ValueError(f"{where}: every dimension must be >= 1, got shape {array.shape}")
    if target == np.int32 and array.dtype != np.int32:
        if array.dtype.kind == "f" and not np.all(np.isfinite(array) & (array == np.round(array))):
            raise ValueError(f"{where}: int32 tensors need whole numbers; the data has "
                             "fractions, NaN or infinity")
        if array.size and (array.min() < -2**31 or array.max() > 2**31 - 1):
            raise ValueError(f"{where}: values out of int32 range")
    return np.asarray(array, dtype=target, order="C")  # (ascontiguousarray would make a 0-d array 1-D)


def _dim_index(dim, ndim, fn):
    """A dimension in [-ndim, ndim) as its index from 0."""
    if not isinstance(dim, numbers.Integral) or isinstance(dim, bool):
        raise TypeError(f"{fn}: dim must be an int, got {type(dim).__name__}")
    if not -ndim <= dim < ndim:
        raise IndexError(f"{fn}: dim {dim} is out of range for a tensor of {ndim} dimensions")
    return int(dim) % ndim


def shape_tuple(ptr):
    """The shape of a C tensor (a pointer or a handle)."""
    dims = (ctypes.c_int64 * NN_MAX_DIMS)()
    ndim = lib.nn_tensor_shape(ptr, dims)
    return tuple(dims[:ndim])


class Tensor(TensorMethods):
    """A tensor on the default device.

    Tensor(data, requires_grad=False, track=None, dtype=None, device=None): a
    copy of `data` (a NumPy array or anything np.asarray takes), as float32
    unless dtype=np.int32 is asked for (labels may be given as any integer or
    float array: softmax_ce converts them), on `device` ("cpu", "vulkan"; None:
    the default device). track=True (the seed's default for data) frees the
    tensor at the next end_batch(); track=False keeps it until it is
    garbage-collected. By default a tensor that requires grad is a parameter
    and is kept; any other is tracked.

    A 0-dim tensor (shape (), torch's scalar: a number as data, a full
    reduction, a reduced loss) is the library's one-element tensor [1].
    """
    __slots__ = ("_h", "_known_shape", "_known_dtype")

    def __init__(self, data, requires_grad=False, track=None, dtype=None, device=None):
        array = as_host_array(data, dtype, "Tensor")
        ctx = _context.default_context() if device is None else _context.context_for(device, "Tensor")
        if track is None:
            track = not requires_grad
        dims = array.shape or (1,)  # a 0-dim tensor is the library's [1]
        shape = (ctypes.c_int64 * len(dims))(*dims)
        ptr = check_ptr(lib.nn_tensor_from_data(ctx.ptr, _DTYPES[array.dtype], len(dims),
                                                shape, array.ctypes.data), "nn_tensor_from_data")
        self._h = Handle(ptr, ctx, OWNED)
        self._known_shape = tuple(array.shape)
        self._known_dtype = array.dtype
        if track:
            ctx.tracked.add(self._h)
        if requires_grad:
            self.requires_grad = True

    @classmethod
    def _wrap(cls, handle, shape=None, dtype=None):
        """A Tensor over a handle; shape and dtype not given are asked of the
        library when first needed (most results of a training step never
        are: two calls saved per operation)."""
        t = object.__new__(cls)
        t._h = handle
        t._known_shape = shape
        t._known_dtype = dtype
        return t

    @property
    def _shape(self):
        shape = self._known_shape
        if shape is None:
            shape = self._known_shape = shape_tuple(self._h)  # the handle: checked inside the call
        return shape

    @property
    def _dtype(self):
        dtype = self._known_dtype
        if dtype is None:
            dtype = self._known_dtype = _NP_DTYPES[lib.nn_tensor_dtype(self._h)]
        return dtype

    @classmethod
    def _result(cls, ptr, ctx, what, shape=None, dtype=None):
        """Wrap an operation's result (step-owned by ctx), raising if it failed."""
        if not ptr:
            check_ptr(ptr, what)
        return cls._wrap(Handle(ptr, ctx, STEP), shape, dtype)

    # ---- facts ----
    @property
    def shape(self):
        return self._shape

    def size(self, dim=None):
        """The shape (torch.Tensor.size), or its length along `dim` (may be
        negative)."""
        if dim is None:
            return self._shape
        return self._shape[_dim_index(dim, len(self._shape), "size")]

    def numel(self):
        """The number of elements."""
        n = 1
        for d in self._shape:
            n *= d
        return n

    def dim(self):
        return len(self._shape)

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def dtype(self):
        return self._dtype

    def _ptr(self):
        """The argument for a library function: the handle, which the call
        checks and turns into the C pointer under the library lock (a freed
        tensor raises RuntimeError there). Where a pointer itself is needed
        (a C array), take self._h.get() under _lib.LOCK through the call."""
        return self._h

    @property
    def device(self):
        """The device the tensor lives on: "cpu" or "vulkan"."""
        return self._h.ctx.type

    def to(self, *args, **kwargs):
        """This tensor on a device ("cpu", "vulkan", "cuda" for the default
        GPU, "auto") and/or as a dtype (float32, an integer dtype):
        itself when nothing changes, else a copy (kept until
        garbage-collected) that requires grad as this one does; its gradient
        is not copied."""
        device, dtype = _device_and_dtype(args, kwargs, "Tensor.to")
        result = self if dtype is None else self.type(dtype)
        if device is None:
            return result
        ctx = _context.context_for(device, "Tensor.to")
        if ctx is result._h.ctx:
            return result
        return Tensor(result.sync(), requires_grad=result.requires_grad, track=False, dtype=result._dtype,
                      device=ctx)

    def type(self, dtype):
        """This tensor as float32 or int32 (any integer dtype): a float
        becomes its integer part, truncated toward zero (nn_cast)."""
        from .compare import cast
        return cast(self, dtype)

    def float(self):
        return self.type(np.float32)

    def long(self):
        """As integers (int32 on the device: the engine has no int64)."""
        return self.type(np.int32)

    def int(self):
        return self.type(np.int32)

    def detach(self):
        """A copy of the values outside autograd, kept until garbage-collected
        (torch's detach shares the storage; here it is a device-to-device
        copy)."""
        out = self._empty_like()
        check(lib.nn_tensor_copy(out._ptr(), self._ptr()), "nn_tensor_copy")
        return out

    def clone(self):
        """A copy; while gradients are recorded, one that passes them back to
        this tensor (torch.clone)."""
        if self.requires_grad and lib.nn_ctx_grad_enabled(self._h.ctx.ptr):
            from .functional import mul_scalar
            return mul_scalar(self, 1.0)
        return self.detach()

    def _empty_like(self):
        shape = self._shape
        dims = (ctypes.c_int64 * max(1, len(shape)))(*(shape or (1,)))
        ctx = self._h.ctx
        ptr = check_ptr(lib.nn_tensor_new(ctx.ptr, _DTYPES[self._dtype], len(dims), dims), "nn_tensor_new")
        return Tensor._wrap(Handle(ptr, ctx, OWNED), shape, self._dtype)

    def cpu(self):
        return self.to("cpu")

    # ---- values ----
    def sync(self):
        """Wait for the device and return the values as a new NumPy array.
        When no graph awaits a backward, the step ends here, keeping every
        result Python holds (_context.step_may_end)."""
        out = np.empty(self._shape, dtype=self._dtype)
        check(lib.nn_tensor_read(self._ptr(), out.ctypes.data, out.nbytes), "nn_tensor_read")
        _context.step_may_end(self._h.ctx)
        return out

    def numpy(self):
        return self.sync()

    @property
    def data(self):
        """The values as NumPy (read from the device on each access)."""
        return self.sync()

    def item(self):
        if self.numel() != 1:
            raise ValueError(f"item(): the tensor has {self.numel()} elements, not 1")
        return self.sync().reshape(-1)[0].item()

    def tolist(self):
        """The values as (nested) Python lists of floats or ints."""
        return self.sync().tolist()

    def __array__(self, dtype=None, copy=None):
        values = self.sync()
        return values if dtype is None else values.astype(dtype)

    def upload(self, data):
        """Overwrite the values in place (same shape; the seed's upload)."""
        array = as_host_array(data, self._dtype, "Tensor.upload")
        if array.shape != self._shape:
            raise ValueError(f"Tensor.upload: data has shape {array.shape}, the tensor "
                             f"{self._shape}")
        check(lib.nn_tensor_write(self._ptr(), array.ctypes.data, array.nbytes),
              "nn_tensor_write")

    # ---- autograd ----
    @property
    def requires_grad(self):
        return bool(lib.nn_tensor_requires_grad(self._ptr()))

    @requires_grad.setter
    def requires_grad(self, value):
        check(lib.nn_tensor_set_requires_grad(self._ptr(), bool(value)),
              "nn_tensor_set_requires_grad")

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad in place and return the tensor (torch's)."""
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self):
        """The accumulated gradient as a Tensor, or None before any backward.
        As in PyTorch, an operation's result keeps no gradient after backward
        unless retain_grad() was called on it first."""
        ptr = lib.nn_tensor_grad(self._ptr())
        if not ptr:
            return None
        return Tensor._wrap(Handle(ptr, self._h.ctx, BORROWED, parent=self._h), self._shape)

    @grad.setter
    def grad(self, value):
        # The seed's zero_grad assigned None; a zeroed gradient is equivalent
        # for what backward adds next.
        if value is not None:
            raise TypeError("Tensor.grad can only be reset (set to None); backward() "
                            "computes it")
        check(lib.nn_tensor_zero_grad(self._ptr()), "nn_tensor_zero_grad")

    def backward(self, grad=None, retain_graph=None, create_graph=False):
        """Back-propagate from this tensor. A one-element tensor needs no
        `grad`; a larger one needs `grad` (same shape), which weights each
        element, as in PyTorch. Then, when no other graph awaits a backward,
        the step ends, keeping every result Python holds, as PyTorch frees
        the graph (retain_graph=True: the step goes on)."""
        from . import functional as F
        if create_graph:
            raise NotImplementedError("backward: create_graph=True (gradients of gradients) is not supported")
        ptr = self._ptr()
        if grad is None and self.numel() == 1:
            check(lib.nn_backward(ptr), "nn_backward")
            if not retain_graph:
                _context.step_may_end(self._h.ctx)
            return
        if grad is None:
            raise RuntimeError(f"backward: grad can be implicitly created only for a tensor of one element; this "
                               f"one has shape {self._shape}: pass grad (e.g. ones of that shape) or reduce it first")
        else:
            if not isinstance(grad, Tensor):
                grad = Tensor(grad, track=True)
            if grad.shape != self._shape:
                raise ValueError(f"backward: grad has shape {grad.shape}, the tensor "
                                 f"{self._shape}")
            loss = F.sum(F.mul(self, grad))
        check(lib.nn_backward(loss._ptr()), "nn_backward")
        if not retain_graph:
            _context.step_may_end(self._h.ctx)

    def zero_grad(self):
        check(lib.nn_tensor_zero_grad(self._ptr()), "nn_tensor_zero_grad")

    def retain_grad(self):
        """Keep this result's gradient after backward (torch.Tensor.retain_grad)."""
        check(lib.nn_tensor_retain_grad(self._ptr()), "nn_tensor_retain_grad")

    def persist(self):
        """Keep the tensor past end_batch(): an operation's result, or one made
        with track=True. It is then freed when garbage-collected. Returns self."""
        self._h.persist()
        return self

    @property
    def alive(self):
        """False once end_batch() has freed the tensor."""
        return self._h.valid()

    # ---- operators (the functions in nn_engine.functional) ----
    # A number on either side is a scalar operation of one tensor (unary_ops.h's
    # rows); two tensors go through _binary.
    def _binary(self, other, name):
        """The operator `name` on two tensors, broadcasting (NumPy's rule)."""
        from . import functional as F
        functions = {"add": F.add, "sub": F.sub, "mul": F.mul, "truediv": F.div,
                     "rsub": lambda a, b: F.sub(b, a), "rtruediv": lambda a, b: F.div(b, a)}
        if name not in functions:
            raise TypeError(f"Tensor.__{name}__: not supported between two tensors (shapes {self.shape} "
                            f"and {other.shape})")
        return functions[name](self, other)

    def _operand(self, other, name, scalar):
        """scalar(other) for a number, _binary for a Tensor, NotImplemented otherwise."""
        if isinstance(other, Tensor):
            return self._binary(other, name)
        if isinstance(other, numbers.Real):
            return scalar(float(other))
        return NotImplemented

    def __add__(self, other):
        from .functional import add_scalar
        return self._operand(other, "add", lambda s: add_scalar(self, s))

    def __radd__(self, other):
        return self.__add__(other)

    def __sub__(self, other):
        from .functional import add_scalar
        return self._operand(other, "sub", lambda s: add_scalar(self, -s))

    def __rsub__(self, other):
        from .functional import rsub_scalar
        return self._operand(other, "rsub", lambda s: rsub_scalar(self, s))

    def __mul__(self, other):
        from .functional import mul_scalar
        return self._operand(other, "mul", lambda s: mul_scalar(self, s))

    def __rmul__(self, other):
        return self.__mul__(other)

    def __truediv__(self, other):
        from .functional import mul_scalar
        # x / s as x * (1 / s); x / 0 is x * inf (inf, or NaN at 0), as in PyTorch.
        return self._operand(other, "truediv",
                             lambda s: mul_scalar(self, 1.0 / s if s != 0 else math.copysign(math.inf, s)))

    def __rtruediv__(self, other):
        from .functional import rdiv_scalar
        return self._operand(other, "rtruediv", lambda s: rdiv_scalar(self, s))

    def __pow__(self, other):
        from .functional import pow
        return self._operand(other, "pow", lambda e: pow(self, e))

    def __neg__(self):
        from .functional import neg
        return neg(self)

    def __abs__(self):
        from .functional import abs
        return abs(self)

    def __matmul__(self, other):
        from .functional import matmul
        return matmul(self, other)

    # ---- in place (inplace.py: computed out of place, then copied in) ----
    def __iadd__(self, other):
        from .functional import add
        return _inplace().augmented(self, other, add, "+=")

    def __isub__(self, other):
        from .functional import sub
        return _inplace().augmented(self, other, sub, "-=")

    def __imul__(self, other):
        from .functional import mul
        return _inplace().augmented(self, other, mul, "*=")

    def __itruediv__(self, other):
        from .functional import div
        return _inplace().augmented(self, other, div, "/=")

    def add_(self, other, alpha=1):
        return _inplace().apply(self, "add_", lambda: self + (other * alpha if alpha != 1 else other), other)

    def sub_(self, other, alpha=1):
        return _inplace().apply(self, "sub_", lambda: self - (other * alpha if alpha != 1 else other), other)

    def mul_(self, other):
        return _inplace().apply(self, "mul_", lambda: self * other, other)

    def div_(self, other):
        return _inplace().apply(self, "div_", lambda: self / other, other)

    def clamp_(self, min=None, max=None):  # noqa: A002 - torch's argument names
        return _inplace().apply(self, "clamp_", lambda: self.clamp(min, max))

    def pow_(self, exponent):
        return _inplace().apply(self, "pow_", lambda: self.pow(exponent))

    def neg_(self):
        return _inplace().apply(self, "neg_", self.neg)

    def abs_(self):
        return _inplace().apply(self, "abs_", self.abs)

    def exp_(self):
        return _inplace().apply(self, "exp_", self.exp)

    def sqrt_(self):
        return _inplace().apply(self, "sqrt_", self.sqrt)

    def relu_(self):
        return _inplace().apply(self, "relu_", self.relu)

    def sigmoid_(self):
        return _inplace().apply(self, "sigmoid_", self.sigmoid)

    def tanh_(self):
        return _inplace().apply(self, "tanh_", self.tanh)

    def fill_(self, value):
        return _inplace().fill(self, value)

    def zero_(self):
        return _inplace().fill(self, 0, "zero_")

    def copy_(self, src):
        return _inplace().copy(self, src)

    def uniform_(self, a=0.0, b=1.0):
        _inplace().refuse_if_recording(self, (), "uniform_")
        from .nn.init import uniform_
        return uniform_(self, a, b)

    def normal_(self, mean=0.0, std=1.0):
        _inplace().refuse_if_recording(self, (), "normal_")
        from .nn.init import normal_
        return normal_(self, mean, std)

    # ---- comparisons: int32 0/1 tensors (nn_engine.compare) ----
    __hash__ = object.__hash__  # identity, as torch.Tensor's, though == compares values

    def __eq__(self, other):
        return _compared(self, other, "eq")

    def __ne__(self, other):
        return _compared(self, other, "ne")

    def __lt__(self, other):
        return _compared(self, other, "lt")

    def __le__(self, other):
        return _compared(self, other, "le")

    def __gt__(self, other):
        return _compared(self, other, "gt")

    def __ge__(self, other):
        return _compared(self, other, "ge")

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of a Tensor with {self.numel()} elements is ambiguous "
                               f"(shape {self._shape}): use .any(), .all() or a comparison's .sum()")
        return bool(self.item())

    # a one-element tensor in Python's numbers' places: float(loss), f"{loss:.4f}", range(n)
    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._dtype != np.int32:
            raise TypeError("only an integer tensor of one element can be used as an index")
        return int(self.item())

    def __format__(self, spec):
        if spec and self.numel() == 1:
            return format(self.item(), spec)
        return format(repr(self), spec)

    def __getitem__(self, index):
        from .rearrange import getitem
        return getitem(self, index)

    def __repr__(self):
        if not self._h.valid():  # a freed result may never have learnt its shape
            shape, dtype = self._known_shape or "?", self._known_dtype or "?"
            return f"Tensor(shape={shape}, dtype={dtype}, freed)"
        return f"Tensor(shape={self._shape}, dtype={self._dtype})"


def _inplace():
    from . import inplace
    return inplace


def tensor_list(values, where):
    """A list of the Tensors in `values` (an iterable of them, such as
    model.parameters(); not one Tensor), or a TypeError naming the first
    thing that is not one."""
    if isinstance(values, Tensor):
        raise TypeError(f"{where}: params must be an iterable of Tensors (e.g. model.parameters()), got a "
                        f"single Tensor")
    try:
        values = list(values)
    except TypeError:
        raise TypeError(f"{where}: params must be an iterable of Tensors, got {type(values).__name__}") from None
    for i, value in enumerate(values):
        if not isinstance(value, Tensor):
            raise TypeError(f"{where}: parameter {i} is a {type(value).__name__}, not a Tensor")
    return values


def _compared(a, other, op):
    """a `op` other for a Tensor or a number; NotImplemented for anything
    else (so `t == None` and `t in [...]` fall back to identity)."""
    if not isinstance(other, (Tensor, numbers.Real, np.number)):
        return NotImplemented
    from .compare import compare
    return compare(a, other, op)


def _device_and_dtype(args, kwargs, where):
    """(device, dtype) from .to()'s arguments as torch takes them: a device
    (str or Context), a dtype, or a Tensor (its device and dtype), in any
    order, or as device= / dtype= keywords; None for what is not given."""
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("copy", None)
    if kwargs:
        raise TypeError(f"{where}: unexpected arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg._h.ctx, arg.dtype
        elif isinstance(arg, (str, _context.Context)):
            device = arg
        else:
            try:
                dtype = np.dtype(arg)
            except TypeError:
                raise TypeError(f"{where}: device must be a str ('cpu', 'vulkan', 'cuda' or 'auto'), or give a "
                                f"dtype; got {arg!r}") from None
    return device, dtype


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of `data` (torch.tensor): integer data
    (Python ints, NumPy integer or boolean arrays, an int32 Tensor) stays
    integer, as int32 on the device (values must fit), anything else becomes
    float32; `dtype` asks for one (any integer dtype is int32). Kept until
    garbage-collected, as PyTorch's."""
    if isinstance(data, Tensor):
        data = data.sync()
    if dtype is None:
        array = np.asarray(data)
        integer = array.dtype.kind in "iub"
    else:
        try:
            integer = np.dtype(dtype).kind in "iub"
        except TypeError:
            raise TypeError(f"tensor: dtype must be a NumPy dtype such as float32 or int64, got {dtype!r}") from None
    return Tensor(data, requires_grad=requires_grad, track=False, dtype=np.int32 if integer else np.float32,
                  device=device)


def from_numpy(array):
    """tensor(array) for a NumPy array: a copy on the default device (the
    device's memory cannot share the array's, as torch.from_numpy's does)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a NumPy array, got {type(array).__name__}")
    return tensor(array)


class ReusableTensor:
    """One device buffer refilled every batch (the seed's ReusableTensor):
    update(array) copies the values in and returns a Tensor over that buffer,
    with no allocation. A batch of another size (the last, smaller one) gets a
    buffer of its own; Tensors returned earlier keep theirs."""

    def __init__(self, shape, dtype=np.float32):
        try:
            shape = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise TypeError(f"ReusableTensor: shape must be a sequence of ints, got {shape!r}") \
                from None
        self._dtype = np.dtype(dtype)
        if self._dtype not in _DTYPES:
            raise TypeError(f"ReusableTensor: dtype must be float32 or int32, got {self._dtype}")
        self._tensor = self._allocate(shape)

    def _allocate(self, shape):
        if not 1 <= len(shape) <= NN_MAX_DIMS or min(shape) < 1:
            raise ValueError(f"ReusableTensor: shape must have 1 to {NN_MAX_DIMS} dimensions, "
                             f"each >= 1, got {shape}")
        ctx = _context.default_context()
        dims = (ctypes.c_int64 * len(shape))(*shape)
        ptr = check_ptr(lib.nn_tensor_new(ctx.ptr, _DTYPES[self._dtype], len(shape), dims),
                        "nn_tensor_new")
        return Tensor._wrap(Handle(ptr, ctx, OWNED), shape)

    @property
    def shape(self):
        return self._tensor.shape

    def update(self, data):
        array = as_host_array(data, self._dtype, "ReusableTensor.update")
        if array.shape != self._tensor.shape:
            self._tensor = self._allocate(array.shape)
        self._tensor.upload(array)
        return self._tensor
