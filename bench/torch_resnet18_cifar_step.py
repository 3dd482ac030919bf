"""PyTorch's side of the zoo's training steps (bench/README.md, issue 22):
torchvision's resnet18 with a 3x3 stride-1 stem, no max-pool, 1 input channel
and 10 classes (nnengine's resnet18-cifar) on 1x28x28 images, or with --tv
torchvision's resnet18 itself on 3x224x224 (1000 classes); SGD with Nesterov
momentum: ms per step eager (fp32, TF32 off), with the whole step in a CUDA
graph, with TF32, and with bf16 autocast (channels-last for --tv); the median
of --steps steps after warm-up. bench/bench_zoo_step.c is nn-engine's side;
bench/torch_zoo_step.py (whose model, timing and graph capture this uses)
times the other models of the zoo.

    python3 bench/torch_resnet18_cifar_step.py [--steps 50] [--batch 128] [--tv]
"""
import argparse

import torch

from torch_cuda_graph import graphed
from torch_zoo_step import model as zoo_model, timed, training_step


def model(tv):
    return zoo_model("resnet18" if tv else "resnet18-cifar")[0].cuda()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--tv", action="store_true", help="torchvision's resnet18 at 3x224x224")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    shape, classes = ((3, 224, 224), 1000) if args.tv else ((1, 28, 28), 10)
    x = torch.randn(args.batch, *shape, device="cuda")
    y = torch.randint(0, classes, (args.batch,), device="cuda")
    name = "resnet18" if args.tv else "resnet18-cifar"
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}: {name}, batch {args.batch}")
    for mode in ("fp32 eager", "fp32 CUDA graph", "TF32 eager", "bf16 autocast"):
        tf32 = mode.startswith("TF32")
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        net = model(args.tv)
        if args.tv and mode.startswith("bf16"):
            net = net.to(memory_format=torch.channels_last)
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
        step = training_step(net, x, y, opt, mode.startswith("bf16"))
        for _ in range(10):
            step()
        ms = timed(graphed(step) if mode == "fp32 CUDA graph" else step, args.steps)
        print(f"{mode:<16} {ms:8.2f} ms/step  {args.batch / ms * 1e3:9.0f} images/s", flush=True)


if __name__ == "__main__":
    main()
