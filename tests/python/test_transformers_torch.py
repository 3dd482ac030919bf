"""The zoo's transformers (issue 34) against PyTorch: the vision transformer
with torchvision's VisionTransformer (its state_dict loads strictly, the same
outputs, AdamW steps in lock-step), the GPT with nanoGPT's design written
here in torch (tied embeddings, causal attention written out with its score
matrix), both small and of awkward sizes; captured steps as eager ones;
ONNX exports run by onnxruntime to the same outputs."""
import math

import numpy as np
import pytest
import torch

import nn_engine as ne
import nn_engine.nn.functional as F

torchvision = pytest.importorskip("torchvision")


def to_torch(model):
    return {k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()}


def lock_step(ours, theirs, batches, loss_of, steps=4, lr=3e-3):
    """AdamW steps on both from the same weights: the losses of each step
    and the parameters after the last."""
    opt = ne.optim.AdamW(ours.parameters(), lr=lr, weight_decay=0.05)
    topt = torch.optim.AdamW(theirs.parameters(), lr=lr, weight_decay=0.05)
    for step in range(steps):
        x, y = batches[step % len(batches)]
        opt.zero_grad()
        loss = loss_of(ours, ne.tensor(x), ne.tensor(y), F)
        loss.backward()
        opt.step()
        topt.zero_grad()
        tloss = loss_of(theirs, torch.from_numpy(x), torch.from_numpy(y).long(), torch.nn.functional)
        tloss.backward()
        topt.step()
        assert loss.item() == pytest.approx(tloss.item(), rel=2e-4, abs=1e-5), f"step {step}"
    want = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        got, expected = p.numpy(), want[name].detach().numpy()
        if name.endswith(("in_proj_bias", "c_attn.bias")):
            # the keys' bias moves every score of a query alike, which softmax
            # ignores: its gradient is rounding noise that Adam's step scales
            # up to lr either way; the queries' and values' biases are compared
            third = len(got) // 3
            got, expected = np.delete(got, np.s_[third:2 * third]), np.delete(expected, np.s_[third:2 * third])
        np.testing.assert_allclose(got, expected, rtol=2e-3, atol=2e-4, err_msg=name)


def vit_pair():
    sizes = dict(image_size=20, patch_size=4, num_layers=2, num_heads=3, hidden_dim=24, mlp_dim=40, num_classes=5)
    ne.manual_seed(3)
    ours = ne.models.vision_transformer(**sizes, in_channels=3)
    theirs = torchvision.models.VisionTransformer(**sizes)
    return ours, theirs


def test_vision_transformer_is_torchvisions_and_trains_in_lock_step():
    ours, theirs = vit_pair()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    state = to_torch(ours)
    # torchvision zeroes the head: give it weights so the gradients reach every layer
    rng = np.random.default_rng(0)
    state["heads.head.weight"] = torch.from_numpy(rng.standard_normal((5, 24)).astype(np.float32) * 0.2)
    theirs.load_state_dict(state, strict=True)
    ours.load_state_dict({k: v.numpy() for k, v in state.items()})
    x = rng.standard_normal((3, 3, 20, 20)).astype(np.float32)
    with torch.no_grad():
        want = theirs(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours(ne.tensor(x)).numpy(), want, rtol=1e-4, atol=1e-5)
    batches = [(rng.standard_normal((3, 3, 20, 20)).astype(np.float32), rng.integers(0, 5, 3).astype(np.int32))
               for _ in range(2)]
    lock_step(ours, theirs, batches, lambda m, x, y, f: f.cross_entropy(m(x), y, label_smoothing=0.1))
    with pytest.raises(ValueError, match="patch size"):
        ne.models.vision_transformer(21, 4, 1, 1, 8, 8)
    with pytest.raises(Exception, match="expected input"):
        ours(ne.tensor(np.zeros((1, 3, 16, 20), np.float32)))


