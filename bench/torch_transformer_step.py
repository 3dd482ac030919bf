"""PyTorch's side of bench/bench_transformer_step.c (issue 34): reads that
program's "transformer" lines and times the same training step with
PyTorch on CUDA: the same model (GPT-2's design as nanoGPT writes it, or
torchvision's vision transformer, written out here with the same layers),
the same synthetic data, cross-entropy, backward and AdamW (lr 3e-4, betas
0.9 and 0.95, weight decay 0.1; fused, capturable), attention through
F.scaled_dot_product_attention (PyTorch picks the backend). fp32 lines run
in fp32 with TF32 off; fp16 and bf16 lines under bf16 autocast (PyTorch's
usual mixed precision, no loss scaling). The step is captured in a CUDA
graph of --reps steps and replayed; the figure is the median over --runs
replays, divided by --reps. Peak memory: max_memory_allocated over an eager
step, the model, gradients and optimizer state included (ours counts the
same).

    build/bench/bench_transformer_step --model gpt > ours.txt
    build/bench/bench_transformer_step --model vit >> ours.txt
    python3 bench/torch_transformer_step.py ours.txt [--reps 3] [--runs 7]
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    """Pre-norm: x + attn(ln_1(x)), then + mlp(ln_2(x)); GELU MLP."""

    def __init__(self, width, heads, mlp, causal, eps):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln_1, self.ln_2 = nn.LayerNorm(width, eps=eps), nn.LayerNorm(width, eps=eps)
        self.c_attn, self.c_proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, mlp), nn.GELU(), nn.Linear(mlp, width))

    def forward(self, x):
        n, t, w = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(w, dim=2)
        q, k, v = (z.view(n, t, self.heads, w // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.c_proj(y.transpose(1, 2).reshape(n, t, w))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, context, width, depth, heads):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.h = nn.ModuleList(Block(width, heads, 4 * width, True, 1e-5) for _ in range(depth))
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


class ViT(nn.Module):
    def __init__(self, size, channels, patch, width, depth, heads, mlp, classes):
        super().__init__()
        self.conv_proj = nn.Conv2d(channels, width, patch, patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, width))
        self.pos_embedding = nn.Parameter(torch.randn(1, (size // patch) ** 2 + 1, width) * 0.02)
        self.layers = nn.Sequential(*(Block(width, heads, mlp, False, 1e-6) for _ in range(depth)))
        self.ln = nn.LayerNorm(width, eps=1e-6)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embedding
        return self.head(self.ln(self.layers(x))[:, 0])


def parse(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("transformer "):
                w = line.split()
                rows.append(dict(model=w[1], batch=int(w[2]), width=int(w[3]), depth=int(w[4]), heads=int(w[5]),
                                 shape=int(w[6]), outputs=int(w[7]), precision=w[8], ms=float(w[9]),
                                 mib=float(w[10])))
    return rows


def setup(row, size=28, channels=1, patch=4, mlp=768):
    g = torch.Generator(device="cuda").manual_seed(0)
    if row["model"] == "gpt":
        model = GPT(row["outputs"], row["shape"], row["width"], row["depth"], row["heads"])
        x = torch.randint(0, row["outputs"], (row["batch"], row["shape"]), device="cuda", generator=g)
        y = torch.randint(0, row["outputs"], (row["batch"] * row["shape"],), device="cuda", generator=g)
    else:
        model = ViT(row["shape"], channels, patch, row["width"], row["depth"], row["heads"], mlp, row["outputs"])
        x = torch.rand(row["batch"], channels, row["shape"], row["shape"], device="cuda", generator=g) * 2 - 1
        y = torch.randint(0, row["outputs"], (row["batch"],), device="cuda", generator=g)
    model = model.cuda()
    try:
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True,
                                capturable=True)
    except (RuntimeError, TypeError, ValueError):
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, capturable=True)
    half = row["precision"] in ("fp16", "bf16")

    def step():
        opt.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=half):
            out = model(x)
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y)
        loss.backward()
        opt.step()
    return step


def measure(row, reps, runs):
    from torch_conv_layers import graph_ms
    step = setup(row)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() / 2**20
    return graph_ms(step, reps, runs), peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name()}, fp32 lines with TF32 off, fp16/bf16 lines "
          f"under bf16 autocast; CUDA graph of the whole step")
    print(f"{'model':>5} {'batch':>5} {'width':>5} {'depth':>5} {'heads':>5} {'T/size':>6} {'prec':>5} | "
          f"{'ours ms':>8} {'MiB':>7} | {'PyTorch ms':>10} {'MiB':>7} | {'time':>5} {'memory':>6}")
    for row in parse(a.ours):
        ms, mib = measure(row, a.reps, a.runs)
        print(f"{row['model']:>5} {row['batch']:>5} {row['width']:>5} {row['depth']:>5} {row['heads']:>5} "
              f"{row['shape']:>6} {row['precision']:>5} | {row['ms']:8.2f} {row['mib']:7.0f} | {ms:10.2f} {mib:7.0f} | "
              f"{row['ms'] / ms:5.2f} {row['mib'] / mib:6.2f}")
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
