"""Ctrl+C in the examples' training loops, as in `nnengine train`: the
first one lets the current step finish (the loop checks `requested` between
steps and stops), the script then writes what it was asked to write and
exits 130; a second one exits at once."""
import os
import signal
import sys

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class StopOnCtrlC:
    def __init__(self):
        self.requested = False
        self._previous = None

    def _handle(self, signum, frame):
        if self.requested:
            os._exit(EXIT_INTERRUPTED)  # the second: at once
        self.requested = True
        print("\ninterrupted: finishing the current step (Ctrl+C again to stop at once)", file=sys.stderr, flush=True)

    def __enter__(self):
        self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc):
        signal.signal(signal.SIGINT, self._previous)
        return False
