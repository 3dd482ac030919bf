"""ONNX import (nn_onnx_import, issue 38): graphs PyTorch exports, imported
by nn-engine, compute what onnxruntime and PyTorch compute, on the CPU and
on Vulkan; state_dict names survive; malformed files are refused with a
message that names the problem."""
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torchvision
from onnx import TensorProto, helper

from conftest import FIXTURE

TOL = 1e-4
DEVICES = ["cpu", "vulkan"]


def run_import(onnx_path, x, tmp_path, device="cpu", train=False, expect_ok=True):
    """nn-engine's output for x from the imported file, and its state listing."""
    inp, out = tmp_path / "in.bin", tmp_path / "out.bin"
    x.astype("<f4").tofile(inp)
    env = dict(os.environ, NN_IO_FIXTURE_DEVICE=device)
    done = subprocess.run([str(FIXTURE), "import", str(onnx_path), str(inp), str(out), *map(str, x.shape),
                           *(["train"] if train else [])], capture_output=True, text=True, env=env)
    if not expect_ok:
        assert done.returncode != 0, "a malformed file was imported"
        return done.stderr
    assert done.returncode == 0, done.stderr
    names = [line.split(":")[0] for line in done.stdout.splitlines()]
    return np.fromfile(out, dtype="<f4"), names


def export(model, x, path, training=False):
    kwargs = {"training": torch.onnx.TrainingMode.TRAINING, "do_constant_folding": False} if training else {}
    torch.onnx.export(model, torch.from_numpy(x), str(path), opset_version=17, input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": {0: "batch"}}, **kwargs)


def relative_error(got, want):
    return np.abs(got - want.ravel()).max() / max(np.abs(want).max(), 1e-6)


@pytest.mark.parametrize("training", [False, True], ids=["eval-export", "train-export"])
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
@pytest.mark.parametrize("device", DEVICES)
def test_torchvision_export_matches_onnxruntime(tmp_path, name, device, training):
    """torchvision's models on an awkward image size, batch 3: an eval-mode
    export (BatchNorm folded into the convolutions by the exporter) run in
    evaluation mode, a training-mode export (BatchNorm kept, normalising
    with the batch's statistics, as onnxruntime runs it) in training mode;
    PyTorch's own output agrees too."""
    torch.manual_seed(3)
    extra = {"dropout": 0.0} if name == "mobilenet_v2" else {}  # no random masks to compare in training mode
    model = getattr(torchvision.models, name)(num_classes=10, **extra).train(training)
    with torch.no_grad():  # BatchNorm other than its initial identity, so evaluation mode computes something
        for bn in (m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.2, 0.2)
    x = np.random.default_rng(5).standard_normal((3, 3, 37, 34)).astype(np.float32)
    path = tmp_path / f"{name}.onnx"
    export(model, x, path, training=training)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    got, names = run_import(path, x, tmp_path, device, train=training)
    assert relative_error(got, want) < TOL
    with torch.no_grad():
        assert relative_error(got, model(torch.from_numpy(x)).numpy()) < TOL
    if training:
        assert sorted(names) == sorted(k for k in model.state_dict() if not k.endswith("num_batches_tracked"))


class SmallNet(torch.nn.Module):
    """BatchNorm, a residual, GELU, dropout, pooling and a linear head."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(8)
        self.block = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8))
        self.pool = torch.nn.MaxPool2d(2)
        self.drop = torch.nn.Dropout(0.0)
        self.head = torch.nn.Linear(8 * 5 * 6, 7)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = torch.nn.functional.gelu(x + self.block(x), approximate="tanh")
        x = self.drop(self.pool(x))
        return torch.log_softmax(self.head(x.view(x.size(0), -1)), dim=1)


@pytest.mark.parametrize("device", DEVICES)
def test_training_export_keeps_names_and_follows_mode(tmp_path, device):
    """A training-mode export keeps BatchNorm and PyTorch's state_dict names;
    the imported module normalises with the batch's statistics in training
    mode and with the running ones in evaluation mode, as PyTorch does."""
    torch.manual_seed(7)
    model = SmallNet()
    with torch.no_grad():  # running statistics other than the initial ones
        for bn in (model.bn, model.block[1]):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    x = np.random.default_rng(11).standard_normal((5, 3, 11, 13)).astype(np.float32)
    path = tmp_path / "small.onnx"
    export(model, x, path, training=True)
    for train in (False, True):
        got, names = run_import(path, x, tmp_path, device, train=train)
        model.train(train)
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        assert relative_error(got, want) < TOL, f"training={train}"
    state = [k for k in model.state_dict() if not k.endswith("num_batches_tracked")]
    assert sorted(names) == sorted(state)


@pytest.mark.parametrize("device", DEVICES)
def test_imported_model_trains_as_pytorch_and_exports_again(tmp_path, device):
    """A training-mode export of SmallNet (BatchNorm, a residual, GELU),
    imported and trained 20 SGD steps on one batch, follows PyTorch's
    losses; exported again, onnxruntime computes our evaluation output."""
    torch.manual_seed(19)
    model = SmallNet()
    rng = np.random.default_rng(23)
    x = rng.standard_normal((6, 3, 11, 13)).astype(np.float32)
    labels = rng.integers(0, 7, 6).astype(np.int32)
    path = tmp_path / "small.onnx"
    export(model, x, path, training=True)
    labels.astype("<i4").tofile(tmp_path / "labels.bin")
    inp, losses_path, again = tmp_path / "in.bin", tmp_path / "losses.bin", tmp_path / "again.onnx"
    x.astype("<f4").tofile(inp)
    env = dict(os.environ, NN_IO_FIXTURE_DEVICE=device)
    done = subprocess.run([str(FIXTURE), "import", str(path), str(inp), str(losses_path), *map(str, x.shape), "fit", "20",
                           str(tmp_path / "labels.bin"), "0.05", str(again)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    ours = np.fromfile(losses_path, dtype="<f4")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model.train()
    theirs = []
    for _ in range(20):
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(labels).long())
        theirs.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    np.testing.assert_allclose(ours, theirs, rtol=TOL)
    assert theirs[-1] < 0.5 * theirs[0]  # it learned: the comparison is not of a flat line
    exported = ort.InferenceSession(str(again), providers=["CPUExecutionProvider"])
    want = exported.run(None, {exported.get_inputs()[0].name: x})[0]
    assert relative_error(np.fromfile(str(again) + ".out", dtype="<f4"), want) < TOL
    model.eval()
    with torch.no_grad():
        assert relative_error(np.fromfile(str(again) + ".out", dtype="<f4"), model(torch.from_numpy(x)).numpy()) < TOL


class Encoder(torch.nn.Module):
    """A small pre-norm transformer encoder classifier: attention with its
    packed projection, LayerNorm, GELU (exported in its Erf form), a mean
    over the sequence. Input [N, 1, S, 6], a sequence of S 6-vectors."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(6, 16)
        layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x.squeeze(1))).mean(dim=1))


