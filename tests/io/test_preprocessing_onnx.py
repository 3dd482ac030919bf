"""The normalisation travelling with the model (issue 26): `nnengine train
--save` writes it into the checkpoint's metadata, `nnengine export` puts it
in front of the ONNX graph, and onnxruntime on raw Fashion-MNIST pixels
(0..255 as float) matches `nnengine eval`'s accuracy; --no-normalize-in-graph
and Python's include_preprocessing=False leave it out. A three-channel
normalisation is checked against a NumPy reference through Python's export."""
import json
import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import nn_engine as nn
from nn_engine.datasets import load_idx_pair
from conftest import CLI
from test_zoo_cli import cli

FASHION = "/usr/share/datasets/fashion-mnist"


def run(path, x):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    import os
    if not os.path.isdir(FASHION):
        pytest.skip(f"needs Fashion-MNIST in {FASHION}")
    folder = tmp_path_factory.mktemp("fashion")
    weights = folder / "lenet.safetensors"
    cli("train", "lenet5", "--data", FASHION, "--epochs", 1, "--limit", 5003, "--device", "cpu",
        "--save", weights)
    return weights


def test_raw_pixels_through_the_exported_graph_match_nnengine_eval(trained, tmp_path):
    normalization, classes = nn.read_model_info(trained)
    (mean,), (std,) = normalization
    assert classes == [str(d) for d in range(10)]
    x, y = load_idx_pair(FASHION, "test")
    # eval with the saved normalisation: the accuracy the model has on normalised pixels
    done = cli("eval", "lenet5", "--weights", trained, "--data", FASHION, "--device", "cpu",
               "--normalize", f"{mean!r},{std!r}")
    eval_accuracy = float(re.search(r"accuracy\s+([0-9.]+)%", done.stdout + done.stderr).group(1))
    assert eval_accuracy > 50.0  # one short epoch learns well above chance (10%)

    graph = tmp_path / "lenet.onnx"
    cli("export", "lenet5", "--weights", trained, "--onnx", graph)
    model = onnx.load(str(graph))
    onnx.checker.check_model(model, full_check=True)
    assert [n.op_type for n in model.graph.node[:3]] == ["Div", "Sub", "Div"]
    assert json.loads({p.key: p.value for p in model.metadata_props}["nn_engine.classes"]) == classes
    raw = np.round(x * 255.0).astype(np.float32)  # the uint8 pixel values, as float
    logits = run(graph, raw)
    onnx_accuracy = 100.0 * np.mean(np.argmax(logits, 1) == y)
    assert abs(onnx_accuracy - eval_accuracy) <= 0.02, (onnx_accuracy, eval_accuracy)

    # Without the normalisation in the graph, the same logits from normalised input.
    plain = tmp_path / "plain.onnx"
    cli("export", "lenet5", "--weights", trained, "--onnx", plain, "--no-normalize-in-graph")
    assert onnx.load(str(plain)).graph.node[0].op_type == "Conv"
    normalised = ((raw[:257] / 255.0 - np.float32(mean)) / np.float32(std)).astype(np.float32)
    np.testing.assert_allclose(run(plain, normalised), logits[:257], rtol=1e-4, atol=1e-4)

    # Raw pixels into the graph without the normalisation: the silent failure of the issue.
    wrong = 100.0 * np.mean(np.argmax(run(plain, raw), 1) == y)
    assert wrong < eval_accuracy - 10.0


class Small(nn.Model):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 5 * 7, 3)

    def forward(self, x):
        return self.fc(nn.flatten(nn.relu(self.conv(x)), 1))


def test_three_channel_normalisation_in_python_export_matches_numpy(tmp_path):
    nn.manual_seed(3)
    model = Small().eval()
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    model.input_normalization = (mean, std)
    model.class_names = ["cat", "dog", "say \"hi\""]
    raw = np.random.default_rng(7).integers(0, 256, (2, 3, 5, 7)).astype(np.float32)
    expected_input = (raw / 255.0 - np.reshape(mean, (1, 3, 1, 1))) / np.reshape(std, (1, 3, 1, 1))
    expected = model(nn.Tensor(expected_input.astype(np.float32))).numpy()

    with_pre = tmp_path / "with.onnx"
    model.export(with_pre, input_shape=[1, 3, 5, 7])
    np.testing.assert_allclose(run(with_pre, raw), expected, rtol=1e-4, atol=1e-5)
    props = {p.key: p.value for p in onnx.load(str(with_pre)).metadata_props}
    assert json.loads(props["nn_engine.classes"]) == model.class_names

    without = tmp_path / "without.onnx"
    model.export(without, input_shape=[1, 3, 5, 7], include_preprocessing=False)
    np.testing.assert_allclose(run(without, expected_input.astype(np.float32)), expected, rtol=1e-4, atol=1e-5)

    model.input_normalization = ((0.5, 0.5), (0.2, 0.2))  # two channels for a three-channel input
    with pytest.raises(ValueError, match="2 channels"):
        model.export(tmp_path / "bad.onnx", input_shape=[1, 3, 5, 7])
    model.input_normalization = ((0.5,), (0.0,))
    with pytest.raises(ValueError, match="stds finite and > 0"):
        model.export(tmp_path / "bad.onnx", input_shape=[1, 3, 5, 7])
