"""Test setup: import nn_engine from python/ of this tree unless it is
installed, and give every test a fresh step (end_batch) so that one test's
step tensors never reach into the next."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    import nn_engine  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import nn_engine  # noqa: F401


@pytest.fixture(autouse=True)
def fresh_step():
    nn_engine.end_batch()
    yield
    nn_engine.end_batch()
