"""nn.TransformerEncoderLayer and nn.TransformerEncoder against torch 1.13's:
the same state_dict names, torch's weights loaded, the same outputs and
gradients, post-norm and pre-norm, ReLU and GELU, batch first or not, a
causal mask; a stack whose layers start as copies; what is not supported
is refused by name."""
import numpy as np
import pytest
import torch

import nn_engine as ne
import nn_engine.nn as nn


def _data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _close(ours, theirs, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("norm_first, activation, batch_first, causal",
                         [(False, "relu", True, False), (True, "gelu", True, True), (False, "gelu", False, True)])
def test_encoder_loads_torch_weights_and_matches_it(norm_first, activation, batch_first, causal):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(12, 3, dim_feedforward=20, dropout=0.0, activation=activation,
                                             batch_first=batch_first, norm_first=norm_first)
    theirs = torch.nn.TransformerEncoder(layer, 2, norm=torch.nn.LayerNorm(12), enable_nested_tensor=False)
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(12, 3, dim_feedforward=20, dropout=0.0,
                                                            activation=activation, batch_first=batch_first,
                                                            norm_first=norm_first), 2, norm=nn.LayerNorm(12))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    n, t = 2, 7
    x = _data(*((n, t, 12) if batch_first else (t, n, 12)))
    mask = np.triu(np.full((t, t), -np.inf, np.float32), 1) if causal else None
    xo, xt = ne.tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    yo = ours(xo, mask=mask)
    yt = theirs(xt, mask=None if mask is None else torch.from_numpy(mask))
    _close(yo, yt)
    w = _data(*yo.shape, seed=1)
    (yo * ne.tensor(w)).sum().backward()
    (yt * torch.from_numpy(w)).sum().backward()
    _close(xo.grad, xt.grad, rtol=1e-3, atol=1e-4)
    mine = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        _close(mine[name].grad, p.grad, rtol=1e-3, atol=1e-4)


def test_stack_layers_start_as_copies_and_unsupported_is_refused():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    stack = nn.TransformerEncoder(layer, 3)
    first = stack.layers[0].state_dict()
    for other in stack.layers[1:]:
        for k, v in other.state_dict().items():
            np.testing.assert_array_equal(v.numpy(), first[k].numpy())
    assert stack.layers[1].linear1.weight is not stack.layers[0].linear1.weight
    with pytest.raises(ValueError, match="dropout=0.0"):
        nn.TransformerEncoderLayer(8, 2)
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerEncoderLayer(8, 2, dropout=0.0, activation="swish")
    with pytest.raises(ValueError, match="src_key_padding_mask"):
        layer(ne.tensor(_data(1, 3, 8)), src_key_padding_mask=np.zeros((1, 3), bool))
    with pytest.raises(ValueError, match="num_layers"):
        nn.TransformerEncoder(layer, 0)
