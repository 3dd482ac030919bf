"""LeNet-5 in Python with nn_engine, as the seed's train_lenet script: images
from an IDX pair (Fashion-MNIST, MNIST) or an image folder mnist/0..9/.

    PYTHONPATH=python python3 examples/train_lenet.py --idx /usr/share/datasets/fashion-mnist
    PYTHONPATH=python python3 examples/train_lenet.py --folder mnist --epochs 5
"""
import argparse
import sys
import time

import numpy as np

import nn_engine as nn
from nn_engine import ConvLayer, Linear, Metrics, Model, SGD, end_batch, flatten, maxpool2d, softmax_ce
from nn_engine.data import DataLoader, TensorDataset
from nn_engine.datasets import load_idx_pair, load_image_folder

from ctrl_c import EXIT_INTERRUPTED, StopOnCtrlC


class LeNet(Model):
    def __init__(self):
        super().__init__()
        self.c1 = ConvLayer(1, 6, 5)
        self.c2 = ConvLayer(6, 16, 5)
        self.l1 = Linear(16 * 4 * 4, 120)
        self.l2 = Linear(120, 84)
        self.l3 = Linear(84, 10)

    def forward(self, x):
        x = maxpool2d(self.c1(x, relu=True))
        x = maxpool2d(self.c2(x, relu=True))
        x = flatten(x, 1)
        x = self.l1(x, relu=True)
        x = self.l2(x, relu=True)
        return self.l3(x)


def load(args):
    if args.idx:
        x_train, y_train = load_idx_pair(args.idx, "train")
        x_test, y_test = load_idx_pair(args.idx, "test")
    else:
        # mnist/0..9/*.png: the seed's layout; 10% held out for testing.
        x, y, skipped = load_image_folder(args.folder, classes=[str(d) for d in range(10)],
                                          size=(28, 28), mode="L")
        if skipped:
            print(f"skipped {skipped} unreadable files")
        order = np.random.default_rng(0).permutation(len(x))
        x, y = x[order], y[order]
        split = int(0.9 * len(x))
        x_train, y_train, x_test, y_test = x[:split], y[:split], x[split:], y[split:]
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
        x_test, y_test = x_test[:args.limit], y_test[:args.limit]
    return x_train, y_train, x_test, y_test


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--idx", help="folder with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]")
    source.add_argument("--folder", help="image folder with sub-folders 0..9")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--limit", type=int, default=0, help="use only this many images")
    parser.add_argument("--device", default=None, help="cpu | vulkan | auto")
    parser.add_argument("--threads", type=int, default=0, help="CPU worker threads (default 0: one per core)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--export", help="write the trained model as ONNX here (takes raw pixels 0..255)")
    parser.add_argument("--save", help="write the trained weights (safetensors) here")
    args = parser.parse_args()
    for path in filter(None, (args.save, args.export)):
        try:  # a path that cannot be written fails now, not after training
            nn.check_writable(path)
        except OSError as err:
            parser.error(str(err))

    if args.device or args.threads:
        nn.set_device(args.device or "auto", threads=args.threads)
    nn.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = load(args)
    print(f"{len(x_train)} training and {len(x_test)} test images on {nn.get_device()}")

    # Normalised as the CLI does (the training pixels' mean and std); the
    # normalisation is saved and exported with the model.
    mean, std = float(x_train.mean()), float(x_train.std())
    std = std if std > 1e-6 else 1.0  # a constant image set: no scaling
    x_train, x_test = ((x - np.float32(mean)) / np.float32(std) for x in (x_train, x_test))
    model = LeNet()
    model.input_normalization = (mean, std)
    model.class_names = [str(d) for d in range(10)]
    optimizer = SGD(model.parameters(), lr=args.lr, momentum=0.9)
    metrics = Metrics()
    train_loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch, shuffle=True,
                              seed=args.seed)
    test_loader = DataLoader(TensorDataset(x_test, y_test), batch_size=args.batch)
    # Ctrl+C: the first finishes the step, saves and exports what there is, exits 130; a second exits at once.
    with StopOnCtrlC() as stop:
        train(args, model, optimizer, metrics, train_loader, test_loader, len(x_train), len(x_test), stop)
    if args.save:
        model.save(args.save)
        print(f"saved {args.save}")
    if args.export:
        model.export(args.export, input_shape=[1, 1, 28, 28])
        print(f"exported {args.export}")
    if stop.requested:
        sys.exit(EXIT_INTERRUPTED)


def train(args, model, optimizer, metrics, train_loader, test_loader, train_count, test_count, stop):
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        metrics.reset()
        for step, (xb, yb) in enumerate(train_loader):
            if stop.requested:
                print(f"stopped by Ctrl+C in epoch {epoch} after step {step}", file=sys.stderr)
                return
            optimizer.zero_grad()
            logits = model(xb)
            loss = softmax_ce(logits, yb)
            metrics.update(loss, logits, yb)
            loss.backward()
            optimizer.step()
            end_batch()
        train_loss, train_acc = metrics.collect(train_count)
        seconds = time.perf_counter() - start

        metrics.reset()
        with nn.no_grad():
            for xb, yb in test_loader:
                logits = model(xb)
                metrics.update(softmax_ce(logits, yb), logits, yb)
                end_batch()
        test_loss, test_acc = metrics.collect(test_count)
        print(f"epoch {epoch:2d}  train loss {train_loss:.4f}  acc {train_acc:6.2%}  "
              f"test loss {test_loss:.4f}  acc {test_acc:6.2%}  {seconds:6.1f} s  "
              f"{train_count / seconds:7.0f} images/s", flush=True)

if __name__ == "__main__":
    main()
