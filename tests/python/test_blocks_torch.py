"""Issue 21's three blocks (tests/reference_blocks.py: a pre-activation
residual block, a transformer encoder block, a depthwise-separable block)
built with nn_engine's Python API, loaded with PyTorch's initial weights and
trained for 100 SGD steps on the same batches: the loss of every step
matches PyTorch's to 1e-4 relative on the CPU, and the running statistics
and weights at the end match too."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import nn_engine as nn
from nn_engine import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import reference_blocks as ref  # noqa: E402


class PreActResidual(nn.Model):
    def __init__(self):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(8)
        self.conv1 = nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.shortcut = nn.Conv2d(8, 16, 1, bias=False)
        self.fc = nn.Linear(16, ref.CLASSES)

    def forward(self, x):
        a = nn.relu(self.bn1(x))
        h = self.conv2(nn.relu(self.bn2(self.conv1(a)))) + self.shortcut(a)
        return self.fc(h.mean((2, 3)))


class EncoderBlock(nn.Model):
    heads = 4

    def __init__(self, dim=16):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.head = nn.Linear(dim, ref.CLASSES)

    def attention(self, x):
        n, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.reshape(n, t, self.heads, d // self.heads).permute(0, 2, 1, 3) for z in (q, k, v))
        scores = nn.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        out = nn.matmul(F.softmax(scores, dim=-1), v)
        return self.proj(out.permute(0, 2, 1, 3).reshape(n, t, d))

    def forward(self, x):
        h = x + self.attention(self.ln1(x))
        h = h + self.fc2(F.gelu(self.fc1(self.ln2(h))))
        return self.head(h.mean(1))


class Separable(nn.Model):
    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.pw = nn.Conv2d(8, 16, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, ref.CLASSES)

    def forward(self, x):
        h = F.relu6(self.bn1(self.dw(x)))
        h = F.relu6(self.bn2(self.pw(h)))
        return self.fc(nn.flatten(F.adaptive_avg_pool2d(h, 1), 1))


BLOCKS = {"residual": PreActResidual, "transformer": EncoderBlock, "separable": Separable}


@pytest.mark.parametrize("block", sorted(BLOCKS))
def test_block_trains_in_lock_step_with_pytorch(block):
    torch_model, xs, ys = ref.make(block, seed=2100 + len(block))
    model = BLOCKS[block]()
    model.load_state_dict({k: v.numpy() for k, v in torch_model.state_dict().items()})
    model.train()
    opt = nn.SGD(model.parameters(), lr=ref.LR, momentum=ref.MOMENTUM)
    losses = []
    for step in range(ref.STEPS):
        x, y = nn.Tensor(xs[step % ref.BATCHES]), nn.Tensor(ys[step % ref.BATCHES], dtype=np.int32)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
        nn.end_batch()
    want = ref.torch_losses(torch_model, xs, ys)
    np.testing.assert_allclose(losses, want, rtol=1e-4, atol=1e-6)
    assert want[-1] < 0.75 * want[0]  # it learned: the comparison is not of a flat line
    ours = model.state_dict()
    for name, value in torch_model.state_dict().items():
        np.testing.assert_allclose(np.asarray(ours[name]).reshape(value.shape), value.numpy(), rtol=1e-3, atol=1e-4,
                                   err_msg=name)


@pytest.mark.parametrize("block", sorted(BLOCKS))
def test_block_captured_and_replayed_trains_as_eager(block):
    """The training step recorded once and replayed (nn_engine.capture) gives
    the eager step's losses bit for bit: BatchNorm's running statistics,
    the optimizer and every new kernel replay from device state alone."""
    torch_model, xs, ys = ref.make(block, seed=2200 + len(block))
    state = {k: v.numpy() for k, v in torch_model.state_dict().items()}
    runs = []
    for captured in (False, True):
        model = BLOCKS[block]()
        model.load_state_dict(state)
        model.train()
        opt = nn.SGD(model.parameters(), lr=ref.LR, momentum=ref.MOMENTUM)

        def train_step(x, y):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        step = nn.capture(train_step) if captured else train_step
        losses = []
        for i in range(12):
            loss = step(nn.Tensor(xs[i % ref.BATCHES]), nn.Tensor(ys[i % ref.BATCHES], dtype=np.int32))
            losses.append(float(loss.item()))
            if not captured:
                nn.end_batch()
        runs.append(losses)
    assert runs[0] == runs[1]
