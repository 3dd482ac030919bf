"""AlexNet (the seed's variant: 5 convolutions, 3 linear layers, 2 classes)
on an image folder PetImages/Cat|Dog/, as the seed's train_alexnet script.

    PYTHONPATH=python python3 examples/train_alexnet.py --folder PetImages --limit 2000

Images are decoded with Pillow and resized to --size (224 as in the seed).
Ctrl+C finishes the current step, saves (--save) and exits 130.
"""
import argparse
import sys
import time

import numpy as np

import nn_engine as nn
from nn_engine import (ConvLayer, Linear, Metrics, Model, SGD, Tensor, end_batch, flatten,
                       maxpool2d, softmax_ce)
from nn_engine.datasets import load_image_folder

from ctrl_c import EXIT_INTERRUPTED, StopOnCtrlC


class AlexNet(Model):
    def __init__(self, classes=2, size=224):
        super().__init__()
        self.c1 = ConvLayer(3, 64, 11, stride=4, padding=2)
        self.c2 = ConvLayer(64, 192, 5, padding=2)
        self.c3 = ConvLayer(192, 384, 3, padding=1)
        self.c4 = ConvLayer(384, 256, 3, padding=1)
        self.c5 = ConvLayer(256, 256, 3, padding=1)
        side = feature_side(size)
        self.l1 = Linear(256 * side * side, 512)
        self.l2 = Linear(512, 512)
        self.l3 = Linear(512, classes)

    def forward(self, x):
        x = maxpool2d(self.c1(x, relu=True), pool_size=3, stride=2)
        x = maxpool2d(self.c2(x, relu=True), pool_size=3, stride=2)
        x = self.c3(x, relu=True)
        x = self.c4(x, relu=True)
        x = maxpool2d(self.c5(x, relu=True), pool_size=3, stride=2)
        x = flatten(x, 1)
        x = self.l1(x, relu=True)
        x = self.l2(x, relu=True)
        return self.l3(x)


def feature_side(size):
    """Side of c5's pooled output for size x size inputs (6 for 224)."""
    side = (size + 2 * 2 - 11) // 4 + 1
    for _ in range(3):
        side = (side - 3) // 2 + 1
    if side < 1:
        raise ValueError(f"--size {size} is too small for AlexNet (needs >= 63)")
    return side


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", default="PetImages", help="folder with Cat/ and Dog/")
    parser.add_argument("--classes", default="Cat,Dog")
    parser.add_argument("--limit", type=int, default=2000, help="images per class")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--accum", type=int, default=4, help="batches per optimizer step")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--max-steps", type=int, default=0, help="stop after this many batches")
    parser.add_argument("--device", default=None, help="cpu | vulkan | auto")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save", help="write the trained weights (safetensors) here")
    args = parser.parse_args()
    if args.save:
        try:  # a path that cannot be written fails now, not after training
            nn.check_writable(args.save)
        except OSError as err:
            parser.error(str(err))

    if args.device:
        nn.set_device(args.device)
    nn.manual_seed(args.seed)
    classes = args.classes.split(",")
    x, y, skipped = load_image_folder(args.folder, classes=classes, size=(args.size, args.size),
                                      mode="RGB", limit_per_class=args.limit)
    order = np.random.default_rng(args.seed).permutation(len(x))
    x, y = x[order], y[order]
    split = max(1, int(0.9 * len(x)))
    x_train, y_train, x_val, y_val = x[:split], y[:split], x[split:], y[split:]
    print(f"{len(x_train)} training, {len(x_val)} validation images ({skipped} unreadable "
          f"skipped) on {nn.get_device()}")

    model = AlexNet(len(classes), args.size)
    optimizer = SGD(model.parameters(), lr=args.lr)
    metrics = Metrics()
    # Ctrl+C: the first finishes the step, saves what there is, exits 130; a second exits at once.
    with StopOnCtrlC() as stop:
        train(args, model, optimizer, metrics, x_train, y_train, x_val, y_val, stop)
    if args.save:
        model.save(args.save)
        print(f"saved {args.save}")
    if stop.requested:
        sys.exit(EXIT_INTERRUPTED)


def train(args, model, optimizer, metrics, x_train, y_train, x_val, y_val, stop):
    batches = 0
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        metrics.reset()
        seen = 0
        for step, i in enumerate(range(0, len(x_train), args.batch)):
            if stop.requested:
                print(f"stopped by Ctrl+C in epoch {epoch} after step {step}", file=sys.stderr)
                return
            if step % args.accum == 0:
                optimizer.zero_grad()
            xb = Tensor(x_train[i:i + args.batch])
            yb = Tensor(y_train[i:i + args.batch], dtype=np.int32)
            logits = model(xb)
            loss = softmax_ce(logits, yb)
            metrics.update(loss, logits, yb)
            loss.backward()
            last = i + args.batch >= len(x_train)
            if (step + 1) % args.accum == 0 or last:
                optimizer.step(clip=1.0)  # the seed's per-element clamp
            end_batch()
            seen += len(y_train[i:i + args.batch])
            batches += 1
            if args.max_steps and batches >= args.max_steps:
                break
        train_loss, train_acc = metrics.collect(seen)
        metrics.reset()
        with nn.no_grad():
            for i in range(0, len(x_val), args.batch):
                xb, yb = Tensor(x_val[i:i + args.batch]), y_val[i:i + args.batch]
                logits = model(xb)
                metrics.update(softmax_ce(logits, yb), logits, yb)
                end_batch()
        val_loss, val_acc = metrics.collect(len(x_val))
        print(f"epoch {epoch:2d}  loss {train_loss:.4f}  train acc {train_acc:.4f}  "
              f"val acc {val_acc:.4f}  {time.perf_counter() - start:.1f} s", flush=True)
        if args.max_steps and batches >= args.max_steps:
            break


if __name__ == "__main__":
    main()
