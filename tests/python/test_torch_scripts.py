"""PyTorch training scripts run unchanged but for their import lines
(issue 36): each script in torch_scripts/ runs under PyTorch as written,
then with `torch` replaced by `nn_engine` in its import lines only, on the
same data; nn_engine must reach PyTorch's result, and the checkpoint each
script saves and loads into a fresh model must give the trained model's."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPTS = sorted((Path(__file__).parent / "torch_scripts").glob("*.py"))
IMPORT_LINE = re.compile(r"^(import|from)\s+torch\b")


def with_nn_engine(source):
    """The script with `torch` replaced by `nn_engine` in its import lines,
    and nothing else changed."""
    lines = []
    for line in source.splitlines(keepends=True):
        if IMPORT_LINE.match(line):
            line = re.sub(r"^import torch$", "import nn_engine as torch", line.rstrip("\n")) + "\n"
            line = re.sub(r"^(import|from) torch\.", r"\1 nn_engine.", line)
        lines.append(line)
    return "".join(lines)


def test_only_import_lines_change():
    for script in SCRIPTS:
        before = script.read_text().splitlines()
        after = with_nn_engine(script.read_text()).splitlines()
        changed = [(a, b) for a, b in zip(before, after) if a != b]
        assert len(before) == len(after) and changed, script.name
        assert all(IMPORT_LINE.match(a) and "nn_engine" in b and "torch" not in b.replace("as torch", "")
                   for a, b in changed), changed


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Four classes of 12 x 12 images: a random template per class under noise."""
    rng = np.random.default_rng(7)
    templates = rng.standard_normal((4, 1, 12, 12)).astype(np.float32)

    def make(n):
        y = rng.integers(0, 4, n)
        x = templates[y] * 0.5 + rng.standard_normal((n, 1, 12, 12)).astype(np.float32)
        return x.astype(np.float32), y.astype(np.int64)

    (x_train, y_train), (x_test, y_test) = make(512), make(256)
    path = tmp_path_factory.mktemp("torch_scripts") / "data.npz"
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    return path


def run(script_path, data, folder, env=None):
    result = folder / "result.json"
    done = subprocess.run([sys.executable, str(script_path), str(data), str(folder / "checkpoint"), str(result)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=folder)
    assert done.returncode == 0, f"{script_path.name} failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(result.read_text()), done.stdout


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_script_reaches_pytorchs_result(script, data, tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "torch").mkdir()
    (tmp_path / "ours").mkdir()
    theirs, _ = run(script, data, tmp_path / "torch")
    ours_script = tmp_path / "ours" / script.name
    ours_script.write_text(with_nn_engine(script.read_text()))
    package = Path(__file__).resolve().parents[2] / "python"
    env = dict(os.environ, NN_ENGINE_DEVICE="cpu",
               PYTHONPATH=os.pathsep.join(filter(None, [str(package), os.environ.get("PYTHONPATH")])))
    ours, log = run(ours_script, data, tmp_path / "ours", env)
    print(log)
    assert theirs["test_acc"] >= 0.85, theirs  # the task is learnable: the comparison means something
    assert ours["test_acc"] >= theirs["test_acc"] - 0.05, (ours, theirs)
    # the checkpoint saved and loaded into a fresh model gives the trained model's result
    assert ours["restored_acc"] == ours["test_acc"], ours
    for key in set(theirs) - {"test_acc", "restored_acc", "test_loss", "restored_loss"}:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-6, err_msg=key)
    if "test_loss" in theirs:
        assert ours["restored_loss"] == pytest.approx(ours["test_loss"], rel=1e-6)
