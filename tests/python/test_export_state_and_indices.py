"""Model.export for models the first export path refused (issue 36): a
model with BatchNorm (its int32 num_batches_tracked is no part of an
inference graph and is left out, as torch.onnx does) and one whose input is
token indices (an Embedding first, input_dtype=np.int64). Each runs in
onnxruntime to the engine's outputs on random inputs."""
import numpy as np
import pytest

import nn_engine as ne

ort = pytest.importorskip("onnxruntime")


def run_onnx(path, x):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0], session.get_inputs()[0].type


class ConvBatchNorm(ne.Model):
    def __init__(self):
        super().__init__()
        self.conv = ne.Conv2d(2, 5, 3, padding=1)
        self.bn = ne.BatchNorm2d(5)
        self.fc = ne.Linear(5 * 7 * 9, 4)

    def forward(self, x):
        return self.fc(ne.flatten(ne.relu(self.bn(self.conv(x))), 1))


class TokenClassifier(ne.Model):
    def __init__(self):
        super().__init__()
        self.embed = ne.Embedding(37, 6)
        self.fc = ne.Linear(6 * 11, 3)

    def forward(self, tokens):
        return self.fc(ne.flatten(self.embed(tokens), 1))


def test_a_batchnorm_model_exports_and_runs_in_onnxruntime(tmp_path):
    rng = np.random.default_rng(5)
    model = ConvBatchNorm()
    for _ in range(3):  # running statistics away from their initial 0 and 1
        model(ne.Tensor(rng.normal(1.5, 2.0, (6, 2, 7, 9)).astype(np.float32)))
        ne.end_batch()
    model.eval()
    x = rng.normal(0.5, 1.5, (3, 2, 7, 9)).astype(np.float32)
    want = model(ne.Tensor(x)).sync()
    path = model.export(tmp_path / "bn.onnx", input_shape=[1, 2, 7, 9])
    got, input_type = run_onnx(path, x)
    assert input_type == "tensor(float)"
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_an_embedding_model_exports_integer_input(tmp_path):
    rng = np.random.default_rng(6)
    model = TokenClassifier()
    tokens = rng.integers(0, 37, (4, 11))
    want = model(ne.Tensor(tokens, dtype=np.int32)).sync()
    path = model.export(tmp_path / "tokens.onnx", input_shape=[1, 11], input_dtype=np.int64)
    got, input_type = run_onnx(path, tokens.astype(np.int32))
    assert input_type == "tensor(int32)"
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # A float trace of an index model says what it needs.
    with pytest.raises(RuntimeError, match="input_dtype=np.int64"):
        model.export(tmp_path / "float.onnx", input_shape=[1, 11])


def test_input_dtype_is_checked(tmp_path):
    model = TokenClassifier()
    with pytest.raises(TypeError, match="input_dtype"):
        model.export(tmp_path / "x.onnx", input_shape=[1, 11], input_dtype=np.float64)
    with pytest.raises(TypeError, match="input_dtype"):
        model.export(tmp_path / "x.onnx", input_shape=[1, 11], input_dtype="tokens")
    model.input_normalization = (0.5, 0.25)
    with pytest.raises(ValueError, match="normalisation"):
        model.export(tmp_path / "x.onnx", input_shape=[1, 11], input_dtype=np.int32)
