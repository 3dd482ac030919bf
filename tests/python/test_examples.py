"""The example scripts run: AlexNet for a couple of steps on a tiny synthetic
PetImages/Cat|Dog folder, LeNet on a synthetic mnist/0..9 folder and on an
IDX pair; and the IDX and image-folder readers against what was written."""
import gzip
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from nn_engine.datasets import load_idx_pair, load_image_folder

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
Image = pytest.importorskip("PIL.Image")
RNG = np.random.default_rng(2)


def write_images(root, classes, count, size, mode):
    for name in classes:
        os.makedirs(root / name)
        for i in range(count):
            shape = (size[1], size[0]) if mode == "L" else (size[1], size[0], 3)
            pixels = RNG.integers(0, 256, shape, dtype=np.uint8)
            Image.fromarray(pixels, mode).save(root / name / f"{i}.png")
    (root / classes[0] / "broken.jpg").write_bytes(b"not an image")


def write_idx(path, array):
    codes = {np.dtype(np.uint8): 0x08}
    header = bytes([0, 0, codes[array.dtype], array.ndim])
    header += b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


def run_example(name, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name), *args],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_alexnet_runs_on_a_tiny_pet_folder(tmp_path):
    root = tmp_path / "PetImages"
    write_images(root, ["Cat", "Dog"], 5, (70, 60), "RGB")
    out = run_example("train_alexnet.py", "--folder", str(root), "--size", "67", "--batch", "3",
                      "--accum", "2", "--epochs", "1", "--max-steps", "3")
    assert "9 training, 1 validation images (1 unreadable skipped)" in out
    assert "epoch  1" in out and "nan" not in out


def test_lenet_runs_on_an_mnist_folder(tmp_path):
    root = tmp_path / "mnist"
    write_images(root, [str(d) for d in range(10)], 3, (28, 28), "L")
    out = run_example("train_lenet.py", "--folder", str(root), "--epochs", "2", "--batch", "7")
    assert "27 training and 3 test images" in out
    assert "epoch  2" in out and "nan" not in out


def test_lenet_runs_on_idx_files(tmp_path):
    images = RNG.integers(0, 256, (50, 28, 28), dtype=np.uint8)
    labels = RNG.integers(0, 10, 50).astype(np.uint8)
    for split in ("train", "t10k"):
        write_idx(tmp_path / f"{split}-images-idx3-ubyte.gz", images)
        write_idx(tmp_path / f"{split}-labels-idx1-ubyte.gz", labels)
    out = run_example("train_lenet.py", "--idx", str(tmp_path), "--epochs", "1", "--batch", "16")
    assert "50 training and 50 test images" in out


def test_readers_return_what_was_written(tmp_path):
    images = RNG.integers(0, 256, (4, 5, 3), dtype=np.uint8)
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", images)
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.array([3, 1, 0, 2], dtype=np.uint8))
    x, y = load_idx_pair(str(tmp_path))
    assert x.shape == (4, 1, 5, 3) and x.dtype == np.float32
    assert np.allclose(x[:, 0] * 255, images) and y.tolist() == [3, 1, 0, 2]
    with pytest.raises(FileNotFoundError, match="t10k-images"):
        load_idx_pair(str(tmp_path), "test")
    # A truncated file: the library's reader names it.
    raw = gzip.open(tmp_path / "train-images-idx3-ubyte.gz").read()
    (tmp_path / "train-images-idx3-ubyte").write_bytes(raw[:-7])
    (tmp_path / "train-images-idx3-ubyte.gz").unlink()
    with pytest.raises(OSError, match="train-images-idx3-ubyte"):
        load_idx_pair(str(tmp_path))
    folder = tmp_path / "pets"
    write_images(folder, ["Cat", "Dog"], 2, (6, 4), "RGB")
    x, y, skipped = load_image_folder(str(folder), mode="RGB")
    assert x.shape == (4, 3, 4, 6) and y.tolist() == [0, 0, 1, 1] and skipped == 1
    with pytest.raises(FileNotFoundError):
        load_image_folder(str(tmp_path / "none"))


def test_image_folder_reads_16_bit_grey_pngs_by_their_high_byte(tmp_path):
    # Pillow's convert("L") clipped 16-bit grey at 255: every pixel came back 1.0 (issue 40, item 6).
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from png_files import write_png
    (tmp_path / "a").mkdir()
    write_png(tmp_path / "a" / "ramp.png", 3, 2, [0, 64 * 257, 192 * 257, 65535, 128 * 256 + 255, 1], bit_depth=16)
    want = np.array([[0, 64, 192], [255, 128, 0]], dtype=np.float32) / 255
    for mode, channels in (("L", 1), ("RGB", 3)):
        x, y, skipped = load_image_folder(str(tmp_path), mode=mode)
        assert x.shape == (1, channels, 2, 3) and skipped == 0
        assert np.allclose(x[0], want[None].repeat(channels, 0)), x[0]


def test_resnet_runs_on_idx_files(tmp_path):
    images = RNG.integers(0, 256, (20, 28, 28), dtype=np.uint8)
    labels = RNG.integers(0, 10, 20).astype(np.uint8)
    for split in ("train", "t10k"):
        write_idx(tmp_path / f"{split}-images-idx3-ubyte.gz", images)
        write_idx(tmp_path / f"{split}-labels-idx1-ubyte.gz", labels)
    out = run_example("train_resnet.py", "--idx", str(tmp_path), "--epochs", "1", "--batch", "8")
    assert "20 training and 20 test images" in out
    assert "epoch  1" in out and "nan" not in out
    # The DataLoader's worker thread augments in order: the same seed gives the same figures.
    again = run_example("train_resnet.py", "--idx", str(tmp_path), "--epochs", "1", "--batch", "8")
    figures = [re.sub(r"\s+[\d.]+ s\s+\d+ images/s$", "", line) for line in out.splitlines() if "epoch" in line]
    assert figures and figures == [re.sub(r"\s+[\d.]+ s\s+\d+ images/s$", "", line)
                                   for line in again.splitlines() if "epoch" in line], (out, again)


