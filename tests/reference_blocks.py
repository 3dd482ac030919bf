"""The three blocks issue 21 trains against PyTorch, written in PyTorch: a
pre-activation residual block with a 1x1 projection shortcut, a pre-norm
transformer encoder block (multi-head self-attention from batched matmul and
softmax, a GELU MLP, residuals) and a depthwise-separable block, each with a
small classifier head. tests/python/test_blocks_torch.py builds them with
nn_engine's Python API and tests/io/nn_blocks.c in C; both train them for
100 steps from the same weights on the same batches and compare the losses
step by step."""
import math

import numpy as np
import torch
import torch.nn.functional as F

CLASSES = 5
BATCHES = 4  # distinct batches, cycled over the steps
BATCH = 4
STEPS = 100
LR, MOMENTUM = 0.05, 0.9

# block -> the shape of one batch of inputs
INPUTS = {"residual": (BATCH, 8, 9, 9), "transformer": (BATCH, 7, 16), "separable": (BATCH, 8, 9, 9)}


class PreActResidual(torch.nn.Module):
    """BN, ReLU, 3x3 conv, BN, ReLU, 3x3 conv, plus a 1x1 projection of the
    first activation; global mean; linear."""

    def __init__(self):
        super().__init__()
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv1 = torch.nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.conv2 = torch.nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.shortcut = torch.nn.Conv2d(8, 16, 1, bias=False)
        self.fc = torch.nn.Linear(16, CLASSES)

    def forward(self, x):
        a = F.relu(self.bn1(x))
        h = self.conv2(F.relu(self.bn2(self.conv1(a)))) + self.shortcut(a)
        return self.fc(h.mean((2, 3)))


class EncoderBlock(torch.nn.Module):
    """Pre-norm: h = x + attention(ln1(x)); h = h + fc2(gelu(fc1(ln2(h))));
    mean over the sequence; linear. Four heads of 4 over 16 features."""

    heads = 4

    def __init__(self, dim=16):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.ln2 = torch.nn.LayerNorm(dim)
        self.fc1 = torch.nn.Linear(dim, 4 * dim)
        self.fc2 = torch.nn.Linear(4 * dim, dim)
        self.head = torch.nn.Linear(dim, CLASSES)

    def attention(self, x):
        n, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.reshape(n, t, self.heads, d // self.heads).permute(0, 2, 1, 3) for z in (q, k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        out = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.proj(out.permute(0, 2, 1, 3).reshape(n, t, d))

    def forward(self, x):
        h = x + self.attention(self.ln1(x))
        h = h + self.fc2(F.gelu(self.fc1(self.ln2(h))))
        return self.head(h.mean(1))


class Separable(torch.nn.Module):
    """3x3 depthwise conv, BN, ReLU6, 1x1 pointwise conv, BN, ReLU6; global
    average pooling; linear."""

    def __init__(self):
        super().__init__()
        self.dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.pw = torch.nn.Conv2d(8, 16, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16, CLASSES)

    def forward(self, x):
        h = F.relu6(self.bn1(self.dw(x)))
        h = F.relu6(self.bn2(self.pw(h)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


BLOCKS = {"residual": PreActResidual, "transformer": EncoderBlock, "separable": Separable}


def make(block, seed):
    """The torch block with seeded weights (BatchNorm's affine parameters
    moved off 1 and 0), and BATCHES batches of inputs and labels."""
    torch.manual_seed(seed)
    model = BLOCKS[block]()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((BATCHES, *INPUTS[block])).astype(np.float32)
    ys = rng.integers(0, CLASSES, (BATCHES, BATCH)).astype(np.int32)
    return model, xs, ys


def torch_losses(model, xs, ys, steps=STEPS):
    """SGD with momentum on batch step % BATCHES: the loss of every step."""
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    model.train()
    losses = []
    for step in range(steps):
        x, y = torch.from_numpy(xs[step % BATCHES]), torch.from_numpy(ys[step % BATCHES]).long()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)
