"""The ctypes mirrors of the C structs (python/nn_engine/_structs.py) are
generated from the headers by scripts/ctypes_structs.py: the file must be
what the script writes now, and every mirror must have the C struct's size
and field offsets. A mirror that falls behind its header (a field added in
C only) lets the library write past the memory Python gave it, which shows
up much later as heap corruption; this test names the struct instead. The
C side is a small program compiled here from the public headers."""
import ctypes
import inspect
import os
import re
import shutil
import subprocess
import sys

import pytest

import nn_engine
from nn_engine import _structs

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def mirrors():
    """(C type name, ctypes class) for every Structure whose docstring names
    its C struct ("struct nn_dataset (...)" or "nn_pool2d_params (...)")."""
    found = {}
    for module in (_structs,):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if not issubclass(cls, ctypes.Structure) or cls.__module__ != module.__name__:
                continue
            match = re.match(r"\s*(?:struct\s+)?(nn_\w+)", cls.__doc__ or "")
            assert match, f"{module.__name__}.{cls.__name__}: the docstring does not name its C struct"
            found[match.group(1)] = cls
    return sorted(found.items())


def test_every_mirror_matches_its_c_struct(tmp_path):
    if not shutil.which("cc"):
        pytest.skip("needs a C compiler")
    pairs = mirrors()
    assert len(pairs) >= 15, [name for name, _ in pairs]
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "nn_engine.h"', '#include "nn_loader.h"',
             "int main(void) {"]
    for name, cls in pairs:
        lines.append(f'    printf("{name} size %zu\\n", sizeof({name}));')
        for field in cls._fields_:
            lines.append(f'    printf("{name} {field[0]} %zu\\n", offsetof({name}, {field[0]}));')
    lines += ["    return 0;", "}"]
    source = tmp_path / "layouts.c"
    source.write_text("\n".join(lines) + "\n")
    program = tmp_path / "layouts"
    built = subprocess.run(["cc", "-std=c11", "-I", os.path.join(ROOT, "include"), "-o", str(program), str(source)],
                           capture_output=True, text=True)
    assert built.returncode == 0, "a mirror names a field its C struct lacks:\n" + built.stderr[-3000:]
    c_side = {}
    for line in subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout.splitlines():
        struct, what, value = line.split()
        c_side[(struct, what)] = int(value)
    for name, cls in pairs:
        assert ctypes.sizeof(cls) == c_side[(name, "size")], \
            f"{cls.__name__} is {ctypes.sizeof(cls)} bytes, {name} {c_side[(name, 'size')]}: a field is missing"
        for field in cls._fields_:
            assert getattr(cls, field[0]).offset == c_side[(name, field[0])], f"{name}.{field[0]}: offset differs"


def test_the_mirrors_are_what_the_headers_generate():
    """A header changed without rerunning scripts/ctypes_structs.py fails here."""
    run = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "ctypes_structs.py"), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
