"""PyTorch's side of `nnengine train gpt-mini --text FILE` (issue 34): the
same causal language model of bytes (nanoGPT's GPT: learned positions,
pre-norm blocks of LayerNorm, causal self-attention and a GELU MLP 4x wide,
the head tied to the token embedding, nanoGPT's initialisation, no
dropout; attention by F.scaled_dot_product_attention) trained with the
CLI's recipe: the text's last 10% held out, each step 64 windows of 256
bytes at random offsets of the rest, AdamW (lr 1e-3, betas 0.9/0.99, eps
1e-8, weight decay 0.1 on the matrices and embeddings only), warm-up over
100 steps at (t + 1) / 101 of the rate then cosine to lr / 10 at the last
step; every 250 steps the training loss since the last line and the loss
on the first MiB of held-out text as consecutive windows, in bits per byte
too. A plain eager fp32 loop (TF32 off), what a PyTorch user writes; the
seconds count the training steps without the evaluation. Prints lines like
the CLI's.

    python3 bench/torch_gpt_mini_text.py --text stdlib.txt [--steps 2000] [--precision fp32|bf16]
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.c_attn, self.attn_proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.c_fc, self.mlp_proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        n, t, w = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(w, dim=2)
        q, k, v = (z.view(n, t, self.heads, w // self.heads).transpose(1, 2) for z in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # torch 1.13 (Debian's), for a try on the CPU
            scores = (q @ k.transpose(-2, -1) / math.sqrt(w // self.heads)).masked_fill(
                torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            y = torch.softmax(scores, -1) @ v
        x = x + self.attn_proj(y.transpose(1, 2).reshape(n, t, w))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, context, width, depth, heads):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(256, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, 256, bias=False)
        self.wte.weight = self.lm_head.weight
        for name, p in self.named_parameters():  # nanoGPT's initialisation
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * depth) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.lm_head(self.ln_f(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--text", required=True)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--width", type=int, default=384)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--eval-limit", type=int, default=1 << 20)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(a.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    data = torch.frombuffer(bytearray(open(a.text, "rb").read()), dtype=torch.uint8)
    train_size = len(data) - int(len(data) * 0.1)
    train, held = data[:train_size].to(dev).long(), data[train_size:].to(dev).long()
    held = held[:a.eval_limit] if a.eval_limit else held
    windows = (len(held) - 1) // a.context
    model = GPT(a.context, a.width, a.depth, a.heads).to(dev)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.99), eps=1e-8)
    warmup, min_lr = min(100, a.steps // 10), a.lr / 10

    def rate(t):
        if t < warmup:
            return (t + 1) / (warmup + 1)
        return (min_lr + 0.5 * (a.lr - min_lr) * (1 + math.cos(math.pi * (t - warmup) / (a.steps - warmup)))) / a.lr

    schedule = torch.optim.lr_scheduler.LambdaLR(opt, rate)
    autocast = torch.autocast(dev, dtype=torch.bfloat16, enabled=a.precision == "bf16")
    offsets = torch.arange(a.context + 1, device=dev)

    def evaluate():
        model.eval()
        total = 0.0
        with torch.no_grad(), autocast:
            for first in range(0, windows, a.batch):
                n = min(a.batch, windows - first)
                idx = (torch.arange(first, first + n, device=dev) * a.context)[:, None] + offsets
                w = held[idx]
                logits = model(w[:, :-1])
                total += F.cross_entropy(logits.float().reshape(-1, 256), w[:, 1:].reshape(-1), reduction="sum").item()
        model.train()
        return total / (windows * a.context)

    params = sum(p.numel() for p in model.parameters())
    print(f"# PyTorch {torch.__version__} on {torch.cuda.get_device_name() if dev == 'cuda' else 'the CPU'}, {a.precision}: gpt-mini "
          f"{params / 1e6:.2f}M parameters, {len(data)} bytes ({train_size} trained on), {a.steps} steps of "
          f"{a.batch} x {a.context}", flush=True)
    loss_sum, since, start = torch.zeros((), device=dev), 0, None
    sync()
    start = time.perf_counter()
    for step in range(1, a.steps + 1):
        starts = torch.randint(0, train_size - a.context, (a.batch,), device=dev)
        w = train[starts[:, None] + offsets]
        with autocast:
            logits = model(w[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, 256), w[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        schedule.step()
        loss_sum += loss.detach()
        since += 1
        if step % a.eval_every == 0 or step == a.steps:
            train_loss = loss_sum.item() / since
            seconds = time.perf_counter() - start
            val = evaluate()
            ln2 = math.log(2)
            print(f"step {step:{len(str(a.steps))}d}/{a.steps}  train loss {train_loss:.4f} ({train_loss / ln2:.3f} "
                  f"bits/byte)  val loss {val:.4f} ({val / ln2:.3f} bits/byte)  {seconds:6.1f} s  "
                  f"{since * a.batch * a.context / seconds:8.0f} bytes/s", flush=True)
            loss_sum.zero_()
            since = 0
            sync()
            start = time.perf_counter()
    if dev == "cuda":
        print(f"# peak {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
