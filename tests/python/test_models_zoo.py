"""nn_engine.models (issue 36): the C zoo from Python as Modules. resnet18's
state_dict loads strictly into torchvision's with the same outputs; it
trains with capture exactly as eagerly; it saves, loads and exports as any
Module (onnxruntime runs the export to the same outputs)."""
import numpy as np
import pytest
import torch

import nn_engine as ne
import nn_engine.nn.functional as F

torchvision = pytest.importorskip("torchvision")


def test_resnet18_loads_strictly_into_torchvision_with_its_outputs():
    ne.manual_seed(3)
    ours = ne.models.resnet18(num_classes=10)
    theirs = torchvision.models.resnet18(num_classes=10)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()}, strict=True)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    x = np.random.default_rng(0).standard_normal((2, 3, 40, 36)).astype(np.float32)
    ours.eval(), theirs.eval()
    with torch.no_grad():
        want = theirs(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours(ne.tensor(x)).numpy(), want, rtol=1e-4, atol=1e-5)
    assert repr(ours).startswith("ResNet(\n  (conv1): Conv2d()")
    with pytest.raises(ValueError, match="pretrained weights are not downloaded"):
        ne.models.resnet18(weights="IMAGENET1K_V1")
    with pytest.raises(ValueError, match="num_classes"):
        ne.models.mobilenet_v2(num_classes=0)


def train(captured, steps=4):
    ne.manual_seed(5)
    model = ne.models.resnet18_cifar(in_channels=1, num_classes=4)
    opt = ne.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def train_step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step = ne.capture(train_step) if captured else train_step
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(steps):
        x = ne.tensor(rng.standard_normal((4, 1, 8, 8)).astype(np.float32))
        y = ne.tensor(rng.integers(0, 4, 4))
        losses.append(step(x, y).item())
    return losses, model


def test_a_zoo_model_trains_with_capture_as_eagerly(tmp_path):
    eager_losses, eager = train(False)
    losses, model = train(True)
    assert losses == eager_losses
    for (name, a), (_, b) in zip(model.named_parameters(), eager.named_parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    # saved and loaded into a fresh model; exported and run by onnxruntime
    model.save(tmp_path / "resnet.safetensors")
    fresh = ne.models.resnet18_cifar(in_channels=1, num_classes=4).load(tmp_path / "resnet.safetensors")
    x = np.random.default_rng(2).standard_normal((3, 1, 8, 8)).astype(np.float32)
    model.eval(), fresh.eval()
    out = model(ne.tensor(x)).numpy()
    np.testing.assert_array_equal(fresh(ne.tensor(x)).numpy(), out)
    ort = pytest.importorskip("onnxruntime")
    model.export(tmp_path / "resnet.onnx", input_shape=[1, 1, 8, 8])
    session = ort.InferenceSession(str(tmp_path / "resnet.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, out, rtol=1e-4, atol=1e-5)


def test_a_zoo_model_moves_between_devices_with_its_state():
    if not any(d.backend == "vulkan" and d.usable for d in ne.devices()):
        pytest.skip("no Vulkan device")
    model = ne.models.resnet18_cifar(in_channels=1, num_classes=3, device="cpu").eval()
    x = np.random.default_rng(6).standard_normal((2, 1, 8, 8)).astype(np.float32)
    before = model(ne.tensor(x, device="cpu")).numpy()
    assert model.to("vulkan") is model and model.parameters()[0].device == "vulkan"
    assert not model.training
    np.testing.assert_allclose(model(ne.tensor(x, device="vulkan")).numpy(), before, rtol=1e-4, atol=1e-5)
    model.to("cpu")
    np.testing.assert_allclose(model(ne.tensor(x, device="cpu")).numpy(), before, rtol=1e-4, atol=1e-5)


def test_a_python_module_holds_a_zoo_model_as_a_child():
    class Classifier(ne.nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = ne.models.resnet18_cifar(in_channels=1, num_classes=8)
            self.head = ne.nn.Linear(8, 2)

        def forward(self, x):
            return self.head(ne.nn.functional.relu(self.backbone(x)))

    model = Classifier()
    names = [n for n, _ in model.named_parameters()]
    assert names[0] == "backbone.conv1.weight" and names[-2:] == ["head.weight", "head.bias"]
    assert len(names) == len(model.backbone.parameters()) + 2
    assert "backbone.layer4.1.bn2.running_var" in model.state_dict()
    assert [n for n, _ in model.named_children()] == ["backbone", "head"]
    assert "(backbone): ResNet(" in repr(model)
    model.eval()
    assert not model.backbone.training and not model.backbone.get_submodule("layer1.0.bn1").training
    x = ne.tensor(np.random.default_rng(8).standard_normal((2, 1, 8, 8)).astype(np.float32))
    loss = ne.sum(model(x))
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_a_python_module_with_a_zoo_child_moves_as_a_whole():
    if not any(d.backend == "vulkan" and d.usable for d in ne.devices()):
        pytest.skip("no Vulkan device")

    class Wrapped(ne.nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = ne.models.resnet18_cifar(in_channels=1, num_classes=3)
            self.scale = ne.nn.Parameter(np.full(3, 2.0, np.float32))

        def forward(self, x):
            return self.backbone(x) * self.scale

    model = Wrapped().to("cpu").eval()
    x = np.random.default_rng(9).standard_normal((2, 1, 8, 8)).astype(np.float32)
    before = model(ne.tensor(x, device="cpu")).numpy()
    model.to("vulkan")
    assert {p.device for p in model.parameters()} == {"vulkan"}
    np.testing.assert_allclose(model(ne.tensor(x, device="vulkan")).numpy(), before, rtol=1e-4, atol=1e-5)


def test_a_zoo_models_children_are_attributes_and_cannot_be_replaced():
    model = ne.models.resnet18_cifar(in_channels=1, num_classes=5)
    assert model.fc.weight.shape == (5, 512)
    assert [n for n, _ in model.layer1.named_children()] == ["0", "1"]
    with pytest.raises(TypeError, match="cannot change"):
        model.fc = ne.nn.Linear(512, 3)
    with pytest.raises(AttributeError):
        model.no_such_child
