"""nn_engine.nn as torch.nn (issue 36): a model written against torch.nn's
names builds the same tree, names, repr and state_dict under nn_engine.nn;
init, clip_grad_norm_, the containers and the PyTorch module paths
(nn_engine.optim.lr_scheduler, nn_engine.utils.data) against torch."""
from collections import OrderedDict

import numpy as np
import pytest
import torch

import nn_engine
import nn_engine.nn.functional as F
from nn_engine import nn


def make_net(nn_module):
    """The same model under either library's nn (torch.nn or nn_engine.nn)."""
    nn_ = nn_module

    class Block(nn_.Module):
        def __init__(self, channels, stride):
            super().__init__()
            self.conv1 = nn_.Conv2d(channels[0], channels[1], 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn_.BatchNorm2d(channels[1])
            self.relu = nn_.ReLU(inplace=True)
            self.conv2 = nn_.Conv2d(channels[1], channels[1], 3, padding=1, bias=False)
            self.bn2 = nn_.BatchNorm2d(channels[1])
            self.shortcut = nn_.Sequential()
            if stride != 1 or channels[0] != channels[1]:
                self.shortcut = nn_.Sequential(nn_.Conv2d(channels[0], channels[1], 1, stride=stride, bias=False),
                                               nn_.BatchNorm2d(channels[1]))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + self.shortcut(x))

    class Net(nn_.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn_.Sequential(OrderedDict([("conv", nn_.Conv2d(1, 8, 3, padding=1)), ("act", nn_.ReLU())]))
            self.blocks = nn_.ModuleList([Block((8, 8), 1), Block((8, 12), 2)])
            self.heads = nn_.ModuleDict({"main": nn_.Linear(12, 5), "aux": nn_.Linear(12, 3)})
            self.pool = nn_.AdaptiveAvgPool2d(1)
            self.drop = nn_.Dropout(0.25)

        def forward(self, x):
            x = self.stem(x)
            for block in self.blocks:
                x = block(x)
            return self.heads["main"](self.drop(nn_engine_flatten(self.pool(x))))

    return Net()


def nn_engine_flatten(x):
    return torch.flatten(x, 1) if isinstance(x, torch.Tensor) else nn_engine.flatten(x, 1)


def copy_weights(ours, theirs):
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()}, strict=True)


def test_the_tree_matches_torch():
    nn_engine.manual_seed(0)
    ours, theirs = make_net(nn), make_net(torch.nn)
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    visited_ours, visited_theirs = [], []
    ours.apply(lambda m: visited_ours.append(type(m).__name__))
    theirs.apply(lambda m: visited_theirs.append(type(m).__name__))
    assert visited_ours == visited_theirs
    assert ours.get_submodule("blocks.1.shortcut.0") is ours.blocks[1].shortcut[0]
    assert ours.get_parameter("heads.aux.bias") is ours.heads["aux"].bias


def test_forward_backward_and_modes_match_torch():
    nn_engine.manual_seed(1)
    ours, theirs = make_net(nn), make_net(torch.nn)
    copy_weights(ours, theirs)
    x = np.random.default_rng(2).standard_normal((3, 1, 9, 7)).astype(np.float32)
    labels = np.array([4, 0, 2])
    for model in (ours, theirs):
        model.eval()
    assert not ours.blocks[0].bn1.training and not ours.drop.training
    np.testing.assert_allclose(ours(nn_engine.tensor(x)).numpy(), theirs(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    ours.train(), theirs.train()
    ours.drop.p = theirs.drop.p = 0.0
    loss_ours = F.cross_entropy(ours(nn_engine.tensor(x)), nn_engine.tensor(labels))
    loss_theirs = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(x)), torch.from_numpy(labels))
    loss_ours.backward(), loss_theirs.backward()
    np.testing.assert_allclose(loss_ours.item(), loss_theirs.item(), rtol=1e-5)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        if q.grad is None:  # the unused head
            assert p.grad is None, name
            continue
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-5, err_msg=name)
    # running statistics moved as torch's
    np.testing.assert_allclose(ours.blocks[1].bn2.running_var.numpy(), theirs.blocks[1].bn2.running_var.numpy(),
                               rtol=1e-4)

    # clip_grad_norm_: the same norm returned, the same gradients after
    norm_ours = nn.utils.clip_grad_norm_(ours.parameters(), 0.05)
    norm_theirs = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.05)
    np.testing.assert_allclose(norm_ours.item(), norm_theirs.item(), rtol=1e-4)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        if q.grad is not None:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-6, err_msg=name)
    ours.zero_grad()
    assert all(p.grad is None or not np.any(p.grad.numpy()) for p in ours.parameters())


@pytest.mark.parametrize("norm_type", [1.0, float("inf")])
def test_clip_grad_norm_other_orders(norm_type):
    rng = np.random.default_rng(3)
    values = [rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (7,), (2, 3, 4))]
    ours = [nn.Parameter(v) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]
    for p in ours:
        nn_engine.sum(nn_engine.mul(p, p)).backward()
    for p in theirs:
        (p * p).sum().backward()
    norm_ours = nn.utils.clip_grad_norm_(ours, 1.5, norm_type=norm_type)
    norm_theirs = torch.nn.utils.clip_grad_norm_(theirs, 1.5, norm_type=norm_type)
    np.testing.assert_allclose(norm_ours.item(), norm_theirs.item(), rtol=1e-5)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)
    nn.utils.clip_grad_value_(ours, 0.01)
    torch.nn.utils.clip_grad_value_(theirs, 0.01)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="norm_type"):
        nn.utils.clip_grad_norm_(ours, 1.0, norm_type=3)


