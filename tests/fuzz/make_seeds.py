#!/usr/bin/env python3
"""Writes the hand-made seed files of tests/fuzz/corpus/ (seed-*): valid
safetensors files of the shapes we write and torch writes, and one file per
kind of damage the parser must refuse. Run from the repository root; the
fuzzer's own finds (other names) sit beside them."""
import json
import os
import struct

OUT = "tests/fuzz/corpus"


def container(header: bytes, data: bytes = b"") -> bytes:
    return struct.pack("<Q", len(header)) + header + data


def st(tensors, meta=None, pad=True) -> bytes:
    """tensors: [(name, dtype, shape, nbytes)], contiguous offsets."""
    h, off, data = {}, 0, b""
    if meta is not None:
        h["__metadata__"] = meta
    for name, dtype, shape, n in tensors:
        h[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}
        data += bytes((off + i) % 251 for i in range(n))
        off += n
    text = json.dumps(h, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return container(text, data)


MLP = [("fc1.weight", "F32", [5, 3], 60), ("fc1.bias", "F32", [5], 20),
       ("fc2.weight", "F32", [7, 5], 140), ("fc2.bias", "F32", [7], 28)]

seeds = {
    "valid-mlp": st(MLP),
    "valid-meta": st(MLP[:2], {"format": "pt", "epoch": "3"}),
    "valid-empty": container(b"{}"),
    "valid-scalar-and-zero": st([("s", "F64", [], 8), ("z", "I32", [0, 4], 0), ("b", "BOOL", [3], 3)]),
    "valid-all-dtypes": st([(d, d, [2], 2 * s) for d, s in
                            [("BOOL", 1), ("U8", 1), ("I8", 1), ("F8_E5M2", 1), ("F8_E4M3", 1),
                             ("I16", 2), ("U16", 2), ("F16", 2), ("BF16", 2), ("I32", 4),
                             ("U32", 4), ("F32", 4), ("I64", 8), ("U64", 8), ("F64", 8)]]),
    "valid-escapes": container(b'{"a\\"b\\\\c\\/\\u00e9\\ud83d\\ude00\\n":{"dtype":"U8","shape":[1],'
                               b'"data_offsets":[0,1]}}   ', b"x"),
    "valid-whitespace": container(b' { "t" : { "dtype" : "U8" , "shape" : [ 2 ] , '
                                  b'"data_offsets" : [ 0 , 2 ] } } \n\t', b"ab"),
    "bad-truncated-data": st(MLP)[:-1],
    "bad-gap": container(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"xy"),
    "bad-overlap": container(b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
                             b'"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}', b"xyz"),
    "bad-size": container(b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', b"abcd"),
    "bad-reversed": container(b'{"a":{"dtype":"U8","shape":[0],"data_offsets":[2,0]}}', b"ab"),
    "bad-dtype": container(b'{"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}}', b"abcd"),
    "bad-duplicate": container(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                               b'"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"ab"),
    "bad-overflow": container(b'{"a":{"dtype":"F64","shape":[4294967296,4294967296],'
                              b'"data_offsets":[0,18446744073709551615]}}'),
    "bad-length": struct.pack("<Q", 2**64 - 1) + b"{}",
    "bad-short": b"\x02\x00\x00",
    "bad-unterminated": container(b'{"a":{"dtype":"U8'),
    "bad-surrogate": container(b'{"\\ud800x":{}}'),
    "bad-meta": container(b'{"__metadata__":{"k":["v"]}}'),
    "bad-number": container(b'{"a":{"dtype":"U8","shape":[-1e5],"data_offsets":[0,1]}}', b"x"),
}

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, "seed-" + name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {OUT}")
