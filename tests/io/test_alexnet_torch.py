"""AlexNet against PyTorch (issue 8). nn_alexnet_tv's weights, saved by
nn-engine, load into torchvision's AlexNet with strict=True (a hand-written
module with torchvision's names where torchvision is not installed), and
both compute the same logits in evaluation mode at batch 2. nn_alexnet (the
seed's form) gives PyTorch's loss and gradients at batch 2."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from conftest import fixture

try:
    import torchvision
except ImportError:  # Debian's python3-torchvision is optional
    torchvision = None


class HandWrittenAlexNet(torch.nn.Module):
    """torchvision.models.alexnet's layers and state_dict names."""

    def __init__(self, num_classes):
        super().__init__()
        nn = torch.nn
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(), nn.MaxPool2d(3, 2),
            nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2),
            nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(),
            nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(),
            nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2))
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(0.5), nn.Linear(9216, 4096), nn.ReLU(),
            nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class SeedAlexNet(torch.nn.Module):
    """nn_alexnet (the seed's form) in PyTorch, with its parameter names."""

    def __init__(self, classes):
        super().__init__()
        nn = torch.nn
        self.c1 = nn.Conv2d(3, 64, 11, 4, 2)
        self.c2 = nn.Conv2d(64, 192, 5, padding=2)
        self.c3 = nn.Conv2d(192, 384, 3, padding=1)
        self.c4 = nn.Conv2d(384, 256, 3, padding=1)
        self.c5 = nn.Conv2d(256, 256, 3, padding=1)
        self.l1 = nn.Linear(9216, 512)
        self.l2 = nn.Linear(512, 512)
        self.l3 = nn.Linear(512, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 3, 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 3, 2)
        x = F.relu(self.c4(F.relu(self.c3(x))))
        x = F.max_pool2d(F.relu(self.c5(x)), 3, 2)
        x = torch.flatten(x, 1)
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


def images(batch, seed):
    return np.random.default_rng(seed).standard_normal((batch, 3, 224, 224)).astype(np.float32)


def test_alexnet_tv_loads_into_torchvision_strict_and_matches_in_eval(tmp_path):
    weights, inp, out = tmp_path / "w.safetensors", tmp_path / "in.bin", tmp_path / "out.bin"
    fixture("save", "alexnet-tv", 8, weights)
    x = images(2, 1)
    x.tofile(inp)
    fixture("forward", "alexnet-tv", weights, inp, 2, out)
    got = np.fromfile(out, dtype="<f4").reshape(2, 10)

    ref = (torchvision.models.alexnet(weights=None, num_classes=10) if torchvision
           else HandWrittenAlexNet(10))
    state = load_file(str(weights))
    ref.load_state_dict(state, strict=True)  # every name and shape matches
    assert set(state) == set(ref.state_dict())
    ref.eval()
    with torch.no_grad():
        want = ref(torch.from_numpy(x)).numpy()
    assert np.abs(want).max() > 0  # not a trivially zero comparison
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_alexnet_seed_form_loss_and_gradients_match_pytorch(tmp_path):
    weights, inp, lab, out = (tmp_path / n for n in ("w.safetensors", "in.bin", "labels.bin", "grads.bin"))
    fixture("save", "alexnet", 9, weights)
    x = images(2, 2)
    labels = np.array([2, 0], dtype="<i4")
    x.tofile(inp)
    labels.tofile(lab)
    fixture("grad", "alexnet", weights, inp, 2, lab, out)
    got = np.fromfile(out, dtype="<f4")

    ref = SeedAlexNet(3)
    ref.load_state_dict(load_file(str(weights)), strict=True)
    loss = F.cross_entropy(ref(torch.from_numpy(x)), torch.from_numpy(labels).long())
    loss.backward()
    assert got[0] == pytest.approx(loss.item(), rel=1e-4)
    offset = 1
    for name, p in ref.named_parameters():  # nn-engine's parameter order is the same
        n = p.numel()
        g = got[offset:offset + n].reshape(p.shape)
        offset += n
        want = p.grad.numpy()
        scale = np.abs(want).max()
        assert scale > 0, name
        np.testing.assert_allclose(g, want, rtol=1e-3, atol=2e-3 * scale, err_msg=name)
    assert offset == got.size


def test_alexnet_tv_onnx_export_has_inference_dropout_and_matches_onnxruntime(tmp_path):
    import onnx
    import onnxruntime as ort

    weights, onnx_path = tmp_path / "w.safetensors", tmp_path / "alexnet.onnx"
    inp, out = tmp_path / "in.bin", tmp_path / "out.bin"
    fixture("save", "alexnet-tv", 10, weights)
    fixture("export", "alexnet-tv", weights, onnx_path)  # traced in training mode
    model = onnx.load(str(onnx_path))
    onnx.checker.check_model(model, full_check=True)
    dropouts = [n for n in model.graph.node if n.op_type == "Dropout"]
    assert len(dropouts) == 2 and all(len(n.input) == 1 for n in dropouts)  # no training_mode input
    x = images(1, 3)
    x.tofile(inp)
    fixture("forward", "alexnet-tv", weights, inp, 1, out)
    got = np.fromfile(out, dtype="<f4").reshape(1, 10)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
