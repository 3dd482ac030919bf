#!/usr/bin/env python3
"""Writes the hand-made seeds of tests/fuzz/corpus_idx/ and
tests/fuzz/corpus_image/ (seed-*): valid IDX files raw and gzip (first byte
0: the image file; 1: the label file) and small PNGs and JPEGs of every kind
the decoders take. Needs numpy and Pillow; run from the repository root. The
fuzzers' own finds (other names) sit beside them."""
import gzip
import io
import os
import struct

import numpy as np
from PIL import Image

IDX, IMG = "tests/fuzz/corpus_idx", "tests/fuzz/corpus_image"


def idx(magic, dims, data):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + bytes(data)


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "seed-" + name), "wb") as f:
        f.write(data)


def main():
    rng = np.random.default_rng(25)
    images = idx(0x803, [3, 5, 7], rng.integers(0, 256, 105, dtype=np.uint8))
    labels = idx(0x801, [3], [0, 2, 1])
    write(IDX, "images-raw", b"\0" + images)
    write(IDX, "images-gzip", b"\0" + gzip.compress(images, mtime=0))
    write(IDX, "labels-raw", b"\1" + labels)
    write(IDX, "labels-gzip", b"\1" + gzip.compress(labels, mtime=0))
    write(IDX, "images-no-trailer", b"\0" + gzip.compress(images, mtime=0)[:-8])

    grey = rng.integers(0, 256, (9, 11), dtype=np.uint8)
    rgb = rng.integers(0, 256, (9, 11, 3), dtype=np.uint8)
    kinds = {
        "grey": Image.fromarray(grey),
        "grey16": Image.fromarray(grey.astype(np.uint16) * 257),
        "rgb": Image.fromarray(rgb),
        "rgba": Image.fromarray(np.dstack([rgb, grey])),
        "la": Image.fromarray(np.dstack([grey, grey])[:, :, :2].copy(), "LA"),
        "palette": Image.fromarray(rgb).convert("P"),
        "bilevel": Image.fromarray(grey).convert("1"),
    }
    for name, image in kinds.items():
        for interlace in (False, True):
            out = io.BytesIO()
            image.save(out, "PNG", interlace=interlace)
            write(IMG, f"{name}{'-interlaced' if interlace else ''}.png", out.getvalue())
    big = rng.integers(0, 256, (40, 56, 3), dtype=np.uint8)
    for name, image, extra in (("grey", Image.fromarray(grey), {}), ("rgb", Image.fromarray(big), {}),
                               ("rgb-progressive", Image.fromarray(big), {"progressive": True}),
                               ("rgb-420", Image.fromarray(big), {"subsampling": 2})):
        out = io.BytesIO()
        image.save(out, "JPEG", quality=80, **extra)
        write(IMG, name + ".jpg", out.getvalue())


if __name__ == "__main__":
    main()
