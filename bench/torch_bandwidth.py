"""PyTorch's side of bench/bench_bandwidth.c (bench/README.md, issue 34):
reads that program's output (its "bw" lines: each operation's model, shape,
bytes, launches per capture and nn-engine's times for the operation and for
two device copies of the same bytes: a transfer command and a compute
kernel; the faster is our reference), times PyTorch's kernels for the same
operation and a device-to-device copy (dst.copy_(src)) of the same bytes,
and prints the table: GB/s over the bytes the operation must move, each
next to its own copy's, and the ratios.

PyTorch runs the kernels its autograd runs, called directly: the forward
(native_batch_norm, native_layer_norm, F.gelu, log_softmax, cross_entropy,
embedding, adaptive_avg_pool2d, relu, add, sum) and the backward rule
(native_batch_norm_backward, native_layer_norm_backward with the weight's
and bias's gradients, gelu_backward, threshold_backward,
_log_softmax_backward_data, nll_loss_backward then
_log_softmax_backward_data for the cross-entropy, embedding_dense_backward,
_adaptive_avg_pool2d_backward, dy.sum(0) for a bias), fp32, channels-last
where ours is; AdamW is torch.optim.AdamW(fused=True, capturable=True)
over the same parameter shapes. Each is captured in a CUDA graph of as many
launches as ours and replayed; the median over --runs replays, divided by
the launches (bench/torch_conv_layers.py's graph_ms).

    build/bench/bench_bandwidth > ours.txt
    python3 bench/torch_bandwidth.py ours.txt [--runs 7] [--markdown]
"""
import argparse
import time

import torch
import torch.nn.functional as TF

CUDA = torch.cuda.is_available()
DEV = "cuda" if CUDA else "cpu"
aten = torch.ops.aten


