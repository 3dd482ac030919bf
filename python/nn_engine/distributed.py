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

from ._errors import check
from ._lib import c_optimizer_p, c_status, c_tensor_p, declare

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
