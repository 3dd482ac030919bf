"""nn_engine.utils, as torch.utils: `data`."""
from . import data  # noqa: F401
