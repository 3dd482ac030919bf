"""Reading the seed scripts' data layouts into NumPy: IDX files (MNIST,
Fashion-MNIST; plain or .gz) and image folders (one sub-folder per class,
e.g. mnist/0..9/ or PetImages/Cat|Dog/), decoded with Pillow."""
import gzip
import os

import numpy as np

# IDX element types (the third byte of the magic number).
_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4",
              0x0E: ">f8"}


def load_idx(path):
    """The array stored in an IDX file (gzip-compressed when it ends in .gz)."""
    opener = gzip.open if os.fspath(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise ValueError(f"{path}: not an IDX file (magic bytes {raw[:4].hex()})")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if ndim == 0 or len(raw) < header:
        raise ValueError(f"{path}: IDX header truncated or without dimensions")
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_IDX_TYPES[raw[2]])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise ValueError(f"{path}: shape {shape} needs {expected} bytes of data, the file has "
                         f"{len(raw) - header}")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)


def load_idx_pair(folder, split="train"):
    """(images [N, 1, 28, 28] float32 in [0, 1], labels [N] int32) from
    <split>-images-idx3-ubyte[.gz] and <split>-labels-idx1-ubyte[.gz]."""
    prefix = "t10k" if split == "test" else split

    def find(stem):
        for name in (stem, stem + ".gz"):
            if os.path.isfile(os.path.join(folder, name)):
                return os.path.join(folder, name)
        raise FileNotFoundError(f"{folder}: neither {stem} nor {stem}.gz exists")

    images = load_idx(find(f"{prefix}-images-idx3-ubyte"))
    labels = load_idx(find(f"{prefix}-labels-idx1-ubyte"))
    if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
        raise ValueError(f"{folder}: images {images.shape} and labels {labels.shape} do not "
                         "pair up")
    x = images.astype(np.float32)[:, None, :, :] / 255.0
    return x, labels.astype(np.int32)


def load_image_folder(root, classes=None, size=None, mode="L", limit_per_class=None):
    """(images [N, C, H, W] float32 in [0, 1], labels [N] int32) from
    root/<class>/<image files>. classes: the sub-folder names in label order
    (default: sorted). size: (width, height) to resize to. mode: Pillow mode,
    "L" (1 channel) or "RGB" (3). Files Pillow cannot read are skipped and
    counted in the returned `skipped`."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("reading image folders needs Pillow: apt-get install python3-pil "
                          "or pip install pillow") from None
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root}: no such folder")
    if classes is None:
        classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not classes:
        raise ValueError(f"{root}: no class sub-folders")
    images, labels, skipped = [], [], 0
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"{folder}: class folder missing")
        files = sorted(os.listdir(folder))[:limit_per_class]
        for file in files:
            try:
                with Image.open(os.path.join(folder, file)) as img:
                    img = img.convert(mode)
                    if size is not None:
                        img = img.resize(size)
                    array = np.asarray(img, dtype=np.float32) / 255.0
            except (OSError, ValueError):
                skipped += 1  # the Kaggle PetImages set has a few corrupt files
                continue
            images.append(array[None] if array.ndim == 2 else array.transpose(2, 0, 1))
            labels.append(label)
    if not images:
        raise ValueError(f"{root}: no readable images")
    shapes = {a.shape for a in images}
    if len(shapes) != 1:
        raise ValueError(f"{root}: images differ in size {sorted(shapes)[:3]}; pass size=")
    return np.stack(images), np.asarray(labels, dtype=np.int32), skipped
