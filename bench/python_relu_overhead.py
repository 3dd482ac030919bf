"""Per-call cost of a Python call into the library: microseconds per
nn_engine.relu on a small tensor, next to torch.relu on the same tensor in
the same process. Also the bare ctypes call (nn_relu + nn_tensor_free) to
show how much of it is the package's Python layer.

    bench/run-python.sh            (or: PYTHONPATH=python python bench/python_relu_overhead.py)
"""
import argparse
import platform
import statistics
import time

import numpy as np

import nn_engine as nn
from nn_engine._lib import lib


def per_call_us(fn, calls, rounds):
    """Median over rounds of the mean time of `calls` calls, in microseconds."""
    fn()  # warm up
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", default="16,16", help="tensor shape (default 16,16)")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    shape = tuple(int(d) for d in args.shape.split(","))
    data = np.random.default_rng(0).standard_normal(shape).astype(np.float32)

    x = nn.Tensor(data, track=False)
    xp = x._h.get()  # the raw pointer: no handle check in the bare calls

    def bare():
        lib.nn_tensor_free(lib.nn_relu(xp))

    rows = [("nn_engine.relu(x)", per_call_us(lambda: nn.relu(x), args.calls, args.rounds)),
            ("ctypes nn_relu + nn_tensor_free", per_call_us(bare, args.calls, args.rounds))]
    nn.end_batch()
    try:
        import torch
        torch.set_num_threads(1)
        t = torch.from_numpy(data.copy())
        rows.append((f"torch.relu(x) (PyTorch {torch.__version__})",
                     per_call_us(lambda: torch.relu(t), args.calls, args.rounds)))
        with torch.no_grad():
            rows.append(("torch.relu(x) under no_grad",
                         per_call_us(lambda: torch.relu(t), args.calls, args.rounds)))
    except ImportError:
        rows.append(("torch.relu(x)", float("nan")))
    print(f"relu on a float32 tensor of shape {shape}, {args.calls} calls x {args.rounds} "
          f"rounds (median), Python {platform.python_version()}, {nn.get_device()}")
    for name, us in rows:
        print(f"  {name:44s} {us:7.2f} us/call")


if __name__ == "__main__":
    main()
