"""Python's own share of one LeNet-5 epoch of examples/train_lenet.py's loop
(DataLoader, forward, softmax_ce, Metrics.update, backward, SGD step,
end_batch; Fashion-MNIST, batch 64, CPU): the calling thread's CPU time
outside the library's C calls, per step, and the C calls per step by name.
CPU time rather than wall time, so other processes on a shared machine do
not count (with --threads 1 the library computes on the calling thread, so
its time is what the C calls measure). Each C call is timed, which adds about
a microsecond per call to the Python figure.

    NN_ENGINE_LIBRARY=build/libnnengine.so PYTHONPATH=python:examples \\
        python3 bench/python_loop_overhead.py [--threads 1] [--data DIR]
"""
import argparse
import collections
import time

import numpy as np

import nn_engine as nn
import nn_engine._lib as _lib
from nn_engine import Metrics, SGD, end_batch, softmax_ce
from nn_engine.data import DataLoader, TensorDataset
from nn_engine.datasets import load_idx_pair
from train_lenet import LeNet


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    nn.set_device("cpu", threads=args.threads)
    nn.manual_seed(1)
    x, y = load_idx_pair(args.data, "train")
    x = (x - np.float32(x.mean())) / np.float32(x.std())
    model = LeNet()
    optimizer = SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, seed=1)
    metrics = Metrics()

    in_c, counts = [0.0], collections.Counter()

    def timed(self, *call_args):  # replaces _SerialisedFunction.__call__ for the epoch
        start = time.thread_time()
        with _lib._LOCK:
            result = self._fn(*call_args)
        in_c[0] += time.thread_time() - start
        counts[self._fn.__name__] += 1
        return result

    plain = _lib._SerialisedFunction.__call__
    _lib._SerialisedFunction.__call__ = timed
    start, steps = time.thread_time(), 0
    try:
        for xb, yb in loader:
            optimizer.zero_grad()
            logits = model(xb)
            loss = softmax_ce(logits, yb)
            metrics.update(loss, logits, yb)
            loss.backward()
            optimizer.step()
            end_batch()
            steps += 1
        train_loss, train_acc = metrics.collect(len(x))
    finally:
        _lib._SerialisedFunction.__call__ = plain
    total = time.thread_time() - start
    python = total - in_c[0]
    print(f"threads {args.threads}: {steps} steps, thread CPU {total:.3f} s, in C calls {in_c[0]:.3f} s, Python "
          f"{python:.3f} s = {1e6 * python / steps:.0f} us per step; {sum(counts.values()) / steps:.1f} C calls per "
          f"step (train loss {train_loss:.4f}, accuracy {train_acc:.4f})")
    for name, count in counts.most_common():
        print(f"  {name:30s} {count / steps:6.2f} per step")


if __name__ == "__main__":
    main()
