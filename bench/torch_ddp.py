"""PyTorch DistributedDataParallel, the peer of bench/run-dp.sh: images/s of
LeNet-5 and a CIFAR-style ResNet-18 at N GPUs on random Fashion-MNIST-sized
data (1x28x28, 10 classes), and torchvision's AlexNet on random 3x224x224
photos (10 classes), the same per-rank batches as bench/bench_data_parallel.

    torchrun --nproc_per_node 2 bench/torch_ddp.py [--model lenet5|resnet18-cifar|alexnet] [--steps 200]
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as tnn


def lenet5():
    return tnn.Sequential(tnn.Conv2d(1, 6, 5), tnn.ReLU(), tnn.MaxPool2d(2), tnn.Conv2d(6, 16, 5), tnn.ReLU(),
                          tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(256, 120), tnn.ReLU(), tnn.Linear(120, 84),
                          tnn.ReLU(), tnn.Linear(84, 10))


def resnet18_cifar():
    import torchvision
    m = torchvision.models.resnet18(num_classes=10)
    m.conv1 = tnn.Conv2d(1, 64, 3, 1, 1, bias=False)
    m.maxpool = tnn.Identity()
    return m


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="lenet5", choices=["lenet5", "resnet18-cifar", "alexnet"])
    p.add_argument("--batch", type=int, default=0, help="per rank (default: lenet5 64, the others 128)")
    p.add_argument("--steps", type=int, default=200)
    args = p.parse_args()
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    local = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local}" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    batch = args.batch or (64 if args.model == "lenet5" else 128)
    if args.model == "alexnet":
        import torchvision
        model, shape = torchvision.models.alexnet(num_classes=10), (3, 224, 224)
    else:
        model, shape = (lenet5() if args.model == "lenet5" else resnet18_cifar()), (1, 28, 28)
    model = model.to(device)
    model = tnn.parallel.DistributedDataParallel(model, device_ids=[local] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = torch.randn(batch, *shape, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    for step in range(args.steps + 20):
        if step == 20:  # warm-up done
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
        opt.zero_grad()
        tnn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    if dist.get_rank() == 0:
        n = dist.get_world_size()
        print(f"{args.model} ranks={n} batch/rank={batch} images/s={args.steps * batch * n / seconds:.0f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
