"""PyTorch's peer for bench/bench_alexnet.c: AlexNet (torchvision's form,
1000 classes) training steps at batch 128, 224x224 synthetic data, SGD with
momentum 0.9, on CUDA, in three settings: fp32 (TF32 off), TF32, and bf16
autocast with channels-last. Prints ms/step, images/s and peak memory for
each, the ratio to nn-engine's figure when given (--ours-ms, from the same
run), and the fp32 per-layer table measured the way bench_alexnet.c does.

    python3 bench/torch_alexnet.py [--ours-ms MS] [--ours-captured-ms MS] [--ours-peak-mib MIB] [--batch 128]
        [--classes 1000] [--steps 20] [--warmup 5] [--reps 5] [--no-layers]

Steps run back to back between two CUDA events (no host sync per step:
PyTorch's best case; nn-engine reads its loss back every step). The model
is torchvision.models.alexnet when torchvision is importable, else the same
layers written out here (same parameters, same computation).
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn


def alexnet(classes):
    try:
        import torchvision
        return torchvision.models.alexnet(weights=None, num_classes=classes), "torchvision.models.alexnet"
    except ImportError:
        pass
    features = nn.Sequential(
        nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2))
    classifier = nn.Sequential(
        nn.Dropout(0.5), nn.Linear(9216, 4096), nn.ReLU(inplace=True),
        nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Linear(4096, classes))
    model = nn.Sequential()
    model.add_module("features", features)
    model.add_module("avgpool", nn.AdaptiveAvgPool2d((6, 6)))
    model.add_module("flatten", nn.Flatten(1))
    model.add_module("classifier", classifier)
    return model, "hand-written torchvision AlexNet"


def train_setting(name, args, tf32, bf16_channels_last):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model, source = alexnet(args.classes)
    model = model.cuda().train()
    x = torch.randn(args.batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, args.classes, (args.batch,), device="cuda")
    if bf16_channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16_channels_last):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(3):  # three runs of `steps`, the median taken
        start.record()
        for _ in range(args.steps):
            step()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / args.steps)
    ms = statistics.median(samples)
    peak = torch.cuda.max_memory_allocated() / 2**20
    line = f"PyTorch {name:<28} {ms:8.2f} ms/step {args.batch * 1000 / ms:9.0f} images/s  peak {peak:6.0f} MiB"
    if args.ours_ms:
        line += f"  nn-engine/PyTorch time: eager {args.ours_ms / ms:5.2f}x"
    if args.ours_captured_ms:
        line += f", captured {args.ours_captured_ms / ms:5.2f}x"
    print(line, flush=True)
    return source


def layer_table(args):
    """fp32 (TF32 off): each layer alone on its shape in the network, synced
    before and after; backward = y.backward(g) with a random g."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model, _ = alexnet(args.classes)
    model = model.cuda().train()
    layers = [(f"features.{i}", m) for i, m in enumerate(model.features)]
    layers.append(("flatten", nn.Flatten(1)))
    layers += [(f"classifier.{i}", m) for i, m in enumerate(model.classifier)]
    shape = (args.batch, 3, 224, 224)
    print(f"\nPyTorch fp32 per layer (median of {args.reps}):")
    print(f"{'layer':<13} {'what':<34} {'fwd ms':>10} {'bwd ms':>10}")
    total_f = total_b = 0.0
    for i, (name, layer) in enumerate(layers):
        if isinstance(layer, nn.ReLU):
            layer = nn.ReLU()  # not in place: the input is a leaf
        x = torch.randn(shape, device="cuda", requires_grad=i > 0)
        fwd, bwd = [], []
        for r in range(args.reps + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = layer(x)
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            g = torch.randn_like(out)
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            if out.requires_grad:
                out.backward(g)
            torch.cuda.synchronize()
            t3 = time.perf_counter()
            if r:
                fwd.append((t1 - t0) * 1e3)
                bwd.append((t3 - t2) * 1e3)
        f, b = statistics.median(fwd), statistics.median(bwd)
        total_f, total_b = total_f + f, total_b + b
        print(f"{name:<13} {str(layer)[:34]:<34} {f:10.3f} {b:10.3f}", flush=True)
        shape = tuple(out.shape)
    print(f"{'sum':<13} {'':<34} {total_f:10.3f} {total_b:10.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours-ms", type=float, default=0.0)
    parser.add_argument("--ours-captured-ms", type=float, default=0.0)
    parser.add_argument("--ours-peak-mib", type=float, default=0.0)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-layers", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("torch_alexnet.py: no CUDA device (PyTorch with CUDA is needed for the peer figures)")
    print(f"peer: PyTorch {torch.__version__} on {torch.cuda.get_device_name()}, batch {args.batch}, "
          f"{args.classes} classes")
    if args.ours_ms:
        print(f"nn-engine (this run): eager {args.ours_ms:.2f} ms/step, {args.batch * 1000 / args.ours_ms:.0f} "
              f"images/s, peak {args.ours_peak_mib:.0f} MiB"
              + (f"; captured {args.ours_captured_ms:.2f} ms/step" if args.ours_captured_ms else ""))
    source = train_setting("fp32 (TF32 off)", args, tf32=False, bf16_channels_last=False)
    train_setting("TF32", args, tf32=True, bf16_channels_last=False)
    train_setting("bf16 autocast, channels-last", args, tf32=True, bf16_channels_last=True)
    print(f"model: {source}")
    if not args.no_layers:
        layer_table(args)


if __name__ == "__main__":
    main()
