"""Reading the seed scripts' data layouts into NumPy: IDX files (MNIST,
Fashion-MNIST; plain or .gz) through the library's reader, and image folders
(one sub-folder per class, e.g. mnist/0..9/ or PetImages/Cat|Dog/) decoded
with Pillow here into one array in memory (small folders). For large photo
folders (PetImages, AlexNet at 224x224), ImageIndex and ImageLoader (from
nn_engine.image_loader, re-exported here) decode batch by batch on the
library's worker threads, with the train/validation split, shuffle, random
crop and flip."""
import ctypes
import os

import numpy as np

from . import _lib
from ._errors import check
from ._lib import lib
from .image_loader import ImageIndex, ImageLoader  # noqa: F401  (re-exported)


def load_idx_pair(folder, split="train"):
    """(images [N, 1, H, W] float32 in [0, 1], labels [N] int32) from
    <split>-images-idx3-ubyte[.gz] and <split>-labels-idx1-ubyte[.gz] in
    `folder` (split "test" reads the t10k files), read by the library's IDX
    reader (nn_dataset_load_idx). split is "train" or "test": IDX sets have
    no other (a validation split is cut from train by the caller)."""
    if split not in ("train", "test"):
        raise ValueError(f"load_idx_pair: split must be 'train' or 'test' (IDX files come as train-* and t10k-*), "
                         f"got {split!r}")
    prefix = "t10k" if split == "test" else split

    def find(stem):
        for name in (stem, stem + ".gz"):
            if os.path.isfile(os.path.join(folder, name)):
                return os.path.join(folder, name)
        raise FileNotFoundError(f"{folder}: neither {stem} nor {stem}.gz exists")

    images_path = find(f"{prefix}-images-idx3-ubyte")
    labels_path = find(f"{prefix}-labels-idx1-ubyte")
    ds = _lib.Dataset()
    check(lib.nn_dataset_load_idx(os.fsencode(images_path), os.fsencode(labels_path),
                                  ctypes.byref(ds)), "nn_dataset_load_idx")
    try:
        if ds.count < 1 or not ds.pixels or not ds.labels:
            raise ValueError(f"{images_path}: no images")
        shape = (ds.count, ds.channels, ds.height, ds.width)
        pixels = np.ctypeslib.as_array(ds.pixels, shape=(int(np.prod(shape)),)).reshape(shape)
        x = pixels.astype(np.float32) / 255.0
        y = np.ctypeslib.as_array(ds.labels, shape=(ds.count,)).astype(np.int32)
    finally:
        lib.nn_dataset_free(ctypes.byref(ds))
    return x, y


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
                    if img.mode in ("I", "I;16", "I;16B", "I;16L"):
                        # 16-bit grey: Pillow's convert would clip it at 255; keep the high byte,
                        # as the library's PNG reader (and Pillow for 16-bit RGB) does.
                        img = Image.fromarray((np.asarray(img, dtype=np.uint32) >> 8).astype(np.uint8), mode="L")
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