@pytest.mark.parametrize("training", [False, True], ids=["eval-export", "train-export"])
@pytest.mark.parametrize("device", DEVICES)
def test_transformer_encoder_matches_onnxruntime(tmp_path, training, device):
    torch.manual_seed(13)
    model = Encoder().eval()
    x = np.random.default_rng(17).standard_normal((3, 1, 7, 6)).astype(np.float32)
    path = tmp_path / "encoder.onnx"
    export(model, x, path, training=training)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    got, names = run_import(path, x, tmp_path, device)
    assert relative_error(got, want) < TOL
    with torch.no_grad():
        assert relative_error(got, model(torch.from_numpy(x)).numpy()) < TOL
    if training:
        assert sorted(names) == sorted(model.state_dict())


def const(name, values, dtype=TensorProto.FLOAT):
    values = np.asarray(values)
    return helper.make_tensor(name, dtype, values.shape, values.ravel().tolist())


RNG = np.random.default_rng(41)
# One graph per operator form (input x [2, 4, 5, 6]): nodes, initializers, opset.
OP_GRAPHS = {
    "conv_transpose": ([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1],
                                         output_padding=[1, 1])],
                       [const("w", RNG.standard_normal((4, 3, 3, 3))), const("b", RNG.standard_normal(3))], 17),
    "resize_nearest": ([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest",
                                         coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
                       [const("s", [1.0, 1.0, 2.0, 1.5])], 17),
    "resize_linear": ([helper.make_node("Resize", ["x", "", "", "n"], ["y"], mode="linear",
                                        coordinate_transformation_mode="pytorch_half_pixel")],
                      [const("n", [2, 4, 7, 4], TensorProto.INT64)], 17),
    "resize_corners": ([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear",
                                         coordinate_transformation_mode="align_corners")],
                       [const("s", [1.0, 1.0, 1.6, 2.0])], 17),
    "max_min_sum_mean": ([helper.make_node("Max", ["x", "c"], ["a"]), helper.make_node("Min", ["a", "x", "d"], ["b"]),
                          helper.make_node("Sum", ["b", "x", "c"], ["e"]), helper.make_node("Mean", ["e", "x"], ["y"])],
                         [const("c", RNG.standard_normal((4, 1, 1))), const("d", [0.5])], 17),
    "reductions": ([helper.make_node("ReduceSum", ["x", "ax"], ["a"], keepdims=1),
                    helper.make_node("ReduceMax", ["x"], ["b"], axes=[1, 3], keepdims=1),
                    helper.make_node("ReduceMin", ["x"], ["c"], axes=[1, 3], keepdims=1),
                    helper.make_node("Add", ["a", "b"], ["d"]), helper.make_node("Sub", ["d", "c"], ["y"])],
                   [const("ax", [1, 3], TensorProto.INT64)], 17),
    "reciprocal_prelu_selu": ([helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Add", ["a", "one"], ["b"]),
                               helper.make_node("Reciprocal", ["b"], ["c"]), helper.make_node("PRelu", ["x", "slope"], ["d"]),
                               helper.make_node("Selu", ["d"], ["e"]), helper.make_node("Mul", ["c", "e"], ["y"])],
                              [const("one", [1.0]), const("slope", RNG.uniform(0.1, 0.5, (4, 1, 1)))], 17),
    "expand_split_concat": ([helper.make_node("ReduceMean", ["x"], ["m"], axes=[3], keepdims=1),
                             helper.make_node("Expand", ["m", "shape"], ["e"]),
                             helper.make_node("Split", ["x", "parts"], ["p", "q"], axis=1),
                             helper.make_node("Concat", ["q", "p"], ["c"], axis=1),
                             helper.make_node("Add", ["c", "e"], ["y"])],
                            [const("shape", [1, 1, 6], TensorProto.INT64), const("parts", [1, 3], TensorProto.INT64)], 17),
    "instance_norm": ([helper.make_node("InstanceNormalization", ["x", "g", "b"], ["y"], epsilon=1e-4)],
                      [const("g", RNG.standard_normal(4)), const("b", RNG.standard_normal(4))], 17),
    "group_norm": ([helper.make_node("GroupNormalization", ["x", "g", "b"], ["y"], num_groups=2, epsilon=1e-4)],
                   [const("g", RNG.standard_normal(2)), const("b", RNG.standard_normal(2))], 18),
}


