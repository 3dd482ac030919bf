"""ResNet-18 for small images (3x3 stem, no max-pool: `nnengine train
resnet18-cifar`'s network) written in Python with nn_engine's PyTorch-style
API, trained on an IDX pair (Fashion-MNIST, MNIST) with SGD and Nesterov
momentum, weight decay, a one-cycle learning rate and 2-pixel shifts and
flips done with NumPy on the host, in nn_engine.data.DataLoader's
background thread while the model trains. Ctrl+C finishes the current step,
saves (--save) and exits 130.

    PYTHONPATH=python python3 examples/train_resnet.py --idx /usr/share/datasets/fashion-mnist --device vulkan
"""
import argparse
import sys
import time

import numpy as np

import nn_engine as nn
from nn_engine import functional as F
from nn_engine import optim
from nn_engine.data import DataLoader, TensorDataset
from nn_engine.datasets import load_idx_pair

from ctrl_c import EXIT_INTERRUPTED, StopOnCtrlC


class BasicBlock(nn.Model):
    """Two 3x3 convolutions with BatchNorm and a shortcut (a 1x1 projection
    when the shape changes), as torchvision's BasicBlock."""

    def __init__(self, inputs, outputs, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.downsample = None
        if stride != 1 or inputs != outputs:
            self.downsample = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs))

    def forward(self, x):
        h = nn.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return nn.relu(h + (self.downsample(x) if self.downsample else x))


class ResNet18Small(nn.Model):
    def __init__(self, channels=1, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        widths, inputs = (64, 128, 256, 512), 64
        for i, width in enumerate(widths):
            stride = 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(inputs, width, stride), BasicBlock(width, width, 1)))
            inputs = width
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        h = nn.relu(self.bn1(self.conv1(x)))
        for i in range(1, 5):
            h = getattr(self, f"layer{i}")(h)
        return self.fc(h.mean((2, 3)))


def augment(images, rng, pad=2):
    """Each image shifted by up to `pad` pixels (black coming in) and flipped
    left-right with probability 1/2: RandomCrop(padding) + RandomHorizontalFlip."""
    n, _, h, w = images.shape
    padded = np.pad(images, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.empty_like(images)
    dy, dx = rng.integers(0, 2 * pad + 1, n), rng.integers(0, 2 * pad + 1, n)
    flip = rng.random(n) < 0.5
    for i in range(n):
        crop = padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w]
        out[i] = crop[:, :, ::-1] if flip[i] else crop
    return out


class ShiftedAndFlipped:
    """The training set for DataLoader, each batch augmented afresh (augment)
    around `black`, the normalised value of a black pixel that shifts bring in."""

    def __init__(self, images, labels, black, seed):
        self.images, self.labels, self.black = images, labels, np.float32(black)
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return self.batch(np.array([index]))

    def batch(self, indices):
        return augment(self.images[indices] - self.black, self.rng) + self.black, self.labels[indices]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idx", required=True, help="folder with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.1, help="one-cycle peak")
    parser.add_argument("--limit", type=int, default=0, help="use only this many images")
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
    x_train, y_train = load_idx_pair(args.idx, "train")
    x_test, y_test = load_idx_pair(args.idx, "test")
    if args.limit:
        x_train, y_train, x_test, y_test = x_train[:args.limit], y_train[:args.limit], x_test[:args.limit], \
            y_test[:args.limit]
    mean, std = float(x_train.mean()), float(x_train.std())
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
    black = (0.0 - mean) / std  # a padded pixel, normalised
    print(f"{len(x_train)} training and {len(x_test)} test images on {nn.get_device()}")

    model = ResNet18Small(channels=x_train.shape[1], classes=10)
    params = model.parameters()
    optimizer = optim.SGD(params, lr=args.lr, momentum=0.9, weight_decay=5e-4, nesterov=True)
    steps = (len(x_train) + args.batch - 1) // args.batch
    schedule = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=steps,
                                             cycle_momentum=False)
    # One worker thread: the augmentation of the next batches overlaps the model's step.
    train_loader = DataLoader(ShiftedAndFlipped(x_train, y_train, black, args.seed), batch_size=args.batch,
                              shuffle=True, seed=args.seed, num_workers=1)
    test_loader = DataLoader(TensorDataset(x_test, y_test), batch_size=256)
    # Ctrl+C: the first finishes the step, saves what there is, exits 130; a second exits at once.
    with StopOnCtrlC() as stop:
        train(args, model, optimizer, schedule, train_loader, test_loader, len(x_train), len(x_test), stop)
    if args.save:
        model.save(args.save)
        print(f"saved {args.save}")
    if stop.requested:
        sys.exit(EXIT_INTERRUPTED)


def train(args, model, optimizer, schedule, train_loader, test_loader, train_count, test_count, stop):
    for epoch in range(1, args.epochs + 1):
        model.train()
        start = time.perf_counter()
        metrics = nn.Metrics()
        for step, (xb, yb) in enumerate(train_loader):
            if stop.requested:
                print(f"stopped by Ctrl+C in epoch {epoch} after step {step}", file=sys.stderr)
                return
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            metrics.update(loss, logits, yb)
            nn.end_batch()
        train_loss, train_acc = metrics.collect(train_count)
        seconds = time.perf_counter() - start
        model.eval()
        metrics = nn.Metrics()
        with nn.no_grad():
            for xb, yb in test_loader:
                logits = model(xb)
                metrics.update(F.cross_entropy(logits, yb), logits, yb)
                nn.end_batch()
        _, test_acc = metrics.collect(test_count)
        print(f"epoch {epoch:2d}  train loss {train_loss:.4f}  acc {train_acc:6.2%}  "
              f"test acc {test_acc:6.2%}  {seconds:6.1f} s  {train_count / seconds:7.0f} images/s", flush=True)


if __name__ == "__main__":
    main()
