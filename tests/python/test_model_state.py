"""Model state as PyTorch's (issue 26): the seed's LeNet and a ResNet block
save, load into a fresh process and into torch (load_state_dict strict=True)
with the same outputs; files interchange with `nnengine train --save`;
tensors made with requires_grad=True are parameters that outlive
end_batch(); load_state_dict(strict=False) reports keys as torch does;
.to(device) and several devices in one process; train()/eval()."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file
from safetensors.torch import load_file as torch_load_file
from safetensors.torch import save_file

import nn_engine as nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples"))
from train_lenet import LeNet  # noqa: E402  (the seed's LeNet)

RNG = np.random.default_rng(26)


class TorchLeNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = torch.nn.Conv2d(1, 6, 5), torch.nn.Conv2d(6, 16, 5)
        self.l1, self.l2, self.l3 = torch.nn.Linear(256, 120), torch.nn.Linear(120, 84), torch.nn.Linear(84, 10)

    def forward(self, x):
        f = torch.nn.functional
        x = f.max_pool2d(f.relu(self.c1(x)), 2)
        x = f.max_pool2d(f.relu(self.c2(x)), 2).flatten(1)
        return self.l3(f.relu(self.l2(f.relu(self.l1(x)))))


class Block(nn.Model):
    """A ResNet basic block with its BatchNorm buffers, under torchvision's names."""

    def __init__(self, channels=5):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = nn.relu(self.bn1(self.conv1(x)))
        return nn.relu(nn.add(self.bn2(self.conv2(y)), x))


class TorchBlock(torch.nn.Module):
    def __init__(self, channels=5):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(channels)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


def train_a_little(model, x, steps=3):
    """Changes parameters and running statistics away from their initial values."""
    opt = nn.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        nn.mean(nn.mul(model(nn.Tensor(x)), model(nn.Tensor(x)))).backward()
        opt.step()
        nn.end_batch()


@pytest.mark.parametrize("make, make_torch, shape", [(LeNet, TorchLeNet, (3, 1, 28, 28)),
                                                      (Block, TorchBlock, (1, 5, 7, 9))])
