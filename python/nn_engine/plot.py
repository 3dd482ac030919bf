"""Loss and accuracy curves of a training run, from the log `nnengine train
--log FILE` writes (JSON lines, or CSV when FILE ends in .csv), to a PNG:

    python -m nn_engine.plot run.csv -o run.png

The left panel has the train and test (or validation) loss per epoch, the
right one the accuracies in percent. Needs matplotlib (drawn off-screen).
"""
import argparse
import csv
import json
import math
import os
import sys

FIELDS = ("epoch", "train_loss", "train_acc", "test_loss", "test_acc", "seconds", "images_per_s")


def _number(value, path, line, field):
    if value is None or value == "":
        return math.nan  # a diverged run's NaN: null in JSON, an empty CSV field
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{path}:{line}: {field} is not a number: {value!r}") from None


def read_log(path):
    """The log's epochs as a dict of lists, one per field of FIELDS. Raises
    ValueError naming the file and line for a log it cannot read."""
    with open(path, newline="") as f:
        text = f.read()
    if not text.strip():
        raise ValueError(f"{path}: the log is empty")
    if text.lstrip().startswith("{"):
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append((number, json.loads(line)))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: not a JSON object: {e.msg}") from None
    else:
        reader = csv.DictReader(text.splitlines())
        missing = [f for f in ("epoch", "train_loss") if f not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: the CSV header lacks {', '.join(missing)} (got {reader.fieldnames})")
        rows = list(enumerate(reader, 2))
    log = {field: [] for field in FIELDS}
    for number, row in rows:
        if not isinstance(row, dict) or "epoch" not in row:
            raise ValueError(f"{path}:{number}: no epoch field")
        for field in FIELDS:
            log[field].append(_number(row.get(field), path, number, field))
    return log


def plot_log(path, output=None, title=None):
    """Draws the log's curves to `output` (default: the log's name with .png)
    and returns that path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    log = read_log(path)
    output = output or os.path.splitext(path)[0] + ".png"
    epochs = log["epoch"]
    fig, (loss_ax, acc_ax) = plt.subplots(1, 2, figsize=(9, 3.4), dpi=100)
    loss_ax.plot(epochs, log["train_loss"], "o-", label="train")
    loss_ax.plot(epochs, log["test_loss"], "s-", label="test")
    loss_ax.set_title("loss")
    acc_ax.plot(epochs, [100 * a for a in log["train_acc"]], "o-", label="train")
    acc_ax.plot(epochs, [100 * a for a in log["test_acc"]], "s-", label="test")
    acc_ax.set_title("accuracy (%)")
    for ax in (loss_ax, acc_ax):
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
        ax.legend()
        if len(epochs) < 20:
            ax.set_xticks(epochs)
    fig.suptitle(title or os.path.basename(path))
    fig.tight_layout()
    fig.savefig(output)
    plt.close(fig)
    return output


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nn_engine.plot", description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="the --log file of nnengine train (JSON lines or CSV)")
    parser.add_argument("-o", "--output", help="the PNG to write (default: LOG with .png)")
    parser.add_argument("--title", help="the figure's title (default: the log's file name)")
    args = parser.parse_args(argv)
    try:
        out = plot_log(args.log, args.output, args.title)
    except (OSError, ValueError) as e:
        print(f"python -m nn_engine.plot: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
