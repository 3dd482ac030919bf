"""Data-parallel training over MPI, with torch.distributed's names
(include/nn_dist.h). Start one Python process per GPU (or CPU rank) with
mpirun; each builds the same model, takes rank 0's weights, trains on its
shard of every global batch, and the optimizer averages the gradients over
the ranks before each update:

    import nn_engine.distributed as dist
    dist.init_process_group("mpi")
    dist.broadcast_parameters(model, src=0)
    optimizer = dist.DistributedOptimizer(SGD(model.parameters(), lr=0.05))
    ...  # the usual loop on this rank's batches
    dist.destroy_process_group()

    mpirun -n 2 python3 examples/train_lenet_ddp.py --idx DIR

Tensors travel through host memory, so every device works; the calls are
collective: every rank makes them in the same order.
"""
import ctypes
import os

from ._errors import check, check_ptr
from ._lib import c_optimizer_p, c_status, c_tensor_p, declare
from .tensor import Tensor

# Open MPI's plug-ins resolve their symbols in libmpi, which ctypes loaded
# privately with libnnengine: made global here, as mpi4py does.
try:
    ctypes.CDLL("libmpi.so.40", mode=ctypes.RTLD_GLOBAL)
except OSError:
    pass  # a build without MPI, or another MPI: init_process_group says what is missing

_available = declare("nn_dist_available", ctypes.c_bool, [])
_initialized = declare("nn_dist_initialized", ctypes.c_bool, [])
_init = declare("nn_dist_init", c_status, [])
_rank = declare("nn_dist_rank", ctypes.c_int, [])
_size = declare("nn_dist_size", ctypes.c_int, [])
_local_rank = declare("nn_dist_local_rank", ctypes.c_int, [])
_library = declare("nn_dist_library", ctypes.c_char_p, [])
_all_reduce = declare("nn_dist_all_reduce", c_status, [c_tensor_p, ctypes.c_int])
_broadcast = declare("nn_dist_broadcast", c_status, [c_tensor_p, ctypes.c_int])
_barrier = declare("nn_dist_barrier", c_status, [])
_data_parallel = declare("nn_dist_data_parallel", c_status, [c_optimizer_p])
_finalize = declare("nn_dist_finalize", c_status, [])


class ReduceOp:
    """torch.distributed.ReduceOp's SUM and AVG (nn_dist_op)."""
    SUM = 0
    AVG = 1


class Backend:
    MPI = "mpi"


def is_available():
    """Whether the library was built with MPI."""
    return bool(_available())


def is_initialized():
    return bool(_initialized())


def is_mpi_available():
    return is_available()


def library():
    """The MPI library's version line."""
    return _library().decode("utf-8", "replace")


def init_process_group(backend="mpi", init_method=None, timeout=None, world_size=-1, rank=-1, **kwargs):
    """Joins the job mpirun started. Only the "mpi" backend exists; rank and
    world_size come from mpirun (given ones must agree)."""
    if backend not in ("mpi", Backend.MPI):
        raise ValueError(f"init_process_group: backend must be 'mpi' (nn_engine's only one), got {backend!r}")
    if init_method is not None:
        raise ValueError(f"init_process_group: init_method is mpirun's business here, got {init_method!r}")
    check(_init(), "nn_dist_init")
    if world_size not in (-1, get_world_size()):
        raise ValueError(f"init_process_group: world_size={world_size}, but mpirun started {get_world_size()} ranks")
    if rank not in (-1, get_rank()):
        raise ValueError(f"init_process_group: rank={rank}, but mpirun made this process rank {get_rank()}")


def get_rank():
    """This process's rank (0 outside a job)."""
    return int(_rank())


def get_world_size():
    """The number of ranks (1 outside a job)."""
    return int(_size())


def get_local_rank():
    """This process's rank among those on its host (the GPU it should take)."""
    return int(_local_rank())


def _op(op):
    if op not in (ReduceOp.SUM, ReduceOp.AVG):
        raise ValueError(f"op must be ReduceOp.SUM or ReduceOp.AVG, got {op!r}")
    return op


def all_reduce(tensor, op=ReduceOp.SUM):
    """Sums (or averages) a float32 tensor over the ranks, in place."""
    check(_all_reduce(tensor._ptr(), _op(op)), "nn_dist_all_reduce")


def broadcast(tensor, src=0):
    """Rank src's values of tensor to every rank, in place."""
    check(_broadcast(tensor._ptr(), int(src)), "nn_dist_broadcast")


def barrier():
    check(_barrier(), "nn_dist_barrier")


def broadcast_parameters(model, src=0):
    """Every parameter and buffer of model from rank src (the start of training)."""
    for tensor in [*model.parameters(), *model.buffers()]:
        broadcast(tensor, src)


