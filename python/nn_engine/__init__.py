"""nn_engine: the seed engine's Python API over libnnengine (ctypes).

    import numpy as np
    from nn_engine import Tensor, Linear, relu
    y = relu(Linear(128, 64)(Tensor(np.random.randn(32, 128).astype(np.float32))))

The device is chosen once per process: nn_engine.set_device("cpu" | "vulkan" |
"auto"), else $NN_ENGINE_DEVICE, else "auto". Errors in the library raise
ValueError (bad argument, shape, dtype), MemoryError, RuntimeError (state,
backend) or OSError, carrying the library's message.
"""
import numpy as np

from ._context import (Device, devices, end_batch, enable_grad, get_device, manual_seed,
                       no_grad, release_all_buffers, set_device)
from ._lib import library_path
from .capture import CapturedStep, capture
from .containers import Flatten, ModuleDict, ModuleList, Sequential
# functional: the seed's functions and PyTorch's; conv2d keeps the seed's
# argument order (actType sixth), nn_engine.functional.conv2d is PyTorch's.
from .functional import seed_conv2d as conv2d
from .functional import (abs, adaptive_avg_pool2d, adaptive_max_pool2d, add, add_bias,  # noqa: A004
                         avg_pool2d, batch_norm, bias_relu, binary_cross_entropy_with_logits, bmm, clamp,
                         conv_transpose2d, cross_entropy, div, dropout, embedding, exp, group_norm,
                         interpolate, l1_loss, layer_norm, linear, log, log_softmax, matmul, max_pool2d,
                         maximum, maxpool2d, minimum, mm, mse_loss, mul, neg, nll_loss, pow, relu, reshape, scale,
                         scaled_dot_product_attention, sigmoid, smooth_l1_loss, softmax, softmax_ce, sqrt, sub,
                         tanh)
from .layers import (ELU, GELU, AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d,
                     BCEWithLogitsLoss, Conv2d, ConvLayer, ConvTranspose2d, CrossEntropyLoss, Dropout, Embedding,
                     GroupNorm, Hardsigmoid, Hardswish, Identity, L1Loss, LayerNorm, LeakyReLU, Linear,
                     LogSoftmax, MaxPool2d, MSELoss, MultiheadAttention, NLLLoss, ReLU, ReLU6, Sigmoid, SiLU,
                     SmoothL1Loss, Softmax, Softplus, Tanh, Upsample)
from .metrics import Metrics
from .model import Model
from .module import Module
from .optim import SGD, Adam, AdamW, Lion, Muon, RMSprop

from .compare import eq, ge, gt, le, lt, ne
from .rearrange import (cat, chunk, concat, expand, flatten, narrow, permute, select, split, squeeze, stack,
                        transpose, unsqueeze)
from .reductions import amax, amin, argmax, argmin, max, mean, min, std, sum, var  # noqa: A004
from .tensor import ReusableTensor, Tensor, from_numpy, tensor
from . import autograd
from .custom_kernel import CustomKernel, check_devices, glsl_available, glsl_prelude
from .creation import (arange, empty, empty_like, eye, full, full_like, linspace, ones, ones_like, rand, randint,
                       randn, randperm, zeros, zeros_like)

# dtypes by torch's names (NumPy's types): integer ones are int32 on the device
float32, int32, int64 = np.float32, np.int32, np.int64
float, int, long = np.float32, np.int32, np.int64  # noqa: A001 - torch.float, torch.int, torch.long

__version__ = "0.1.0"

__all__ = [
    # the seed's API
    "Tensor", "ReusableTensor", "Linear", "ConvLayer", "Dropout", "Model", "SGD", "Metrics",
    "relu", "sigmoid", "tanh", "dropout", "maxpool2d", "flatten", "reshape", "softmax", "softmax_ce", "add",
    "mul", "scale", "sum", "mean", "matmul", "mm", "bmm", "add_bias", "bias_relu", "linear", "conv2d",
    "end_batch", "release_all_buffers", "no_grad", "enable_grad", "tensor", "from_numpy",
    "float32", "int32", "int64", "float", "int", "long",
    # creation (torch's)
    "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange", "linspace",
    "eye", "rand", "randn", "randint", "randperm",
    "devices", "Device", "set_device", "get_device", "manual_seed", "library_path",
    "capture", "CapturedStep",
    # user-written operations (include/nn_custom.h)
    "autograd", "CustomKernel", "check_devices", "glsl_prelude", "glsl_available",
    # arithmetic, math, reductions, rearrangements (torch's names)
    "sub", "div", "maximum", "minimum", "exp", "log", "sqrt", "abs", "neg", "clamp", "pow",
    "max", "min", "amax", "amin", "argmax", "argmin", "var", "std",
    "eq", "ne", "lt", "le", "gt", "ge",
    "cat", "concat", "stack", "split", "chunk", "narrow", "select", "permute", "transpose", "expand",
    "squeeze", "unsqueeze",
    # functions of torch.nn.functional's
    "batch_norm", "layer_norm", "group_norm", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
    "adaptive_max_pool2d", "log_softmax", "mse_loss", "l1_loss", "smooth_l1_loss",
    "binary_cross_entropy_with_logits", "nll_loss", "cross_entropy", "embedding", "scaled_dot_product_attention",
    "conv_transpose2d", "interpolate",
    # layers (torch.nn's)
    "Module", "Sequential", "ModuleList", "ModuleDict", "Flatten", "ReLU", "Identity", "Conv2d", "ConvTranspose2d", "Upsample",
    "BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
    "AdaptiveMaxPool2d", "GELU", "LeakyReLU", "ELU", "SiLU", "ReLU6", "Hardswish", "Hardsigmoid", "Softplus",
    "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "MSELoss", "L1Loss", "SmoothL1Loss", "BCEWithLogitsLoss",
    "NLLLoss", "CrossEntropyLoss", "Embedding", "MultiheadAttention",
    # optimizers (torch.optim's; also as nn_engine.optim)
    "Adam", "AdamW", "RMSprop", "Lion", "Muon",
]
# Model state files and data loading (issue 26)
from . import data  # noqa: E402  (nn_engine.data.DataLoader, TensorDataset, ImageFolder)
from .model import IncompatibleKeys, read_model_info  # noqa: E402

__all__ += ["data", "IncompatibleKeys", "read_model_info"]

# Mixed precision (issue 23): nn_engine.amp.autocast / GradScaler, as torch.amp
from . import amp  # noqa: E402
from .amp import autocast  # noqa: E402

__all__ += ["amp", "autocast"]

# Data parallelism over MPI (issue 24): nn_engine.distributed, as torch.distributed
from . import distributed  # noqa: E402

__all__ += ["distributed"]

# Output paths checked before training (issue 25): nn_engine.check_writable
from .paths import check_writable  # noqa: E402

__all__ += ["check_writable"]

from . import onnx  # noqa: E402  (nn_engine.onnx.load: ONNX import)

__all__ += ["onnx"]

# PyTorch's namespaces (issue 36): nn_engine.nn, nn_engine.optim (with
# lr_scheduler), nn_engine.utils.data, as torch.nn, torch.optim, torch.utils.data
from . import cuda, models, nn, optim, utils  # noqa: E402
from ._context import torch_device as device  # noqa: E402
from .serialization import load, save  # noqa: E402

__all__ += ["nn", "optim", "utils", "models", "cuda", "device", "save", "load"]
