"""SGD with torch.optim.SGD's semantics plus the seed's per-element
gradient clamp and a global-norm clip."""
import ctypes

from .. import _lib
from .._errors import check
from .._lib import c_optimizer_p, lib
from .optimizer import _GroupOptimizer, _number, _param_groups

_sgd_new_groups = _lib.declare("nn_sgd_new_groups", c_optimizer_p,
                               [ctypes.POINTER(_lib.ParamGroup), ctypes.c_int, ctypes.POINTER(_lib.SgdOptions)])


class SGD(_GroupOptimizer):
    """SGD(params, lr, momentum=0.0, weight_decay=0.0, nesterov=False): torch's
    parameter groups, each with its lr, weight_decay and momentum (all may
    change between steps; a group may have momentum only when the optimizer
    or one of its groups starts with some: the buffers are made then).

    step(clip=None): clip clamps each gradient element to [-clip, clip] before
    the update, as the seed's SGD did (None: no clamp). max_grad_norm > 0
    rescales all gradients to that global L2 norm first (one group only)."""

    _shared = ("dampening", "nesterov", "maximize")

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0, nesterov=False, max_grad_norm=0.0, dampening=0,
                 maximize=False):
        if dampening != 0 or maximize:
            raise ValueError(f"SGD: dampening={dampening!r}, maximize={maximize!r}: only torch's defaults (0, "
                             f"False) are supported")
        defaults = {"lr": lr, "momentum": momentum, "dampening": 0, "weight_decay": weight_decay,
                    "nesterov": bool(nesterov), "maximize": False}
        groups = _param_groups(params, "SGD", defaults)
        most = max(_number(g["momentum"], "momentum", "SGD") for g in groups)
        options = _lib.SgdOptions(_number(lr, "lr", "SGD"), most, _number(weight_decay, "weight_decay", "SGD"),
                                  bool(nesterov), 0.0, _number(max_grad_norm, "max_grad_norm", "SGD"))
        super().__init__(groups, _sgd_new_groups, options, defaults)
        self._clip = 0.0

    def _c_options(self, group):
        return dict(super()._c_options(group), momentum=group["momentum"])

    # the seed's attributes: group 0's
    momentum = property(lambda self: self.param_groups[0]["momentum"])
    weight_decay = property(lambda self: self.param_groups[0]["weight_decay"])
    nesterov = property(lambda self: self.param_groups[0]["nesterov"])

    def step(self, clip=None):
        if clip is None:
            clip = 0.0  # the C optimizer's "off"
        else:
            clip = _number(clip, "clip", "SGD.step")
            if not clip > 0.0:
                raise ValueError(f"SGD.step: clip must be > 0 (None for no clamp), got {clip}")
        if clip != self._clip:
            check(lib.nn_sgd_set_clip_value(self._ptr, clip), "nn_sgd_set_clip_value")
            self._clip = clip
        super().step()