def DistributedOptimizer(optimizer):
    """Makes optimizer data-parallel and returns it: each step() first
    averages the gradients over the ranks (Horovod's name; the role of
    torch's DistributedDataParallel). Works inside nn_engine.capture too."""
    check(_data_parallel(optimizer._ptr), "nn_dist_data_parallel")
    return optimizer


def destroy_process_group():
    """Leaves the job (MPI_Finalize); no collective works afterwards."""
    check(_finalize(), "nn_dist_finalize")


# ---- SyncBatchNorm (nn_dist_batch_norm_sync_new, nn_batch_norm_synced) ----

_sync_new = declare("nn_dist_batch_norm_sync_new", ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int])
_sync_free = declare("nn_batch_norm_sync_free", None, [ctypes.c_void_p])
_synced = declare("nn_batch_norm_synced", c_tensor_p,
                  [ctypes.c_void_p] + [c_tensor_p] * 6 + [ctypes.c_bool, ctypes.c_float, ctypes.c_float])


def _sync_batch_norm_class():
    from . import functional as F
    from .layers import _BatchNorm

    class SyncBatchNorm(_BatchNorm):
        """torch.nn.SyncBatchNorm: BatchNorm over [N, C, ...] whose batch
        statistics in training are those of every rank's batch together (the
        library reduces each channel's count, sum and sum of squares, and in
        backward the gradient's sums, over MPI); the weight's and bias's
        gradients stay this rank's, for DistributedOptimizer to average. In
        eval mode it is BatchNorm with the running statistics."""
        _dims = (2, 3, 4, 5, 6)

        def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                     process_group=None):
            if process_group is not None:
                raise ValueError("SyncBatchNorm: process_group must be None (the whole job: nn_engine's only group)")
            super().__init__(num_features, eps, momentum, affine, track_running_stats)
            self._sync = None  # (library handle, context), made at the first training call

        def _sync_for(self, ctx):
            if self._sync is None or self._sync[1] is not ctx:
                self._release()
                self._sync = (check_ptr(_sync_new(ctx.ptr, self.num_features), "nn_dist_batch_norm_sync_new"), ctx)
            return self._sync[0]

        def _release(self):
            if getattr(self, "_sync", None) is not None:
                _sync_free(self._sync[0])
                self._sync = None

        def __del__(self):
            try:
                self._release()
            except Exception:  # the library may be gone at interpreter exit
                pass

        def __call__(self, x):
            b = self._buffers
            if not self.training and b.get("running_mean") is not None:
                return super().__call__(x)
            name = type(self).__name__
            px = F._tensor(x, name, "input")
            if x.ndim not in self._dims:
                raise ValueError(f"{name}: expected at least 2D input (got {x.ndim}D input)")
            if not is_initialized():
                raise RuntimeError(f"{name}: not in a job: call nn_engine.distributed.init_process_group first")
            rate = -1.0 if self.momentum is None else float(self.momentum)
            ptr = _synced(self._sync_for(x._h.ctx), px, F._optional(b.get("running_mean"), name, "running_mean"),
                          F._optional(b.get("running_var"), name, "running_var"),
                          F._optional(b.get("num_batches_tracked"), name, "num_batches_tracked"),
                          F._optional(self.weight, name, "weight"), F._optional(self.bias, name, "bias"),
                          bool(self.training), rate, float(self.eps))
            return F._same_shape(ptr, x, "nn_batch_norm_synced")

        @classmethod
        def convert_sync_batchnorm(cls, module, process_group=None):
            """Every BatchNorm1d/2d in module (itself, or nested in its
            attributes, lists and dicts) replaced by a SyncBatchNorm holding
            the same weight, bias and buffers; returns module (or its
            replacement), as torch's."""
            return _convert(cls, module, process_group, set())

    return SyncBatchNorm


def _convert(cls, value, process_group, seen):
    from .layers import _BatchNorm
    if isinstance(value, _BatchNorm) and not isinstance(value, cls):
        synced = cls(value.num_features, value.eps, value.momentum, value.affine, value.track_running_stats,
                     process_group)
        synced.weight, synced.bias = value.weight, value.bias
        synced._buffers = value._buffers
        synced.training = value.training
        return synced
    if id(value) in seen or isinstance(value, (type, str, bytes, Tensor)):
        return value
    if not isinstance(value, (list, dict)) and not hasattr(value, "__dict__"):
        return value
    seen.add(id(value))
    if isinstance(value, list):
        value[:] = [_convert(cls, item, process_group, seen) for item in value]
    elif isinstance(value, dict):
        for key in list(value):
            value[key] = _convert(cls, value[key], process_group, seen)
    elif not isinstance(value, _BatchNorm):
        for key, item in list(vars(value).items()):
            if key != "_buffers":
                converted = _convert(cls, item, process_group, seen)
                if converted is not item:
                    setattr(value, key, converted)
    return value


SyncBatchNorm = _sync_batch_norm_class()