def graph_ms(fn, reps, runs):
    """Median ms of one of `reps` launches of fn, captured in a CUDA graph
    (wall time on the CPU, a quick check)."""
    for _ in range(3):
        fn()
    if not CUDA:
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            times.append((time.perf_counter() - t0) * 1e3 / reps)
        return sorted(times)[len(times) // 2]
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
    # About 250 ms of replays first, as ours (bench_replay.h): the clocks rise.
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.25:
        graph.replay()
        torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / reps)
    del graph
    return sorted(times)[len(times) // 2]


def rand(*shape, lo=-1.0, hi=1.0, last=False):
    t = torch.empty(*shape, device=DEV).uniform_(lo, hi)
    return t.to(memory_format=torch.channels_last) if last else t


def transformer_params(vocab, context, width, depth, hidden, vit):
    """bench_bandwidth.c's transformer_params: GPT-2 small's (head tied) or vit-tiny's."""
    s = []
    if vit:
        s += [(width, 16), (width,), (1, width), (50, width)]
    else:
        s += [(vocab, width), (context, width)]
    for _ in range(depth):
        s += [(width,), (width,), (3 * width, width), (3 * width,), (width, width), (width,), (width,), (width,),
              (hidden, width), (hidden,), (width, hidden), (width,)]
    s += [(width,), (width,)]
    if vit:
        s += [(10, width), (10,)]
    return s


def adamw_shapes(model, total):
    if model == "vit-tiny":
        shapes = transformer_params(0, 0, 192, 6, 768, True)
    else:
        shapes = transformer_params(50257, 1024, 768, 12, 3072, False)
    numel = lambda s: s[0] * (s[1] if len(s) > 1 else 1)
    if sum(numel(s) for s in shapes) != total:  # --scale: the first dimension divided
        scale = round(sum(numel(s) for s in shapes) / total)
        shapes = [(max(s[0] // scale, 1),) + tuple(s[1:]) for s in shapes]
    return shapes


def operation(key, model, dims):
    """A function that launches PyTorch's kernels for the operation, on fresh operands."""
    eps = 1e-5
    if key in ("bn_fwd", "bn_bwd"):
        n, c, h, w_ = dims
        x = rand(n, c, h, w_, lo=-2, hi=2, last=True)
        w, b = rand(c, lo=0.5, hi=1.5), rand(c, lo=-0.5, hi=0.5)
        if key == "bn_fwd":
            return lambda: aten.native_batch_norm(x, w, b, None, None, True, 0.1, eps)
        _, mean, invstd = aten.native_batch_norm(x, w, b, None, None, True, 0.1, eps)
        dy = rand(n, c, h, w_, last=True)
        return lambda: aten.native_batch_norm_backward(dy, x, w, None, None, mean, invstd, True, eps,
                                                       [True, True, True])
    last = len(dims) == 4
    if key in ("relu_fwd", "relu_bwd"):
        x = rand(*dims, last=last)
        if key == "relu_fwd":
            return lambda: torch.relu(x)
        y, dy = torch.relu(x), rand(*dims, last=last)
        return lambda: aten.threshold_backward(dy, y, 0)
    if key == "add":
        a, b = rand(*dims, last=last), rand(*dims, last=last)
        return lambda: a + b
    if key in ("pool_fwd", "pool_bwd"):
        n, c = dims[0], dims[1]
        x = rand(*dims, last=True)
        if key == "pool_fwd":
            return lambda: TF.adaptive_avg_pool2d(x, 1)
        dy = rand(n, c, 1, 1).to(memory_format=torch.channels_last)
        return lambda: aten._adaptive_avg_pool2d_backward(dy, x)
    if key in ("ln_fwd", "ln_bwd"):
        r, d = dims
        x, w, b = rand(r, d, lo=-2, hi=2), rand(d, lo=0.5, hi=1.5), rand(d, lo=-0.5, hi=0.5)
        if key == "ln_fwd":
            return lambda: aten.native_layer_norm(x, [d], w, b, eps)
        _, mean, rstd = aten.native_layer_norm(x, [d], w, b, eps)
        dy = rand(r, d)
        return lambda: aten.native_layer_norm_backward(dy, x, [d], mean, rstd, w, b, [True, True, True])
    if key in ("gelu_fwd", "gelu_bwd"):
        x = rand(*dims, lo=-3, hi=3)
        if key == "gelu_fwd":
            return lambda: TF.gelu(x)
        dy = rand(*dims)
        return lambda: aten.gelu_backward(dy, x)
    if key == "row_sum":
        x = rand(*dims)
        return lambda: x.sum(1)
    if key == "bias_grad":
        dy = rand(*dims)
        return lambda: dy.sum(0)
    if key in ("logsoftmax_fwd", "logsoftmax_bwd"):
        x = rand(*dims, lo=-4, hi=4)
        if key == "logsoftmax_fwd":
            return lambda: torch.log_softmax(x, 1)
        y, dy = torch.log_softmax(x, 1), rand(*dims)
        return lambda: aten._log_softmax_backward_data(dy, y, 1, torch.float32)
    if key in ("ce_fwd", "ce_bwd"):
        r, v = dims
        x = rand(r, v, lo=-4, hi=4)
        labels = (torch.arange(r, device=DEV) * 7919 + 13) % v
        if key == "ce_fwd":
            return lambda: TF.cross_entropy(x, labels)
        logp = torch.log_softmax(x, 1)
        _, total_weight = aten.nll_loss_forward(logp, labels, None, 1, -100)
        gout = torch.ones((), device=DEV)

        def ce_backward():
            g = aten.nll_loss_backward(gout, logp, labels, None, 1, -100, total_weight)
            return aten._log_softmax_backward_data(g, logp, 1, torch.float32)
        return ce_backward
    if key in ("emb_fwd", "emb_bwd"):
        t, v, d = dims
        idx = (torch.arange(t, device=DEV, dtype=torch.int64) * 2654435761) % v
        w = rand(v, d)
        if key == "emb_fwd":
            return lambda: TF.embedding(idx, w)
        dy = rand(t, d)
        return lambda: aten.embedding_dense_backward(dy, idx, v, -1, False)
    if key == "adamw":
        params = [torch.nn.Parameter(rand(*s, lo=-0.1, hi=0.1)) for s in adamw_shapes(model, dims[0])]
        for p in params:
            p.grad = rand(*p.shape, lo=-1e-2, hi=1e-2)
        opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                                **({"fused": True, "capturable": True} if CUDA else {}))
        opt.step()
        return opt.step
    raise SystemExit(f"unknown operation {key}")


def parse(path):
    header, rows = [], []
    with open(path) as f:
        for line in f:
            if line.startswith("nn-engine "):
                header.append(line.strip())
            elif line.startswith("bw "):
                w = line.split()
                ndims = int(w[3])
                dims = [int(v) for v in w[4].split("x")]
                assert len(dims) == ndims, line
                xfer, kernel = float(w[8]), float(w[9])
                rows.append(dict(model=w[1], key=w[2], dims=dims, shape=w[4], bytes=float(w[5]), reps=int(w[6]),
                                 ours=float(w[7]), xfer=xfer, kernel=kernel, copy=min(xfer, kernel)))
    return header, rows


NAMES = {
    "bn_fwd": "BatchNorm forward (training)", "bn_bwd": "BatchNorm backward (dx, dw, db)",
    "relu_fwd": "ReLU forward", "relu_bwd": "ReLU backward", "add": "residual add",
    "pool_fwd": "global average pool forward", "pool_bwd": "global average pool backward",
    "ln_fwd": "LayerNorm forward", "ln_bwd": "LayerNorm backward (dx, dw, db)",
    "gelu_fwd": "GELU forward", "gelu_bwd": "GELU backward", "row_sum": "sum over the last dim",
    "bias_grad": "bias gradient (column sums)", "logsoftmax_fwd": "log_softmax forward",
    "logsoftmax_bwd": "log_softmax backward", "ce_fwd": "cross-entropy forward",
    "ce_bwd": "cross-entropy backward (dlogits)", "emb_fwd": "embedding forward",
    "emb_bwd": "embedding backward (deterministic)", "adamw": "AdamW update, all parameters",
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ours", help="bench_bandwidth's output")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    args = parser.parse_args()
    header, rows = parse(args.ours)
    if not rows:
        raise SystemExit(f"{args.ours}: no 'bw' lines (bench_bandwidth's output)")
    for h in header:
        print(h)
    peer = torch.cuda.get_device_name() if CUDA else "the CPU"
    print(f"PyTorch {torch.__version__} on {peer}: the same operations, fp32, CUDA graphs of the same launches; "
          f"GB/s over the same bytes; copy: dst.copy_(src) moving as many bytes; ours: the faster of our two copies "
          f"(xfer: nn_tensor_copy, kernel: a compute kernel); * ours under 0.7 of our copy")
    print(f"{'model':<9} {'operation':<34} {'shape':<16} {'MB':>7} {'ours':>6} {'xfer':>6} {'kernel':>6} {'/copy':>6} "
          f"{'torch':>6} {'copy':>6} {'/copy':>6} {'ours/torch':>10}")
    done = []
    for r in rows:
        fn = operation(r["key"], r["model"], r["dims"])
        torch_ms = graph_ms(fn, r["reps"], args.runs)
        del fn
        n = int(r["bytes"] / 8)
        src, dst = rand(n), rand(n)
        copy_ms = graph_ms(lambda: dst.copy_(src), r["reps"], args.runs)
        del src, dst
        if CUDA:
            torch.cuda.empty_cache()
        gb = lambda ms: r["bytes"] / ms * 1e-6
        r.update(torch=torch_ms, torch_copy=copy_ms)
        mark = " *" if r["copy"] / r["ours"] < 0.7 else ""
        print(f"{r['model']:<9} {NAMES.get(r['key'], r['key']):<34} {r['shape']:<16} {r['bytes'] * 1e-6:>7.1f} "
              f"{gb(r['ours']):>6.0f} {gb(r['xfer']):>6.0f} {gb(r['kernel']):>6.0f} {r['copy'] / r['ours']:>6.2f} "
              f"{gb(torch_ms):>6.0f} {gb(copy_ms):>6.0f} {copy_ms / torch_ms:>6.2f} {torch_ms / r['ours']:>10.2f}{mark}",
              flush=True)
        done.append(r)
    if args.markdown:
        print()
        print("| model | operation | shape | MB | engine GB/s | engine copy GB/s | engine / copy | PyTorch GB/s | "
              "PyTorch copy GB/s | PyTorch / copy | engine / PyTorch copy | engine / PyTorch |")
        print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        label = {"emb_fwd": lambda d: f"{d[0]} of {d[1]} x {d[2]}", "emb_bwd": lambda d: f"{d[0]} of {d[1]} x {d[2]}",
                 "adamw": lambda d: f"{d[0] / 1e6:.2f}M parameters"}
        for r in done:
            gb = lambda ms: r["bytes"] / ms * 1e-6
            frac = r["copy"] / r["ours"]
            cell = f"**{frac:.2f}**" if frac < 0.7 else f"{frac:.2f}"
            shape = label[r["key"]](r["dims"]) if r["key"] in label else r["shape"].replace("x", " x ")
            print(f"| {r['model']} | {NAMES.get(r['key'], r['key'])} | {shape} | "
                  f"{r['bytes'] * 1e-6:,.1f} | {gb(r['ours']):,.0f} | {gb(r['copy']):,.0f} | {cell} | "
                  f"{gb(r['torch']):,.0f} | {gb(r['torch_copy']):,.0f} | {r['torch_copy'] / r['torch']:.2f} | "
                  f"{r['torch_copy'] / r['ours']:.2f} | {r['torch'] / r['ours']:.2f} |")


if __name__ == "__main__":
    main()
