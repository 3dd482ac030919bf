"""LeNet-5 trained in lock-step with PyTorch: the same initial weights, the
same 20 batches, SGD with momentum. After every step the losses agree to
1e-5 (relative) and every weight to 1e-4; the first step's gradients to 1e-4.

The reference is Debian's PyTorch (python3-torch 1.13, CPU): PyPI's wheels
pull gigabytes of CUDA libraries into CI for nothing."""
import os

import numpy as np
import pytest
import torch

import nn_engine as nn
from nn_engine.datasets import load_idx_pair

FASHION = "/usr/share/datasets/fashion-mnist"
BATCH = 37  # odd, and not a multiple of any tile
STEPS = 20


class LeNet(nn.Model):
    def __init__(self):
        super().__init__()
        self.c1 = nn.ConvLayer(1, 6, 5)
        self.c2 = nn.ConvLayer(6, 16, 5)
        self.l1 = nn.Linear(16 * 4 * 4, 120)
        self.l2 = nn.Linear(120, 84)
        self.l3 = nn.Linear(84, 10)

    def forward(self, x):
        x = nn.maxpool2d(self.c1(x, relu=True))
        x = nn.maxpool2d(self.c2(x, relu=True))
        x = nn.flatten(x, 1)
        x = self.l1(x, relu=True)
        x = self.l2(x, relu=True)
        return self.l3(x)


def torch_lenet():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 6, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(6, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(256, 120), torch.nn.ReLU(),
        torch.nn.Linear(120, 84), torch.nn.ReLU(),
        torch.nn.Linear(84, 10))


# nn_engine name -> index in the torch Sequential's state_dict names
TORCH_NAMES = {"c1": "0", "c2": "3", "l1": "7", "l2": "9", "l3": "11"}


def torch_name(name):
    layer, kind = name.split(".")
    return f"{TORCH_NAMES[layer]}.{kind}"


def batches():
    """20 batches of real Fashion-MNIST when Debian's dataset-fashion-mnist is
    installed, else seeded random images and labels."""
    n = BATCH * STEPS
    if os.path.isdir(FASHION):
        x, y = load_idx_pair(FASHION, "train")
        x, y = x[:n], y[:n]
    else:
        rng = np.random.default_rng(7)
        x = rng.random((n, 1, 28, 28), dtype=np.float32)
        y = rng.integers(0, 10, n).astype(np.int32)
    return [(x[i:i + BATCH], y[i:i + BATCH]) for i in range(0, n, BATCH)]


@pytest.mark.parametrize("config", [
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.02, momentum=0.9, weight_decay=5e-4, nesterov=True, clip=0.05),
], ids=["momentum", "nesterov-wd-clip"])
def test_lenet_lockstep(config):
    config = dict(config)
    clip = config.pop("clip", None)
    nn.manual_seed(3)
    model = LeNet()
    reference = torch_lenet()
    with torch.no_grad():
        state = reference.state_dict()
        for name, p in model.named_parameters():
            state[torch_name(name)].copy_(torch.from_numpy(p.sync()))
    opt = nn.SGD(model.parameters(), **config)
    torch_opt = torch.optim.SGD(reference.parameters(), **config)
    torch_params = dict(reference.named_parameters())

    worst_loss = worst_weight = worst_grad = 0.0
    for step, (xb, yb) in enumerate(batches()):
        opt.zero_grad()
        loss = nn.softmax_ce(model(nn.Tensor(xb)), nn.Tensor(yb))
        loss.backward()

        torch_opt.zero_grad()
        torch_loss = torch.nn.functional.cross_entropy(reference(torch.from_numpy(xb)),
                                                       torch.from_numpy(yb).long())
        torch_loss.backward()

        if step == 0:
            for name, p in model.named_parameters():
                ours, theirs = p.grad.sync(), torch_params[torch_name(name)].grad.numpy()
                np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4,
                                           err_msg=f"step 0 gradient of {name}")
                worst_grad = max(worst_grad, float(np.abs(ours - theirs).max()))
        if clip is not None:  # the seed's per-element clamp, done by hand in torch
            for p in reference.parameters():
                p.grad.clamp_(-clip, clip)
        opt.step(clip=clip)
        torch_opt.step()

        ours, theirs = float(loss.item()), float(torch_loss.item())
        assert ours == pytest.approx(theirs, rel=1e-5), f"loss at step {step}"
        worst_loss = max(worst_loss, abs(ours - theirs) / abs(theirs))
        for name, p in model.named_parameters():
            ours_w = p.sync()
            theirs_w = torch_params[torch_name(name)].detach().numpy()
            np.testing.assert_allclose(ours_w, theirs_w, rtol=1e-4, atol=1e-4,
                                       err_msg=f"{name} after step {step}")
            worst_weight = max(worst_weight, float(np.abs(ours_w - theirs_w).max()))
        nn.end_batch()
    print(f"\nworst: loss rel {worst_loss:.2e}, weight abs {worst_weight:.2e}, "
          f"step-0 grad abs {worst_grad:.2e}")
