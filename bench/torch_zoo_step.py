"""PyTorch's side of bench/bench_zoo_step.c for the models of issue 33:
one training step (zero_grad, forward, cross-entropy, backward, SGD with
Nesterov momentum 0.9 and weight decay 5e-4) of torchvision's resnet18,
resnet50, mobilenet_v2 and alexnet at 3x224x224 (1000 classes), or
resnet18-cifar (3x3 stem, no max-pool, 1 input channel, 10 classes) at
1x28x28, on synthetic data, in three settings:
  fp32 eager        TF32 off; its peak memory (torch.cuda.max_memory_allocated)
                    is the issue's memory bound;
  fp32 CUDA graph   the whole step captured and replayed;
  bf16 autocast     channels-last model and input, eager.
The figure is the median of --steps steps after warm-up, each synced.
With --device cpu (bench_zoo_step --device cpu's peer; Debian's
python3-torch will do): fp32 eager only, on --threads threads, and the
process's peak resident memory in place of the device's.

    python3 bench/torch_zoo_step.py --model resnet18 [--batch 128] [--steps 30]
    python3 bench/torch_zoo_step.py --model resnet18-cifar --device cpu --threads 2 --batch 32 --steps 5
"""
import argparse
import resource
import time

import torch
import torchvision

from torch_cuda_graph import graphed


def model(name):
    if name == "resnet18-cifar":
        m = torchvision.models.resnet18(num_classes=10)
        m.conv1 = torch.nn.Conv2d(1, 64, 3, 1, 1, bias=False)
        m.maxpool = torch.nn.Identity()
        return m, (1, 28, 28), 10
    factory = {"resnet18": torchvision.models.resnet18, "resnet50": torchvision.models.resnet50,
               "mobilenet_v2": torchvision.models.mobilenet_v2, "alexnet": torchvision.models.alexnet}[name]
    return factory(num_classes=1000), (3, 224, 224), 1000


def training_step(net, x, y, opt, bf16=False, device="cuda"):
    """One step as a function: forward (bf16 autocast where asked), cross-entropy, backward, the optimizer."""
    def step():
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            loss = torch.nn.functional.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
    return step


def timed(step, steps, cuda=True):
    """The median ms of `steps` synced calls of step."""
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    times = []
    for _ in range(steps):
        sync()
        start = time.perf_counter()
        step()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[len(times) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet18",
                        choices=["resnet18", "resnet18-cifar", "resnet50", "mobilenet_v2", "alexnet"])
    parser.add_argument("--batch", type=int, default=0, help="0: 64 for resnet50, else 128")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--threads", type=int, default=0, help="CPU: threads (0: PyTorch's default)")
    args = parser.parse_args()
    batch = args.batch or (64 if args.model == "resnet50" else 128)
    if args.device == "cpu":
        cpu(args, batch)
        return
    torch.backends.cudnn.benchmark = True
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}: {args.model}, batch {batch}")
    for mode in ("fp32 eager", "fp32 CUDA graph", "bf16 autocast"):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.manual_seed(0)
        net, shape, classes = model(args.model)
        net = net.cuda().train()
        x = torch.randn(batch, *shape, device="cuda")
        y = torch.randint(0, classes, (batch,), device="cuda")
        bf16 = mode.startswith("bf16")
        if bf16:
            net = net.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
        step = training_step(net, x, y, opt, bf16)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        for _ in range(5):
            step()
        ms = timed(graphed(step) if mode == "fp32 CUDA graph" else step, args.steps)
        peak = torch.cuda.max_memory_allocated() / 2**20
        print(f"{mode:<16} {ms:8.2f} ms/step  {batch / ms * 1e3:9.0f} images/s  peak {peak:8.0f} MiB", flush=True)
        del net, opt, x, y
        torch.cuda.empty_cache()


def cpu(args, batch):
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"PyTorch {torch.__version__} on the CPU, {torch.get_num_threads()} threads: {args.model}, batch {batch}")
    torch.manual_seed(0)
    net, shape, classes = model(args.model)
    net = net.train()
    x = torch.randn(batch, *shape)
    y = torch.randint(0, classes, (batch,))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
    step = training_step(net, x, y, opt, device="cpu")
    for _ in range(2):
        step()
    ms = timed(step, args.steps, cuda=False)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"{'fp32 eager':<16} {ms:8.2f} ms/step  {batch / ms * 1e3:9.0f} images/s  process peak RSS {rss:8.0f} MiB",
          flush=True)


if __name__ == "__main__":
    main()
