"""softmax / log_softmax along a dimension and the losses exported to ONNX
(opset 17, static batch: the targets are constants of the traced batch):
each fixture model fn-NAME (tests/io/nn_io_fixture.c) passes onnx's full
checker, uses the operators named here, and onnxruntime computes what
nn-engine computes and what PyTorch 1.13 computes for the same targets."""
import numpy as np
import onnx
import pytest

torch = pytest.importorskip("torch")
TF = torch.nn.functional

from test_onnx_interop import export, run_ort  # noqa: E402
from conftest import engine_forward  # noqa: E402

WEIGHTS = torch.tensor([0.7, 1.6])


def class_targets(n):
    i = np.arange(n * 63)
    return torch.from_numpy(((i // 63) * 7 + (i // 9 % 7) * 3 + i % 9) % 3).reshape(n, 7, 9)


def float_targets(n):
    return torch.from_numpy(np.sin(np.arange(n * 126, dtype=np.float64)).astype(np.float32)).reshape(n, 2, 7, 9)


MODELS = {
    "softmax_dim1": ({"Softmax"}, lambda x: TF.softmax(x, 1)),
    "log_softmax1": ({"LogSoftmax"}, lambda x: TF.log_softmax(x, 1)),
    "log_softmax_neg2": ({"LogSoftmax"}, lambda x: TF.log_softmax(x, -2)),
    "nll_mean": ({"NegativeLogLikelihoodLoss"},
                 lambda x: TF.nll_loss(TF.log_softmax(x, 1), class_targets(len(x)), ignore_index=2)),
    "nll_none_weighted": ({"NegativeLogLikelihoodLoss"},
                          lambda x: TF.nll_loss(TF.log_softmax(x, 1), class_targets(len(x)), WEIGHTS, ignore_index=2,
                                                reduction="none")),
    "cross_entropy_mean_weighted": ({"LogSoftmax", "NegativeLogLikelihoodLoss"},
                                    lambda x: TF.cross_entropy(x, class_targets(len(x)), WEIGHTS, ignore_index=2)),
    "cross_entropy_smoothing_mean": ({"NegativeLogLikelihoodLoss", "Gather", "ReduceSum"},
                                     lambda x: TF.cross_entropy(x, class_targets(len(x)), WEIGHTS, ignore_index=2,
                                                                label_smoothing=0.1)),
    "cross_entropy_smoothing_sum": ({"NegativeLogLikelihoodLoss", "ReduceSum"},
                                    lambda x: TF.cross_entropy(x, class_targets(len(x)), ignore_index=2,
                                                               reduction="sum", label_smoothing=0.1)),
    "cross_entropy_smoothing_none": ({"NegativeLogLikelihoodLoss"},
                                     lambda x: TF.cross_entropy(x, class_targets(len(x)), WEIGHTS, ignore_index=2,
                                                                reduction="none", label_smoothing=0.1)),
    "mse_loss": (set(), lambda x: TF.mse_loss(x, float_targets(len(x)))),
    "l1_loss": ({"Abs"}, lambda x: TF.l1_loss(x, float_targets(len(x)), reduction="sum")),
    "smooth_l1_loss": ({"Abs", "Clip"}, lambda x: TF.smooth_l1_loss(x, float_targets(len(x)), reduction="none",
                                                                     beta=0.5)),
}


@pytest.mark.parametrize("model", sorted(MODELS))
def test_softmax_and_loss_exports_match_onnxruntime_and_torch(tmp_path, model):
    operators, reference = MODELS[model]
    weights, onnx_path = export(tmp_path, f"fn-{model}", static=True)
    m = onnx.load(str(onnx_path))
    onnx.checker.check_model(m, full_check=True)
    assert m.opset_import[0].version == 17
    types = {n.op_type for n in m.graph.node}
    assert operators <= types, types
    x = (np.random.default_rng(len(model)).standard_normal((3, 2, 7, 9)) * 3).astype(np.float32)
    got = run_ort(onnx_path, x).ravel()
    ours = engine_forward(tmp_path, f"fn-{model}", weights, x)
    want = reference(torch.from_numpy(x)).detach().numpy().ravel()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours, want, rtol=1e-5, atol=1e-5)


def test_a_loss_with_a_dynamic_batch_is_refused(tmp_path):
    with pytest.raises(pytest.fail.Exception, match="targets of the traced batch"):
        export(tmp_path, "fn-nll_mean")
