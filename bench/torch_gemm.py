"""PyTorch's GEMM on the shapes of bench_gemm.c, the peer for its table.

Reads the table that build/bench/bench_gemm prints (shape, M, N, K, op,
MFLOP, us/call, GFLOP/s), times torch.matmul on the same shapes with the same
transposes and threads, and prints both with the ratio, so the two are always
measured on the same shapes in the same run (one after the other: piped,
the two would run at once and share the cores):

    build/bench/bench_gemm --threads 2 > table.txt
    python bench/torch_gemm.py --threads 2 < table.txt
"""
import argparse
import re
import sys
import time

import torch

ROW = re.compile(r"^(.+?)\s+(\d+)\s+(\d+)\s+(\d+)\s+([NT]{2})\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")


def torch_gflops(m, n, k, op, seconds_target=0.2):
    a = torch.rand((k, m) if op[0] == "T" else (m, k))
    b = torch.rand((n, k) if op[1] == "T" else (k, n))
    a_op = a.t() if op[0] == "T" else a
    b_op = b.t() if op[1] == "T" else b
    for _ in range(3):
        torch.matmul(a_op, b_op)
    calls, start = 0, time.perf_counter()
    while True:  # enough calls for ~0.2 s, then the best of 3 such runs
        torch.matmul(a_op, b_op)
        calls += 1
        if time.perf_counter() - start > seconds_target:
            break
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            torch.matmul(a_op, b_op)
        best = min(best, (time.perf_counter() - start) / calls)
    return 2.0 * m * n * k / best / 1e9


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"peer: PyTorch {torch.__version__} torch.matmul, {args.threads} threads")
    print(f"{'shape':<20} {'M':>6} {'N':>6} {'K':>6}  op  {'nn-engine':>10} {'PyTorch':>10}  ratio")
    for line in sys.stdin:
        match = ROW.match(line)
        if not match:
            continue
        name, m, n, k, op, _, _, ours = match.groups()
        m, n, k, ours = int(m), int(n), int(k), float(ours)
        theirs = torch_gflops(m, n, k, op)
        print(f"{name:<20} {m:>6} {n:>6} {k:>6}  {op}  {ours:>10.1f} {theirs:>10.1f}  {ours / theirs:5.2f}x")


if __name__ == "__main__":
    main()
