"""The vocabulary's memory-bound kernels at 64M elements against PyTorch in
the same process (bench/README.md, "Normalisation, elementwise and pooling
kernels"): for each workload, nn-engine (Vulkan) and PyTorch (CUDA) run the
forward on the same shapes; GB/s counts the bytes the operation must move at
least (each input read once, each output written once), so a kernel that
reads its input twice (a normalisation's statistics, then the normalise)
shows below the memory's peak. Then one training-style iteration, y = op(x),
(y * w).sum().backward(), the same composition on both, in ms.

    NN_ENGINE_LIBRARY=... PYTHONPATH=python python3 bench/tensor_kernels.py [--iters 20] [--only NAME]
"""
import argparse
import time

import numpy as np
import torch
import torch.nn.functional as TF

import nn_engine as nn
from nn_engine import _context
from nn_engine import functional as F
from nn_engine._lib import lib

N = 1 << 26  # 64M elements, 256 MiB of float32
RNG = np.random.default_rng(5)


def engine_sync():
    lib.nn_ctx_sync(_context.default_context().ptr)


def workloads(shrink):
    """name: (input shapes, engine fn, torch fn, bytes moved by the forward);
    shrink divides the leading dimension (a quick check on a small machine)."""
    n = N // shrink
    img = (64 // shrink, 64, 128, 128)
    rows = (65536 // shrink, 1024)
    c = img[1]
    f4 = 4 * n
    return {
        "add": ([(n,), (n,)], lambda a, b: a + b, lambda a, b: a + b, 3 * f4),
        "add (broadcast row)": ([rows, (1024,)], lambda a, b: a + b, lambda a, b: a + b, 2 * f4),
        "mul by a number": ([(n,)], lambda a: a * 2.5, lambda a: a * 2.5, 2 * f4),
        "maximum": ([(n,), (n,)], nn.maximum, torch.maximum, 3 * f4),
        "gelu": ([(n,)], F.gelu, TF.gelu, 2 * f4),
        "silu": ([(n,)], F.silu, TF.silu, 2 * f4),
        "exp": ([(n,)], nn.exp, torch.exp, 2 * f4),
        "sum over the last dim": ([rows], lambda a: a.sum(1), lambda a: a.sum(1), f4),
        "sum over the first dim": ([rows], lambda a: a.sum(0), lambda a: a.sum(0), f4),
        "permute (0, 2, 1)": ([(64 // shrink, 1024, 1024)], lambda a: a.permute(0, 2, 1),
                              lambda a: a.permute(0, 2, 1).contiguous(), 2 * f4),
        "batch_norm (train)": ([img, (c,), (c,)],
                               lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                               lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True), 2 * f4),
        "layer_norm (1024)": ([rows, (1024,), (1024,)], lambda x, w, b: F.layer_norm(x, (1024,), w, b),
                              lambda x, w, b: TF.layer_norm(x, (1024,), w, b), 2 * f4),
        "group_norm (32 groups)": ([img, (c,), (c,)], lambda x, w, b: F.group_norm(x, 32, w, b),
                                   lambda x, w, b: TF.group_norm(x, 32, w, b), 2 * f4),
        "max_pool2d 2x2": ([img], lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), f4 + f4 // 4),
        "max_pool2d 3x3 s2 p1": ([img], lambda x: F.max_pool2d(x, 3, 2, 1), lambda x: TF.max_pool2d(x, 3, 2, 1),
                                 f4 + f4 // 4),
        "avg_pool2d 2x2": ([img], lambda x: F.avg_pool2d(x, 2), lambda x: TF.avg_pool2d(x, 2), f4 + f4 // 4),
        "adaptive_avg_pool2d 1x1": ([img], lambda x: F.adaptive_avg_pool2d(x, 1),
                                    lambda x: TF.adaptive_avg_pool2d(x, 1), f4),
    }


def time_engine(fn, inputs, iters, train):
    w = None
    for i in range(iters + 3):
        if i == 3:
            engine_sync()
            start = time.perf_counter()
        y = fn(*inputs)
        if train:
            if w is None:
                w = nn.Tensor(RNG.uniform(-1, 1, y.shape).astype(np.float32), track=False)
            (y * w).sum().backward()
            for t in inputs:
                t.grad = None
        nn.end_batch()
    engine_sync()
    return (time.perf_counter() - start) / iters


def torch_sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_torch(fn, inputs, iters, train):
    w = None
    for i in range(iters + 3):
        if i == 3:
            torch_sync()
            start = time.perf_counter()
        y = fn(*inputs)
        if train:
            if w is None:
                w = torch.empty_like(y).uniform_(-1, 1)
            (y * w).sum().backward()
            for t in inputs:
                t.grad = None
    torch_sync()
    return (time.perf_counter() - start) / iters


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--only", default=None)
    parser.add_argument("--device", default="vulkan")
    parser.add_argument("--shrink", type=int, default=1, help="divide the sizes (a quick check)")
    args = parser.parse_args()
    nn.set_device(args.device)
    where = "cuda" if torch.cuda.is_available() else "cpu"
    peer = torch.cuda.get_device_name() if where == "cuda" else "the CPU"
    print(f"nn-engine on {_context.default_context().device_name}; PyTorch {torch.__version__} on {peer}; "
          f"{N // args.shrink:,} elements; {args.iters} iterations after 3 warm-ups")
    print(f"{'workload':<26} {'engine GB/s':>11} {'torch GB/s':>10} {'ratio':>6}   "
          f"{'engine fwd+bwd ms':>17} {'torch ms':>8} {'ratio':>6}")
    for name, (shapes, ours, theirs, moved) in workloads(args.shrink).items():
        if args.only and args.only not in name:
            continue
        arrays = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
        mine = [nn.Tensor(a, requires_grad=True, track=False) for a in arrays]
        cuda = [torch.tensor(a, device=where, requires_grad=True) for a in arrays]
        del arrays
        with nn.no_grad(), torch.no_grad():
            te = time_engine(ours, mine, args.iters, False)
            tt = time_torch(theirs, cuda, args.iters, False)
        be = time_engine(ours, mine, args.iters, True)
        bt = time_torch(theirs, cuda, args.iters, True)
        print(f"{name:<26} {moved / te / 1e9:>11.0f} {moved / tt / 1e9:>10.0f} {tt / te:>6.2f}   "
              f"{be * 1e3:>17.2f} {bt * 1e3:>8.2f} {bt / be:>6.2f}", flush=True)
        del mine, cuda
        nn.end_batch()
        if where == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