# The same operators in opset 21's forms (axes as inputs, GroupNormalization's
# scale per channel), and opset 13's.
OP_GRAPHS.update({
    "opset21_reductions_group_norm": (
        [helper.make_node("ReduceMax", ["x", "ax"], ["a"], keepdims=1),
         helper.make_node("ReduceMean", ["x", "ax"], ["b"], keepdims=1),
         helper.make_node("Sub", ["a", "b"], ["c"]),
         helper.make_node("GroupNormalization", ["x", "g", "bias"], ["d"], num_groups=2, epsilon=1e-4),
         helper.make_node("Add", ["c", "d"], ["y"])],
        [const("ax", [1, 3], TensorProto.INT64), const("g", RNG.standard_normal(4)),
         const("bias", RNG.standard_normal(4))], 21),
    "opset13_conv_gemm": (
        [helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 0, 1, 0], strides=[2, 1], group=2),
         helper.make_node("Flatten", ["a"], ["f"]),
         helper.make_node("Gemm", ["f", "m", "v"], ["y"], transA=0, transB=0, alpha=0.5, beta=2.0)],
        [const("w", RNG.standard_normal((6, 2, 3, 2))), const("m", RNG.standard_normal((6 * 3 * 5, 7))),
         const("v", RNG.standard_normal(7))], 13),
    "opset13_split_squeeze": (
        [helper.make_node("Split", ["x", "parts"], ["p", "q"], axis=3),
         helper.make_node("ReduceMean", ["p"], ["m"], axes=[3], keepdims=1),
         helper.make_node("Squeeze", ["m", "three"], ["s"]),
         helper.make_node("Unsqueeze", ["s", "three"], ["u"]),
         helper.make_node("Mul", ["u", "q"], ["y"])],
        [const("parts", [2, 4], TensorProto.INT64), const("three", [3], TensorProto.INT64)], 13),
})


