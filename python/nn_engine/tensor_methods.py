"""torch.Tensor's method names over nn_engine's functions: exp, softmax,
add, sum, reshape, permute, split and the rest, each calling the function
of nn_engine.functional, reductions or rearrange on self. Tensor
(tensor.py) inherits them; the functions' modules import Tensor, so each
method imports its function when called."""
import numbers


class TensorMethods:
    """The methods Tensor takes from the functions (no state of its own)."""
    __slots__ = ()

    # ---- methods (torch.Tensor's names) ----
    def exp(self):
        from .functional import exp
        return exp(self)

    def log(self):
        from .functional import log
        return log(self)

    def sqrt(self):
        from .functional import sqrt
        return sqrt(self)

    def abs(self):
        from .functional import abs
        return abs(self)

    def neg(self):
        from .functional import neg
        return neg(self)

    def sigmoid(self):
        from .functional import sigmoid
        return sigmoid(self)

    def relu(self):
        from .functional import relu
        return relu(self)

    def softmax(self, dim):
        from .functional import softmax
        return softmax(self, dim)

    def log_softmax(self, dim):
        from .functional import log_softmax
        return log_softmax(self, dim)

    def tanh(self):
        from .functional import tanh
        return tanh(self)

    def clamp(self, min=None, max=None):  # noqa: A002 - torch's argument names
        from .functional import clamp
        return clamp(self, min, max)

    def pow(self, exponent):
        from .functional import pow
        return pow(self, exponent)

    # ---- broadcasting arithmetic, reductions, rearrangements (torch.Tensor's names) ----
    def add(self, other):
        from .functional import add
        return add(self, other)

    def sub(self, other):
        from .functional import sub
        return sub(self, other)

    def mul(self, other):
        from .functional import mul
        return mul(self, other)

    def div(self, other):
        from .functional import div
        return div(self, other)

    def maximum(self, other):
        from .functional import maximum
        return maximum(self, other)

    def minimum(self, other):
        from .functional import minimum
        return minimum(self, other)

    def matmul(self, other):
        from .functional import matmul
        return matmul(self, other)

    def mm(self, other):
        from .functional import mm
        return mm(self, other)

    def bmm(self, other):
        from .functional import bmm
        return bmm(self, other)

    def sum(self, dim=None, keepdim=False):
        from .reductions import sum
        return sum(self, dim, keepdim)

    def mean(self, dim=None, keepdim=False):
        from .reductions import mean
        return mean(self, dim, keepdim)

    def max(self, dim=None, keepdim=False):
        from .reductions import max
        return max(self, dim, keepdim)

    def min(self, dim=None, keepdim=False):
        from .reductions import min
        return min(self, dim, keepdim)

    def amax(self, dim=(), keepdim=False):
        from .reductions import amax
        return amax(self, dim, keepdim)

    def amin(self, dim=(), keepdim=False):
        from .reductions import amin
        return amin(self, dim, keepdim)

    def argmax(self, dim=None, keepdim=False):
        from .reductions import argmax
        return argmax(self, dim, keepdim)

    def argmin(self, dim=None, keepdim=False):
        from .reductions import argmin
        return argmin(self, dim, keepdim)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        from .reductions import var
        return var(self, dim, unbiased, keepdim, correction=correction)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        from .reductions import std
        return std(self, dim, unbiased, keepdim, correction=correction)

    def reshape(self, *shape):
        from .functional import reshape
        return reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else shape)

    view = reshape

    def reshape_as(self, other):
        return self.reshape(other.shape)

    view_as = reshape_as

    def t(self):
        """A 2-D tensor transposed (1-D: itself), as torch.Tensor.t."""
        if self.ndim > 2:
            raise ValueError(f"t: expects a tensor of at most 2 dimensions, got shape {self._shape} (use transpose)")
        return self.T

    def flatten(self, start_dim=0, end_dim=-1):
        from .rearrange import flatten
        return flatten(self, start_dim, end_dim)

    def permute(self, *dims):
        from .rearrange import permute
        return permute(self, *dims)

    def transpose(self, dim0, dim1):
        from .rearrange import transpose
        return transpose(self, dim0, dim1)

    @property
    def T(self):
        """The dimensions in reverse order (torch.Tensor.T)."""
        from .rearrange import permute
        return self if self.ndim == 1 else permute(self, *reversed(range(self.ndim)))

    def squeeze(self, dim=None):
        from .rearrange import squeeze
        return squeeze(self, dim)

    def unsqueeze(self, dim):
        from .rearrange import unsqueeze
        return unsqueeze(self, dim)

    def expand(self, *sizes):
        from .rearrange import expand
        return expand(self, *sizes)

    def split(self, split_size_or_sections, dim=0):
        from .rearrange import split
        return split(self, split_size_or_sections, dim)

    def chunk(self, chunks, dim=0):
        from .rearrange import chunk
        return chunk(self, chunks, dim)

    def narrow(self, dim, start, length):
        from .rearrange import narrow
        return narrow(self, dim, start, length)
