"""nn_engine.onnx.load (issue 38): a PyTorch model exported in training mode
loads with PyTorch's state_dict names, trains in lock-step with PyTorch,
switches BatchNorm with train()/eval(), saves its state_dict as PyTorch's,
and a file the engine cannot import raises with the reason."""
import numpy as np
import pytest
import torch

import nn_engine as nn


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 6, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(6)
        self.fc = torch.nn.Linear(6 * 3 * 4, 5)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(torch.flatten(x, 1))


@pytest.fixture()
def exported(tmp_path):
    torch.manual_seed(29)
    model = Net()
    x = np.random.default_rng(31).standard_normal((4, 2, 7, 9)).astype(np.float32)
    path = tmp_path / "net.onnx"
    torch.onnx.export(model, torch.from_numpy(x), str(path), opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["input"], dynamic_axes={"input": {0: "batch"}})
    return model, x, path


def test_loads_with_pytorch_names_and_trains_in_lock_step(exported):
    reference, x, path = exported
    model = nn.onnx.load(path)
    names = [k for k in reference.state_dict() if not k.endswith("num_batches_tracked")]
    assert sorted(model.state_dict()) == sorted(names)
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, reference.state_dict()[name].numpy(), err_msg=name)
    labels = np.array([0, 3, 4, 1], np.int32)
    opt = nn.SGD(model.parameters(), lr=0.1, momentum=0.9)
    torch_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for step in range(5):
        opt.zero_grad()
        loss = nn.softmax_ce(model(nn.Tensor(x)), nn.Tensor(labels))
        loss.backward()
        opt.step()
        torch_opt.zero_grad()
        torch_loss = torch.nn.functional.cross_entropy(reference(torch.from_numpy(x)), torch.from_numpy(labels).long())
        torch_loss.backward()
        torch_opt.step()
        assert float(loss.item()) == pytest.approx(torch_loss.item(), rel=1e-4), f"loss at step {step}"
        nn.end_batch()
    state = reference.state_dict()
    for name, value in model.state_dict().items():  # running statistics included
        np.testing.assert_allclose(value, state[name].numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    model.eval()
    reference.eval()
    with torch.no_grad():
        want = reference(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(model(nn.Tensor(x)).numpy(), want, rtol=1e-4, atol=1e-5)


def test_fine_tuning_replaces_the_classifier(exported):
    reference, x, path = exported
    model = nn.onnx.load(path, classes=3)
    state, theirs = model.state_dict(), reference.state_dict()
    assert state["fc.weight"].shape == (3, 72) and state["fc.bias"].shape == (3,)
    bound = 1 / np.sqrt(72)
    assert np.abs(state["fc.weight"]).max() <= bound and np.abs(state["fc.weight"]).max() > 0.5 * bound
    for name in ("conv.weight", "bn.weight", "bn.running_var"):
        np.testing.assert_array_equal(state[name], theirs[name].numpy())
    assert model(nn.Tensor(x)).shape == (4, 3)
    with pytest.raises(ValueError):
        nn.onnx.load(path, classes=0)


def test_readme_fine_tuning_of_a_torchvision_export(tmp_path):
    """The README's recipe: torchvision's ResNet-18 exported with its 1000
    classes, loaded with a new 4-class fc, everything else frozen."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(47)
    path = tmp_path / "resnet18.onnx"
    torch.onnx.export(torchvision.models.resnet18(), torch.zeros(2, 3, 32, 32), str(path), opset_version=17,
                      input_names=["input"], dynamic_axes={"input": {0: "batch"}},
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    model = nn.onnx.load(path, classes=4)
    for name, p in model.named_parameters():
        p.requires_grad = name.startswith("fc.")
    opt = nn.SGD([p for name, p in model.named_parameters() if name.startswith("fc.")], lr=0.05, momentum=0.9)
    before = model.state_dict()
    x = np.random.default_rng(53).standard_normal((6, 3, 32, 32)).astype(np.float32)
    labels = np.array([0, 1, 2, 3, 0, 1], np.int32)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = nn.softmax_ce(model(nn.Tensor(x)), nn.Tensor(labels))
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
        nn.end_batch()
    after = model.state_dict()
    assert losses[-1] < losses[0]
    assert not np.array_equal(after["fc.weight"], before["fc.weight"])
    for name in ("conv1.weight", "layer4.1.conv2.weight", "layer1.0.bn1.bias"):
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)


def test_a_constant_read_on_the_device_and_on_the_host_runs_twice(tmp_path):
    """A constant copied to the device by one node (Max) keeps its host value
    for another (Clip's bound) in every forward, not only the first."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Max", ["x", "c"], ["m"]), helper.make_node("Clip", ["m", "c", "hi"], ["y"])], "twice",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor("c", TensorProto.FLOAT, [], [-0.25]), helper.make_tensor("hi", TensorProto.FLOAT, [], [0.5])])
    path = tmp_path / "twice.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    x = np.random.default_rng(59).standard_normal((2, 3)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    model = nn.onnx.load(path)
    for _ in range(2):
        np.testing.assert_allclose(model(nn.Tensor(x)).numpy(), want, rtol=1e-6)
        nn.end_batch()


def test_a_graph_of_two_inputs_runs_with_both(tmp_path):
    """Scores and an additive mask (as attention's): the graph's inputs in
    its order; a call with one input says how many the graph takes."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper
    w = np.random.default_rng(67).standard_normal((5, 4)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["s"]), helper.make_node("Add", ["s", "mask"], ["m"]),
         helper.make_node("Softmax", ["m"], ["y"], axis=-1)], "masked",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel().tolist())])
    path = tmp_path / "masked.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    rng = np.random.default_rng(71)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    mask = np.where(rng.random((3, 4)) < 0.3, -1e9, 0.0).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x, "mask": mask})[0]
    model = nn.onnx.load(path)
    np.testing.assert_allclose(model(nn.Tensor(x), nn.Tensor(mask)).numpy(), want, rtol=1e-5, atol=1e-7)
    with pytest.raises(Exception, match="2 inputs"):
        model(nn.Tensor(x))


def test_unsupported_file_raises_with_the_reason(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x0a\x03abc")  # a well-formed message holding no graph
    with pytest.raises(Exception, match="bad.onnx"):
        nn.onnx.load(bad)
    with pytest.raises(TypeError):
        nn.onnx.load(3)