def test_init_functions_follow_torch_laws():
    nn_engine.manual_seed(4)
    weight = nn.Parameter(np.zeros((64, 32, 3, 3), np.float32))
    fan_in, fan_out = 32 * 9, 64 * 9
    nn.init.kaiming_normal_(weight, mode="fan_out", nonlinearity="relu")
    assert abs(weight.numpy().std() / np.sqrt(2 / fan_out) - 1) < 0.03
    nn.init.kaiming_uniform_(weight, a=np.sqrt(5))
    bound = nn.init.calculate_gain("leaky_relu", np.sqrt(5)) * np.sqrt(3 / fan_in)
    assert np.abs(weight.numpy()).max() <= bound and np.abs(weight.numpy()).max() > 0.95 * bound
    nn.init.xavier_uniform_(weight, gain=2.0)
    bound = 2.0 * np.sqrt(6 / (fan_in + fan_out))
    assert np.abs(weight.numpy()).max() <= bound * (1 + 1e-6)
    nn.init.trunc_normal_(weight, std=1.0, a=-0.5, b=0.25)
    values = weight.numpy()
    assert values.min() >= -0.5 and values.max() <= 0.25 and values.std() > 0.1
    nn.init.constant_(weight, 0.5)
    assert np.all(weight.numpy() == 0.5)
    assert nn.init.calculate_gain("tanh") == torch.nn.init.calculate_gain("tanh")
    with pytest.raises(ValueError, match="2 or more dimensions"):
        nn.init.xavier_uniform_(nn.Parameter(np.zeros(5, np.float32)))
    with pytest.raises(ValueError, match="mode"):
        nn.init.kaiming_normal_(weight, mode="fan_avg")


def test_containers_behave_as_torch_containers():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    layers.append(nn.ReLU())
    layers.insert(1, nn.Tanh())
    assert [type(m).__name__ for m in layers] == ["Linear", "Tanh", "Linear", "Linear", "ReLU"]
    del layers[0]
    assert len(layers) == 4 and [n for n, _ in layers.named_parameters()] == ["1.weight", "1.bias", "2.weight",
                                                                              "2.bias"]
    assert isinstance(layers[1:3], nn.ModuleList) and len(layers[1:3]) == 2
    with pytest.raises(TypeError, match="must be an nn_engine.nn.Module"):
        layers.append(lambda x: x)
    heads = nn.ModuleDict()
    heads["a"] = nn.Linear(2, 1)
    heads.update([("b", nn.Linear(2, 3))])
    assert list(heads) == ["a", "b"] and "b" in heads and len(heads) == 2
    heads.pop("a")
    assert [n for n, _ in heads.named_parameters()] == ["b.weight", "b.bias"]
    with pytest.raises(KeyError):
        heads["x.y"] = nn.Linear(1, 1)
    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(3, 4)), ("act", nn.ReLU())]))
    assert list(seq.state_dict()) == ["fc.weight", "fc.bias"] and seq[0] is seq.fc and len(seq) == 2
    assert list(seq[:1].state_dict()) == ["fc.weight", "fc.bias"]


def test_parameters_buffers_and_freezing():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(np.ones(4, np.float32))
            self.register_buffer("offset", np.full(4, 2.0, np.float32))
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x * self.scale + self.offset)

    model = Scaled()
    assert [n for n, _ in model.named_parameters()] == ["scale", "fc.weight", "fc.bias"]
    assert [n for n, _ in model.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in model.named_buffers()] == ["offset"]
    assert isinstance(model.scale, nn.Parameter) and model.scale.requires_grad
    model.fc.requires_grad_(False)
    assert [n for n, _ in model.named_parameters()] == ["scale"]
    assert model.fc.w is model.fc.weight  # the seed's name
    with pytest.raises(TypeError, match="register_parameter"):
        model.register_parameter("bad", np.zeros(3))


def test_flatten_and_inplace_take_torch_arguments():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 12
    t = nn_engine.tensor(x)
    assert nn_engine.flatten(t).shape == (24,)
    assert nn_engine.flatten(t, 1).shape == (2, 12)
    assert nn_engine.flatten(t, 0, 1).shape == (6, 4)
    np.testing.assert_array_equal(F.relu(t, inplace=True).numpy(), np.maximum(x, 0))
    np.testing.assert_array_equal(nn.ReLU(inplace=True)(t).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(nn.LeakyReLU(0.1, inplace=True)(t).numpy(), np.where(x > 0, x, 0.1 * x))
    assert repr(nn.ReLU(inplace=True)) == repr(torch.nn.ReLU(inplace=True))
    assert repr(nn.Dropout(0.2)) == repr(torch.nn.Dropout(0.2))
    assert repr(nn.Identity(54, unused="x")) == "Identity()"


def test_pytorch_module_paths():
    from nn_engine.optim.lr_scheduler import OneCycleLR
    from nn_engine.utils.data import DataLoader, Dataset, TensorDataset

    class Squares(Dataset):
        def __len__(self):
            return 7

        def __getitem__(self, i):
            return np.full(3, i, np.float32), i * i

    batches = list(DataLoader(Squares(), batch_size=3))
    assert [b[0].shape for b in batches] == [(3, 3), (3, 3), (1, 3)]
    assert batches[2][1].dtype == np.int32 and batches[2][1].tolist() == [36]
    assert len(list(DataLoader(TensorDataset(np.zeros((5, 2))), batch_size=2))) == 3
    model = nn.Linear(3, 2)
    opt = nn_engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    OneCycleLR(opt, max_lr=0.5, total_steps=10, cycle_momentum=False)
    assert nn_engine.nn.Module is nn_engine.Module and issubclass(nn_engine.Model, nn.Module)
