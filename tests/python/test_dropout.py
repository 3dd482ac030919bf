"""nn_engine.dropout and the Dropout layer: PyTorch's semantics (zero with
probability p, scale the rest by 1/(1-p)), identity after Model.eval(), the
gradient is mask * scale * dy, masks repeat after manual_seed, bad p raises."""
import numpy as np
import pytest

import nn_engine as nn
from nn_engine import Dropout, Model, Tensor

RNG = np.random.default_rng(21)


def test_dropout_keep_rate_and_scale():
    x = RNG.uniform(0.5, 1.5, size=(257, 389)).astype(np.float32)
    y = nn.dropout(Tensor(x), 0.3).numpy()
    kept = y != 0
    n = x.size
    assert abs(kept.sum() - 0.7 * n) <= 6 * np.sqrt(n * 0.3 * 0.7)
    np.testing.assert_array_equal(y[kept], x[kept] * np.float32(1 / 0.7))


def test_dropout_gradient_is_mask_times_scale():
    x = Tensor(RNG.uniform(0.5, 1.5, size=(7, 13)).astype(np.float32), requires_grad=True)
    w = RNG.standard_normal((7, 13)).astype(np.float32)
    y = nn.dropout(x, 0.5)
    nn.sum(nn.mul(y, Tensor(w))).backward()
    mask = y.numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(mask, 2.0 * w, 0.0), rtol=1e-6)


class Net(Model):
    def __init__(self):
        super().__init__()
        self.drop = Dropout(0.5)

    def forward(self, x):
        return self.drop(x)


def test_dropout_layer_follows_train_and_eval():
    x = RNG.standard_normal((5, 40)).astype(np.float32)
    net = Net()
    assert net.named_parameters() == []
    assert (net(Tensor(x)).numpy() == 0).sum() > 20
    net.eval()
    np.testing.assert_array_equal(net(Tensor(x)).numpy(), x)
    net.train()
    assert (net(Tensor(x)).numpy() == 0).sum() > 20
    np.testing.assert_array_equal(nn.dropout(Tensor(x), 0.9, training=False).numpy(), x)


def test_dropout_masks_repeat_after_manual_seed_and_differ_between_draws():
    x = Tensor(np.ones((64, 64), dtype=np.float32))
    nn.manual_seed(5)
    a, b = nn.dropout(x, 0.5).numpy(), nn.dropout(x, 0.5).numpy()
    nn.manual_seed(5)
    c = nn.dropout(x, 0.5).numpy()
    np.testing.assert_array_equal(a, c)
    assert (a != b).sum() > 500


@pytest.mark.parametrize("p", [-0.1, 1.0, 2.0, float("nan")])
def test_dropout_rejects_p_outside_0_1(p):
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        nn.dropout(Tensor(np.ones(3, dtype=np.float32)), p)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        Dropout(p)
    with pytest.raises(TypeError):
        nn.dropout(Tensor(np.ones(3, dtype=np.float32)), "half")
