"""The Python training loop without per-step round trips: Metrics summed on
the device (nothing read back until collect) against NumPy, results that
learn their shape from the library only when asked, and the argument checks'
fast paths still refusing what they refused."""
import numpy as np
import pytest

import nn_engine as nn
from nn_engine import metrics as metrics_module
from nn_engine._lib import lib
from nn_engine.data import DataLoader, TensorDataset

RNG = np.random.default_rng(26)


def numpy_cross_entropy(logits, labels):
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels].mean()


def devices():
    usable = {d.backend for d in nn.devices() if d.usable}
    return ["cpu"] + (["vulkan"] if "vulkan" in usable else [])


class CountingReads:
    """lib.nn_tensor_read with a count of its calls."""

    def __init__(self, monkeypatch):
        self.calls, read = 0, lib.nn_tensor_read

        def counted(*args):
            self.calls += 1
            return read(*args)
        monkeypatch.setattr(lib, "nn_tensor_read", counted)


@pytest.mark.parametrize("device", devices())
def test_device_metrics_read_nothing_until_collect(monkeypatch, device):
    # Awkward batches (a last one of 1), ties among the logits (the first is the prediction).
    logits = RNG.standard_normal((23, 7)).astype(np.float32)
    logits[3, 2] = logits[3, 5] = logits[3].max() + 1
    labels = RNG.integers(0, 7, 23).astype(np.int32)
    labels[3] = 2
    loader = DataLoader(TensorDataset(logits, labels), batch_size=11, device=device)
    reads = CountingReads(monkeypatch)
    metrics = nn.Metrics()
    want_losses = []
    for (xb, yb), start in zip(loader, (0, 11, 22)):
        loss = nn.softmax_ce(xb, yb)
        metrics.update(loss, xb, yb)
        want_losses.append(numpy_cross_entropy(logits[start:start + 11], labels[start:start + 11]))
        nn.end_batch()
    assert reads.calls == 0, "Metrics.update read from the device"
    mean_loss, accuracy = metrics.collect(23)
    assert mean_loss == pytest.approx(np.mean(want_losses), rel=1e-5)
    assert accuracy == np.count_nonzero(logits.argmax(axis=1) == labels) / 23
    assert metrics.correct == np.count_nonzero(logits.argmax(axis=1) == labels)
    # collect() restarts nothing by itself; reset() does.
    assert metrics.collect(23) == (mean_loss, accuracy)
    metrics.reset()
    assert metrics.collect(23) == (0.0, 0.0)


def test_device_and_host_labels_add_up():
    logits = RNG.standard_normal((10, 4)).astype(np.float32)
    labels = RNG.integers(0, 4, 10).astype(np.int32)
    metrics = nn.Metrics()
    first, first_labels = nn.Tensor(logits[:5]), nn.Tensor(labels[:5], dtype=np.int32)
    metrics.update(nn.softmax_ce(first, first_labels), first, first_labels)  # on the device
    metrics.update(nn.softmax_ce(nn.Tensor(logits[5:]), labels[5:]), nn.Tensor(logits[5:]), labels[5:])  # NumPy labels
    want = np.mean([numpy_cross_entropy(logits[:5], labels[:5]), numpy_cross_entropy(logits[5:], labels[5:])])
    mean_loss, accuracy = metrics.collect(10)
    assert mean_loss == pytest.approx(want, rel=1e-5)
    assert accuracy == np.count_nonzero(logits.argmax(axis=1) == labels) / 10
    with pytest.raises(ValueError, match="3 labels for 5 rows"):
        metrics.update(nn.softmax_ce(nn.Tensor(logits[:5]), labels[:5]), nn.Tensor(logits[:5]),
                       nn.Tensor(labels[:3], dtype=np.int32))


def test_device_counts_are_read_back_before_float32_loses_them(monkeypatch):
    # The device sums are float32; past a bound of rows they are added to the host's and restarted.
    monkeypatch.setattr(metrics_module, "_EXACT_ROWS", 12)
    logits = RNG.standard_normal((40, 3)).astype(np.float32)
    labels = RNG.integers(0, 3, 40).astype(np.int32)
    reads = CountingReads(monkeypatch)
    metrics = nn.Metrics()
    for i in range(0, 40, 5):
        xb, yb = nn.Tensor(logits[i:i + 5]), nn.Tensor(labels[i:i + 5], dtype=np.int32)
        metrics.update(nn.softmax_ce(xb, yb), xb, yb)
        nn.end_batch()
    assert reads.calls > 0  # restarted along the way
    assert metrics.correct == np.count_nonzero(logits.argmax(axis=1) == labels)
    want = np.mean([numpy_cross_entropy(logits[i:i + 5], labels[i:i + 5]) for i in range(0, 40, 5)])
    assert metrics.collect(40)[0] == pytest.approx(want, rel=1e-5)


def test_results_learn_their_shape_when_asked():
    x = nn.Tensor(RNG.standard_normal((2, 3, 9, 7)).astype(np.float32))
    w = nn.Tensor(RNG.standard_normal((5, 3, 3, 2)).astype(np.float32))
    y = nn.relu(nn.conv2d(x, w, stride=2))
    assert y.shape == (2, 5, 4, 3) and y.dtype == np.float32 and y.numpy().shape == (2, 5, 4, 3)
    pooled = nn.maxpool2d(nn.conv2d(x, w))  # a result whose shape was never asked
    nn.end_batch()
    assert "freed" in repr(pooled)
    with pytest.raises(RuntimeError, match="earlier step"):
        pooled.shape


@pytest.mark.parametrize("bad, error", [(True, TypeError), (2.0, TypeError), (0, ValueError), (2**31, ValueError),
                                        ((1, True), TypeError), ((1, 2, 3), ValueError)])
def test_fast_argument_checks_refuse_as_before(bad, error):
    x = nn.Tensor(np.ones((1, 1, 5, 5), np.float32))
    w = nn.Tensor(np.ones((1, 1, 2, 2), np.float32))
    with pytest.raises(error, match="conv2d: stride"):
        nn.conv2d(x, w, stride=bad)
