"""A small ResNet trained the way PyTorch's tutorials train one: parameter
groups without weight decay for biases and norms, AdamW with OneCycleLR,
gradient clipping, a DataLoader over a TensorDataset, accuracy from argmax,
a checkpoint of model and optimizer saved with torch.save and loaded into a
fresh model. Usage: resnet_one_cycle.py DATA.npz CHECKPOINT RESULT.json"""
import json
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import OneCycleLR
from torch.utils.data import DataLoader, TensorDataset


class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes),
            )

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return F.relu(out, inplace=True)


class SmallResNet(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True))
        self.layers = nn.ModuleList([BasicBlock(16, 16), BasicBlock(16, 32, stride=2)])
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        x = self.stem(x)
        for layer in self.layers:
            x = layer(x)
        x = self.pool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


def evaluate(model, loader, device):
    model.eval()
    correct, total, loss_sum = 0, 0, 0.0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            out = model(x)
            loss_sum += F.cross_entropy(out, y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
            total += y.size(0)
    return correct / total, loss_sum / total


def main():
    data_path, checkpoint_path, result_path = sys.argv[1:4]
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = np.load(data_path)
    train_set = TensorDataset(torch.from_numpy(data["x_train"]), torch.from_numpy(data["y_train"]).long())
    test_set = TensorDataset(torch.from_numpy(data["x_test"]), torch.from_numpy(data["y_test"]).long())
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=64)

    model = SmallResNet().to(device)
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if param.ndim <= 1 or name.endswith(".bias"):
            no_decay.append(param)
        else:
            decay.append(param)
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 5e-4},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    epochs = 4
    scheduler = OneCycleLR(optimizer, max_lr=1e-2, epochs=epochs, steps_per_epoch=len(train_loader))
    criterion = nn.CrossEntropyLoss()

    for epoch in range(epochs):
        model.train()
        running_loss, correct, seen = 0.0, 0, 0
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
            optimizer.step()
            scheduler.step()
            running_loss += loss.item() * x.size(0)
            correct += (out.argmax(dim=1) == y).sum().item()
            seen += x.size(0)
        test_acc, test_loss = evaluate(model, test_loader, device)
        print(f"epoch {epoch + 1}: train loss {running_loss / seen:.4f} acc {correct / seen:.4f}, "
              f"test loss {test_loss:.4f} acc {test_acc:.4f}")

    torch.save({"epoch": epochs, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, checkpoint_path)
    checkpoint = torch.load(checkpoint_path)
    restored = SmallResNet().to(device)
    restored.load_state_dict(checkpoint["model"])
    restored_optimizer = torch.optim.AdamW([{"params": [p for n, p in restored.named_parameters()
                                                        if not (p.ndim <= 1 or n.endswith(".bias"))]},
                                            {"params": [p for n, p in restored.named_parameters()
                                                        if p.ndim <= 1 or n.endswith(".bias")]}], lr=1e-3)
    restored_optimizer.load_state_dict(checkpoint["optimizer"])
    restored_acc, restored_loss = evaluate(restored, test_loader, device)
    with open(result_path, "w") as f:
        json.dump({"test_acc": test_acc, "test_loss": test_loss, "restored_acc": restored_acc,
                   "restored_loss": restored_loss, "epoch": checkpoint["epoch"],
                   "restored_lr": restored_optimizer.param_groups[0]["lr"],
                   "lr": optimizer.param_groups[0]["lr"]}, f)


if __name__ == "__main__":
    main()
