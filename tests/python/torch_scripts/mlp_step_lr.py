"""A classifier trained as the classic PyTorch examples do: nn.Sequential
with an init function applied to every Linear, SGD with momentum and
weight decay, StepLR, outputs.max(1) for the predictions, an evaluation
function decorated with torch.no_grad(), and the weights saved and loaded
with torch.save / torch.load into a fresh model.
Usage: mlp_step_lr.py DATA.npz CHECKPOINT RESULT.json"""
import json
import sys

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class ArrayDataset(Dataset):
    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return torch.from_numpy(self.images[index]), int(self.labels[index])


def make_model():
    model = nn.Sequential(
        nn.Flatten(),
        nn.Linear(144, 64),
        nn.ReLU(),
        nn.Dropout(0.1),
        nn.Linear(64, 32),
        nn.ReLU(),
        nn.Linear(32, 4),
    )

    def init_weights(m):
        if isinstance(m, nn.Linear):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            nn.init.zeros_(m.bias)

    model.apply(init_weights)
    return model


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct, total = 0, 0
    for inputs, targets in loader:
        outputs = model(inputs)
        _, predicted = outputs.max(1)
        total += targets.size(0)
        correct += predicted.eq(targets).sum().item()
    return correct / total


def main():
    data_path, checkpoint_path, result_path = sys.argv[1:4]
    torch.manual_seed(1)
    data = np.load(data_path)
    train_loader = DataLoader(ArrayDataset(data["x_train"], data["y_train"]), batch_size=16, shuffle=True)
    test_loader = DataLoader(ArrayDataset(data["x_test"], data["y_test"]), batch_size=100)

    model = make_model()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)

    for epoch in range(5):
        model.train()
        train_loss = 0.0
        for batch_idx, (inputs, targets) in enumerate(train_loader):
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = criterion(outputs, targets)
            loss.backward()
            optimizer.step()
            train_loss += loss.item()
        scheduler.step()
        accuracy = evaluate(model, test_loader)
        print(f"epoch {epoch}: loss {train_loss / (batch_idx + 1):.4f}, test accuracy {100.0 * accuracy:.2f}%")

    torch.save(model.state_dict(), checkpoint_path)
    fresh = make_model()
    fresh.load_state_dict(torch.load(checkpoint_path))
    with open(result_path, "w") as f:
        json.dump({"test_acc": accuracy, "restored_acc": evaluate(fresh, test_loader),
                   "lr": optimizer.param_groups[0]["lr"], "parameters": sum(p.numel() for p in model.parameters())},
                  f)


if __name__ == "__main__":
    main()
