"""python -m nn_engine.plot (issue 26): a training log, JSON lines or CSV as
nnengine train writes them, read back field by field and drawn to a PNG;
logs it cannot read refused with the file and line."""
import math
import os
import subprocess
import sys

import pytest
from PIL import Image

from nn_engine.plot import plot_log, read_log

EPOCHS = [
    {"epoch": 1, "train_loss": 0.9123, "train_acc": 0.6721, "test_loss": 0.611, "test_acc": 0.7713,
     "seconds": 2.5, "images_per_s": 24000.0},
    {"epoch": 2, "train_loss": 0.5011, "train_acc": 0.8153, "test_loss": None, "test_acc": 0.8307,
     "seconds": 2.4, "images_per_s": 25000.0},
    {"epoch": 3, "train_loss": 0.4377, "train_acc": 0.8419, "test_loss": 0.4471, "test_acc": 0.8399,
     "seconds": 2.6, "images_per_s": 23100.5},
]
FIELDS = ["epoch", "train_loss", "train_acc", "test_loss", "test_acc", "seconds", "images_per_s"]


def write_json(path):
    import json
    path.write_text("".join(json.dumps(e) + "\n" for e in EPOCHS))
    return path


def write_csv(path):
    lines = [",".join(FIELDS)]
    lines += [",".join("" if e[f] is None else repr(e[f]) for f in FIELDS) for e in EPOCHS]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("write", [write_json, write_csv])
def test_read_log_gives_every_field_of_every_epoch(tmp_path, write):
    log = read_log(str(write(tmp_path / ("run.csv" if write is write_csv else "run.jsonl"))))
    for field in FIELDS:
        for got, epoch in zip(log[field], EPOCHS):
            if epoch[field] is None:
                assert math.isnan(got)
            else:
                assert got == pytest.approx(epoch[field])
    assert len(log["epoch"]) == 3


def test_the_command_draws_a_png(tmp_path):
    log = write_csv(tmp_path / "run.csv")
    out = tmp_path / "curves.png"
    env = {**os.environ, "MPLCONFIGDIR": str(tmp_path / "mpl")}
    done = subprocess.run([sys.executable, "-m", "nn_engine.plot", str(log), "-o", str(out)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}" in done.stdout
    with Image.open(out) as image:
        assert image.format == "PNG" and image.size == (900, 340)
        # Not blank: the curves and labels put many colours on the page.
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 16) or range(1 << 16)) > 50


def test_default_output_is_next_to_the_log(tmp_path):
    log = write_json(tmp_path / "run.log")
    assert plot_log(str(log)) == str(tmp_path / "run.png")
    assert (tmp_path / "run.png").stat().st_size > 1000


@pytest.mark.parametrize("text,message", [
    ("", "the log is empty"),
    ('{"epoch": 1, "train_loss": 0.5}\n{"epoch": 2, "train_loss": \n', ":2: not a JSON object"),
    ("a,b\n1,2\n", "the CSV header lacks epoch, train_loss"),
    ("epoch,train_loss\n1,x\n", ":2: train_loss is not a number: 'x'"),
])
def test_unreadable_logs_are_refused_with_file_and_line(tmp_path, text, message):
    log = tmp_path / "bad.csv"
    log.write_text(text)
    with pytest.raises(ValueError, match=None) as e:
        read_log(str(log))
    assert message in str(e.value) and str(log) in str(e.value)
    done = subprocess.run([sys.executable, "-m", "nn_engine.plot", str(log)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and message in done.stderr


def test_a_missing_log_is_refused(tmp_path):
    done = subprocess.run([sys.executable, "-m", "nn_engine.plot", str(tmp_path / "none.csv")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "none.csv" in done.stderr
