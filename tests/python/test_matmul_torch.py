"""Batched matmul, Linear of any rank, Embedding, scaled dot-product
attention and MultiheadAttention against PyTorch 1.13: values and gradients
of every input at awkward sizes, broadcast batches, 1-D operands, batch 1;
Embedding's padding row and repeated indices; attention with an additive
mask and causal; MultiheadAttention after loading torch's state_dict; the
errors the wrappers raise by name."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import nn_engine as nn  # noqa: E402
from nn_engine import Embedding, Linear, Model, MultiheadAttention, Tensor  # noqa: E402
from nn_engine import functional as F  # noqa: E402

RNG = np.random.default_rng(11)


def _data(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def _backward_both(yo, yt):
    """Backward of sum(y * r) on both sides, r random."""
    r = _data(*yt.shape)
    nn.sum(nn.mul(yo, Tensor(r))).backward()
    (yt * torch.from_numpy(r)).sum().backward()


def _close(ours, theirs, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.asarray(ours.numpy()).reshape(theirs.shape), theirs.detach().numpy(),
                               rtol=rtol, atol=atol)


@pytest.mark.parametrize("sa, sb", [
    ((2, 3, 4, 5), (5, 6)), ((3, 1, 4, 5), (2, 5, 7)), ((5,), (3, 5, 7)), ((3, 4, 5), (5,)),
    ((1, 3, 5), (1, 5, 2)), ((7, 5), (2, 3, 5, 3)), ((2, 1, 2, 3, 4), (3, 1, 4, 3)), ((4, 3), (3, 5)),
])
def test_matmul_matches_torch(sa, sb):
    a, b = _data(*sa), _data(*sb)
    ao, bo = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    at, bt = torch.from_numpy(a).requires_grad_(), torch.from_numpy(b).requires_grad_()
    yo, yt = F.matmul(ao, bo), torch.matmul(at, bt)
    assert tuple(yo.shape) == tuple(yt.shape)
    _close(yo, yt)
    _backward_both(yo, yt)
    _close(ao.grad, at.grad, rtol=1e-3, atol=1e-4)
    _close(bo.grad, bt.grad, rtol=1e-3, atol=1e-4)


def test_matmul_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"nn_matmul_batched.*\[2, 4, 5\].*\[3, 5, 6\]"):
        F.matmul(Tensor(_data(2, 4, 5)), Tensor(_data(3, 5, 6)))
    with pytest.raises(ValueError, match="transA and transB need 2-D"):
        F.matmul(Tensor(_data(2, 4, 5)), Tensor(_data(5, 6)), transA=True)


@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 1, 5), (2, 1, 3, 5), (5,)])
def test_linear_any_rank_matches_torch(shape):
    ours, theirs = Linear(5, 4), torch.nn.Linear(5, 4)
    w, b = _data(4, 5), _data(4)
    ours.w.upload(w)
    ours.b.upload(b)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(w))
        theirs.bias.copy_(torch.from_numpy(b))
    x = _data(*shape)
    xo, xt = Tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    yo, yt = ours(xo), theirs(xt)
    assert tuple(yo.shape) == tuple(yt.shape)
    _close(yo, yt)
    _backward_both(yo, yt)
    _close(xo.grad, xt.grad, rtol=1e-3, atol=1e-4)
    _close(ours.w.grad, theirs.weight.grad, rtol=1e-3, atol=1e-4)
    _close(ours.b.grad, theirs.bias.grad, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_values_and_gradient_match_torch(padding_idx):
    ours = Embedding(7, 5, padding_idx=padding_idx)
    theirs = torch.nn.Embedding(7, 5, padding_idx=padding_idx)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(ours.weight.numpy()))
    if padding_idx is not None:  # the padding row starts at zero, as torch's
        assert not ours.weight.numpy()[padding_idx].any()
    idx = np.array([[2, 6, 2, 0], [6, 6, 1, 2], [3, 2, 6, 4]], np.int32)  # repeated, and the padding rows
    yo = ours(Tensor(idx, dtype=np.int32))
    yt = theirs(torch.from_numpy(idx.astype(np.int64)))
    assert tuple(yo.shape) == (3, 4, 5)
    _close(yo, yt, rtol=0, atol=0)
    _backward_both(yo, yt)
    _close(ours.weight.grad, theirs.weight.grad, rtol=1e-5, atol=1e-6)


def test_functional_embedding_takes_arrays_and_refuses_bad_indices():
    w = Tensor(_data(4, 3), requires_grad=True, track=False)
    y = F.embedding([[1, 3], [3, 0]], w)
    np.testing.assert_array_equal(y.numpy(), w.numpy()[[[1, 3], [3, 0]]])
    with pytest.raises(ValueError, match=r"embedding: index 4 at position 1 is outside \[0, 4\)"):
        F.embedding(np.array([1, 4], np.int32), w).numpy()
    nn.end_batch()
    with pytest.raises(ValueError, match="padding_idx"):
        F.embedding([0], w, padding_idx=4)
    with pytest.raises(ValueError, match="max_norm"):
        F.embedding([0], w, max_norm=1.0)
    with pytest.raises(ValueError, match="sparse"):
        Embedding(4, 3, sparse=True)


def test_embedding_state_dict_is_torchs():
    class Net(Model):
        def __init__(self):
            super().__init__()
            self.emb = Embedding(10, 4, padding_idx=0)

    net = Net()
    assert [name for name, _ in net.named_parameters()] == ["emb.weight"]
    theirs = torch.nn.Module()
    theirs.emb = torch.nn.Embedding(10, 4, padding_idx=0)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in net.named_parameters()}, strict=True)
    values = Embedding(200, 50).weight.numpy()
    assert abs(values.mean()) < 0.05 and abs(values.std() - 1.0) < 0.05  # N(0, 1)


def _torch_attention(q, k, v, mask=None, causal=False, scale=None):
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if mask is not None:
        s = s + mask
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2], s.shape[-1]).tril().logical_not(), float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v)


@pytest.mark.parametrize("case", ["plain", "mask", "causal", "broadcast", "scale"])
def test_scaled_dot_product_attention_matches_torch(case):
    shapes = {"plain": ((2, 3, 4), (2, 5, 4), (2, 5, 3)), "mask": ((2, 2, 5, 3), (2, 2, 6, 3), (2, 2, 6, 2)),
              "causal": ((1, 2, 5, 3), (1, 2, 5, 3), (1, 2, 5, 4)), "broadcast": ((2, 1, 3, 4), (2, 5, 4), (5, 3)),
              "scale": ((1, 3, 2), (1, 3, 2), (1, 3, 2))}[case]
    arrays = [_data(*s) for s in shapes]
    mask = _data(5, 6) if case == "mask" else None
    ours = [Tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.from_numpy(a).requires_grad_() for a in arrays]
    mo = Tensor(mask, requires_grad=True) if mask is not None else None
    mt = torch.from_numpy(mask).requires_grad_() if mask is not None else None
    scale = 0.3 if case == "scale" else None
    yo = F.scaled_dot_product_attention(*ours, attn_mask=mo, is_causal=case == "causal", scale=scale)
    yt = _torch_attention(*theirs, mask=mt, causal=case == "causal", scale=scale)
    _close(yo, yt)
    _backward_both(yo, yt)
    for o, t in zip(ours + ([mo] if mo is not None else []), theirs + ([mt] if mt is not None else [])):
        _close(o.grad, t.grad, rtol=1e-3, atol=1e-4)


def test_scaled_dot_product_attention_refuses_dropout_and_bad_masks():
    q = Tensor(_data(2, 3, 4))
    with pytest.raises(ValueError, match="dropout_p must be 0.0"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
    with pytest.raises(ValueError, match=r"mask \[4, 4\] does not broadcast"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=Tensor(_data(4, 4)))
    with pytest.raises(ValueError, match="not both"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=Tensor(_data(3, 3)), is_causal=True)
    boolean = np.tril(np.ones((3, 3), bool))  # True attends, as torch's sdpa
    y = F.scaled_dot_product_attention(q, q, q, attn_mask=boolean)
    _close(y, _torch_attention(*[torch.from_numpy(q.numpy())] * 3, causal=True))


@pytest.mark.parametrize("batch_first, mask", [(True, None), (True, "float"), (False, None), (True, "causal")])
def test_multihead_attention_loads_torch_state_dict(batch_first, mask):
    e, heads, n, length, source = 6, 3, 2, 5, 4
    theirs = torch.nn.MultiheadAttention(e, heads, batch_first=batch_first)
    with torch.no_grad():  # biases away from torch's zeros, so they count
        theirs.in_proj_bias.uniform_(-0.5, 0.5)
        theirs.out_proj.bias.uniform_(-0.5, 0.5)

    class Net(Model):
        def __init__(self):
            super().__init__()
            self.mha = MultiheadAttention(e, heads, batch_first=batch_first)

    net = Net()
    names = [name for name, _ in net.named_parameters()]
    assert names == ["mha." + k for k in theirs.state_dict()]
    net.load_state_dict({"mha." + k: v.numpy() for k, v in theirs.state_dict().items()})
    if mask == "causal":
        source = length
    order = (lambda *s: s) if batch_first else (lambda b, t, c: (t, b, c))
    arrays = [_data(*order(n, length, e)), _data(*order(n, source, e)), _data(*order(n, source, e))]
    attn = None
    if mask == "float":
        attn = _data(length, source)
    elif mask == "causal":
        attn = np.triu(np.full((length, source), -np.inf, np.float32), 1)
    ours = [Tensor(a, requires_grad=True) for a in arrays]
    tt = [torch.from_numpy(a).requires_grad_() for a in arrays]
    yo, wo = net.mha(*ours, attn_mask=attn)
    yt, wt = theirs(*tt, attn_mask=None if attn is None else torch.from_numpy(attn))
    _close(yo, yt)
    _close(wo, wt)
    _backward_both(yo, yt)
    for o, t in zip(ours, tt):
        _close(o.grad, t.grad, rtol=1e-3, atol=1e-4)
    for (name, p), (tname, tp) in zip(net.named_parameters(), theirs.named_parameters()):
        assert name == "mha." + tname
        _close(p.grad, tp.grad, rtol=1e-3, atol=1e-4)
    fused, none = net.mha(*ours, attn_mask=attn, need_weights=False)  # the fused attention, no weights
    assert none is None
    _close(fused, yt)


def test_multihead_attention_refuses_what_it_lacks():
    with pytest.raises(ValueError, match="divisible"):
        MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="dropout"):
        MultiheadAttention(6, 2, dropout=0.1)
    m = MultiheadAttention(6, 2, batch_first=True)
    x = Tensor(_data(2, 3, 6))
    with pytest.raises(ValueError, match="key_padding_mask"):
        m(x, x, x, key_padding_mask=np.zeros((2, 3), bool))
    with pytest.raises(ValueError, match="attn_mask must be"):
        m(x, x, x, attn_mask=_data(2, 2))


class _SelfAttention(nn.nn.Module):
    """Heads of a projection attending causally, or through a fixed additive mask."""

    def __init__(self, width, heads, mask=None):
        super().__init__()
        self.qkv = nn.nn.Linear(width, 3 * width)
        self.heads, self.mask = heads, mask

    def forward(self, x):
        b, t, w = x.shape
        q, k, v = (nn.transpose(part.reshape(b, t, self.heads, w // self.heads), 1, 2)
                   for part in nn.chunk(self.qkv(x), 3, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask, is_causal=self.mask is None)
        return nn.transpose(y, 1, 2).reshape(b, t, w)


@pytest.mark.parametrize("masked", [False, True])
def test_attention_exports_its_composition_to_onnx(tmp_path, masked):
    ort = pytest.importorskip("onnxruntime")
    nn.manual_seed(3)
    mask = Tensor(np.where(RNG.uniform(size=(7, 7)) < 0.3, -np.inf, _data(7, 7)).astype(np.float32)) if masked else None
    model = _SelfAttention(8, 2, mask)
    x = _data(3, 7, 8)
    want = model(Tensor(x)).numpy()
    path = model.export(tmp_path / "attention.onnx", input_shape=[1, 7, 8])
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x})[0]
    if masked:  # ONNX's Softmax gives NaN where our kernels give 0: a query that sees no key
        hidden = np.isinf(mask.numpy()).all(axis=-1)
        want[:, hidden] = np.nan
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
