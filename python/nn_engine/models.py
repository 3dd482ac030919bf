"""The C library's model zoo with torchvision's names and state_dict keys
(include/nn_layers.h): nn_engine.models.resnet18(num_classes=10) and the
rest are NativeModules, so they train, capture, save, load and export as
any Module, and their state_dict loads strictly into torchvision's model.
No pretrained weights are downloaded: load a state_dict (Module.load or
load_state_dict) for those."""
import ctypes

from . import _context, _lib, _structs
from ._errors import check_ptr
from ._lib import c_ctx_p, c_module_p
from .native import ModuleOwner, NativeModule

__all__ = ["resnet18", "resnet34", "resnet50", "resnet18_cifar", "mobilenet_v2", "alexnet", "vision_transformer",
           "vit_tiny", "gpt", "gpt_mini"]


def _check_int(value, name, where, low=1):
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= 2**31 - 1:
        raise ValueError(f"{where}: {name} must be an int >= {low}, got {value!r}")
    return value


def _build(where, c_name, argtypes, args, weights, device, kwargs):
    if weights is not None:
        raise ValueError(f"{where}: weights={weights!r}: pretrained weights are not downloaded here; make the "
                         f"model with weights=None and load a state_dict (Module.load, load_state_dict)")
    kwargs.pop("progress", None)
    if kwargs:
        raise TypeError(f"{where}: unexpected arguments {sorted(kwargs)}")
    ctx = _context.default_context() if device is None else _context.context_for(device, where)
    build = _lib.declare(c_name, c_module_p, [c_ctx_p] + argtypes)

    def make(context):
        return check_ptr(build(context.ptr, *args), c_name)
    return NativeModule(ModuleOwner(make(ctx), ctx), make=make)


def resnet18(weights=None, num_classes=1000, device=None, **kwargs):
    """torchvision.models.resnet18: input [N, 3, H, W], H and W >= 32."""
    n = _check_int(num_classes, "num_classes", "resnet18")
    return _build("resnet18", "nn_resnet18", [ctypes.c_int], [n], weights, device, kwargs)


def resnet34(weights=None, num_classes=1000, device=None, **kwargs):
    """torchvision.models.resnet34."""
    n = _check_int(num_classes, "num_classes", "resnet34")
    return _build("resnet34", "nn_resnet34", [ctypes.c_int], [n], weights, device, kwargs)


def resnet50(weights=None, num_classes=1000, device=None, **kwargs):
    """torchvision.models.resnet50 (v1.5)."""
    n = _check_int(num_classes, "num_classes", "resnet50")
    return _build("resnet50", "nn_resnet50", [ctypes.c_int], [n], weights, device, kwargs)


def resnet18_cifar(in_channels=3, num_classes=10, device=None):
    """ResNet-18 for small images (CIFAR, Fashion-MNIST): a 3x3 stride-1
    first convolution from in_channels, no max pool; H and W >= 8."""
    c = _check_int(in_channels, "in_channels", "resnet18_cifar")
    n = _check_int(num_classes, "num_classes", "resnet18_cifar")
    return _build("resnet18_cifar", "nn_resnet18_cifar", [ctypes.c_int, ctypes.c_int], [c, n], None, device, {})


def mobilenet_v2(weights=None, num_classes=1000, device=None, **kwargs):
    """torchvision.models.mobilenet_v2 (width 1.0)."""
    n = _check_int(num_classes, "num_classes", "mobilenet_v2")
    return _build("mobilenet_v2", "nn_mobilenet_v2", [ctypes.c_int], [n], weights, device, kwargs)


def alexnet(weights=None, num_classes=1000, device=None, **kwargs):
    """torchvision.models.alexnet (no pretrained weights; PyTorch's initialisation)."""
    n = _check_int(num_classes, "num_classes", "alexnet")
    return _build("alexnet", "nn_alexnet_tv", [ctypes.c_int, ctypes.c_int], [n, 0], weights, device, kwargs)


def vision_transformer(image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim, num_classes=1000,
                       in_channels=3, device=None):
    """torchvision.models.VisionTransformer's module tree, state_dict and
    initialisation (no dropout, no representation layer), from any number
    of input channels: input [N, in_channels, image_size, image_size]."""
    where = "vision_transformer"
    sizes = {name: _check_int(value, name, where) for name, value in (
        ("image_size", image_size), ("patch_size", patch_size), ("in_channels", in_channels),
        ("num_classes", num_classes), ("hidden_dim", hidden_dim), ("num_layers", num_layers),
        ("num_heads", num_heads), ("mlp_dim", mlp_dim))}
    options = _structs.VitOptions(**sizes)
    return _build(where, "nn_vision_transformer", [ctypes.POINTER(_structs.VitOptions)], [ctypes.byref(options)],
                  None, device, {})


def vit_tiny(in_channels=1, image_size=28, num_classes=10, device=None):
    """vit-tiny for small images: patch 4, width 192, 6 layers, 3 heads,
    MLP 768 (a vision_transformer)."""
    return vision_transformer(image_size, 4, 6, 3, 192, 768, num_classes, in_channels, device)


def gpt(vocab_size=256, context=256, width=384, depth=6, heads=6, device=None):
    """A causal decoder of GPT-2's design with nanoGPT's names (transformer.wte,
    transformer.h.0.attn.c_attn, lm_head tied to wte, ...): int32 tokens
    [N, T] (T <= context) to logits [N, T, vocab_size]."""
    where = "gpt"
    sizes = {name: _check_int(value, name, where) for name, value in (
        ("vocab_size", vocab_size), ("context", context), ("width", width), ("depth", depth), ("heads", heads))}
    options = _structs.GptOptions(**sizes)
    return _build(where, "nn_gpt", [ctypes.POINTER(_structs.GptOptions)], [ctypes.byref(options)], None, device, {})


def gpt_mini(context=256, device=None):
    """gpt-mini: bytes (vocabulary 256), width 384, 6 layers, 6 heads."""
    return gpt(256, context, 384, 6, 6, device)
