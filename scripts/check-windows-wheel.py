#!/usr/bin/env python3
"""Checks the Windows wheel on Linux, as far as Linux can (issue 27):
its name and WHEEL tag (py3-none-win_amd64), that RECORD lists every file
with its sha256 and size, that nnengine.dll sits in the nn_engine package
where nn_engine._lib looks, that pip accepts it for win_amd64 (and refuses
it for this Linux), and that the DLL imports only Windows' own DLLs (each
found in Wine's system32, the DLLs Windows itself provides, or an
api-ms-win-* API set).

    scripts/check-windows-wheel.py WHEEL [WINE_SYSTEM32]

Prints one line per check and exits 1 when any failed."""
import base64
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += 0 if ok else 1


def main():
    wheel_path = sys.argv[1]
    system32 = sys.argv[2] if len(sys.argv) > 2 else None
    name = os.path.basename(wheel_path)
    check(name.startswith("nn_engine-") and name.endswith("-py3-none-win_amd64.whl"), f"wheel name {name}")
    with zipfile.ZipFile(wheel_path) as z:
        names = z.namelist()
        dist_info = next((n.split("/")[0] for n in names if n.endswith(".dist-info/WHEEL")), None)
        check(dist_info is not None, "has a .dist-info/WHEEL")
        if dist_info is None:
            return
        wheel = z.read(f"{dist_info}/WHEEL").decode()
        check("Tag: py3-none-win_amd64" in wheel.splitlines() and "Root-Is-Purelib: false" in wheel,
              "WHEEL: Tag py3-none-win_amd64, not purelib")
        check("nn_engine/nnengine.dll" in names and "nn_engine/_lib.py" in names,
              "nnengine.dll inside the nn_engine package, beside _lib.py")
        record = [line.split(",") for line in z.read(f"{dist_info}/RECORD").decode().splitlines() if line]
        listed = {row[0] for row in record}
        check(listed == set(names), f"RECORD lists exactly the {len(names)} files")
        bad = []
        for path, digest, size in record:
            if path.endswith("/RECORD"):
                continue
            data = z.read(path)
            want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            if digest != want or int(size) != len(data):
                bad.append(path)
        check(not bad, "RECORD digests and sizes match" + (f" (not: {bad})" if bad else ""))
        dll = z.read("nn_engine/nnengine.dll")
    with tempfile.TemporaryDirectory() as tmp:
        pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", "--target", tmp]
        windows = subprocess.run(pip + ["--platform", "win_amd64", "--only-binary=:all:", wheel_path],
                                 capture_output=True, text=True)
        check(windows.returncode == 0 and "nn_engine" in windows.stdout,
              "pip install --dry-run --platform win_amd64 accepts it" +
              ("" if windows.returncode == 0 else ": " + windows.stderr.strip()[-300:]))
        here = subprocess.run(pip + [wheel_path], capture_output=True, text=True)
        check(here.returncode != 0 and "not a supported wheel" in here.stderr,
              "pip refuses it on this Linux (the tag is read)")
        dll_path = os.path.join(tmp, "nnengine.dll")
        with open(dll_path, "wb") as f:
            f.write(dll)
        dump = subprocess.run(["x86_64-w64-mingw32-objdump", "-p", dll_path], capture_output=True, text=True)
    imports = sorted({line.split("DLL Name:")[1].strip() for line in dump.stdout.splitlines() if "DLL Name:" in line})
    check(dump.returncode == 0 and imports, f"nnengine.dll imports {', '.join(imports)}")
    if system32 and os.path.isdir(system32):
        present = {n.lower() for n in os.listdir(system32)}
        # api-ms-win-*: Windows' API sets, names its loader maps to its own DLLs.
        foreign = [d for d in imports if d.lower() not in present and not d.lower().startswith("api-ms-win-")]
        check(not foreign, "every import is a Windows DLL (in Wine's system32)" +
              (f"; not: {foreign}" if foreign else ""))
    else:
        print("skipped: no Wine system32 given, the imports were not compared with Windows' DLLs")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
