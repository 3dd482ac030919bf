"""cuDNN's side of bench/bench_conv_layers.c (bench/README.md, issue 33):
reads that program's output (its "conv" lines: each distinct convolution of
a model, its count, and nn-engine's forward, data-gradient and
weight-gradient times), times the same three kernels through PyTorch on
the same shapes, and prints both side by side with their ratio, per layer
and summed over the model (each shape times its count).

Each kernel is captured in a CUDA graph of --reps launches and replayed;
the figure is the median over --runs replays, divided by --reps, after
cuDNN's benchmark mode picked its algorithm. fp32: NCHW tensors, TF32 off
(PyTorch's fp32). --half: bf16 tensors in channels-last, as PyTorch's bf16
autocast with a channels-last model runs them.

    build/bench/bench_conv_layers --model resnet18 > ours.txt
    python3 bench/torch_conv_layers.py ours.txt [--half] [--reps 10] [--runs 7]
"""
import argparse

import torch


def parse(path):
    header, layers = None, []
    with open(path) as f:
        for line in f:
            if line.startswith("nn-engine "):
                header = line.strip()
            if not line.startswith("conv "):
                continue
            w = line.split()
            ints = [int(v) for v in w[2:20]]
            (idx, n, c, h, wd, f_, kh, kw, sh, sw, ph, pw, dh, dw, groups, bias, data, count) = ints
            ours = [float(v) for v in w[20:23]]
            layers.append(dict(model=w[1], idx=idx, n=n, c=c, h=h, w=wd, f=f_, kh=kh, kw=kw, sh=sh, sw=sw, ph=ph,
                               pw=pw, dh=dh, dw=dw, groups=groups, bias=bias, data=data, count=count, ours=ours))
    return header, layers


def graph_ms(fn, reps, runs):
    for _ in range(3):  # cuDNN's benchmark mode tries its algorithms here
        fn()
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(reps):
            fn()
    times = []
    for _ in range(runs + 2):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / reps)
    times = sorted(times[2:])
    return times[len(times) // 2]


def torch_times(layer, half, reps, runs):
    dtype = torch.bfloat16 if half else torch.float32
    fmt = torch.channels_last if half else torch.contiguous_format
    L = layer
    x = torch.randn(L["n"], L["c"], L["h"], L["w"], device="cuda", dtype=dtype).to(memory_format=fmt)
    wt = torch.randn(L["f"], L["c"] // L["groups"], L["kh"], L["kw"], device="cuda", dtype=dtype)
    wt = wt.to(memory_format=fmt)
    b = torch.randn(L["f"], device="cuda", dtype=dtype) if L["bias"] else None
    stride, pad, dil = (L["sh"], L["sw"]), (L["ph"], L["pw"]), (L["dh"], L["dw"])
    y = torch.nn.functional.conv2d(x, wt, b, stride, pad, dil, L["groups"])
    dy = torch.randn_like(y)

    def forward():
        torch.nn.functional.conv2d(x, wt, b, stride, pad, dil, L["groups"])

    def grad(mask):
        return lambda: torch.ops.aten.convolution_backward(dy, x, wt, None, stride, pad, dil, False, (0, 0),
                                                           L["groups"], mask)

    fwd = graph_ms(forward, reps, runs)
    data = graph_ms(grad([True, False, False]), reps, runs) if L["data"] else 0.0
    weight = graph_ms(grad([False, True, False]), reps, runs)
    return [fwd, data, weight]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ours", help="bench_conv_layers' output")
    parser.add_argument("--half", action="store_true", help="bf16 channels-last (else fp32 NCHW, TF32 off)")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    header, layers = parse(args.ours)
    if not layers:
        raise SystemExit(f"{args.ours}: no 'conv' lines (bench_conv_layers' output)")
    peer = "cuDNN bf16 channels-last" if args.half else "cuDNN fp32 (TF32 off)"
    print(header)
    print(f"PyTorch {torch.__version__}, cuDNN {torch.backends.cudnn.version()} on {torch.cuda.get_device_name()}: "
          f"{peer}; ms per launch, ours / cuDNN")
    print(f"{'layer':<34} {'n':>3} {'fwd ours':>9} {'cuDNN':>8} {'ratio':>6} {'data ours':>10} {'cuDNN':>8} "
          f"{'ratio':>6} {'wgt ours':>9} {'cuDNN':>8} {'ratio':>6}")
    totals = [[0.0, 0.0] for _ in range(3)]
    for L in layers:
        theirs = torch_times(L, args.half, args.reps, args.runs)
        label = (f"{L['n']}x{L['c']}x{L['h']}x{L['w']} f{L['f']} k{L['kh']}x{L['kw']} s{L['sh']} p{L['ph']}"
                 + (f" g{L['groups']}" if L["groups"] > 1 else ""))
        cells = []
        for k in range(3):
            ours, them = L["ours"][k], theirs[k]
            totals[k][0] += L["count"] * ours
            totals[k][1] += L["count"] * them
            if k == 1 and not L["data"]:
                cells.append(f"{'-':>{10 if k == 1 else 9}} {'-':>8} {'-':>6}")
            else:
                cells.append(f"{ours:>{10 if k == 1 else 9}.3f} {them:>8.3f} {ours / them:>6.2f}")
        print(f"{label:<34} {L['count']:>3} " + " ".join(cells), flush=True)
    ours_all, them_all = sum(t[0] for t in totals), sum(t[1] for t in totals)
    print(f"{'sum (each shape times its count)':<38} "
          + " ".join(f"{t[0]:>9.2f} {t[1]:>8.2f} {t[0] / t[1]:>6.2f}" if t[1] else f"{'-':>25}" for t in totals)
          + f"   all: ours {ours_all:.2f} ms, cuDNN {them_all:.2f} ms, ratio {ours_all / them_all:.2f}")


if __name__ == "__main__":
    main()
