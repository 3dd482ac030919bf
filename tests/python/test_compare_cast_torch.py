"""Comparisons, dtype conversions, integer sums, detach and clone from
Python against torch (issue 36): == < >= ... return 0/1 int32 tensors
(torch's booleans), broadcasting, with numbers, NaN; .float() .long()
.int() .to(dtype); (pred == y).sum().item() counts exactly."""
import numpy as np
import pytest
import torch

import nn_engine as ne

OPS = ["eq", "ne", "lt", "le", "gt", "ge"]
SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def values(rng, shape, integer):
    if integer:
        return rng.integers(-4, 5, shape).astype(np.int32)
    a = rng.integers(-3, 4, shape).astype(np.float32) * 0.5  # ties on purpose
    a.flat[::7] = np.nan
    return a


@pytest.mark.parametrize("integer", [False, True], ids=["float", "int"])
@pytest.mark.parametrize("op", OPS)
def test_comparisons_match_torch(op, integer):
    rng = np.random.default_rng(OPS.index(op) + 10 * integer)
    for shape_a, shape_b in [((37,), (37,)), ((5, 7), (7,)), ((3, 1, 9), (1, 4, 1)), ((2, 3, 1, 2, 1, 5), (3, 4, 2, 1, 1))]:
        a, b = values(rng, shape_a, integer), values(rng, shape_b, integer)
        ours = eval(f"ta {SYMBOLS[op]} tb", {"ta": ne.tensor(a), "tb": ne.tensor(b)})
        want = getattr(torch, op)(torch.from_numpy(a), torch.from_numpy(b)).numpy()
        assert ours.dtype == np.int32 and ours.shape == want.shape
        np.testing.assert_array_equal(ours.numpy(), want.astype(np.int32), err_msg=f"{shape_a} {op} {shape_b}")
        np.testing.assert_array_equal(getattr(ne, op)(ne.tensor(a), ne.tensor(b)).numpy(), want)
        # with a number on either side
        number = 1 if integer else 0.5
        np.testing.assert_array_equal(eval(f"ta {SYMBOLS[op]} number", {"ta": ne.tensor(a), "number": number}).numpy(),
                                      eval(f"a {SYMBOLS[op]} number", {"a": a, "number": number}))


def test_mixed_dtypes_compare_as_torch_promotes():
    ints, floats = np.array([1, 2, 3], np.int32), np.array([1.0, 2.5, 3.0], np.float32)
    np.testing.assert_array_equal((ne.tensor(ints) == ne.tensor(floats)).numpy(), [1, 0, 1])
    np.testing.assert_array_equal((ne.tensor(ints) < 2.5).numpy(), [1, 1, 0])  # a fraction makes it float


def test_accuracy_the_pytorch_way():
    rng = np.random.default_rng(3)
    logits, labels = rng.standard_normal((1000, 7)).astype(np.float32), rng.integers(0, 7, 1000)
    out, y = ne.tensor(logits), ne.tensor(labels)
    correct = (out.argmax(1) == y).sum().item()
    assert isinstance(correct, int) and correct == int((logits.argmax(1) == labels).sum())
    accuracy = (out.argmax(dim=1) == y).float().mean().item()
    assert accuracy == pytest.approx(correct / 1000, rel=1e-6)
    _, predicted = out.max(1)
    assert predicted.eq(y).sum().item() == correct


def test_casts_match_torch():
    x = np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 1e9, -7.0], np.float32)
    np.testing.assert_array_equal(ne.tensor(x).long().numpy(), torch.from_numpy(x).int().numpy())
    assert ne.tensor(x).int().dtype == np.int32 and ne.tensor(x).to(np.int64).dtype == np.int32
    big = np.array([16777217, -3, 2**31 - 1], np.int32)
    np.testing.assert_array_equal(ne.tensor(big).float().numpy(), torch.from_numpy(big).float().numpy())
    t = ne.tensor(x)
    assert t.float() is t and t.to("cpu" if t.device == "cpu" else t.device, np.float32) is t
    with pytest.raises(TypeError, match="float32 or int32"):
        t.type(np.float16)


def test_integer_sums_are_exact():
    big = np.full(3000, 2**14 + 1, np.int32)  # 49155000: beyond float32's exact integers
    assert ne.tensor(big).sum().item() == int(big.sum())
    m = np.arange(-50, 70, dtype=np.int32).reshape(8, 15)
    np.testing.assert_array_equal(ne.tensor(m).sum(dim=0).numpy(), m.sum(0))
    assert ne.tensor(m).sum(dim=1, keepdim=True).dtype == np.int32


def test_truth_values_detach_and_clone():
    one, many = ne.tensor(np.array([2.0], np.float32)), ne.tensor(np.zeros(3, np.float32))
    assert bool(one) and bool(one > 1) and not bool(one < 1)
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(many)
    assert (many == None) is False and (many != "x") is True  # noqa: E711 - not a tensor: identity
    w = ne.tensor(np.array([1.0, -2.0, 3.0], np.float32), requires_grad=True)
    c = w.clone()
    ne.sum(ne.mul(c, c)).backward()  # the clone passes the gradient back to w
    np.testing.assert_array_equal(w.grad.numpy(), 2 * np.array([1.0, -2.0, 3.0]))
    d = w.detach()
    assert not d.requires_grad and d.numpy().tolist() == [1.0, -2.0, 3.0]
    w.upload(np.zeros(3, np.float32))
    assert d.numpy().tolist() == [1.0, -2.0, 3.0]  # a copy here (torch's shares the storage)


def test_a_model_with_comparisons_and_casts_exports_to_onnxruntime(tmp_path):
    """A forward pass through a comparison, a cast and an integer sum exports
    (Greater, Cast, ReduceSum) and runs in onnxruntime to the same outputs."""
    ort = pytest.importorskip("onnxruntime")

    class Gated(ne.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = ne.nn.Linear(5, 4)

        def forward(self, x):
            h = self.fc(x)
            kept = (h > 0.1).float()                      # a mask from a comparison
            count = (h > 0).int().sum(dim=1, keepdim=True)  # an integer sum, cast back
            return h * kept + count.float()

    model = Gated()
    model.export(tmp_path / "gated.onnx", input_shape=[2, 5])
    x = np.random.default_rng(4).standard_normal((3, 5)).astype(np.float32)
    session = ort.InferenceSession(str(tmp_path / "gated.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, model(ne.tensor(x)).numpy(), rtol=1e-6, atol=1e-6)


def test_one_element_tensors_stand_in_for_numbers():
    loss, count = ne.tensor(np.array([0.123456], np.float32)), ne.tensor(np.array([3]))
    t_loss, t_count = torch.tensor(0.123456), torch.tensor(3)
    assert f"{loss:.4f}" == f"{t_loss:.4f}" and float(loss) == pytest.approx(float(t_loss))
    assert int(count) == int(t_count) and list(range(count)) == [0, 1, 2]
    with pytest.raises(TypeError, match="integer tensor"):
        range(loss)
    with pytest.raises(ValueError):
        float(ne.tensor(np.zeros(2, np.float32)))
