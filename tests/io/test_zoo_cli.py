"""The zoo in the command line (issue 22): fine-tuning torchvision's
ResNet-18 on photo folders (--init its state_dict, --classes 2 replacing
fc, --freeze keeping conv1 and layer1 fixed), then eval on the saved
weights; resnet18-cifar trained on small grey images, exported to ONNX and
run by onnxruntime with PyTorch's logits; bad fine-tuning flags refused."""
import subprocess

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file, save_file

from conftest import CLI

torchvision = pytest.importorskip("torchvision")


def cli(*args, status=0):
    if not CLI.exists():
        pytest.fail(f"{CLI} is missing: run `make cli` first")
    done = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=900)
    assert done.returncode == status, f"nnengine {' '.join(map(str, args))}: exit {done.returncode}\n{done.stderr}"
    return done


def photo_folders(root, classes, per_class, size, mode="RGB", seed=0):
    """Class folders of PNGs: each class its own mean colour, plus noise."""
    rng = np.random.default_rng(seed)
    channels = 3 if mode == "RGB" else 1
    for c in range(classes):
        (root / f"class{c}").mkdir(parents=True)
        base = rng.uniform(40, 215, channels)
        for i in range(per_class):
            pixels = np.clip(base + rng.normal(0, 30, (size, size, channels)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels[..., 0] if channels == 1 else pixels, mode).save(root / f"class{c}" / f"{i}.png")
    return root


def test_fine_tune_resnet18_from_torchvision_weights(tmp_path):
    data = photo_folders(tmp_path / "photos", 2, 5, 40)
    torch.manual_seed(3)
    start = {k: v.contiguous() for k, v in torchvision.models.resnet18().state_dict().items()}  # 1000 classes
    init, out = tmp_path / "resnet18.safetensors", tmp_path / "tuned.safetensors"
    save_file(start, str(init))
    common = ["--data", data, "--device", "cpu", "--epochs", "1", "--batch", "2", "--limit", "4"]
    # Strict by default: the 1000-class fc does not fit the 2-class data.
    refused = cli("train", "resnet18", *common, "--init", init, status=2)
    assert "fc.weight" in refused.stderr and "--classes K" in refused.stderr
    done = cli("train", "resnet18", *common, "--init", init, "--classes", "2", "--freeze", "conv1",
               "--freeze", "layer1", "--save", out)
    assert "except the classifier fc (new, 2 classes)" in done.stderr
    assert "frozen: 13 of 62 parameter tensors" in done.stderr  # conv1 and layer1's two blocks
    tuned = load_file(str(out))
    assert set(tuned) == set(start) and tuned["fc.weight"].shape == (2, 512)
    for name, value in tuned.items():
        if name.startswith(("conv1.", "layer1.")) and "running" not in name and "num_batches" not in name:
            assert torch.equal(value, start[name]), f"{name} was frozen but changed"
    for name in ("layer4.1.conv2.weight", "bn1.weight", "layer2.0.downsample.0.weight"):
        assert not torch.equal(tuned[name], start[name]), f"{name} was not trained"
    # The saved weights evaluate as trained (same validation split, same classes).
    evaluated = cli("eval", "resnet18", "--weights", out, "--data", data, "--device", "cpu")
    assert "resnet18 on 1 validation images" in evaluated.stdout


def test_fine_tuning_flags_refused_with_reasons(tmp_path):
    data = photo_folders(tmp_path / "photos", 3, 2, 16)
    common = ["train", "mobilenet_v2", "--data", data, "--device", "cpu", "--epochs", "1"]
    assert "--classes 2 is fewer than the 3 classes" in cli(*common, "--classes", "2", status=2).stderr
    assert "--freeze layer1 matches no parameter of mobilenet_v2" in cli(*common, "--freeze", "layer1",
                                                                         status=2).stderr
    assert "--freeze leaves no parameter of mobilenet_v2" in cli(*common, "--freeze", "features",
                                                                 "--freeze", "classifier", status=2).stderr
    assert "cannot be combined with --checkpoint" in cli(*common, "--freeze", "features", "--checkpoint",
                                                         tmp_path / "s", status=2).stderr
    missing = cli(*common, "--init", tmp_path / "absent.safetensors", status=2).stderr
    assert "absent.safetensors" in missing


def test_resnet18_cifar_trains_on_grey_images_and_exports_for_onnxruntime(tmp_path):
    import onnx
    import onnxruntime as ort

    data = photo_folders(tmp_path / "grey", 3, 6, 12, mode="L", seed=5)
    weights, onnx_path = tmp_path / "cifar.safetensors", tmp_path / "cifar.onnx"
    done = cli("train", "resnet18-cifar", "--data", data, "--device", "cpu", "--epochs", "1", "--batch", "4",
               "--save", weights)
    assert "images of 1x12x12, 3 classes" in done.stderr
    # The graph takes normalised images, as PyTorch's model below does
    # (tests/io/test_preprocessing_onnx.py checks the graph with the normalisation in front).
    cli("export", "resnet18-cifar", "--weights", weights, "--onnx", onnx_path, "--input-shape", "1,1,12,12",
        "--classes", "3", "--no-normalize-in-graph")
    onnx.checker.check_model(onnx.load(str(onnx_path)), full_check=True)
    reference = torchvision.models.resnet18(num_classes=3)
    reference.conv1 = torch.nn.Conv2d(1, 64, 3, 1, 1, bias=False)
    reference.maxpool = torch.nn.Identity()
    reference.load_state_dict(load_file(str(weights)), strict=True)
    x = np.random.default_rng(1).standard_normal((3, 1, 12, 12)).astype(np.float32)
    with torch.no_grad():
        want = reference.eval()(torch.from_numpy(x)).numpy()
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())