def interrupt_after_first_epoch(name, *args):
    """Run an example until it prints its first epoch line, press Ctrl+C
    once, and return its exit code, stdout and stderr."""
    import signal
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "examples", name), *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    while not p.stdout.readline().startswith("epoch"):
        assert p.poll() is None, p.stderr.read()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    return p.returncode, out, err


def test_lenet_ctrl_c_finishes_the_step_exports_and_exits_130(tmp_path):
    root = tmp_path / "mnist"
    write_images(root, [str(d) for d in range(10)], 3, (28, 28), "L")
    onnx_file = tmp_path / "lenet.onnx"
    code, out, err = interrupt_after_first_epoch("train_lenet.py", "--folder", str(root), "--epochs", "100000",
                                                 "--batch", "7", "--export", str(onnx_file))
    assert code == 130, err
    assert "stopped by Ctrl+C in epoch" in err and f"exported {onnx_file}" in out, (out, err)
    assert onnx_file.stat().st_size > 0


def assert_saved_weights(path, *names):
    from safetensors.numpy import load_file
    weights = load_file(str(path))
    for name in names:
        assert name in weights and np.isfinite(weights[name]).all() and np.abs(weights[name]).max() > 0, name


def test_alexnet_ctrl_c_finishes_the_step_saves_and_exits_130(tmp_path):
    root = tmp_path / "PetImages"
    write_images(root, ["Cat", "Dog"], 3, (70, 60), "RGB")
    saved = tmp_path / "alexnet.safetensors"
    code, out, err = interrupt_after_first_epoch("train_alexnet.py", "--folder", str(root), "--size", "67",
                                                 "--batch", "2", "--accum", "1", "--epochs", "100000",
                                                 "--save", str(saved))
    assert code == 130, err
    assert "stopped by Ctrl+C in epoch" in err and f"saved {saved}" in out, (out, err)
    assert_saved_weights(saved, "c1.weight", "l3.weight", "l3.bias")


def test_resnet_ctrl_c_finishes_the_step_saves_and_exits_130(tmp_path):
    images = RNG.integers(0, 256, (5, 28, 28), dtype=np.uint8)
    labels = RNG.integers(0, 10, 5).astype(np.uint8)
    for split in ("train", "t10k"):
        write_idx(tmp_path / f"{split}-images-idx3-ubyte.gz", images)
        write_idx(tmp_path / f"{split}-labels-idx1-ubyte.gz", labels)
    saved = tmp_path / "resnet.safetensors"
    code, out, err = interrupt_after_first_epoch("train_resnet.py", "--idx", str(tmp_path), "--epochs", "100000",
                                                 "--batch", "3", "--save", str(saved))
    assert code == 130, err
    assert "stopped by Ctrl+C in epoch" in err and f"saved {saved}" in out, (out, err)
    assert_saved_weights(saved, "conv1.weight", "layer4.1.bn2.running_var", "fc.weight")


@pytest.mark.parametrize("name", ["train_lenet.py", "train_alexnet.py", "train_resnet.py"])
def test_examples_refuse_a_save_path_they_cannot_write_before_training(tmp_path, name):
    folder = tmp_path / "out"
    folder.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    source = {"train_lenet.py": "--idx", "train_alexnet.py": "--folder", "train_resnet.py": "--idx"}[name]
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name), source, str(tmp_path / "none"),
                           "--save", str(folder)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{folder} is a folder, not a regular file" in done.stderr and "epoch" not in done.stdout


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_custom_ops_example_trains(device):
    """examples/custom_ops.py (issue 37): the custom-shader gated unit and the
    user's Signum learn Fashion-MNIST above chance on each device."""
    import nn_engine
    folder = "/usr/share/datasets/fashion-mnist"
    if not os.path.isdir(folder):
        pytest.skip("Debian's dataset-fashion-mnist is not installed")
    if device not in {d.backend for d in nn_engine.devices() if d.usable}:
        pytest.skip(f"no {device} device here")
    out = run_example("custom_ops.py", "--idx", folder, "--device", device, "--epochs", "1", "--limit", "1024",
                      "--hidden", "32", "--batch", "64")
    found = re.search(r"train loss ([0-9.]+)\s+test acc\s+([0-9.]+)%", out)
    assert found, out
    assert float(found.group(1)) < 2.3 and float(found.group(2)) > 25.0, out


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_custom_ops_c_example_trains(device):
    """examples/custom_ops.c (make examples): the gated unit's custom kernels
    and Lion written as a custom optimizer, from C, above chance on each device."""
    import nn_engine
    program = os.path.join(os.environ.get("NN_ENGINE_EXAMPLES", os.path.join(ROOT, "build", "examples")), "custom_ops")
    folder = "/usr/share/datasets/fashion-mnist"
    if not os.path.isdir(folder):
        pytest.skip("Debian's dataset-fashion-mnist is not installed")
    if device not in {d.backend for d in nn_engine.devices() if d.usable}:
        pytest.skip(f"no {device} device here")
    assert os.path.exists(program), f"{program} is missing: make examples"
    done = subprocess.run([program, folder, device, "1", "1024", "32", "1e-3"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"train loss ([0-9.]+)\s+test acc\s+([0-9.]+)%", done.stdout)
    assert found and float(found.group(1)) < 2.3 and float(found.group(2)) > 25.0, done.stdout
