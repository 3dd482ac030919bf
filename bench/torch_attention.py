"""PyTorch's side of bench/bench_attention.c (issue 34): reads that
program's output (its "attention" lines: B, H, L, E, causal, our step's
milliseconds and peak MiB), times the same step with PyTorch on CUDA in
fp32 (TF32 off): y = F.scaled_dot_product_attention(q, k, v, is_causal)
and the gradients of q, k and v from y.sum(), once with the backend
PyTorch picks for fp32 (memory-efficient attention) and once with its math
backend (the score matrix in memory, where it fits). Each is captured in a
CUDA graph of --reps steps and replayed; the figure is the median over
--runs replays, divided by --reps; peak memory is max_memory_allocated of
an eager step.

With --cpu (ours run with --device cpu), the step runs on the CPU: with
scaled_dot_product_attention where this PyTorch has it (2.0 on), else
composed (matmul, softmax, matmul: the score matrix in memory); the figure
is the median wall time of --runs steps; no memory figure.

    build/bench/bench_attention > ours.txt
    python3 bench/torch_attention.py ours.txt [--reps 5] [--runs 7] [--cpu]

Lines of ours run with --precision fp16 or bf16 are timed in bf16 here
(FlashAttention and the math backend); lines run with --forward, the
forward alone (no gradients).
"""
import argparse
import time

import torch
import torch.nn.functional as F


def parse(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("attention "):
                w = line.split()
                rows.append(dict(shape=tuple(int(v) for v in w[1:5]), causal=bool(int(w[5])),
                                 ms=float(w[6]), mib=float(w[7]), half=len(w) > 8 and w[8] != "fp32",
                                 forward=len(w) > 9 and w[9] == "forward"))
    return rows


def cpu_ms(row, runs):
    q, k, v = (torch.randn(*row["shape"], requires_grad=True) for _ in range(3))

    def step():
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=row["causal"])
        else:
            s = torch.matmul(q, k.transpose(-1, -2)) / q.shape[-1] ** 0.5
            if row["causal"]:
                s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
            y = torch.matmul(torch.softmax(s, dim=-1), v)
        y.sum().backward()

    step()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[len(times) // 2]


def measure(row, backend, reps, runs):
    from torch.nn.attention import sdpa_kernel
    from torch_conv_layers import graph_ms

    dtype = torch.bfloat16 if row.get("half") else torch.float32
    grad = not row.get("forward")
    q, k, v = (torch.randn(*row["shape"], device="cuda", dtype=dtype, requires_grad=grad) for _ in range(3))

    def step():
        with sdpa_kernel(backend):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=row["causal"])
            if grad:
                y.sum().backward()

    try:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        step()
        torch.cuda.synchronize()
        peak = (torch.cuda.max_memory_allocated() - base) / 2**20 + 3 * q.numel() * q.element_size() / 2**20
        return graph_ms(step, reps, runs), peak
    except torch.OutOfMemoryError:
        return None, None
    finally:
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cpu", action="store_true")
    a = ap.parse_args()
    if a.cpu:
        print(f"PyTorch {torch.__version__}, CPU, {torch.get_num_threads()} threads, fp32")
        print(f"{'B, H, L, E':>18} {'causal':>6} | {'ours ms':>8} | {'PyTorch ms':>10} {'ratio':>6}")
        for row in parse(a.ours):
            ms = cpu_ms(row, a.runs)
            print(f"{str(row['shape']):>18} {int(row['causal']):>6} | {row['ms']:8.2f} | {ms:10.2f} {row['ms'] / ms:6.2f}")
        return
    from torch.nn.attention import SDPBackend  # PyTorch 2.2 on, CUDA runs only
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name()}, fp32, TF32 off")
    print(f"{'B, H, L, E':>18} {'causal':>6} | {'ours ms':>8} {'MiB':>7} | {'efficient ms':>12} {'MiB':>7} {'ratio':>6}"
          f" | {'math ms':>8} {'MiB':>7} {'ratio':>6}")
    for row in parse(a.ours):
        fast = SDPBackend.FLASH_ATTENTION if row["half"] else SDPBackend.EFFICIENT_ATTENTION
        eff, eff_mib = measure(row, fast, a.reps, a.runs)
        math, math_mib = measure(row, SDPBackend.MATH, a.reps, a.runs)
        cell = lambda ms, mib: (f"{ms:12.3f} {mib:7.0f} {row['ms'] / ms:6.2f}" if ms else f"{'out of memory':>27}")
        cell_math = lambda ms, mib: (f"{ms:8.3f} {mib:7.0f} {row['ms'] / ms:6.2f}" if ms else f"{'out of memory':>23}")
        what = ("bf16 flash " if row["half"] else "") + ("forward" if row["forward"] else "step")
        print(f"{str(row['shape']):>18} {int(row['causal']):>6} | {row['ms']:8.3f} {row['mib']:7.0f} | "
              f"{cell(eff, eff_mib)} | {cell_math(math, math_mib)} | {what}")


if __name__ == "__main__":
    main()
