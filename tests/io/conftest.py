"""Shared helpers for the interop tests: nn-engine's side comes
from the C fixture program tests/io/nn_io_fixture.c (built by
`make io-fixture`; path in NN_IO_FIXTURE), so these tests need no Python
package. Reference models are written out in PyTorch."""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(os.environ.get("NN_IO_FIXTURE", ROOT / "build" / "tests" / "nn_io_fixture"))
CLI = Path(os.environ.get("NN_ENGINE_CLI", ROOT / "build" / "nnengine"))

INPUT_SHAPES = {"lenet": (1, 28, 28), "mlp": (1, 28, 28), "residual": (1, 28, 28), "ops": (2, 7, 9),
                "reduce": (2, 7, 9), "norm": (1, 28, 28)}


def fixture(*args, device=None):
    """Run the fixture (on `device`, default the CPU); fail the test with its
    stderr when it fails."""
    if not FIXTURE.exists():
        pytest.fail(f"{FIXTURE} is missing: run `make io-fixture` first")
    env = dict(os.environ, NN_IO_FIXTURE_DEVICE=device) if device else None
    done = subprocess.run([str(FIXTURE), *map(str, args)], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        pytest.fail(f"nn_io_fixture {' '.join(map(str, args))} failed: {done.stderr}")


def engine_forward(tmp_path, model, weights, x, device=None):
    """nn-engine's output for x (float32 NCHW) with the given weights file."""
    inp, out = tmp_path / "in.bin", tmp_path / "out.bin"
    x.astype("<f4").tofile(inp)
    fixture("forward", model, weights, inp, x.shape[0], out, device=device)
    return np.fromfile(out, dtype="<f4")


def random_input(model, batch, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((batch, *INPUT_SHAPES[model])).astype(np.float32)


class TorchLeNet5(torch.nn.Module):
    """nn_lenet5 written in PyTorch, with the same parameter names."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 6, 5)
        self.c2 = torch.nn.Conv2d(6, 16, 5)
        self.l1 = torch.nn.Linear(256, 120)
        self.l2 = torch.nn.Linear(120, 84)
        self.l3 = torch.nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = torch.flatten(x, 1)
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


class TorchMLP(torch.nn.Module):
    """The fixture's mlp: flatten, fc1 784->50, relu, fc2 50->10."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 50)
        self.fc2 = torch.nn.Linear(50, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


class TorchResidual(torch.nn.Module):
    """The fixture's residual model, a user's module in C (residual_forward):
    a parameter and a buffer of its own, and three children."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.body = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 3, padding=1), torch.nn.ReLU(),
                                        torch.nn.Conv2d(4, 4, 3, padding=1))
        self.head = torch.nn.Linear(4 * 7 * 7, 10)
        self.scale = torch.nn.Parameter(torch.rand(4) - 0.5)
        self.register_buffer("shift", torch.rand(4) - 0.5)

    def forward(self, x):
        h = self.stem(x)
        h = F.relu(h + self.body(h))
        h = h + self.scale.view(1, -1, 1, 1) + self.shift.view(1, -1, 1, 1)
        return self.head(torch.flatten(F.max_pool2d(h, 4), 1))


class TorchNorm(torch.nn.Module):
    """The fixture's norm model: conv, BatchNorm2d, relu, GroupNorm, max pool,
    flatten, LayerNorm, linear."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 6, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(6)
        self.gn = torch.nn.GroupNorm(3, 6)
        self.ln = torch.nn.LayerNorm(294)
        self.head = torch.nn.Linear(294, 10)

    def forward(self, x):
        x = self.gn(F.relu(self.bn(self.conv(x))))
        return self.head(self.ln(torch.flatten(F.max_pool2d(x, 4), 1)))


TORCH_MODELS = {"lenet": TorchLeNet5, "mlp": TorchMLP, "residual": TorchResidual, "norm": TorchNorm}
