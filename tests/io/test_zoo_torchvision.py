"""The model zoo against torchvision (issue 22): torchvision's resnet18,
resnet34, resnet50 and mobilenet_v2 (random weights, BatchNorm statistics
moved off their initial values), saved as a safetensors state_dict, load
strictly into nn-engine's models (tests/io/nn_zoo_fixture.c) and give
torchvision's evaluation-mode logits; parameter counts and state_dict names
are torchvision's; resnet18-cifar matches a torch reference built here;
training-mode losses and gradients are PyTorch's; the initialisation
follows torchvision's (kaiming_normal_ fan_out)."""
import copy
import zlib

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from conftest import FIXTURE

torchvision = pytest.importorskip("torchvision")
ZOO = FIXTURE.parent / "nn_zoo_fixture"


def zoo(*args):
    import subprocess
    if not ZOO.exists():
        pytest.fail(f"{ZOO} is missing: run `make io-fixture` first")
    done = subprocess.run([str(ZOO), *map(str, args)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"nn_zoo_fixture {' '.join(map(str, args))} failed: {done.stderr}")
    return done.stdout


def scrambled(model, seed, channels, size):
    """The model with every BatchNorm's affine parameters random and its
    running statistics those of a calibration batch (so activations keep
    their scale and ReLU6 does not saturate): evaluation mode reads each."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                c = m.num_features
                m.weight.copy_(0.5 + torch.rand(c, generator=g))
                m.bias.copy_(0.2 * torch.randn(c, generator=g))
                m.momentum = 1.0  # running statistics := the calibration batch's
        model.train()
        model(torch.randn(4, channels, size, size, generator=g) + torch.randn(4, channels, 1, 1, generator=g))
    return model.eval()


def compare_logits(tmp_path, name, model, channels, size, seed):
    weights, inp, out = tmp_path / "w.safetensors", tmp_path / "in.bin", tmp_path / "out.bin"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(weights))
    # Each image its own contrast and channel means: after the global average
    # pool, i.i.d. noise images would be alike.
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((2, channels, size, size)) * rng.uniform(0.5, 2, (2, 1, 1, 1))
         + rng.standard_normal((2, channels, 1, 1))).astype(np.float32)
    x.tofile(inp)
    zoo("forward", name, 10, channels, weights, inp, 2, size, size, out)
    got = np.fromfile(out, dtype="<f4").reshape(2, 10)
    # The reference in float64: float32 rounding through 50 layers differs
    # between CPUs (BLAS kernels) by about 1e-4 of the logits on either side.
    with torch.no_grad():
        want = copy.deepcopy(model).double()(torch.from_numpy(x).double()).numpy()
    scale = np.abs(want).max()
    assert scale > 1e-3 and np.abs(want[0] - want[1]).max() > 1e-3 * scale  # not trivially equal
    np.testing.assert_allclose(got, want, rtol=0, atol=3e-4 * scale)


@pytest.mark.parametrize("name,size", [("resnet18", 224), ("resnet34", 224), ("resnet50", 96),
                                       ("mobilenet_v2", 224)])
def test_torchvision_weights_load_strictly_and_give_its_eval_logits(tmp_path, name, size):
    torch.manual_seed(zlib.crc32(name.encode()))  # hash() differs per process
    model = scrambled(getattr(torchvision.models, name)(num_classes=10), len(name), 3, size)
    compare_logits(tmp_path, name, model, 3, size, seed=size)


def cifar_reference(in_channels, classes):
    """ResNet-18 for small images in torch: torchvision's with a 3x3 stride-1
    stem from in_channels and no max pool (same names)."""
    model = torchvision.models.resnet18(num_classes=classes)
    model.conv1 = torch.nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False)
    model.maxpool = torch.nn.Identity()
    return model


@pytest.mark.parametrize("channels,size", [(1, 28), (3, 19)])
def test_resnet18_cifar_matches_torch_reference(tmp_path, channels, size):
    torch.manual_seed(channels)
    model = scrambled(cifar_reference(channels, 10), channels, channels, size)
    compare_logits(tmp_path, "resnet18-cifar", model, channels, size, seed=channels)


@pytest.mark.parametrize("name", ["resnet18", "resnet34", "resnet50", "mobilenet_v2", "resnet18-cifar"])
def test_parameter_counts_and_state_dict_are_torchvision(name):
    classes = 1000 if name != "resnet18-cifar" else 10
    channels = 1 if name == "resnet18-cifar" else 3
    lines = zoo("params", name, classes, channels).split("\n")
    model = cifar_reference(1, 10) if name == "resnet18-cifar" else getattr(torchvision.models, name)()
    assert int(lines[0]) == sum(p.numel() for p in model.parameters())
    state = [line.split() for line in lines[1:] if line]
    assert [(k, int(n)) for k, n in state] == [(k, v.numel()) for k, v in model.state_dict().items()]


def test_initialisation_follows_torchvision(tmp_path):
    """Convolutions N(0, 2 / fan_out), BatchNorm weight 1 and bias 0 with
    running statistics 0 and 1; MobileNetV2's Linear N(0, 0.01), bias 0."""
    for name in ("resnet50", "mobilenet_v2"):
        weights = tmp_path / f"{name}.safetensors"
        zoo("save", name, 10, 3, 5, weights)
        state = load_file(str(weights))
        for key, value in state.items():
            v = value.double()
            if value.dim() == 4:
                fan_out = value.shape[0] * value.shape[2] * value.shape[3]
                if value.numel() >= 4096:  # enough draws for the statistics
                    assert abs(v.std().item() / (2 / fan_out) ** 0.5 - 1) < 0.05, key
                    assert abs(v.mean().item()) < 0.05 * (2 / fan_out) ** 0.5, key
            elif key.endswith(("bn1.weight", ".1.weight")) and value.dim() == 1 and "classifier" not in key:
                assert torch.all(value == 1), key
            elif key.endswith("running_var"):
                assert torch.all(value == 1), key
            elif key.endswith(("running_mean",)) or (key.endswith(".bias") and "fc" not in key):
                assert torch.all(value == 0), key
        if name == "mobilenet_v2":
            w = state["classifier.1.weight"].double()
            assert abs(w.std().item() / 0.01 - 1) < 0.05
        else:
            bound = 1 / 2048 ** 0.5  # PyTorch's default Linear: kaiming_uniform(a=sqrt 5)
            assert state["fc.weight"].abs().max() <= bound and state["fc.weight"].abs().max() > 0.9 * bound


@pytest.mark.parametrize("name,channels,size,training", [("resnet18-cifar", 1, 12, True),
                                                         ("resnet18-cifar", 1, 12, False),
                                                         ("mobilenet_v2", 3, 64, False)])
def test_loss_and_gradients_match_pytorch(tmp_path, name, channels, size, training):
    """Batch statistics (training mode) or running ones, residual adds,
    depthwise convolutions, ReLU6: every parameter's gradient of the
    cross-entropy against PyTorch's in float64, as close as PyTorch's own
    float32 gradients are (per parameter, L2 norm). MobileNetV2 in training
    mode is left out: with batch statistics over 12 values per channel at
    its last layer, one ReLU6 input within float32 rounding of 0 changes
    every gradient by a percent (PyTorch's float32 against float64 too)."""
    torch.manual_seed(size)
    model = cifar_reference(channels, 5) if name == "resnet18-cifar" else torchvision.models.mobilenet_v2(num_classes=5)
    model = scrambled(model, 11, channels, size).train(training)
    if name == "mobilenet_v2":
        model.classifier[0].p = 0.0  # the C side's dropout is off (its mask would not be PyTorch's)
    weights, inp, lab, out = (tmp_path / n for n in ("w.safetensors", "in.bin", "labels.bin", "grads.bin"))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(weights))
    x = np.random.default_rng(4).standard_normal((3, channels, size, size)).astype(np.float32)
    labels = np.array([4, 0, 2], dtype="<i4")
    x.tofile(inp)
    labels.tofile(lab)
    zoo("grad" if training else "grad-eval", name, 5, channels, weights, inp, 3, size, size, lab, out)
    got = np.fromfile(out, dtype="<f4").astype(np.float64)
    losses, grads = [], []
    for dtype in (torch.float64, torch.float32):
        reference = copy.deepcopy(model).to(dtype)
        loss = torch.nn.functional.cross_entropy(reference(torch.from_numpy(x).to(dtype)),
                                                 torch.from_numpy(labels).long())
        loss.backward()
        losses.append(loss.item())
        grads.append({n: p.grad.double().numpy() for n, p in reference.named_parameters()})
    assert got[0] == pytest.approx(losses[0], rel=1e-5)
    want, torch32 = grads
    largest = max(np.linalg.norm(g) for g in want.values())
    offset, checked = 1, 0
    for pname, w in want.items():
        g = got[offset:offset + w.size].reshape(w.shape)
        offset += w.size
        norm = np.linalg.norm(w)
        if norm < 1e-6 * largest:  # a bias that a later batch norm cancels: zero up to rounding
            assert np.linalg.norm(g) < 1e-4 * largest, pname
            continue
        ours, theirs = np.linalg.norm(g - w) / norm, np.linalg.norm(torch32[pname] - w) / norm
        assert ours <= max(4 * theirs, 1e-4), f"{pname}: error {ours:.2e}, PyTorch float32's {theirs:.2e}"
        checked += 1
    assert offset == got.size and checked > len(want) // 2