def test_save_loads_into_torch_strictly_with_the_same_outputs(tmp_path, make, make_torch, shape):
    model = make()
    x = RNG.standard_normal(shape).astype(np.float32)
    train_a_little(model, x)
    model.eval()
    path = tmp_path / "model.safetensors"
    model.save(path)
    theirs = make_torch()
    result = theirs.load_state_dict(torch_load_file(str(path)), strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    theirs.eval()
    with torch.no_grad():
        want = theirs(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(model(nn.Tensor(x)).numpy(), want, rtol=1e-4, atol=1e-5)
    # state_dict() holds the same values torch now has
    for name, value in theirs.state_dict().items():
        np.testing.assert_array_equal(model.state_dict()[name].numpy().reshape(value.shape), value.numpy(), err_msg=name)


def test_torch_weights_load_in_a_fresh_process(tmp_path):
    torch.manual_seed(5)
    theirs = TorchLeNet().eval()
    path = tmp_path / "torch.safetensors"
    save_file(theirs.state_dict(), str(path))
    x = RNG.standard_normal((2, 1, 28, 28)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code = (f"import sys, numpy as np, nn_engine as nn; sys.path.insert(0, {os.path.join(ROOT, 'examples')!r}); "
            f"from train_lenet import LeNet; m = LeNet().load({str(path)!r}); "
            f"np.save({str(tmp_path / 'y.npy')!r}, m(nn.Tensor(np.load({str(tmp_path / 'x.npy')!r}))).numpy())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert done.returncode == 0, done.stderr
    with torch.no_grad():
        want = theirs(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, rtol=1e-4, atol=1e-5)


def test_files_interchange_with_nnengine_train(tmp_path):
    cli = os.environ.get("NN_ENGINE_CLI", os.path.join(ROOT, "build", "nnengine"))
    data = "/usr/share/datasets/fashion-mnist"
    if not os.path.exists(cli) or not os.path.isdir(data):
        pytest.skip("needs the nnengine CLI and Fashion-MNIST")
    saved = tmp_path / "cli.safetensors"
    subprocess.run([cli, "train", "lenet5", "--data", data, "--epochs", "1", "--limit", "331", "--device", "cpu",
                    "--save", str(saved)], check=True, capture_output=True, timeout=300)
    model = LeNet().load(saved)
    for name, value in load_file(str(saved)).items():
        np.testing.assert_array_equal(model.state_dict()[name], value, err_msg=name)
    mean, std = model.input_normalization
    assert len(mean) == 1 and 0.2 < mean[0] < 0.4 and 0.2 < std[0] < 0.5
    assert model.class_names == [str(d) for d in range(10)]
    # ... and back: the CLI reads what Python writes
    resaved = tmp_path / "python.safetensors"
    model.save(resaved)
    done = subprocess.run([cli, "export", "lenet5", "--weights", str(resaved), "--onnx", str(tmp_path / "m.onnx")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "normalises them itself" in done.stderr


def test_tensors_that_require_grad_are_parameters_that_outlive_end_batch():
    class Affine(nn.Model):
        def __init__(self):
            super().__init__()
            self.weight = nn.Tensor(RNG.standard_normal((4, 3)), requires_grad=True)
            self.extra = {"shift": nn.Tensor(np.zeros(3), requires_grad=True)}
            self.data = nn.Tensor(np.ones((2, 4)))  # plain data: freed by end_batch

        def forward(self, x):
            return nn.add(nn.matmul(x, self.weight), self.extra["shift"])

    model = Affine()
    before = model.weight.numpy()
    nn.end_batch()
    assert [name for name, _ in model.named_parameters()] == ["weight", "extra.shift"]
    assert not model.data.alive
    opt = nn.SGD(model.parameters(), lr=0.5)
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    nn.sum(model(nn.Tensor(x))).backward()
    opt.step()
    nn.end_batch()
    np.testing.assert_allclose(model.weight.numpy(), before - 0.5 * x.sum(0)[:, None] * np.ones((1, 3)), rtol=1e-5)
    np.testing.assert_allclose(model.extra["shift"].numpy(), -0.5 * 2 * np.ones(3), rtol=1e-6)


def test_load_state_dict_reports_keys_as_torch():
    model = LeNet()
    state = model.state_dict()
    state.pop("l3.bias")
    state["extra.weight"] = np.zeros(3, np.float32)
    result = model.load_state_dict(state, strict=False)
    assert isinstance(result, nn.IncompatibleKeys)
    assert result.missing_keys == ["l3.bias"] and result.unexpected_keys == ["extra.weight"]
    with pytest.raises(KeyError, match="missing \\['l3.bias'\\], unexpected \\['extra.weight'\\]"):
        model.load_state_dict(state)
    with pytest.raises(ValueError, match="'c1.weight' has shape \\(6, 1, 4, 5\\)"):
        model.load_state_dict(dict(model.state_dict(), **{"c1.weight": np.zeros((6, 1, 4, 5))}))


def test_normalisation_and_class_names_round_trip_and_are_checked(tmp_path):
    model = LeNet()
    model.input_normalization = (0.286, 0.353)
    model.class_names = ["T-shirt/top", "Trouser", "Ünïcode", "say \"hi\""] + [str(i) for i in range(6)]
    model.save(tmp_path / "m.safetensors")
    fresh = LeNet().load(tmp_path / "m.safetensors")
    assert fresh.input_normalization == ((0.286,), (0.353,))
    assert fresh.class_names == model.class_names
    assert nn.read_model_info(tmp_path / "m.safetensors") == (((0.286,), (0.353,)), model.class_names)
    for bad, message in [((0.5, 0.0), "stds finite and > 0"), (((0.5, 0.5), (1.0,)), "as many means as stds"),
                         ("mean", "must be \\(mean, std\\)")]:
        model.input_normalization = bad
        with pytest.raises(ValueError, match=message):
            model.save(tmp_path / "bad.safetensors")
    model.input_normalization, model.class_names = None, ["a", ""]
    with pytest.raises(ValueError, match="class_names must be a list of non-empty str"):
        model.save(tmp_path / "bad.safetensors")
    assert not (tmp_path / "bad.safetensors").exists()


def vulkan_usable():
    return "vulkan" in {d.backend for d in nn.devices() if d.usable}


def test_to_moves_a_model_and_a_cpu_copy_of_a_gpu_model_runs_beside_it():
    if not vulkan_usable():
        pytest.skip("needs a Vulkan device")
    nn.set_device("cpu")
    model = Block().eval()
    x = RNG.standard_normal((2, 5, 6, 7)).astype(np.float32)
    want = model(nn.Tensor(x)).numpy()
    weight = model.conv1.weight
    assert model.to("vulkan") is model and weight.device == "vulkan" and model.conv1.weight is weight
    assert all(t.device == "vulkan" for t in model.parameters() + model.buffers())
    np.testing.assert_allclose(model(nn.Tensor(x, device="vulkan")).numpy(), want, rtol=1e-4, atol=1e-5)
    copy = Block().eval()  # on the CPU, the default device
    copy.load_state_dict(model.state_dict())
    np.testing.assert_allclose(copy(nn.Tensor(x)).numpy(), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="context"):
        model(nn.Tensor(x))  # CPU input into a Vulkan model
    model.to("cpu")
    np.testing.assert_allclose(model(nn.Tensor(x)).numpy(), want, rtol=1e-6, atol=1e-6)


def test_to_the_device_a_model_is_on_changes_nothing_and_bad_devices_are_named():
    model = LeNet()
    weight_handle = model.c1.filters._h
    device = model.c1.filters.device
    model.to(device)
    assert model.c1.filters._h is weight_handle
    with pytest.raises(ValueError, match="to: unknown device 'tpu'"):
        model.to("tpu")
    with pytest.raises(TypeError, match="Tensor.to: device must be a str"):
        model.c1.filters.to(3)


def test_train_and_eval_switch_dropout_and_batch_norm():
    class Net(nn.Model):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm2d(2)
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(self.bn(x))

    net = Net()
    x = RNG.standard_normal((3, 2, 4, 5)).astype(np.float32)
    assert net.eval() is net and not net.bn.training and not net.drop.training
    np.testing.assert_allclose(net(nn.Tensor(x)).numpy(), x / np.sqrt(1 + 1e-5), rtol=1e-5)
    net.train()
    assert net.training and net.bn.training and net.drop.training
