"""PyTorch's peer of a LeNet-5 Fashion-MNIST epoch on a CUDA GPU, in the two
forms issue 6 names: eager, and the whole step captured in a CUDA graph.
Like `nnengine train lenet5 --device vulkan`: the training set on the GPU,
normalised; a fresh permutation each epoch; SGD (momentum 0.9, weight decay
5e-4); loss and correct predictions summed on the GPU and read once per
epoch. The graph form replays full batches only (a graph has fixed shapes):
it runs floor(60000 / batch) steps and the eager last batch is not timed.
Prints one line per (mode, batch) with the median epoch time, and the peak
GPU memory of training (torch.cuda.max_memory_allocated).

    python bench/torch_lenet_cuda_epoch.py --data DIR [--epochs 5] [--batches 64,256]
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from torch_cuda_graph import graphed
from torch_lenet_epoch import find, load_idx
from torch_lenet_step import LeNet5


def train_step(model, opt, x_all, y_all, index, sums):
    """One step on the images at `index`; loss and correct predictions are
    summed on the GPU (nothing read back)."""
    x, y = x_all[index], y_all[index]
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    opt.zero_grad(set_to_none=False)
    loss.backward()
    opt.step()
    sums[0] += loss.detach() * len(index)
    sums[1] += (logits.argmax(1) == y).sum()


def epoch_eager(model, opt, x_all, y_all, batch, sums):
    n = len(y_all)
    order = torch.randperm(n, device=x_all.device)
    for first in range(0, n, batch):
        train_step(model, opt, x_all, y_all, order[first:first + batch], sums)


def make_graph_step(model, opt, x_all, y_all, batch, sums):
    static_index = torch.zeros(batch, dtype=torch.long, device=x_all.device)

    def step():
        train_step(model, opt, x_all, y_all, static_index, sums)

    return graphed(step), static_index


def epoch_graph(replay, static_index, n, batch):
    order = torch.randperm(n, device=static_index.device)
    for first in range(0, n - batch + 1, batch):
        static_index.copy_(order[first:first + batch])
        replay()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batches", default="64,256")
    args = parser.parse_args()
    dev = torch.device("cuda")
    images = load_idx(find(args.data, "train-images-idx3-ubyte"))
    labels = load_idx(find(args.data, "train-labels-idx1-ubyte"))
    x_all = torch.tensor(images, dtype=torch.float32, device=dev).div_(255).unsqueeze(1)
    x_all = (x_all - x_all.mean()) / x_all.std()
    y_all = torch.tensor(labels, dtype=torch.long, device=dev)
    n = len(y_all)
    name = torch.cuda.get_device_name()
    for batch in [int(b) for b in args.batches.split(",")]:
        for mode in ("eager", "cuda-graph"):
            torch.manual_seed(1)
            model = LeNet5().to(dev)
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
            sums = torch.zeros(2, device=dev)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            replay = None
            if mode == "cuda-graph":
                replay, static_index = make_graph_step(model, opt, x_all, y_all, batch, sums)
            times = []
            for _ in range(args.epochs):
                torch.cuda.synchronize()
                start = time.perf_counter()
                sums.zero_()
                if replay is None:
                    epoch_eager(model, opt, x_all, y_all, batch, sums)
                else:
                    epoch_graph(replay, static_index, n, batch)
                total = sums.tolist()  # the once-per-epoch read, as nn-engine's
                torch.cuda.synchronize()
                times.append(time.perf_counter() - start)
            peak = torch.cuda.max_memory_allocated()
            print(f"pytorch {torch.__version__} {name} lenet5 batch {batch} {mode}: "
                  f"median epoch {1000 * statistics.median(times):.1f} ms (epochs: "
                  f"{', '.join(f'{1000 * t:.1f}' for t in times)}), train loss {total[0] / n:.4f}, "
                  f"peak memory {peak / 2**20:.1f} MiB (of which data {base / 2**20:.1f} MiB)", flush=True)
            del replay, model, opt


if __name__ == "__main__":
    main()
