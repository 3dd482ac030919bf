"""BatchNorm1d/2d, LayerNorm, GroupNorm and their functional forms against
PyTorch 1.13: values and gradients of input, weight and bias; running
statistics after three training steps (momentum 0.1 and None) and the
eval-mode output; state_dict keys, torch's load_state_dict(strict=True) of
ours and ours of torch's (its int64 num_batches_tracked); errors."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import nn_engine as nn  # noqa: E402
from nn_engine import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, Model, Tensor  # noqa: E402

RNG = np.random.default_rng(5)


def _data(*shape, lo=-2.0, hi=3.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def _set_affine(ours, theirs):
    """Random weight and bias in both layers (not 1 and 0, so they matter)."""
    if ours.weight is None:
        return
    w = _data(*ours.weight.shape, lo=0.5, hi=1.5)
    b = _data(*ours.bias.shape, lo=-0.5, hi=0.5) if ours.bias is not None else None
    ours.weight.upload(w)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(w))
        if b is not None:
            ours.bias.upload(b)
            theirs.bias.copy_(torch.from_numpy(b))


def _compare(ours, theirs, shape, train=True):
    """Output and gradients of sum(y * r) for input, weight, bias."""
    _set_affine(ours, theirs)
    x, r = _data(*shape), _data(*shape, lo=-1, hi=1)
    ours.training = train
    theirs.train(train)
    xo = Tensor(x, requires_grad=True)
    yo = ours(xo)
    nn.sum(nn.mul(yo, Tensor(r))).backward()
    xt = torch.from_numpy(x).requires_grad_()
    yt = theirs(xt)
    (yt * torch.from_numpy(r)).sum().backward()
    np.testing.assert_allclose(yo.numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-3, atol=1e-4)
    if ours.weight is not None:
        np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-3, atol=1e-4)
    if ours.bias is not None:
        np.testing.assert_allclose(ours.bias.grad.numpy(), theirs.bias.grad.numpy(), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("shape", [(2, 3, 5, 5), (1, 3, 7, 7), (4, 3, 1, 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_batchnorm2d_train_values_and_gradients(shape, affine):
    _compare(BatchNorm2d(3, affine=affine), torch.nn.BatchNorm2d(3, affine=affine), shape)


@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 7), (1, 3, 2)])
def test_batchnorm1d_train_values_and_gradients(shape):
    _compare(BatchNorm1d(3), torch.nn.BatchNorm1d(3), shape)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_running_statistics_three_steps_then_eval(momentum):
    ours, theirs = BatchNorm2d(3, momentum=momentum), torch.nn.BatchNorm2d(3, momentum=momentum)
    _set_affine(ours, theirs)
    for step in range(3):
        x = _data(2, 3, 5, 5, lo=step - 1.0, hi=2.0 * step + 1)
        ours(Tensor(x))
        theirs(torch.from_numpy(x))
        nn.end_batch()
    np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-5, atol=1e-6)
    assert ours.num_batches_tracked.numpy().tolist() == [3] == [int(theirs.num_batches_tracked)]
    _compare(ours, theirs, (2, 3, 5, 5), train=False)  # eval: running statistics, gradients through them
    assert ours.num_batches_tracked.numpy().tolist() == [3]


def test_batchnorm_without_running_stats_uses_batch_statistics_in_eval():
    ours = BatchNorm1d(3, track_running_stats=False)
    theirs = torch.nn.BatchNorm1d(3, track_running_stats=False)
    _compare(ours, theirs, (6, 3, 4), train=False)
    assert set(Holder(ours).state_dict()) == {"bn.weight", "bn.bias"}


@pytest.mark.parametrize("shape,normalized", [((3, 5, 7), 7), ((3, 5, 7), (5, 7)), ((4, 1), 1), ((1, 13), (13,))])
@pytest.mark.parametrize("affine", [True, False])
def test_layernorm_values_and_gradients(shape, normalized, affine):
    _compare(LayerNorm(normalized, elementwise_affine=affine), torch.nn.LayerNorm(normalized, elementwise_affine=affine),
             shape)


@pytest.mark.parametrize("groups,channels,shape", [(3, 6, (2, 6, 5, 5)), (1, 3, (1, 3, 7)), (3, 3, (2, 3, 5)),
                                                   (2, 4, (1, 4, 3, 3))])
@pytest.mark.parametrize("affine", [True, False])
def test_groupnorm_values_and_gradients(groups, channels, shape, affine):
    _compare(GroupNorm(groups, channels, affine=affine), torch.nn.GroupNorm(groups, channels, affine=affine), shape)


def test_functional_forms_match_torch():
    x, w, b = _data(2, 6, 5), _data(6, lo=0.5, hi=1.5), _data(6)
    rm, rv = _data(6, lo=-0.5, hi=0.5), _data(6, lo=0.5, hi=2)
    F = torch.nn.functional
    tx, tw, tb = map(torch.from_numpy, (x, w, b))
    got = nn.batch_norm(Tensor(x), Tensor(rm), Tensor(rv), Tensor(w), Tensor(b), training=False).numpy()
    want = F.batch_norm(tx, torch.from_numpy(rm), torch.from_numpy(rv), tw, tb, training=False)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
    rm_ours, rm_torch = Tensor(rm, track=False), torch.from_numpy(rm.copy())
    rv_ours, rv_torch = Tensor(rv, track=False), torch.from_numpy(rv.copy())
    got = nn.batch_norm(Tensor(x), rm_ours, rv_ours, training=True, momentum=0.3).numpy()
    want = F.batch_norm(tx, rm_torch, rv_torch, training=True, momentum=0.3)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rm_ours.numpy(), rm_torch.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv_ours.numpy(), rv_torch.numpy(), rtol=1e-5, atol=1e-6)
    got = nn.layer_norm(Tensor(x), (6, 5), eps=1e-3).numpy()
    np.testing.assert_allclose(got, F.layer_norm(tx, (6, 5), eps=1e-3).numpy(), rtol=1e-5, atol=1e-5)
    got = nn.group_norm(Tensor(x), 2, Tensor(w), Tensor(b)).numpy()
    np.testing.assert_allclose(got, F.group_norm(tx, 2, tw, tb).numpy(), rtol=1e-5, atol=1e-5)


class Holder(Model):
    def __init__(self, bn):
        super().__init__()
        self.bn = bn

    def forward(self, x):
        return self.bn(x)


class TorchHolder(torch.nn.Module):
    def __init__(self, bn):
        super().__init__()
        self.bn = bn


def test_state_dict_round_trips_with_torch_both_ways(tmp_path):
    ours, theirs = Holder(BatchNorm2d(3)), TorchHolder(torch.nn.BatchNorm2d(3))
    for step in range(2):
        ours(Tensor(_data(2, 3, 5, 5)))
        nn.end_batch()
    state = ours.state_dict()
    assert set(state) == set(theirs.state_dict()) == {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                                                      "bn.num_batches_tracked"}
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in state.items()}, strict=True)
    assert int(theirs.bn.num_batches_tracked) == 2
    np.testing.assert_array_equal(theirs.bn.running_var.numpy(), state["bn.running_var"])
    # torch's state (an int64 0-d counter) into ours, through arrays and through a safetensors file
    theirs.bn.num_batches_tracked.fill_(7)
    with torch.no_grad():
        theirs.bn.running_mean.uniform_()
    fresh = Holder(BatchNorm2d(3))
    fresh.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert fresh.bn.num_batches_tracked.numpy().tolist() == [7]
    np.testing.assert_array_equal(fresh.bn.running_mean.numpy(), theirs.bn.running_mean.numpy())
    safetensors = pytest.importorskip("safetensors.torch")
    path = str(tmp_path / "bn.safetensors")
    safetensors.save_file(dict(theirs.state_dict()), path)
    loaded = Holder(BatchNorm2d(3)).load(path)
    assert loaded.bn.num_batches_tracked.numpy().tolist() == [7]
    ours.save(path)
    theirs.load_state_dict(safetensors.load_file(path), strict=True)
    assert int(theirs.bn.num_batches_tracked) == 2


def test_train_and_eval_switch_the_batchnorm():
    model = Holder(BatchNorm1d(3))
    model.eval()
    assert model.bn.training is False
    x = _data(4, 3)
    np.testing.assert_allclose(model(Tensor(x)).numpy(), x / np.sqrt(1 + 1e-5), rtol=1e-6)
    assert model.bn.num_batches_tracked.numpy().tolist() == [0]
    model.train()
    assert model.bn.training is True


def test_errors_name_the_function_and_values():
    with pytest.raises(ValueError, match="expected more than 1 value per channel when training, got input size"):
        BatchNorm1d(3)(Tensor(_data(1, 3)))
    with pytest.raises(ValueError, match=r"BatchNorm2d: expected 4D input \(got 3D input\)"):
        BatchNorm2d(3)(Tensor(_data(2, 3, 4)))
    with pytest.raises(ValueError, match="num_channels 6 must be divisible by num_groups 4"):
        GroupNorm(4, 6)
    with pytest.raises(ValueError, match="normalized_shape"):
        nn.layer_norm(Tensor(_data(2, 3)), (4,))
    with pytest.raises(ValueError, match="momentum"):
        BatchNorm2d(3, momentum=2.0)
    with pytest.raises(ValueError, match="num_groups 4 must be >= 1 and divide the 6 channels"):
        nn.group_norm(Tensor(_data(2, 6, 3)), 4)
