"""nn_engine.image_loader (the library's threaded image loader) against
torchvision's recipe done by hand: Pillow decodes (img.convert("RGB"|"L")),
torch.nn.functional.interpolate(bilinear, align_corners=False) resizes,
then (x / 255 - mean) / std. Pillow on Debian decodes JPEG with the same
libjpeg-turbo, so at full scale the pixels agree exactly."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")
from nn_engine.image_loader import IMAGENET_MEAN, IMAGENET_STD, ImageIndex, ImageLoader  # noqa: E402


def write_folder(root):
    rng = np.random.default_rng(0)
    files = []
    for cls, count in (("cat", 4), ("dog", 5)):
        (root / cls).mkdir()
        for i in range(count):
            h, w = 17 + 3 * i, 23 + 5 * i  # odd sizes, below 2x the output: no DCT scaling
            pixels = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
            if i % 3 == 0:
                path = root / cls / f"{i}.png"
                Image.fromarray(pixels).save(path)
            elif i % 3 == 1:
                # baseline 4:2:0, progressive, and 4:4:4 JPEGs
                path = root / cls / f"{i}.jpg"
                Image.fromarray(pixels).save(path, quality=90, progressive=(cls == "dog"),
                                             subsampling=0 if i == 4 else -1)
            else:
                path = root / cls / f"{i}.png"
                Image.fromarray(pixels[:, :, 0]).save(path)  # grayscale
            files.append(path)
    (root / "dog" / "zero.jpg").write_bytes(b"")
    (root / "dog" / "readme.txt").write_text("not an image")
    (root / "cat" / "bad.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"junk" * 20)
    return files


def reference(path, size, mode):
    with Image.open(path) as img:
        if img.format == "JPEG" and mode == "L":
            # A colour JPEG asked as grey: both take libjpeg's Y channel
            # (Pillow's draft mode), not the luma of the decoded RGB, which
            # differs where the chroma-upsampled RGB clips.
            img.draft("L", img.size)
        array = np.asarray(img.convert(mode), dtype=np.float64)
    if array.ndim == 2:
        array = array[:, :, None]
    x = torch.from_numpy(array).permute(2, 0, 1)[None]
    x = torch.nn.functional.interpolate(x, size=size, mode="bilinear", align_corners=False)[0]
    c = x.shape[0]
    mean = torch.tensor(IMAGENET_MEAN[:c], dtype=torch.float64)[:, None, None]
    std = torch.tensor(IMAGENET_STD[:c], dtype=torch.float64)[:, None, None]
    return ((x / 255 - mean) / std).numpy()


@pytest.mark.parametrize("channels,mode", [(3, "RGB"), (1, "L")])
def test_loader_matches_pillow_and_torch(tmp_path, channels, mode):
    write_folder(tmp_path)
    index = ImageIndex.load(str(tmp_path))
    assert index.classes == ["cat", "dog"]
    assert len(index) == 10  # 9 images + bad.jpg (its body is only read by the loader)
    assert index.skipped == 2 and "readme.txt: neither PNG nor JPEG" in index.first_skipped
    size = (20, 30)
    with ImageLoader(index, size=size, channels=channels, batch=4, threads=2) as loader:
        assert len(loader) == 3
        seen = []
        for x, y in loader.epoch(0):
            assert x.shape[1:] == (channels,) + size and x.dtype == np.float32
            seen.extend(zip(x, y))
        count, first = loader.failures()
    assert count == 1 and "bad.jpg" in first
    paths = [index.path(i) for i in range(len(index)) if not index.path(i).endswith("bad.jpg")]
    assert len(seen) == len(paths) == 9
    for (got, label), path in zip(seen, paths):
        want = reference(path, size, mode)
        assert label == (1 if "/dog/" in path else 0)
        np.testing.assert_allclose(got, want, rtol=0, atol=3e-5, err_msg=path)


def test_split_shuffle_and_errors(tmp_path):
    write_folder(tmp_path)
    train, test, is_validation = ImageIndex.load_dir(str(tmp_path), validation_fraction=0.3, seed=5)
    assert is_validation and len(test) == 3 and len(train) == 7
    assert not set(train.path(i) for i in range(7)) & set(test.path(i) for i in range(3))
    # Verified before the split: bad.jpg leaves, counted with the two skipped files.
    vtrain, vtest, _ = ImageIndex.load_dir(str(tmp_path), validation_fraction=0.3, seed=5,
                                           verify_threads=2)
    assert len(vtrain) + len(vtest) == 9 and vtrain.skipped == 3
    assert not any(vtrain.path(i).endswith("bad.jpg") for i in range(len(vtrain)))
    with ImageLoader(vtrain, size=(8, 8), batch=4, threads=2) as loader:
        assert sum(len(y) for _, y in loader.epoch(0)) == len(vtrain)
        assert loader.failures() == (0, "")
    loader = ImageLoader(train, size=(8, 8), batch=3, threads=3, shuffle=True, flip=True,
                         crop="random-resized", seed=2)
    a = [x for x, _ in loader.epoch(1)]
    b = [x for x, _ in loader.epoch(1)]
    c = [x for x, _ in loader.epoch(2)]
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert not all(p.shape == q.shape and np.array_equal(p, q) for p, q in zip(a, c))
    loader.close()
    with pytest.raises(ValueError, match="threads 0"):
        ImageLoader(train, threads=0)
    with pytest.raises(ValueError, match="crop must be one of"):
        ImageLoader(train, crop="square")
    with pytest.raises(OSError, match="no such folder"):
        ImageIndex.load(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(OSError, match="empty: class folder has no PNG or JPEG image"):
        ImageIndex.load(str(tmp_path))


def test_ranks_share_the_global_batch(tmp_path):
    """2 ranks at batch 2 (num_replicas, rank) give, step by step, the images
    of one loader at batch 4, augmentation included; the odd image left over
    in the last global batch is skipped."""
    write_folder(tmp_path)
    (tmp_path / "cat" / "bad.jpg").unlink()  # a file failing to decode would shorten its batch
    index = ImageIndex.load(str(tmp_path))
    assert len(index) == 9
    kw = dict(size=(7, 5), threads=2, shuffle=True, flip=True, crop="random-resized", seed=4)
    whole = list(ImageLoader(index, batch=4, **kw).epoch(3))
    ranks = [list(ImageLoader(index, batch=2, num_replicas=2, rank=r, **kw).epoch(3)) for r in range(2)]
    assert len(ranks[0]) == len(ranks[1]) == 2
    for step, ((x0, y0), (x1, y1)) in enumerate(zip(*ranks)):
        x, y = np.concatenate([x0, x1]), np.concatenate([y0, y1])
        assert np.array_equal(x, whole[step][0][:len(x)]) and np.array_equal(y, whole[step][1][:len(y)])
    assert [len(y) for _, y in whole] == [4, 4, 1]
    assert sum(len(y) for r in ranks for _, y in r) == 8  # the last global batch's 1 image is left over
    odd = [list(ImageLoader(index, subset=list(range(7)), batch=2, num_replicas=2, rank=r, **kw).epoch(0))
           for r in range(2)]
    assert [len(y) for _, y in odd[0]] == [2, 1] and sum(len(y) for r in odd for _, y in r) == 6
    with pytest.raises(ValueError, match="rank 2 of 2 ranks"):
        ImageLoader(index, batch=2, num_replicas=2, rank=2)
