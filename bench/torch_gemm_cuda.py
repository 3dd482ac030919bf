"""cuBLAS fp32 through PyTorch on the shapes of bench_vulkan_gemm.c: the peer
for its table on a CUDA GPU, run in the same command right after it.

TF32 is switched off (torch.backends.cuda.matmul.allow_tf32 = False), so
both sides do IEEE fp32 multiply-adds. Each sample is `calls` products back
to back between two CUDA events (like the Vulkan side: one sync per
sample); best of 5.

    build/bench/bench_vulkan_gemm > table.txt
    python3 bench/torch_gemm_cuda.py < table.txt
    build/bench/bench_vulkan_gemm --precision fp16 | python3 bench/torch_gemm_cuda.py --dtype fp16

--dtype fp16: cuBLAS's fp16 GEMM (fp16 operands and result, tensor cores),
the peer of nn-engine's fp16 products on matrix cores.
"""
import argparse
import re
import sys

import torch

ROW = re.compile(r"^(.+?)\s+(\d+)\s+(\d+)\s+(\d+)\s+([NT]{2})\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")


def cublas_gflops(m, n, k, op, dtype):
    a = torch.rand((k, m) if op[0] == "T" else (m, k), device="cuda", dtype=dtype)
    b = torch.rand((n, k) if op[1] == "T" else (k, n), device="cuda", dtype=dtype)
    a_op = a.t() if op[0] == "T" else a
    b_op = b.t() if op[1] == "T" else b
    for _ in range(3):
        torch.matmul(a_op, b_op)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.matmul(a_op, b_op)
    end.record()
    end.synchronize()
    first = start.elapsed_time(end) / 1e3
    calls = max(1, min(20000, int(0.2 / max(first, 1e-6))))
    best = float("inf")
    for _ in range(5):
        start.record()
        for _ in range(calls):
            torch.matmul(a_op, b_op)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3 / calls)
    return 2.0 * m * n * k / best / 1e9


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", choices=["fp32", "fp16"], default="fp32")
    args = parser.parse_args()
    dtype = torch.float16 if args.dtype == "fp16" else torch.float32
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    what = "fp16" if args.dtype == "fp16" else "fp32 (TF32 off)"
    print(f"peer: PyTorch {torch.__version__} torch.matmul {what} on {torch.cuda.get_device_name()}")
    print(f"{'shape':<22} {'M':>6} {'N':>6} {'K':>6}  op  {'nn-engine':>10} {'cuBLAS':>10}  ratio   (GFLOP/s)")
    for line in sys.stdin:
        match = ROW.match(line)
        if not match:
            continue
        name, m, n, k, op, _, _, ours = match.groups()
        m, n, k, ours = int(m), int(n), int(k), float(ours)
        theirs = cublas_gflops(m, n, k, op, dtype)
        print(f"{name:<22} {m:>6} {n:>6} {k:>6}  {op}  {ours:>10.1f} {theirs:>10.1f}  {ours / theirs:5.2f}x")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
