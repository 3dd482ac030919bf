"""Model: parameter discovery in nested attributes, lists and dicts;
train/eval; export through the seed's _onnx_graph hook (checked with
onnxruntime) and native export; Metrics."""
import numpy as np
import pytest

import nn_engine as nn
from nn_engine import ConvLayer, Linear, Model, flatten, maxpool2d

RNG = np.random.default_rng(9)


class Block:
    """A plain object (not a Model) holding layers."""

    def __init__(self):
        self.conv = ConvLayer(2, 3, 3)
        self.training = True


class Nested(Model):
    def __init__(self):
        super().__init__()
        self.stem = Linear(4, 4)
        self.blocks = [Block(), Block()]
        self.heads = {"a": Linear(4, 2), "b": [Linear(2, 1)]}
        self.inner = Tiny()
        self.shared = self.stem  # the same layer twice counts once
        self.scale = nn.Tensor(np.ones(1), requires_grad=True, track=False)
        self.constant = nn.Tensor(np.ones(1), track=False)  # no grad: not a parameter
        self.numbers = [1, 2.0, "x", np.ones(3)]


class Tiny(Model):
    def __init__(self):
        super().__init__()
        self.fc = Linear(1, 1)


def test_parameters_are_found_in_nested_attributes_lists_and_dicts():
    model = Nested()
    names = [name for name, _ in model.named_parameters()]
    assert names == [  # torch's order: the model's own first, then module by module
        "scale",
        "stem.weight", "stem.bias",
        "blocks.0.conv.weight", "blocks.0.conv.bias",
        "blocks.1.conv.weight", "blocks.1.conv.bias",
        "heads.a.weight", "heads.a.bias", "heads.b.0.weight", "heads.b.0.bias",
        "inner.fc.weight", "inner.fc.bias",
    ]
    params = model.parameters()
    assert params[1] is model.stem.w and params[3] is model.blocks[0].conv.filters
    nn.SGD(params, lr=0.1)  # no duplicates: the C optimizer refuses those


def test_train_and_eval_reach_nested_objects():
    model = Nested()
    model.eval()
    assert not model.training and not model.inner.training
    assert not model.blocks[1].training
    model.train()
    assert model.training and model.inner.training and model.blocks[0].training


def test_call_runs_forward():
    class Doubler(Model):
        def forward(self, x, factor=2.0):
            return nn.scale(x, factor)
    out = Doubler()(nn.Tensor(np.ones(3)), factor=3.0)
    assert np.array_equal(out.sync(), [3, 3, 3])
    with pytest.raises(NotImplementedError, match="forward"):
        Model()(nn.Tensor(np.ones(1)))


class LeNetWithGraph(Model):
    """LeNet-5 with the seed's hand-written ONNX graph."""

    def __init__(self):
        super().__init__()
        self.c1 = ConvLayer(1, 6, 5, padding=1)
        self.c2 = ConvLayer(6, 16, 3, stride=2)
        self.l1 = Linear(16 * 4 * 4, 30)
        self.l2 = Linear(30, 10)

    def forward(self, x):
        x = maxpool2d(self.c1(x, relu=True))
        x = maxpool2d(self.c2(x, relu=True), pool_size=3, stride=1)
        x = self.l1(flatten(x, 1), relu=True)
        return self.l2(x)

    def _onnx_graph(self, input_shape, helper, TensorProto, numpy_helper):
        nodes, inits = [], []
        h = self._conv_onnx(self.c1, "c1", "input", "p1", helper, numpy_helper, inits, nodes,
                            with_relu=True, pool=(2, 2))
        h = self._conv_onnx(self.c2, "c2", h, "p2", helper, numpy_helper, inits, nodes,
                            with_relu=True, pool=(3, 1))
        nodes.append(helper.make_node("Flatten", [h], ["flat"], axis=1))
        h = self._linear_onnx(self.l1, "l1", "flat", "h1", helper, numpy_helper, inits, nodes,
                              with_relu=True)
        out = self._linear_onnx(self.l2, "l2", h, "output", helper, numpy_helper, inits, nodes)
        return nodes, inits, out, [input_shape[0], 10]


