#!/usr/bin/env python3
"""Builds nn_engine's wheel: the python/nn_engine package with the compiled
library inside it, where nn_engine._lib looks first (nnengine.dll on
Windows, libnnengine.so on Linux). Written with zipfile alone (PEP 427:
WHEEL, METADATA, RECORD with sha256 digests), so that cross-building the
Windows wheel on Linux needs no setuptools or Windows Python.

    scripts/build-wheel.py --library build-win/nnengine.dll --platform win_amd64 --out build-win
"""
import argparse
import base64
import hashlib
import os
import re
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "python", "nn_engine")
LIBRARY_NAMES = {"win_amd64": "nnengine.dll"}  # else libnnengine.so


def version():
    with open(os.path.join(PACKAGE, "__init__.py"), encoding="utf-8") as f:
        match = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not match:
        sys.exit("build-wheel: no __version__ in python/nn_engine/__init__.py")
    return match.group(1)


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build(library, platform, out_dir):
    ver = version()
    dist_info = f"nn_engine-{ver}.dist-info"
    files = []  # (name in the wheel, bytes)
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py"):
            with open(os.path.join(PACKAGE, name), "rb") as f:
                files.append((f"nn_engine/{name}", f.read()))
    with open(library, "rb") as f:
        files.append((f"nn_engine/{LIBRARY_NAMES.get(platform, 'libnnengine.so')}", f.read()))
    metadata = (f"Metadata-Version: 2.1\nName: nn_engine\nVersion: {ver}\n"
                "Summary: nn-engine's Python API (ctypes over its C library)\n"
                "Requires-Python: >=3.8\nRequires-Dist: numpy\n").encode()
    # py3-none-<platform>: no CPython extension module (ctypes loads the
    # library), so any Python 3 on that platform.
    wheel = (f"Wheel-Version: 1.0\nGenerator: nn-engine scripts/build-wheel.py\nRoot-Is-Purelib: false\n"
             f"Tag: py3-none-{platform}\n").encode()
    files += [(f"{dist_info}/METADATA", metadata), (f"{dist_info}/WHEEL", wheel)]
    record = "\n".join(record_line(n, d) for n, d in files) + f"\n{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode()))
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"nn_engine-{ver}-py3-none-{platform}.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))  # reproducible
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", required=True, help="the built library (nnengine.dll, libnnengine.so)")
    parser.add_argument("--platform", required=True, help="the wheel's platform tag: win_amd64, linux_x86_64")
    parser.add_argument("--out", required=True, help="the folder the wheel goes to")
    args = parser.parse_args()
    if not os.path.isfile(args.library):
        sys.exit(f"build-wheel: --library {args.library}: no such file")
    print(build(args.library, args.platform, args.out))


if __name__ == "__main__":
    main()