@pytest.mark.parametrize("name", sorted(OP_GRAPHS))
@pytest.mark.parametrize("device", DEVICES)
def test_operator_forms_match_onnxruntime(tmp_path, name, device):
    nodes, initializers, opset = OP_GRAPHS[name]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 5, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString())
    x = np.random.default_rng(len(name)).standard_normal((2, 4, 5, 6)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got, _ = run_import(path, x, tmp_path, device)
    assert got.size == want.size
    assert relative_error(got, want) < TOL


class TokenClassifier(torch.nn.Module):
    """Token indices in: an embedding, a GELU feed-forward, the mean over
    the sequence, a linear head; a row of the embedding picked by a constant
    index (a class token) added."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(11, 8)
        self.ff = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, tokens):
        h = self.embed(tokens) + self.embed.weight[3]
        h = h + torch.nn.functional.gelu(self.ff(h))
        return self.head(h.mean(dim=1))


@pytest.mark.parametrize("device", DEVICES)
def test_token_input_embedding_matches_onnxruntime(tmp_path, device):
    torch.manual_seed(37)
    model = TokenClassifier()
    tokens = np.random.default_rng(43).integers(0, 11, (3, 9))
    path = tmp_path / "tokens.onnx"
    torch.onnx.export(model, torch.from_numpy(tokens), str(path), opset_version=17, input_names=["tokens"],
                      dynamic_axes={"tokens": {0: "batch"}}, do_constant_folding=False)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"tokens": tokens})[0]
    inp, out = tmp_path / "tokens.bin", tmp_path / "out.bin"
    tokens.astype("<i4").tofile(inp)
    env = dict(os.environ, NN_IO_FIXTURE_DEVICE=device)
    done = subprocess.run([str(FIXTURE), "import", str(path), f"int32:{inp}", str(out), "3", "9", "0", "0"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert relative_error(np.fromfile(out, dtype="<f4"), want) < TOL
    names = [line.split(":")[0] for line in done.stdout.splitlines()]
    assert sorted(names) == sorted(model.state_dict())


@pytest.mark.parametrize("op,axis,keepdims", [("ArgMax", 1, 0), ("ArgMin", -1, 1)])
@pytest.mark.parametrize("device", DEVICES)
def test_arg_extremes_match_onnxruntime(tmp_path, op, axis, keepdims, device):
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], axis=axis, keepdims=keepdims)], "arg",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 5, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    path = tmp_path / "arg.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    x = np.random.default_rng(61).standard_normal((2, 4, 5, 6)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    run_import(path, x, tmp_path, device)
    got = np.fromfile(tmp_path / "out.bin", dtype="<i4")  # int32 indices
    np.testing.assert_array_equal(got, want.ravel())


def tiny_model(nodes, initializers=(), opset=17, inputs=None, outputs=None):
    graph = helper.make_graph(
        nodes, "tiny", inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        outputs or [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])], list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def refused(tmp_path, data):
    path = tmp_path / "bad.onnx"
    path.write_bytes(data)
    x = np.zeros((1, 2, 4, 4), np.float32)
    return run_import(path, x, tmp_path, expect_ok=False)


def test_malformed_files_are_refused_by_name(tmp_path):
    good = tiny_model([helper.make_node("Relu", ["x"], ["y"], name="act")]).SerializeToString()
    assert "truncated" in refused(tmp_path, good[:-3])
    assert "no graph" in refused(tmp_path, b"")
    unknown = tiny_model([helper.make_node("Erf", ["x"], ["y"], name="erf_7")])
    message = refused(tmp_path, unknown.SerializeToString())
    assert "erf_7" in message and "Erf" in message and "opset 17" in message
    missing = tiny_model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")])
    assert "'w'" in refused(tmp_path, missing.SerializeToString())
    cycle = tiny_model([helper.make_node("Relu", ["z"], ["y"], name="a"), helper.make_node("Relu", ["y"], ["z"], name="b")])
    assert "not in order or form a cycle" in refused(tmp_path, cycle.SerializeToString())
    huge = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 20, 1 << 20, 1 << 20])
    big = tiny_model([helper.make_node("Add", ["x", "w"], ["y"])], [huge])
    assert "too large" in refused(tmp_path, big.SerializeToString())
    short = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3], float_data=[1.0, 2.0])
    assert "holds 2 values" in refused(tmp_path, tiny_model([helper.make_node("Add", ["x", "w"], ["y"])], [short])
                                       .SerializeToString())
    text = TensorProto(name="w", data_type=TensorProto.STRING, dims=[1], string_data=[b"a"])
    assert "data type 8" in refused(tmp_path, tiny_model([helper.make_node("Add", ["x", "w"], ["y"])], [text])
                                    .SerializeToString())
    old = tiny_model([helper.make_node("Relu", ["x"], ["y"])], opset=9)
    assert "opset 9 is not supported" in refused(tmp_path, old.SerializeToString())
    assert "is a folder" in run_import(tmp_path, np.zeros((1, 2, 4, 4), np.float32), tmp_path, expect_ok=False)
    assert "cannot open" in run_import(tmp_path / "absent.onnx", np.zeros((1, 2, 4, 4), np.float32), tmp_path,
                                       expect_ok=False)


def test_imported_graph_matches_onnx_checker(tmp_path):
    """The tiny graphs above are valid ONNX, so the refusals are the importer's."""
    onnx.checker.check_model(tiny_model([helper.make_node("Relu", ["x"], ["y"])]), full_check=True)
