"""PyTorch's side of bench/bench_norm_layers.c (bench/README.md, issue 33):
reads that program's output (its "norm" lines: each distinct BatchNorm of a
model, its count, and nn-engine's forward and backward kernel times), times
PyTorch's BatchNorm in training on the same shapes (fp32, channels-last
where ours is, running statistics updated) and prints both side by side
with their ratio, per layer and summed over the model.

The forward is torch.ops.aten.native_batch_norm (statistics, running
update and apply), the backward native_batch_norm_backward for x, the
weight and the bias: the kernels F.batch_norm and its autograd run on CUDA.
Each is captured in a CUDA graph of --reps launches and replayed; the
figure is the median over --runs replays, divided by --reps.

    build/bench/bench_norm_layers --model resnet18 > ours.txt
    python3 bench/torch_norm_layers.py ours.txt [--reps 10] [--runs 7]
"""
import argparse

import torch

from torch_conv_layers import graph_ms


def parse(path):
    header, layers = None, []
    with open(path) as f:
        for line in f:
            if line.startswith("nn-engine "):
                header = line.strip()
            if not line.startswith("norm "):
                continue
            w = line.split()
            n, c, h, wd, last, count = (int(v) for v in w[3:9])
            layers.append(dict(n=n, c=c, h=h, w=wd, last=bool(last), count=count,
                               ours=[float(w[9]), float(w[10])]))
    return header, layers


def torch_times(L, reps, runs):
    fmt = torch.channels_last if L["last"] else torch.contiguous_format
    x = torch.randn(L["n"], L["c"], L["h"], L["w"], device="cuda").to(memory_format=fmt)
    dy = torch.randn_like(x)
    w = torch.rand(L["c"], device="cuda") + 0.5
    b = torch.randn(L["c"], device="cuda")
    rm, rv = torch.zeros(L["c"], device="cuda"), torch.ones(L["c"], device="cuda")
    eps = 1e-5
    _, mean, invstd = torch.ops.aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, eps)

    def forward():
        torch.ops.aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, eps)

    def backward():
        torch.ops.aten.native_batch_norm_backward(dy, x, w, rm, rv, mean, invstd, True, eps, [True, True, True])

    return [graph_ms(forward, reps, runs), graph_ms(backward, reps, runs)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ours", help="bench_norm_layers' output")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    header, layers = parse(args.ours)
    if not layers:
        raise SystemExit(f"{args.ours}: no 'norm' lines (bench_norm_layers' output)")
    print(header)
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}: BatchNorm in training, fp32; "
          f"ms per launch, ours / PyTorch")
    print(f"{'BatchNorm':<24} {'n':>3} {'fwd ours':>9} {'PyTorch':>8} {'ratio':>6} {'bwd ours':>9} {'PyTorch':>8} "
          f"{'ratio':>6}")
    totals = [[0.0, 0.0], [0.0, 0.0]]
    for L in layers:
        theirs = torch_times(L, args.reps, args.runs)
        label = f"{L['n']}x{L['c']}x{L['h']}x{L['w']}" + (" nhwc" if L["last"] else "")
        cells = []
        for k in range(2):
            ours, them = L["ours"][k], theirs[k]
            totals[k][0] += L["count"] * ours
            totals[k][1] += L["count"] * them
            cells.append(f"{ours:>9.3f} {them:>8.3f} {ours / them:>6.2f}")
        print(f"{label:<24} {L['count']:>3} " + " ".join(cells), flush=True)
    ours_all, them_all = sum(t[0] for t in totals), sum(t[1] for t in totals)
    print(f"{'sum (each shape times its count)':<28} "
          + " ".join(f"{t[0]:>9.2f} {t[1]:>8.2f} {t[0] / t[1]:>6.2f}" for t in totals)
          + f"   all: ours {ours_all:.2f} ms, PyTorch {them_all:.2f} ms, ratio {ours_all / them_all:.2f}")


if __name__ == "__main__":
    main()
