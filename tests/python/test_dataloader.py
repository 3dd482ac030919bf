"""nn_engine.data (issue 26): DataLoader over TensorDataset, IDX files and
ImageFolder photo folders as torch.utils.data's, checked against plain
NumPy: every sample once per epoch, seeded shuffles, drop_last, batches as
engine Tensors on the asked device, the prefetching thread giving the same
batches, and argument errors named."""
import numpy as np
import pytest
import torch
from PIL import Image

import nn_engine as nn
from nn_engine.data import DataLoader, ImageFolder, TensorDataset, idx_dataset

X = np.random.default_rng(1).standard_normal((23, 3, 2)).astype(np.float32)
Y = np.arange(23, dtype=np.int64) % 7


def collect(loader):
    out = []
    for xb, yb in loader:
        assert isinstance(xb, nn.Tensor) and xb.dtype == np.float32 and yb.dtype == np.int32
        out.append((xb.numpy(), yb.numpy()))
        nn.end_batch()
        assert not xb.alive  # batches are the step's, freed by end_batch
    return out


@pytest.mark.parametrize("workers", [0, 2])
def test_every_sample_once_in_batches_of_batch_size(workers):
    loader = DataLoader(TensorDataset(X, Y), batch_size=5, shuffle=True, seed=4, num_workers=workers)
    batches = collect(loader)
    assert len(loader) == len(batches) == 5 and [len(b[0]) for b in batches] == [5, 5, 5, 5, 3]
    xs = np.concatenate([b[0] for b in batches])
    ys = np.concatenate([b[1] for b in batches])
    order = np.random.default_rng(4).permutation(23)  # seed= is numpy's default_rng(seed)
    np.testing.assert_array_equal(xs, X[order])
    np.testing.assert_array_equal(ys, Y[order])
    second = np.concatenate([b[1] for b in collect(loader)])
    assert not np.array_equal(second, ys)  # a new order each epoch
    assert sorted(second) == sorted(Y)


def test_drop_last_batch_one_and_no_shuffle():
    loader = DataLoader(TensorDataset(X, Y), batch_size=5, drop_last=True)
    batches = collect(loader)
    assert len(loader) == len(batches) == 4
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), X[:20])
    ones = collect(DataLoader(TensorDataset(X[:3], Y[:3]), batch_size=1))
    assert [b[0].shape for b in ones] == [(1, 3, 2)] * 3


def test_seeds_and_generators_repeat_their_orders():
    def labels(loader):
        return np.concatenate([b[1] for b in collect(loader)])
    a = DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True, seed=9)
    b = DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True, generator=np.random.default_rng(9))
    np.testing.assert_array_equal(labels(a), labels(b))
    t = DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(9))
    np.testing.assert_array_equal(labels(t), labels(DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True,
                                                               seed=9)))


def test_prefetching_stops_early_and_passes_errors_on():
    class Broken:
        def __len__(self):
            return 10

        def __getitem__(self, i):
            if i == 7:
                raise OSError("sample 7 is unreadable")
            return np.full(2, i, np.float32), np.int32(i)

    loader = DataLoader(Broken(), batch_size=2, num_workers=1, prefetch_factor=1)
    seen = []
    with pytest.raises(OSError, match="sample 7 is unreadable"):
        for xb, yb in loader:
            seen.append(yb.numpy().tolist())
    assert seen == [[0, 1], [2, 3], [4, 5]]
    for _ in DataLoader(TensorDataset(X, Y), batch_size=1, num_workers=2):
        break  # the thread is stopped and joined, not left blocked


def test_batches_go_to_the_asked_device():
    usable = {d.backend for d in nn.devices() if d.usable}
    for device in ["cpu"] + (["vulkan"] if "vulkan" in usable else []):
        xb, yb = next(iter(DataLoader(TensorDataset(X, Y), batch_size=6, device=device)))
        assert xb.device == device and yb.device == device
        np.testing.assert_array_equal(xb.numpy(), X[:6])


def test_image_folder_decodes_in_the_worker_thread(tmp_path):
    rng = np.random.default_rng(3)
    pictures = {}
    for name in ["dog", "cat"]:
        (tmp_path / name).mkdir()
        for i in range(3):
            pixels = rng.integers(0, 256, (7, 5, 3), dtype=np.uint8)  # 5 wide, 7 high
            Image.fromarray(pixels).save(tmp_path / name / f"{i}.png")
            pictures[(name, i)] = pixels
    (tmp_path / "cat" / "notes.txt").write_text("not an image")
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    ds = ImageFolder(str(tmp_path), normalize=(mean, std))
    assert ds.classes == ["cat", "dog"] and len(ds) == 6
    batches = collect(DataLoader(ds, batch_size=4, num_workers=1))
    xs = np.concatenate([b[0] for b in batches])
    ys = np.concatenate([b[1] for b in batches])
    np.testing.assert_array_equal(ys, [0, 0, 0, 1, 1, 1])
    for k, (name, i) in enumerate([("cat", 0), ("cat", 1), ("cat", 2), ("dog", 0), ("dog", 1), ("dog", 2)]):
        want = (pictures[(name, i)].transpose(2, 0, 1) / 255.0 - np.reshape(mean, (3, 1, 1))) / np.reshape(std, (3, 1, 1))
        np.testing.assert_allclose(xs[k], want, rtol=1e-5, atol=1e-6)
    grey = ImageFolder(str(tmp_path), mode="L", size=(3, 2))
    assert grey[0][0].shape == (1, 2, 3)


def test_idx_dataset_reads_fashion_mnist():
    import os
    folder = "/usr/share/datasets/fashion-mnist"
    if not os.path.isdir(folder):
        pytest.skip("needs Fashion-MNIST")
    ds = idx_dataset(folder, "test")
    assert len(ds) == 10000
    xb, yb = next(iter(DataLoader(ds, batch_size=13)))
    assert xb.shape == (13, 1, 28, 28) and 0.0 <= xb.numpy().min() and xb.numpy().max() <= 1.0
    np.testing.assert_array_equal(yb.numpy(), ds.arrays[1][:13])
    # Issue 41: a split IDX files do not have names the ones they do.
    with pytest.raises(ValueError, match="split must be 'train' or 'test'.*got 'val'"):
        idx_dataset(folder, "val")


@pytest.mark.parametrize("call, message", [
    (lambda: DataLoader(TensorDataset(X, Y), batch_size=0), "DataLoader: batch_size must be an int >= 1, got 0"),
    (lambda: DataLoader(TensorDataset(X, Y), num_workers=-1), "num_workers must be an int >= 0, got -1"),
    (lambda: DataLoader(TensorDataset(X, Y), seed=1, generator=np.random.default_rng(1)), "generator= or seed="),
    (lambda: DataLoader(TensorDataset(X, Y), device="tpu"), "DataLoader: unknown device 'tpu'"),
    (lambda: DataLoader(3), "DataLoader: dataset must have __len__ and __getitem__, got int"),
    (lambda: TensorDataset(X, Y[:5]), "same length >= 1 along their first axis, got \\[23, 5\\]"),
    (lambda: DataLoader(TensorDataset(X, Y), generator="seed"), "generator must be a numpy.random.Generator"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()