class TorchGPT(torch.nn.Module):
    """nanoGPT's GPT (model.py) without dropout, attention written out."""

    def __init__(self, vocab, context, width, depth, heads):
        super().__init__()
        nn = torch.nn
        self.heads = heads
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, width), wpe=nn.Embedding(context, width),
            h=nn.ModuleList([nn.ModuleDict(dict(
                ln_1=nn.LayerNorm(width),
                attn=nn.ModuleDict(dict(c_attn=nn.Linear(width, 3 * width), c_proj=nn.Linear(width, width))),
                ln_2=nn.LayerNorm(width),
                mlp=nn.ModuleDict(dict(c_fc=nn.Linear(width, 4 * width), gelu=nn.GELU(),
                                       c_proj=nn.Linear(4 * width, width))))) for _ in range(depth)]),
            ln_f=nn.LayerNorm(width)))
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight

    def attention(self, attn, x):
        n, t, w = x.shape
        q, k, v = attn.c_attn(x).split(w, dim=2)
        q, k, v = (z.view(n, t, self.heads, w // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(w // self.heads)
        scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        y = torch.softmax(scores, -1) @ v
        return attn.c_proj(y.transpose(1, 2).reshape(n, t, w))

    def forward(self, idx):
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(idx.shape[1]))
        for b in self.transformer.h:
            x = x + self.attention(b.attn, b.ln_1(x))
            x = x + b.mlp.c_proj(b.mlp.gelu(b.mlp.c_fc(b.ln_2(x))))
        return self.lm_head(self.transformer.ln_f(x))


def next_token_loss(model, x, y, f):
    logits = model(x)
    return f.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def test_gpt_is_nanogpts_with_tied_embeddings_and_trains_in_lock_step():
    ne.manual_seed(4)
    ours = ne.models.gpt(vocab_size=37, context=12, width=30, depth=2, heads=3)
    theirs = TorchGPT(37, 12, 30, 2, 3)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    state = to_torch(ours)
    np.testing.assert_array_equal(state["lm_head.weight"].numpy(), state["transformer.wte.weight"].numpy())
    assert float(state["transformer.h.1.attn.c_proj.weight"].std()) == pytest.approx(0.02 / math.sqrt(4), rel=0.2)
    theirs.load_state_dict(state, strict=True)
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, 37, (3, 11)).astype(np.int32)
    with torch.no_grad():
        want = theirs(torch.from_numpy(tokens).long()).numpy()
    np.testing.assert_allclose(ours(ne.tensor(tokens)).numpy(), want, rtol=1e-4, atol=1e-5)
    batches = []
    for _ in range(2):
        text = rng.integers(0, 37, (3, 12)).astype(np.int32)
        batches.append((text[:, :-1].copy(), text[:, 1:].copy()))
    lock_step(ours, theirs, batches, next_token_loss)
    # the tied weight is one parameter: its gradient sums the embedding's and the head's
    np.testing.assert_array_equal(ours.state_dict()["lm_head.weight"].numpy(),
                                  ours.state_dict()["transformer.wte.weight"].numpy())
    with pytest.raises(Exception, match="context"):
        ours(ne.tensor(np.zeros((1, 13), np.int32)))


def test_transformers_capture_as_eagerly_and_export_to_onnx(tmp_path):
    def train(captured):
        ne.manual_seed(6)
        model = ne.models.gpt(vocab_size=19, context=9, width=16, depth=1, heads=2)
        opt = ne.optim.AdamW(model.parameters(), lr=1e-2)

        def step(x, y):
            opt.zero_grad()
            loss = next_token_loss(model, x, y, F)
            loss.backward()
            opt.step()
            return loss
        run = ne.capture(step) if captured else step
        rng = np.random.default_rng(2)
        losses = []
        for _ in range(3):
            text = rng.integers(0, 19, (2, 9)).astype(np.int32)
            losses.append(run(ne.tensor(text[:, :-1].copy()), ne.tensor(text[:, 1:].copy())).item())
        return losses, model
    eager, _ = train(False)
    captured, model = train(True)
    assert captured == eager
    ort = pytest.importorskip("onnxruntime")
    tokens = np.random.default_rng(3).integers(0, 19, (1, 8)).astype(np.int32)
    model.export(tmp_path / "gpt.onnx", input_shape=[1, 8], input_dtype=np.int32)
    session = ort.InferenceSession(str(tmp_path / "gpt.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: tokens})[0]
    np.testing.assert_allclose(got, model(ne.tensor(tokens)).numpy(), rtol=1e-4, atol=1e-5)
    vit, _ = vit_pair()
    vit.eval()
    vit.export(tmp_path / "vit.onnx", input_shape=[2, 3, 20, 20])
    session = ort.InferenceSession(str(tmp_path / "vit.onnx"), providers=["CPUExecutionProvider"])
    for batch in (2, 3):  # the class token follows the batch
        x = np.random.default_rng(batch).standard_normal((batch, 3, 20, 20)).astype(np.float32)
        got = session.run(None, {session.get_inputs()[0].name: x})[0]
        np.testing.assert_allclose(got, vit(ne.tensor(x)).numpy(), rtol=1e-4, atol=1e-5)
