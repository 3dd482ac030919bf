"""nn_engine: the seed engine's Python API over libnnengine (ctypes).

    import numpy as np
    from nn_engine import Tensor, Linear, relu
    y = relu(Linear(128, 64)(Tensor(np.random.randn(32, 128).astype(np.float32))))

The device is chosen once per process: nn_engine.set_device("cpu" | "vulkan" |
"auto"), else $NN_ENGINE_DEVICE, else "auto". Errors in the library raise
ValueError (bad argument, shape, dtype), MemoryError, RuntimeError (state,
backend) or OSError, carrying the library's message.
"""
from ._context import (Device, devices, end_batch, enable_grad, get_device, manual_seed,
                       no_grad, release_all_buffers, set_device)
from ._lib import library_path
from .capture import CapturedStep, capture
from .functional import seed_conv2d as conv2d  # the seed's argument order (actType 6th)
from .functional import (add, add_bias, bias_relu, dropout, flatten, linear, matmul,
                         maxpool2d, mean, mul, relu, reshape, scale, sigmoid, softmax, softmax_ce, sum,
                         tanh)
from .functional import batch_norm, group_norm, layer_norm
from .layers import ConvLayer, Dropout, Linear
from .layers import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm
from .functional import abs, clamp, exp, log, neg, pow, sqrt  # noqa: A004 - torch's names
from .layers import (ELU, GELU, Hardsigmoid, Hardswish, LeakyReLU, ReLU6, Sigmoid, SiLU, Softplus,
                     Tanh)
from .metrics import Metrics
from .model import Model
from .optim import SGD, Adam, AdamW, RMSprop, Lion, Muon
from .tensor import ReusableTensor, Tensor
from .functional import adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool2d, max_pool2d
from .layers import AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool2d, MaxPool2d
from .functional import div, maximum, minimum, sub
from .reductions import amax, amin, argmax, argmin, max, mean, min, std, sum, var  # noqa: A004
from .containers import Flatten, Sequential
from .layers import Identity, ReLU
from .rearrange import (cat, chunk, concat, expand, narrow, permute, select, split, squeeze, stack, transpose,
                        unsqueeze)

from .functional import (binary_cross_entropy_with_logits, cross_entropy, l1_loss, log_softmax, mse_loss,
                         nll_loss, smooth_l1_loss)
from .layers import (BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, LogSoftmax, MSELoss, NLLLoss, SmoothL1Loss,
                     Softmax)
from .functional import embedding, scaled_dot_product_attention
from .layers import Embedding, MultiheadAttention
from .functional import conv_transpose2d, interpolate
from .layers import Conv2d, ConvTranspose2d, Upsample

__version__ = "0.1.0"

__all__ = [
    "Tensor", "ReusableTensor", "Linear", "ConvLayer", "Dropout", "Model", "SGD", "Metrics",
    "relu", "sigmoid", "tanh", "dropout", "maxpool2d", "flatten", "reshape", "softmax", "softmax_ce", "add", "mul", "scale",
    "sum", "mean", "matmul", "add_bias", "bias_relu", "linear", "conv2d",
    "end_batch", "release_all_buffers", "no_grad", "enable_grad",
    "devices", "Device", "set_device", "get_device", "manual_seed", "library_path",
    "capture", "CapturedStep",
    "batch_norm", "layer_norm", "group_norm", "BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm",
    "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
    "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d",
    "exp", "log", "sqrt", "abs", "neg", "clamp", "pow",
    "GELU", "LeakyReLU", "ELU", "SiLU", "ReLU6", "Hardswish", "Hardsigmoid", "Softplus", "Sigmoid", "Tanh",
    "sub", "div", "maximum", "minimum", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std",
    "cat", "concat", "stack", "split", "chunk", "narrow", "select", "permute", "transpose", "expand",
    "squeeze", "unsqueeze",
    "log_softmax", "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits", "nll_loss",
    "cross_entropy", "Softmax", "LogSoftmax", "MSELoss", "L1Loss", "SmoothL1Loss", "BCEWithLogitsLoss", "NLLLoss",
    "CrossEntropyLoss",
    "embedding", "scaled_dot_product_attention", "Embedding", "MultiheadAttention",
    "conv_transpose2d", "interpolate", "Conv2d", "ConvTranspose2d", "Upsample",
    "Sequential", "Flatten", "ReLU", "Identity",
]
