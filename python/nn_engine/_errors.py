"""C status codes -> Python exceptions carrying nn_last_error()."""
import threading

from ._lib import lib

NN_OK = 0
NN_ERR_ARGUMENT = 1
NN_ERR_SHAPE = 2
NN_ERR_DTYPE = 3
NN_ERR_MEMORY = 4
NN_ERR_STATE = 5
NN_ERR_BACKEND = 6
NN_ERR_IO = 7

_EXCEPTIONS = {
    NN_ERR_ARGUMENT: ValueError,
    NN_ERR_SHAPE: ValueError,
    NN_ERR_DTYPE: ValueError,
    NN_ERR_MEMORY: MemoryError,
    NN_ERR_STATE: RuntimeError,
    NN_ERR_BACKEND: RuntimeError,
    NN_ERR_IO: OSError,
}


def last_error_message():
    message = lib.nn_last_error()
    return message.decode("utf-8", "replace") if message else ""


_callbacks = threading.local()


def keep_callback_exception(exc):
    """An exception raised in Python code the library called back (a custom
    function's backward, a custom kernel's CPU function): the failed call
    that led there raises it (error_for), on this thread."""
    _callbacks.exception = exc


def error_for(status, what=""):
    """The exception for a failed call; `what` names the call when the
    library left no message (it always should). A Python callback's own
    exception, where one failed the call, is that exception, the library's
    message as its cause."""
    message = last_error_message() or f"{what}: failed with status {status}"
    error = _EXCEPTIONS.get(status, RuntimeError)(message)
    kept = getattr(_callbacks, "exception", None)
    if kept is not None:
        _callbacks.exception = None
        kept.__cause__ = error
        return kept
    return error


def check(status, what=""):
    """Raise for a non-zero nn_status."""
    if status != NN_OK:
        raise error_for(status, what)


def check_ptr(ptr, what=""):
    """Raise when a C function returned NULL; otherwise return the pointer."""
    if not ptr:
        status = lib.nn_last_status()
        raise error_for(status if status != NN_OK else NN_ERR_BACKEND, what)
    return ptr
