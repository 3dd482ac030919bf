"""nn_engine.cuda, as much of torch.cuda as scripts ask before choosing a
device: whether there is a GPU, and how many. The GPU is any Vulkan device
(NVIDIA, AMD, Intel); "cuda" names it wherever a device is given."""
from ._context import devices


def _gpus():
    return [d for d in devices() if d.backend == "vulkan" and d.usable and d.kind not in ("cpu", "software")]


def is_available():
    """Whether a usable GPU exists: a Vulkan device that is hardware (lavapipe,
    Mesa's software Vulkan, is not: "vulkan" still selects it)."""
    return bool(_gpus())


def device_count():
    return len(_gpus())
