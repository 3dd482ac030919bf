"""A two-layer network written with tensors and autograd alone, as
PyTorch's "Learning PyTorch with Examples" writes it: weights from
torch.randn with requires_grad_(), the forward pass with mm and clamp,
the loss from torch.nn.functional, a hand-written update under
torch.no_grad() (w -= lr * w.grad, then w.grad.zero_()), accuracy from
(logits.argmax(1) == y).float().mean(), and the weights saved as a dict
with torch.save and read back with torch.load.
Usage: manual_autograd.py DATA.npz CHECKPOINT RESULT.json"""
import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F


def forward(x, weights):
    w1, b1, w2, b2 = weights
    hidden = x.view(x.size(0), -1).mm(w1).add(b1).clamp(min=0)
    return hidden.mm(w2) + b2


def accuracy(x, y, weights):
    with torch.no_grad():
        return (forward(x, weights).argmax(1) == y).float().mean().item()


def main():
    data_path, checkpoint_path, result_path = sys.argv[1:4]
    torch.manual_seed(0)
    data = np.load(data_path)
    x_train, y_train = torch.from_numpy(data["x_train"]), torch.from_numpy(data["y_train"])
    x_test, y_test = torch.from_numpy(data["x_test"]), torch.from_numpy(data["y_test"])

    w1 = (torch.randn(144, 64) * math.sqrt(2.0 / 144)).requires_grad_()
    b1 = torch.zeros(64, requires_grad=True)
    w2 = (torch.randn(64, 4) * math.sqrt(1.0 / 64)).requires_grad_()
    b2 = torch.zeros(4, requires_grad=True)
    weights = [w1, b1, w2, b2]

    learning_rate, batch = 0.05, 32
    for epoch in range(6):
        total = 0.0
        for start in range(0, x_train.size(0), batch):
            logits = forward(x_train[start:start + batch], weights)
            loss = F.cross_entropy(logits, y_train[start:start + batch])
            loss.backward()
            with torch.no_grad():
                for w in weights:
                    w -= learning_rate * w.grad
                    w.grad.zero_()
            total += loss.item()
        print(f"epoch {epoch}: loss {total / math.ceil(x_train.size(0) / batch):.4f}, "
              f"test accuracy {100 * accuracy(x_test, y_test, weights):.2f}%")

    torch.save({"w1": w1, "b1": b1, "w2": w2, "b2": b2}, checkpoint_path)
    saved = torch.load(checkpoint_path)
    restored = [saved[name] for name in ("w1", "b1", "w2", "b2")]
    with open(result_path, "w") as f:
        json.dump({"test_acc": accuracy(x_test, y_test, weights), "restored_acc": accuracy(x_test, y_test, restored),
                   "parameters": sum(w.numel() for w in weights)}, f)


if __name__ == "__main__":
    main()