def test_onnx_graph_export_matches_onnxruntime(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    model = LeNetWithGraph()
    path = tmp_path / "lenet.onnx"
    assert model.export(str(path), input_shape=[1, 1, 28, 28]) == str(path)
    onnx.checker.check_model(onnx.load(str(path)))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for batch in (1, 5):  # the batch dimension is dynamic
        x = RNG.random((batch, 1, 28, 28), dtype=np.float32)
        expected = model(nn.Tensor(x)).sync()
        got = session.run(None, {"input": x})[0]
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    names = [i.name for i in onnx.load(str(path)).graph.initializer]
    assert names[:2] == ["c1.weight", "c1.bias"]


def test_onnx_graph_export_checks_what_the_hook_returns(tmp_path):
    pytest.importorskip("onnx")

    class Broken(Model):
        def _onnx_graph(self, input_shape, helper, TensorProto, numpy_helper):
            return [], []
    with pytest.raises(TypeError, match="must return"):
        Broken().export(str(tmp_path / "b.onnx"), [1, 2])
    with pytest.raises(TypeError, match="must be a ConvLayer"):
        Model._conv_onnx(Linear(2, 2), "x", "in", "out", None, None, [], [])


def test_native_export(tmp_path):
    class Small(Model):
        def __init__(self):
            super().__init__()
            self.c1 = ConvLayer(1, 2, 3)
            self.fc = Linear(2 * 4 * 4, 3)

        def forward(self, x):
            return self.fc(flatten(maxpool2d(self.c1(x, relu=True)), 1))

    model = Small()
    path = tmp_path / "small.onnx"
    if not nn._lib.has_symbol("nn_onnx_export"):
        with pytest.raises(NotImplementedError, match="not in this build"):
            model.export(str(path), input_shape=[1, 1, 10, 10])
        assert not path.exists()
        return
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    model.export(str(path), input_shape=[1, 1, 10, 10])
    onnx.checker.check_model(onnx.load(str(path)))
    names = {i.name for i in onnx.load(str(path)).graph.initializer}
    assert {"c1.weight", "c1.bias", "fc.weight", "fc.bias"} <= names
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = RNG.random((3, 1, 10, 10), dtype=np.float32)
    got = session.run(None, {session.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, model(nn.Tensor(x)).sync(), rtol=1e-4, atol=1e-5)


def test_metrics_against_numpy():
    metrics = nn.Metrics()
    losses, correct, total = [], 0, 0
    for batch in (7, 1, 12):
        logits = RNG.standard_normal((batch, 4)).astype(np.float32)
        labels = RNG.integers(0, 4, batch)
        loss = nn.softmax_ce(nn.Tensor(logits), nn.Tensor(labels))
        metrics.update(loss, nn.Tensor(logits), nn.Tensor(labels))
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        losses.append(-logp[np.arange(batch), labels].mean())
        correct += int((logits.argmax(axis=1) == labels).sum())
        total += batch
        nn.end_batch()
    mean_loss, accuracy = metrics.collect(total)
    assert mean_loss == pytest.approx(np.mean(losses), rel=1e-5)
    assert accuracy == correct / total
    metrics.reset()
    assert metrics.collect(10) == (0.0, 0.0)
    with pytest.raises(ValueError, match="labels for"):
        metrics.update(loss_of_one(), nn.Tensor(np.ones((3, 2))), np.zeros(2))


def loss_of_one():
    return nn.Tensor(np.ones(1))


class Normed(Model):
    """A Model with buffers of its own (as BatchNorm's running statistics)
    beside a nested Model that has one too."""

    def __init__(self):
        super().__init__()
        self.fc = Linear(3, 5)
        self.register_buffer("running_mean", RNG.standard_normal(5).astype(np.float32))
        self.inner = Counted()

    def forward(self, x):
        return nn.add_bias(self.fc(x), self.running_mean)


class Counted(Model):
    def __init__(self):
        super().__init__()
        self.fc = Linear(5, 2)
        self.register_buffer("seen", np.zeros(1, dtype=np.float32))


def torch_normed():
    """Normed written in PyTorch: the same state_dict names."""
    import torch

    class TorchCounted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(5, 2)
            self.register_buffer("seen", torch.zeros(1))

    class TorchNormed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 5)
            self.register_buffer("running_mean", torch.zeros(5))
            self.inner = TorchCounted()

    return TorchNormed()


def test_buffers_are_state_not_parameters():
    model = Normed()
    assert [name for name, _ in model.named_parameters()] == ["fc.weight", "fc.bias", "inner.fc.weight",
                                                               "inner.fc.bias"]
    assert [name for name, _ in model.named_buffers()] == ["running_mean", "inner.seen"]
    assert set(model.state_dict()) == set(torch_normed().state_dict())
    model.running_mean = np.arange(5, dtype=np.float32)  # replaced through the attribute
    np.testing.assert_array_equal(model.state_dict()["running_mean"], np.arange(5))
    with pytest.raises(ValueError, match="requires grad"):
        model.register_buffer("trained", nn.Tensor(np.ones(2), requires_grad=True, track=False))
    with pytest.raises(KeyError, match="'fc'"):
        model.register_buffer("fc", np.ones(2))


def test_state_saves_and_loads_with_torch(tmp_path):
    """Model.save writes what torch's load_state_dict(strict=True) takes;
    torch's save_file(state_dict()) loads back, buffers included."""
    import torch
    from safetensors.torch import load_file, save_file
    model = Normed()
    path = tmp_path / "normed.safetensors"
    model.save(path)
    net = torch_normed()
    net.load_state_dict(load_file(str(path)), strict=True)
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(net.state_dict()[name].numpy(), value)

    torch.manual_seed(1)
    net = torch_normed()
    net.running_mean.uniform_()
    net.inner.seen.fill_(3.0)
    save_file(net.state_dict(), str(tmp_path / "torch.safetensors"))
    model.load(tmp_path / "torch.safetensors")
    state = model.state_dict()
    for name, value in net.state_dict().items():
        np.testing.assert_array_equal(state[name], value.numpy())
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    with torch.no_grad():
        want = net.fc(torch.from_numpy(x)) + net.running_mean
    np.testing.assert_allclose(model(nn.Tensor(x)).numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_state_loads_all_or_nothing(tmp_path):
    model = Normed()
    before = model.state_dict()
    state = dict(before)
    state["inner.seen"] = np.ones(2, dtype=np.float32)
    state["fc.bias"] = np.zeros(5, dtype=np.float32)
    with pytest.raises(ValueError, match="'inner.seen' has shape"):
        model.load_state_dict(state)
    del state["inner.seen"]
    with pytest.raises(KeyError, match="inner.seen"):
        model.load_state_dict(state)
    missing, unexpected = model.load_state_dict({"fc.bias": np.zeros(5), "extra": np.ones(1)}, strict=False)
    assert "inner.seen" in missing and unexpected == ["extra"]
    np.testing.assert_array_equal(model.state_dict()["fc.bias"], np.zeros(5))

    other = Tiny()
    other.save(tmp_path / "tiny.safetensors")
    # torch's state_dict order: the model's own buffer is checked first
    with pytest.raises(ValueError, match="tensor 'running_mean' is missing from the file"):
        model.load(tmp_path / "tiny.safetensors")
    for name, value in model.state_dict().items():
        if name != "fc.bias":
            np.testing.assert_array_equal(value, before[name])
