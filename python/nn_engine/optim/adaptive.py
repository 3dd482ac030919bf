"""The optimizers beyond SGD, over torch-style parameter groups: Adam,
AdamW, RMSprop, Lion and Muon."""
import numbers

from .. import _lib
from .._lib import lib
from ..tensor import Tensor
from .optimizer import _GroupOptimizer, _number, _param_groups

def _betas(value, owner):
    try:
        beta1, beta2 = value
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: betas must be a pair of numbers, got {value!r}") from None
    return _number(beta1, "betas[0]", owner), _number(beta2, "betas[1]", owner)


class Adam(_GroupOptimizer):
    """torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
    weight_decay=0, amsgrad=False, *, maximize=False): L2 weight decay."""

    _decoupled = False
    _shared = ("amsgrad", "maximize")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 maximize=False):
        owner = type(self).__name__
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": bool(amsgrad),
                    "maximize": bool(maximize)}
        groups = _param_groups(params, owner, defaults)
        beta1, beta2 = _betas(betas, owner)
        options = _lib.AdamOptions(_number(lr, "lr", owner), beta1, beta2, _number(eps, "eps", owner),
                                   _number(weight_decay, "weight_decay", owner), bool(amsgrad), bool(maximize))
        make = lib.nn_adamw_new_groups if self._decoupled else lib.nn_adam_new_groups
        super().__init__(groups, make, options, defaults)

    def _c_options(self, group):
        beta1, beta2 = _betas(group["betas"], type(self).__name__)
        return dict(super()._c_options(group), beta1=beta1, beta2=beta2, eps=group["eps"])


class AdamW(Adam):
    """torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
    weight_decay=1e-2, amsgrad=False, *, maximize=False): decoupled decay."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)


class RMSprop(_GroupOptimizer):
    """torch.optim.RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8,
    weight_decay=0, momentum=0, centered=False, *, maximize=False)."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, *,
                 maximize=False):
        defaults = {"lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay, "momentum": momentum,
                    "centered": bool(centered), "maximize": bool(maximize)}
        groups = _param_groups(params, "RMSprop", defaults)
        most = max(_number(g["momentum"], "momentum", "RMSprop") for g in groups)  # buffers made when > 0
        options = _lib.RmspropOptions(*[_number(v, n, "RMSprop") for v, n in (
            (lr, "lr"), (alpha, "alpha"), (eps, "eps"), (weight_decay, "weight_decay"), (most, "momentum"))],
            bool(centered), bool(maximize))
        super().__init__(groups, lib.nn_rmsprop_new_groups, options, defaults)

    _shared = ("centered", "maximize")

    def _c_options(self, group):
        return dict(super()._c_options(group), alpha=group["alpha"], eps=group["eps"], momentum=group["momentum"])


class Lion(_GroupOptimizer):
    """Lion(params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0, *,
    maximize=False), as lucidrains' lion-pytorch (torch has no Lion)."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0, *, maximize=False):
        defaults = {"lr": lr, "betas": betas, "weight_decay": weight_decay, "maximize": bool(maximize)}
        groups = _param_groups(params, "Lion", defaults)
        beta1, beta2 = _betas(betas, "Lion")
        options = _lib.LionOptions(_number(lr, "lr", "Lion"), beta1, beta2,
                                   _number(weight_decay, "weight_decay", "Lion"), bool(maximize))
        super().__init__(groups, lib.nn_lion_new_groups, options, defaults)

    _shared = ("maximize",)

    def _c_options(self, group):
        beta1, beta2 = _betas(group["betas"], "Lion")
        return dict(super()._c_options(group), beta1=beta1, beta2=beta2)


class Muon(_GroupOptimizer):
    """Muon(params, lr=0.02, momentum=0.95, nesterov=True, ns_steps=5,
    weight_decay=0, adamw_lr=3e-4, adamw_betas=(0.9, 0.95), adamw_eps=1e-10,
    adamw_weight_decay=0): Keller Jordan's Muon with its auxiliary AdamW.
    A list of Tensors is split by rank (matrices and convolution weights to
    Muon, the rest to AdamW); dict groups say 'use_muon' (as the reference's
    MuonWithAuxAdam), an AdamW group's lr defaulting to adamw_lr."""

    def __init__(self, params, lr=0.02, momentum=0.95, nesterov=True, ns_steps=5, weight_decay=0,
                 adamw_lr=3e-4, adamw_betas=(0.9, 0.95), adamw_eps=1e-10, adamw_weight_decay=0):
        if not isinstance(ns_steps, numbers.Integral) or isinstance(ns_steps, bool):
            raise TypeError(f"Muon: ns_steps must be an int, got {type(ns_steps).__name__}")
        keys = {"lr": None, "weight_decay": None, "use_muon": None}
        if not isinstance(params, Tensor):
            params = list(params) if not isinstance(params, (list, tuple)) else params
        given_groups = bool(params) and isinstance(params[0], dict)
        groups = _param_groups(params, "Muon", keys)
        if not given_groups:
            tensors = groups[0]["params"]
            groups = [{"params": [p for p in tensors if p.ndim >= 2], "use_muon": True},
                      {"params": [p for p in tensors if p.ndim < 2], "use_muon": False}]
            groups = [g for g in groups if g["params"]]
        for g, group in enumerate(groups):
            if group.get("use_muon") is None:
                raise ValueError(f"Muon: parameter group {g} needs 'use_muon' (True for matrices)")
            muon = bool(group["use_muon"])
            if group.get("lr") is None:
                group["lr"] = lr if muon else adamw_lr
            if group.get("weight_decay") is None:
                group["weight_decay"] = weight_decay if muon else adamw_weight_decay
        beta1, beta2 = _betas(adamw_betas, "Muon")
        options = _lib.MuonOptions(_number(lr, "lr", "Muon"), _number(momentum, "momentum", "Muon"),
                                   bool(nesterov), int(ns_steps), _number(weight_decay, "weight_decay", "Muon"),
                                   _number(adamw_lr, "adamw_lr", "Muon"), beta1, beta2,
                                   _number(adamw_eps, "adamw_eps", "Muon"),
                                   _number(adamw_weight_decay, "adamw_weight_decay", "Muon"))
        defaults = {"lr": lr, "momentum": momentum, "nesterov": nesterov, "ns_steps": ns_steps,
                    "weight_decay": weight_decay, "adamw_betas": adamw_betas, "adamw_eps": adamw_eps}
        super().__init__(groups, lib.nn_muon_new_groups, options, defaults, adamw_of=lambda g: not g["use_muon"])

    _shared = ("momentum", "nesterov", "ns_steps", "adamw_betas", "adamw_eps")
# torch.optim.lr_scheduler's place: nn_engine.optim.lr_scheduler.
