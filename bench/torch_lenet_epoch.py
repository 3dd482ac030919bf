"""PyTorch's peer of `nnengine train lenet5 --data DIR`: LeNet-5 epochs on
Fashion-MNIST on the CPU, the same way the CLI trains: the training set in
memory, normalised; each epoch a fresh permutation; batches of 64 (the last
one smaller); SGD with momentum 0.9 and weight decay; each step's loss read
back (.item()) and its accuracy counted. Evaluation is not timed. Prints
one line per epoch with its seconds and images/s.

    python bench/torch_lenet_epoch.py --data DIR [--epochs 3] [--threads T] [--batch 64]
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

from torch_lenet_step import LeNet5


def load_idx(path):
    with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = np.frombuffer(data, dtype=">u4", count=ndim, offset=4)
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(directory, name):
    for candidate in (name + ".gz", name):
        if os.path.exists(os.path.join(directory, candidate)):
            return os.path.join(directory, candidate)
    raise SystemExit(f"{directory}: missing {name}[.gz]")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)

    images = load_idx(find(args.data, "train-images-idx3-ubyte")).astype(np.float32) / 255
    labels = load_idx(find(args.data, "train-labels-idx1-ubyte")).astype(np.int64)
    images = (images - images.mean()) / images.std()
    x_all = torch.from_numpy(images).unsqueeze(1)
    y_all = torch.from_numpy(labels)
    n = len(y_all)

    model = LeNet5()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        order = torch.randperm(n)
        loss_sum, correct = 0.0, 0
        for first in range(0, n, args.batch):
            index = order[first:first + args.batch]
            x, y = x_all[index], y_all[index]
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=False)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
        seconds = time.perf_counter() - start
        print(f"pytorch {torch.__version__}  lenet5 epoch {epoch}  batch {args.batch}  cpu ({args.threads} threads): "
              f"{seconds:.2f} s, {n / seconds:.0f} images/s, train loss {loss_sum / n:.4f}, "
              f"train acc {100 * correct / n:.2f}%", flush=True)


if __name__ == "__main__":
    main()
