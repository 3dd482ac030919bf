"""Image folders through the library's threaded loader (include/nn_loader.h):
JPEG/PNG decoded by libjpeg-turbo/libpng on C worker threads, resized,
augmented and normalised there, handed to Python as NumPy batches.

    from nn_engine.image_loader import ImageIndex, ImageLoader
    train, test, is_validation = ImageIndex.load_dir("PetImages", validation_fraction=0.1, seed=1,
                                                     verify_threads=8)
    loader = ImageLoader(train, size=(224, 224), batch=128, threads=8, seed=1,
                         shuffle=True, flip=True, crop="random-resized")
    for epoch in range(epochs):
        for x, y in loader.epoch(epoch):    # x: [n, 3, 224, 224] float32, y: [n] int32
            ...
    loader.close()

The signatures are declared here rather than in _lib.py: this module is
optional (the rest of the package runs without it on an older library)."""
import ctypes
import os

import numpy as np

from ._errors import check, check_ptr
from ._lib import c_status, lib
from ._structs import Batch as _Batch
from ._structs import ImageIndex as _Index
from ._structs import LoaderOptions as _Options

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CROPS = {"none": 0, "random-resized": 1, "center": 2}  # enum nn_crop_mode


_index_p = ctypes.POINTER(_Index)
_i64_p = ctypes.POINTER(ctypes.c_int64)
for _name, _restype, _argtypes in [
    ("nn_image_index_load", c_status, [ctypes.c_char_p, _index_p]),
    ("nn_image_index_load_dir", c_status, [ctypes.c_char_p, ctypes.c_double, ctypes.c_uint64,
                                           ctypes.c_int, _index_p, _index_p,
                                           ctypes.POINTER(ctypes.c_bool)]),
    ("nn_image_index_verify", c_status, [_index_p, ctypes.c_int]),
    ("nn_image_index_free", None, [_index_p]),
    ("nn_loader_new", ctypes.c_void_p, [_index_p, _i64_p, ctypes.c_int64,
                                        ctypes.POINTER(_Options)]),
    ("nn_loader_start_epoch", c_status, [ctypes.c_void_p, ctypes.c_int64]),
    ("nn_loader_next", c_status, [ctypes.c_void_p, ctypes.POINTER(_Batch)]),
    ("nn_loader_batches", ctypes.c_int64, [ctypes.c_void_p]),
    ("nn_loader_failures", ctypes.c_int64, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]),
    ("nn_loader_free", None, [ctypes.c_void_p]),
    ("nn_loader_shard", c_status, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
]:
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes


class ImageIndex:
    """The files of root/<class>/<file> (classes = sorted sub-folders);
    nothing is decoded. Files that are empty or not PNG/JPEG are skipped:
    `skipped` counts them, `first_skipped` names the first."""

    def __init__(self, _owned=None):
        self._index = _owned if _owned is not None else _Index()

    @classmethod
    def load(cls, root, verify_threads=0):
        """verify_threads > 0: decode every file once now and leave out the
        broken ones (counted in `skipped`), instead of finding them while
        loading batches."""
        index = cls()
        check(lib.nn_image_index_load(os.fsencode(root), ctypes.byref(index._index)),
              "nn_image_index_load")
        if verify_threads:
            check(lib.nn_image_index_verify(ctypes.byref(index._index), verify_threads),
                  "nn_image_index_verify")
        return index

    @classmethod
    def load_dir(cls, root, validation_fraction=0.1, seed=1, verify_threads=0):
        """(train, test, test_is_validation): root/train + root/test when both
        exist, else `validation_fraction` of root/<class>/... held out by
        `seed` (the images nn_dataset_load_dir would hold out). verify_threads
        as for load(), done before the split."""
        train, test, is_validation = cls(), cls(), ctypes.c_bool(False)
        check(lib.nn_image_index_load_dir(os.fsencode(root), validation_fraction, seed,
                                          verify_threads, ctypes.byref(train._index),
                                          ctypes.byref(test._index), ctypes.byref(is_validation)),
              "nn_image_index_load_dir")
        return train, test, bool(is_validation.value)

    def __len__(self):
        return int(self._index.count)

    @property
    def classes(self):
        return [self._index.class_names[c].decode() for c in range(self._index.classes)]

    @property
    def labels(self):
        return np.ctypeslib.as_array(self._index.labels, shape=(len(self),)).copy()

    def path(self, i):
        if not 0 <= i < len(self):
            raise IndexError(f"image {i} of {len(self)}")
        return os.fsdecode(self._index.paths[i])

    @property
    def skipped(self):
        return int(self._index.skipped)

    @property
    def first_skipped(self):
        return self._index.first_skipped.decode("utf-8", "replace")

    def __del__(self):
        if getattr(self, "_index", None) is not None:
            lib.nn_image_index_free(ctypes.byref(self._index))


