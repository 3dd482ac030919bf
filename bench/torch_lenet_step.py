"""PyTorch's LeNet-5 training step on the CPU: the peer of bench_lenet_step.c
(same model, batch, optimizer and step: forward, cross-entropy, backward,
SGD with momentum, loss read back). Prints one line like the C benchmark.

    python bench/torch_lenet_step.py [--batch 64] [--threads T] [--steps 300]
"""
import argparse
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 6, 5)
        self.c2 = nn.Conv2d(6, 16, 5)
        self.l1 = nn.Linear(256, 120)
        self.l2 = nn.Linear(120, 84)
        self.l3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.l1(x))
        x = F.relu(self.l2(x))
        return self.l3(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    model = LeNet5()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.rand(args.batch, 1, 28, 28)
    labels = torch.randint(0, 10, (args.batch,))
    x = torch.empty_like(images)
    y = torch.empty_like(labels)

    def step():
        x.copy_(images)
        y.copy_(labels)
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(20):
        step()
    per_round = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        for _ in range(args.steps):
            loss = step()
        per_round.append((time.perf_counter() - start) / args.steps)
    median = statistics.median(per_round)
    print(f"pytorch {torch.__version__}  lenet5 train step  batch {args.batch}  "
          f"cpu ({args.threads} threads): {median * 1e3:.3f} ms/step (median of "
          f"{args.rounds} x {args.steps} steps, best {min(per_round) * 1e3:.3f}), "
          f"{args.batch / median:.0f} images/s, final loss {loss:.4f}")


if __name__ == "__main__":
    main()
