"""A user's own operation and optimizer with nn_engine: a SiLU-gated linear
unit whose gate is a custom compute shader (GLSL on the GPU, NumPy on the
CPU) with its own backward, trained by Signum (sign-SGD with momentum)
written as a CustomOptimizer, on Fashion-MNIST (an IDX pair).

    PYTHONPATH=python python3 examples/custom_ops.py --idx /usr/share/datasets/fashion-mnist
    PYTHONPATH=python python3 examples/custom_ops.py --idx DIR --device cpu --epochs 1 --limit 2000
"""
import argparse
import time

import numpy as np

import nn_engine as ne
from nn_engine import functional as F
from nn_engine.data import DataLoader, TensorDataset
from nn_engine.datasets import load_idx_pair

# y = silu(a) * b, and its two gradients packed in one [2, ...] output.
GATE = ne.CustomKernel("silu_gate", glsl="""
void main() {
    uint i = NN_INDEX.x;
    if (i >= NN_GRID.x) return;
    float a = NN_LOAD(0, i);
    NN_STORE(2, i, a / (1.0 + exp(-a)) * NN_LOAD(1, i));
}""", cpu=lambda bufs, params, grid: np.multiply(bufs[0] / (1 + np.exp(-bufs[0])), bufs[1], out=bufs[2]))


def _gate_grad_cpu(bufs, params, grid):
    a, b, dy, out = bufs
    n = grid[0]
    s = 1 / (1 + np.exp(-a))
    out[:n] = dy * s * (1 + a * (1 - s)) * b
    out[n:] = dy * a * s


GATE_GRAD = ne.CustomKernel("silu_gate_grad", glsl="""
void main() {
    uint i = NN_INDEX.x, n = NN_GRID.x;
    if (i >= n) return;
    float a = NN_LOAD(0, i), b = NN_LOAD(1, i), dy = NN_LOAD(2, i);
    float s = 1.0 / (1.0 + exp(-a));
    NN_STORE(3, i, dy * s * (1.0 + a * (1.0 - s)) * b);
    NN_STORE(3, n + i, dy * a * s);
}""", cpu=_gate_grad_cpu)


class SiluGate(ne.autograd.Function):
    """silu(a) * b in one kernel each way; ONNX export writes its symbolic form."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return GATE(a, b, shape=a.shape, grid=a.numel())

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        packed = GATE_GRAD(a, b, grad, shape=(2,) + a.shape, grid=a.numel())
        return packed[0], packed[1]

    @staticmethod
    def symbolic(a, b):
        return F.silu(a) * b


class GatedClassifier(ne.nn.Module):
    """784 -> a SiLU-gated hidden layer -> 10."""

    def __init__(self, hidden=256):
        super().__init__()
        self.gate = ne.nn.Linear(784, hidden)
        self.value = ne.nn.Linear(784, hidden)
        self.out = ne.nn.Linear(hidden, 10)

    def forward(self, x):
        x = ne.flatten(x, 1)
        return self.out(SiluGate.apply(self.gate(x), self.value(x)))


# Signum: m = beta m + (1 - beta) g; p -= lr sign(m). Buffers: param, grad, momentum, lr[1].
SIGNUM = ne.CustomKernel("signum", glsl="""
void main() {
    uint i = NN_INDEX.x;
    if (i >= NN_GRID.x) return;
    float beta = NN_PARAM_FLOAT(0);
    float m = beta * NN_LOAD(2, i) + (1.0 - beta) * NN_LOAD(1, i);
    NN_STORE(2, i, m);
    NN_STORE(0, i, NN_LOAD(0, i) - NN_LOAD(3, 0) * sign(m));
}""", cpu=lambda bufs, params, grid: _signum_cpu(bufs, params.float(0)))


def _signum_cpu(bufs, beta):
    p, g, m, lr = bufs
    m[:] = np.float32(beta) * m + np.float32(1 - beta) * g
    p -= lr[0] * np.sign(m)


class Signum(ne.optim.CustomOptimizer):
    states = ("momentum_buffer",)

    def __init__(self, params, lr=1e-3, momentum=0.9):
        super().__init__(params, lr=lr, momentum=momentum)

    def update(self, run):
        SIGNUM.launch(run.param, run.grad, run.state["momentum_buffer"], run.lr, written=(0, 2), grid=run.n,
                      params=[run.options["momentum"]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idx", required=True, help="folder of the IDX pair (Fashion-MNIST)")
    parser.add_argument("--device", default="auto", help="cpu, vulkan or auto")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--hidden", type=int, default=256, help="the gated layer's width")
    parser.add_argument("--limit", type=int, default=0, help="use the first N images of each split")
    args = parser.parse_args()
    ne.set_device(args.device)
    ne.manual_seed(0)
    x_train, y_train = load_idx_pair(args.idx, "train")
    x_test, y_test = load_idx_pair(args.idx, "test")
    if args.limit:
        x_train, y_train, x_test, y_test = (a[:args.limit] for a in (x_train, y_train, x_test, y_test))
    model = GatedClassifier(args.hidden)
    opt = Signum(model.parameters(), lr=args.lr)
    scheduler = ne.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * (len(x_train) // args.batch))
    train = DataLoader(TensorDataset(x_train, y_train.astype(np.int64)), batch_size=args.batch, shuffle=True,
                       drop_last=True)
    print(f"device {ne.get_device()}, {len(x_train)} training images")
    for epoch in range(args.epochs):
        start, total, count = time.perf_counter(), 0.0, 0
        model.train()
        for x, y in train:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            scheduler.step()
            total, count = total + loss.item(), count + 1
        model.eval()
        correct = 0
        with ne.no_grad():
            for i in range(0, len(x_test), 1000):
                logits = model(ne.Tensor(x_test[i:i + 1000]))
                correct += int((logits.argmax(1) == ne.tensor(y_test[i:i + 1000])).sum().item())
        print(f"epoch {epoch + 1}/{args.epochs}  train loss {total / max(count, 1):.4f}  "
              f"test acc {100.0 * correct / len(x_test):6.2f}%  {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
