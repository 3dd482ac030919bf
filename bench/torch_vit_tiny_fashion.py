"""PyTorch's side of `nnengine train vit-tiny --data fashion-mnist` (issue 34):
the same vision transformer (torchvision's design: 4x4 patches by a
strided convolution, a class token, learned positions, 6 pre-norm blocks of
width 192 with 3 heads and a GELU MLP of 768, LayerNorm eps 1e-6, a linear
head; torchvision's initialisation) trained with the CLI's vit-tiny recipe:
AdamW (lr 1e-3, weight decay 0.05, betas 0.9/0.999), linear warm-up over the
first 5% of the steps from 0.1 of the rate then cosine to 0, label smoothing
0.1, batch 256, the training set's mean and std, random shifts of up to 2
pixels (zeros coming in) and horizontal flips drawn on the GPU, 20 epochs.
The data stays on the GPU as the CLI keeps it; each epoch is a plain eager
loop (what a PyTorch user writes), timed without the evaluation, then the
test set is evaluated. Prints one line per epoch like the CLI's.

    python3 bench/torch_vit_tiny_fashion.py --data /usr/share/datasets/fashion-mnist [--epochs 20]
"""
import argparse
import gzip
import math
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(folder, name):
    for suffix in ("", ".gz"):
        path = os.path.join(folder, name + suffix)
        if os.path.exists(path):
            return idx(path)
    raise FileNotFoundError(os.path.join(folder, name))


class Block(nn.Module):
    def __init__(self, width, heads, mlp):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(width, eps=1e-6), nn.LayerNorm(width, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(width, mlp), nn.GELU(), nn.Linear(mlp, width))
        for m in self.mlp:
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.normal_(m.bias, std=1e-6)

    def forward(self, x):
        h = self.ln_1(x)
        x = x + self.self_attention(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class ViT(nn.Module):
    def __init__(self, size=28, channels=1, patch=4, width=192, depth=6, heads=3, mlp=768, classes=10):
        super().__init__()
        self.conv_proj = nn.Conv2d(channels, width, patch, patch)
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / (channels * patch * patch)))
        nn.init.zeros_(self.conv_proj.bias)
        self.class_token = nn.Parameter(torch.zeros(1, 1, width))
        self.pos_embedding = nn.Parameter(torch.empty(1, (size // patch) ** 2 + 1, width).normal_(std=0.02))
        self.layers = nn.Sequential(*(Block(width, heads, mlp) for _ in range(depth)))
        self.ln = nn.LayerNorm(width, eps=1e-6)
        self.head = nn.Linear(width, classes)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embedding
        return self.head(self.ln(self.layers(x))[:, 0])


def augment(x, pad, black, generator):
    """Shifts of up to pad pixels (black coming in, as RandomCrop(padding=pad)) and flips, one draw per
    image, on the GPU."""
    n, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad), value=black)
    dy = torch.randint(0, 2 * pad + 1, (n,), device=x.device, generator=generator)
    dx = torch.randint(0, 2 * pad + 1, (n,), device=x.device, generator=generator)
    rows = dy[:, None, None] + torch.arange(h, device=x.device)[None, :, None]  # [n, h, 1]
    cols = dx[:, None, None] + torch.arange(w, device=x.device)[None, None, :]  # [n, 1, w]
    images = torch.arange(n, device=x.device)[:, None, None]
    out = padded[images, :, rows, cols].permute(0, 3, 1, 2)  # [n, h, w, c] -> [n, c, h, w]
    flip = torch.rand(n, device=x.device, generator=generator) < 0.5
    return torch.where(flip[:, None, None, None], out.flip(3), out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    dev = a.device
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    train_x = torch.from_numpy(load(a.data, "train-images-idx3-ubyte").astype(np.float32) / 255)[:, None]
    train_y = torch.from_numpy(load(a.data, "train-labels-idx1-ubyte").astype(np.int64))
    test_x = torch.from_numpy(load(a.data, "t10k-images-idx3-ubyte").astype(np.float32) / 255)[:, None]
    test_y = torch.from_numpy(load(a.data, "t10k-labels-idx1-ubyte").astype(np.int64))
    mean, std = train_x.mean().item(), train_x.std().item()
    train_x, test_x = ((t - mean) / std for t in (train_x, test_x))
    train_x, train_y, test_x, test_y = (t.to(dev) for t in (train_x, train_y, test_x, test_y))
    model = ViT().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    steps_per_epoch = len(train_x) // a.batch + (len(train_x) % a.batch > 0)
    total = steps_per_epoch * a.epochs
    warmup = int(0.05 * total)

    def rate(step):  # the CLI's: linear warm-up from 0.1, then cosine to 0
        if step < warmup:
            return 0.1 + 0.9 * step / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, rate)
    gen = torch.Generator(device=dev).manual_seed(a.seed)
    name = torch.cuda.get_device_name() if dev == "cuda" else "CPU"
    print(f"PyTorch {torch.__version__}, {name}, fp32 (TF32 off), vit-tiny, "
          f"{sum(p.numel() for p in model.parameters())} parameters")
    for epoch in range(1, a.epochs + 1):
        model.train()
        if dev == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        order = torch.randperm(len(train_x), device=dev, generator=gen)
        loss_sum = torch.zeros((), device=dev)
        correct = torch.zeros((), device=dev, dtype=torch.int64)
        for i in range(0, len(train_x), a.batch):
            idx_ = order[i:i + a.batch]
            x, y = augment(train_x[idx_], 2, -mean / std, gen), train_y[idx_]
            out = model(x)
            loss = F.cross_entropy(out, y, label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            schedule.step()
            loss_sum += loss.detach() * len(y)
            correct += (out.argmax(1) == y).sum()
        if dev == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        model.eval()
        with torch.no_grad():
            test_correct, test_loss = 0, 0.0
            for i in range(0, len(test_x), 1000):
                out = model(test_x[i:i + 1000])
                test_loss += F.cross_entropy(out, test_y[i:i + 1000], reduction="sum").item()
                test_correct += (out.argmax(1) == test_y[i:i + 1000]).sum().item()
        n = len(train_x)
        print(f"epoch {epoch}/{a.epochs}  train loss {loss_sum.item() / n:.4f} acc {100 * correct.item() / n:6.2f}%  "
              f"test loss {test_loss / len(test_x):.4f} acc {100 * test_correct / len(test_x):6.2f}%  "
              f"{seconds:6.1f} s  {n / seconds:8.0f} img/s", flush=True)


if __name__ == "__main__":
    main()
