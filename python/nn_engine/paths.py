"""Output paths checked before a long run rather than after it
(nn_check_writable_path, include/nn_io.h)."""
import os

from ._errors import check
from ._lib import lib


def check_writable(path):
    """Raise unless a save to `path` would succeed as far as the file system
    goes: its folder exists and takes new files, and `path` is absent, a
    regular file or a link to one (a directory or a FIFO is refused).
    OSError carries the library's reason; nothing is left behind. Returns
    the path, so that a script can check its --save argument in one line
    before training starts."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"check_writable: path must be a str, bytes or os.PathLike, got {type(path).__name__}")
    check(lib.nn_check_writable_path(os.fsencode(path)), "nn_check_writable_path")
    return path
