"""Batches for a training loop, as torch.utils.data gives them:

    train = TensorDataset(x_train, y_train)          # NumPy arrays, first axis = samples
    loader = DataLoader(train, batch_size=64, shuffle=True, seed=1, device="cpu")
    for epoch in range(epochs):
        for xb, yb in loader:                        # engine Tensors on the device
            ...
            end_batch()                              # frees the batch's tensors

Datasets: TensorDataset over arrays (idx_dataset reads an IDX pair into one),
ImageFolder over root/<class>/<image> decoded by Pillow, or anything with
__len__ and __getitem__ returning a tuple of arrays. With num_workers > 0 a
background thread prepares the next batches (indexing, decoding photos) while
the model trains; engine tensors are made only in the caller's thread, since a
context belongs to the thread that uses it."""
import os
import queue
import threading

import numpy as np

from . import _context
from .tensor import Tensor

_IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".ppm", ".pgm", ".tif", ".tiff")


class Dataset:
    """torch.utils.data.Dataset: a subclass defines __len__ and
    __getitem__(i), which returns sample i as a tuple of arrays, numbers or
    Tensors (the DataLoader stacks each position into a batch)."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(self, index)")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__(self)")


class TensorDataset(Dataset):
    """torch.utils.data.TensorDataset: sample i is (a[i] for a in arrays);
    every array (NumPy, or an engine Tensor, read once) has the same length."""

    def __init__(self, *arrays):
        if not arrays:
            raise ValueError("TensorDataset: give at least one array")
        self.arrays = tuple(a.sync() if isinstance(a, Tensor) else np.asarray(a) for a in arrays)
        lengths = [len(a) if a.ndim else 0 for a in self.arrays]
        if lengths[0] < 1 or any(n != lengths[0] for n in lengths):
            raise ValueError(f"TensorDataset: arrays must have the same length >= 1 along their first "
                             f"axis, got {lengths}")

    def __len__(self):
        return len(self.arrays[0])

    def __getitem__(self, index):
        return tuple(a[index] for a in self.arrays)

    def batch(self, indices):
        """The samples at `indices`, stacked: one fancy-indexing per array."""
        return tuple(a[indices] for a in self.arrays)


def idx_dataset(folder, split="train"):
    """An IDX pair (MNIST, Fashion-MNIST: datasets.load_idx_pair) as a
    TensorDataset of (images [N, 1, H, W] float32 in [0, 1], labels int32)."""
    from .datasets import load_idx_pair
    return TensorDataset(*load_idx_pair(folder, split))


class ImageFolder:
    """torchvision.datasets.ImageFolder: root/<class>/<image>, classes in
    sorted order (or as given). Sample i is (image [C, H, W] float32 in
    [0, 1], normalised by (mean, std) per channel when `normalize` is given;
    label int32), decoded by Pillow when asked for, so a DataLoader with
    num_workers decodes in its background thread. size: (width, height) to
    resize to (images of a batch must agree); mode: "RGB" or "L"."""

    def __init__(self, root, size=None, mode="RGB", classes=None, normalize=None):
        if not os.path.isdir(root):
            raise FileNotFoundError(f"ImageFolder: {root}: no such folder")
        if mode not in ("RGB", "L"):
            raise ValueError(f"ImageFolder: mode must be 'RGB' or 'L', got {mode!r}")
        if size is not None and (len(size) != 2 or not all(isinstance(v, int) and v > 0 for v in size)):
            raise ValueError(f"ImageFolder: size must be (width, height), positive ints, got {size!r}")
        self.root, self.size, self.mode = root, None if size is None else tuple(size), mode
        self.classes = list(classes) if classes is not None else sorted(
            d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
        if not self.classes:
            raise ValueError(f"ImageFolder: {root} has no class sub-folders")
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self.samples = []
        for name in self.classes:
            folder = os.path.join(root, name)
            if not os.path.isdir(folder):
                raise FileNotFoundError(f"ImageFolder: class folder {folder} does not exist")
            self.samples += [(os.path.join(folder, f), self.class_to_idx[name]) for f in sorted(os.listdir(folder))
                             if f.lower().endswith(_IMAGE_EXTENSIONS)]
        if not self.samples:
            raise ValueError(f"ImageFolder: no images under {root}")
        channels = 3 if mode == "RGB" else 1
        self.normalize = None
        if normalize is not None:
            mean, std = (np.asarray(v, dtype=np.float32).reshape(-1) for v in normalize)
            if mean.shape != std.shape or mean.size not in (1, channels) or not np.all(std > 0):
                raise ValueError(f"ImageFolder: normalize must be (mean, std), 1 or {channels} values each "
                                 f"with std > 0, got {normalize!r}")
            self.normalize = (mean.reshape(-1, 1, 1), std.reshape(-1, 1, 1))
        self.targets = [label for _, label in self.samples]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        from PIL import Image
        path, label = self.samples[index]
        try:
            with Image.open(path) as img:
                img = img.convert(self.mode)
                if self.size is not None:
                    img = img.resize(self.size)
                array = np.asarray(img, dtype=np.float32) / 255.0
        except (OSError, ValueError) as err:
            raise OSError(f"ImageFolder: cannot decode {path}: {err}") from None
        array = array[None] if array.ndim == 2 else array.transpose(2, 0, 1)
        if self.normalize is not None:
            array = (array - self.normalize[0]) / self.normalize[1]
        return np.ascontiguousarray(array, dtype=np.float32), np.int32(label)


def _random_state(generator, seed, where):
    """A NumPy Generator from generator= (a NumPy Generator, or a
    torch.Generator: its initial_seed) or seed=; None: no shuffling source."""
    if generator is not None and seed is not None:
        raise ValueError(f"{where}: give generator= or seed=, not both")
    if seed is not None:
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
            raise ValueError(f"{where}: seed must be an int in [0, 2**64), got {seed!r}")
        return np.random.default_rng(seed)
    if generator is None or isinstance(generator, np.random.Generator):
        return generator
    if hasattr(generator, "initial_seed"):
        return np.random.default_rng(int(generator.initial_seed()))
    raise TypeError(f"{where}: generator must be a numpy.random.Generator or a torch.Generator, "
                    f"got {type(generator).__name__}")


def _collate(samples):
    """A list of sample tuples into a tuple of stacked arrays."""
    return tuple(np.stack([np.asarray(s[k]) for s in samples]) for k in range(len(samples[0])))


class DataLoader:
    """torch.utils.data.DataLoader over a dataset (see the module docstring):
    batches of batch_size samples as engine Tensors on `device` (None: the
    default device): float arrays as float32, integer ones (labels) as
    int32, made with track=True so end_batch() frees them.

    shuffle draws a new order every epoch from generator= (numpy or torch)
    or seed= (epoch after epoch the same sequence for the same seed), else
    from the host generator manual_seed seeds (as torch's DataLoader draws
    from torch's default generator); drop_last leaves out a last, smaller batch.
    num_workers > 0 prepares up to num_workers * prefetch_factor batches
    ahead on one background thread."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, generator=None, seed=None,
                 device=None, num_workers=0, prefetch_factor=2):
        if not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
            raise TypeError(f"DataLoader: dataset must have __len__ and __getitem__, got "
                            f"{type(dataset).__name__}")
        for name, value, low in (("batch_size", batch_size, 1), ("num_workers", num_workers, 0),
                                 ("prefetch_factor", prefetch_factor, 1)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"DataLoader: {name} must be an int >= {low}, got {value!r}")
        if device is not None:
            _context._check_device_name(device, "DataLoader")
        self.dataset, self.batch_size = dataset, batch_size
        self.shuffle, self.drop_last = bool(shuffle), bool(drop_last)
        self.device, self.num_workers, self.prefetch_factor = device, num_workers, prefetch_factor
        self._rng = _random_state(generator, seed, "DataLoader")

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _order(self):
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n)
        return (self._rng or _context.host_generator()).permutation(n)

    def _batches(self, order):
        """The host arrays of each batch, in order."""
        fetch = getattr(self.dataset, "batch", None)
        for i in range(len(self)):
            indices = order[i * self.batch_size:(i + 1) * self.batch_size]
            yield fetch(indices) if fetch else _collate([self.dataset[int(j)] for j in indices])

    def _to_tensors(self, arrays, ctx):
        out = []
        for a in arrays:
            dtype = np.int32 if a.dtype.kind in "iub" else np.float32
            out.append(Tensor(a, dtype=dtype, device=ctx))
        return tuple(out)

    def __iter__(self):
        ctx = _context.default_context() if self.device is None else _context.context_for(self.device,
                                                                                          "DataLoader")
        order = self._order()
        if self.num_workers == 0:
            for arrays in self._batches(order):
                yield self._to_tensors(arrays, ctx)
            return
        yield from self._prefetched(order, ctx)

    def _prefetched(self, order, ctx):
        ready = queue.Queue(maxsize=self.num_workers * self.prefetch_factor)
        stop = threading.Event()
        done = object()

        def work():
            try:
                for arrays in self._batches(order):
                    while not stop.is_set():
                        try:
                            ready.put(arrays, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                item = done
            except BaseException as err:  # handed to the training loop's thread
                item = err
            while not stop.is_set():
                try:
                    ready.put(item, timeout=0.1)
                    return
                except queue.Full:
                    continue

        worker = threading.Thread(target=work, name="nn_engine DataLoader", daemon=True)
        worker.start()
        try:
            while True:
                item = ready.get()
                if item is done:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield self._to_tensors(item, ctx)
        finally:
            stop.set()
            worker.join()