class ImageLoader:
    """Batches of an ImageIndex (or of its images `subset`), decoded on
    `threads` C threads ahead of the caller. size: (height, width). crop:
    "none" (whole image stretched), "random-resized" (torchvision's
    RandomResizedCrop) or "center" (Resize(256)+CenterCrop(224) scaled).
    The order of epoch e is nn_shuffle_indices(seed, e) when shuffle; the
    crop and flip of an image depend only on (seed, epoch, image).
    Data parallel (DistributedSampler's num_replicas and rank): this rank's
    share of every global batch of num_replicas x batch images
    (nn_loader_shard), so the ranks together see what one loader at that
    batch gives."""

    def __init__(self, index, subset=None, size=(224, 224), channels=3, batch=128, threads=None,
                 prefetch=3, seed=1, shuffle=False, flip=False, crop="none",
                 mean=IMAGENET_MEAN, std=IMAGENET_STD, num_replicas=1, rank=0):
        if crop not in CROPS:
            raise ValueError(f"crop must be one of {sorted(CROPS)}, got {crop!r}")
        if threads is None:
            threads = max(1, (os.cpu_count() or 2) - 1)
        mean = tuple(mean) * (3 if len(tuple(mean)) == 1 else 1)
        std = tuple(std) * (3 if len(tuple(std)) == 1 else 1)
        if len(mean) != 3 or len(std) != 3:
            raise ValueError("mean and std take 1 or 3 values")
        self._index = index  # kept alive: the C loader reads its paths
        o = _Options(channels=channels, height=size[0], width=size[1], batch=batch,
                     threads=threads, prefetch=prefetch, seed=seed, shuffle=shuffle, flip=flip,
                     crop=CROPS[crop], mean=(ctypes.c_float * 3)(*mean),
                     std=(ctypes.c_float * 3)(*std))
        self._shape = (channels, size[0], size[1])
        if subset is None:
            count, subset_p = len(index), None
        else:
            self._subset = np.ascontiguousarray(subset, dtype=np.int64)
            count, subset_p = len(self._subset), self._subset.ctypes.data_as(_i64_p)
        self._loader = check_ptr(lib.nn_loader_new(ctypes.byref(index._index), subset_p, count,
                                                   ctypes.byref(o)), "nn_loader_new")
        if num_replicas != 1 or rank != 0:
            try:
                check(lib.nn_loader_shard(self._loader, rank, num_replicas), "nn_loader_shard")
            except Exception:
                self.close()
                raise

    def __len__(self):
        """Batches in a full epoch."""
        return int(lib.nn_loader_batches(self._loader))

    def epoch(self, epoch):
        """Yields (images [n, C, H, W] float32, labels [n] int32) for epoch
        `epoch` (0-based), copied out of the loader's buffers."""
        if not self._loader:
            raise RuntimeError("ImageLoader is closed")
        check(lib.nn_loader_start_epoch(self._loader, epoch), "nn_loader_start_epoch")
        batch = _Batch()
        while True:
            check(lib.nn_loader_next(self._loader, ctypes.byref(batch)), "nn_loader_next")
            n = int(batch.count)
            if n == 0:
                return
            images = np.ctypeslib.as_array(batch.images, shape=(n * int(np.prod(self._shape)),))
            labels = np.ctypeslib.as_array(batch.labels, shape=(n,))
            yield images.reshape((n,) + self._shape).copy(), labels.copy()

    def failures(self):
        """(files that failed to decode so far, the first with its reason)."""
        first = ctypes.create_string_buffer(1024)
        count = lib.nn_loader_failures(self._loader, first, len(first))
        return int(count), first.value.decode("utf-8", "replace")

    def close(self):
        if getattr(self, "_loader", None):
            lib.nn_loader_free(self._loader)
            self._loader = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
