"""nn_engine.nn, as torch.nn: Module, Parameter, the layers, the
containers, the losses, `functional`, `init` and `utils`."""
from ..containers import Flatten, ModuleDict, ModuleList, Sequential
from ..layers import (ELU, GELU, AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d,
                      BCEWithLogitsLoss, Conv2d, ConvTranspose2d, CrossEntropyLoss, Dropout, Embedding, GroupNorm,
                      Hardsigmoid, Hardswish, Identity, L1Loss, LayerNorm, LeakyReLU, Linear, LogSoftmax, MaxPool2d,
                      MSELoss, MultiheadAttention, NLLLoss, ReLU, ReLU6, Sigmoid, SiLU, SmoothL1Loss, Softmax,
                      Softplus, Tanh, Upsample)
from ..module import Module
from ..transformer import TransformerEncoder, TransformerEncoderLayer
from . import functional, init, utils
from .parameter import Parameter

__all__ = [
    "Module", "Parameter", "Sequential", "ModuleList", "ModuleDict", "Flatten", "functional", "init", "utils",
    "Linear", "Conv2d", "ConvTranspose2d", "Upsample", "Dropout", "BatchNorm1d", "BatchNorm2d", "LayerNorm",
    "GroupNorm", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "Embedding",
    "MultiheadAttention", "ReLU", "ReLU6", "GELU", "LeakyReLU", "ELU", "SiLU", "Hardswish", "Hardsigmoid",
    "Softplus", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Identity", "MSELoss", "L1Loss", "SmoothL1Loss",
    "BCEWithLogitsLoss", "NLLLoss", "CrossEntropyLoss", "TransformerEncoderLayer", "TransformerEncoder",
]
