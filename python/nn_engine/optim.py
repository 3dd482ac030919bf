"""Optimizers over the C optimizer interface (include/nn_optim.h): every
optimizer is an Optimizer (step, zero_grad, lr); SGD has torch.optim.SGD's
semantics plus the seed's per-element gradient clamp."""
import ctypes
import numbers

from . import _context, _lib
from ._errors import check, check_ptr
from ._lib import lib
from .tensor import Tensor


def _number(value, name, owner):
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a number, got {type(value).__name__}")
    return float(value)


def _tensors(params, owner):
    if isinstance(params, Tensor):
        raise TypeError(f"{owner}: params must be an iterable of Tensors (e.g. "
                        "model.parameters()), got a single Tensor")
    try:
        params = list(params)
    except TypeError:
        raise TypeError(f"{owner}: params must be an iterable of Tensors, got "
                        f"{type(params).__name__}") from None
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{owner}: parameter {i} is a {type(p).__name__}, not a Tensor")
    return params


class Optimizer:
    """What every optimizer has: step(), zero_grad() and the learning rate
    lr (read on the device by the update, so a captured step replays with
    the rate last set). Subclasses make the C optimizer in __init__."""

    def __init__(self, params, ptr, lr):
        self.params = params
        self._ptr = ptr
        self._lr = lr
        # Held so the context outlives the optimizer, which frees its tensors there.
        self._ctx = params[0]._h.ctx if params else None

    @property
    def lr(self):
        return self._lr

    @lr.setter
    def lr(self, value):
        value = _number(value, "lr", type(self).__name__)
        check(lib.nn_optimizer_set_lr(self._ptr, value), "nn_optimizer_set_lr")
        self._lr = value

    def zero_grad(self):
        check(lib.nn_optimizer_zero_grad(self._ptr), "nn_optimizer_zero_grad")

    def step(self):
        check(lib.nn_optimizer_step(self._ptr), "nn_optimizer_step")

    def __del__(self):
        ptr = getattr(self, "_ptr", None)
        ctx = getattr(self, "_ctx", None)
        # In a garbage-collected cycle the context may be finalised first:
        # it has freed the optimizer's tensors, and the optimizer must not.
        if ptr and not _context._shutting_down and (ctx is None or ctx.ptr is not None):
            lib.nn_optimizer_free(ptr)
        self._ptr = None


class SGD(Optimizer):
    """SGD(params, lr, momentum=0.0, weight_decay=0.0, nesterov=False).

    step(clip=None): clip clamps each gradient element to [-clip, clip] before
    the update, as the seed's SGD did (None: no clamp). max_grad_norm > 0
    rescales all gradients to that global L2 norm first."""

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0, nesterov=False,
                 max_grad_norm=0.0):
        params = _tensors(params, "SGD")
        options = _lib.SgdOptions(_number(lr, "lr", "SGD"), _number(momentum, "momentum", "SGD"),
                                  _number(weight_decay, "weight_decay", "SGD"), bool(nesterov), 0.0,
                                  _number(max_grad_norm, "max_grad_norm", "SGD"))
        ptrs = _lib.PointerArray(p._ptr() for p in params)
        super().__init__(params, check_ptr(lib.nn_sgd_new(ptrs, len(params), ctypes.byref(options)),
                                           "nn_sgd_new"), options.lr)
        self._clip = 0.0
        self.momentum = options.momentum
        self.weight_decay = options.weight_decay
        self.nesterov = bool(nesterov)

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


# ---- parameter groups and the optimizers beyond SGD ----

def _param_groups(params, owner, defaults):
    """torch's params argument: an iterable of Tensors (one group) or of
    dicts, each with 'params' and any of the defaults' keys."""
    if isinstance(params, Tensor):
        raise TypeError(f"{owner}: params must be an iterable of Tensors or of dicts, got a single Tensor")
    try:
        params = list(params)
    except TypeError:
        raise TypeError(f"{owner}: params must be an iterable of Tensors or dicts, got "
                        f"{type(params).__name__}") from None
    if not params:
        raise ValueError(f"{owner}: got an empty parameter list")
    if not isinstance(params[0], dict):
        params = [{"params": params}]
    groups = []
    for g, group in enumerate(params):
        if not isinstance(group, dict):
            raise TypeError(f"{owner}: parameter group {g} is a {type(group).__name__}, not a dict "
                            "(mix no Tensors with dicts)")
        unknown = set(group) - set(defaults) - {"params"}
        if unknown:
            raise ValueError(f"{owner}: parameter group {g} has unknown keys {sorted(unknown)}")
        if "params" not in group:
            raise ValueError(f"{owner}: parameter group {g} has no 'params'")
        tensors = group["params"]
        tensors = [tensors] if isinstance(tensors, Tensor) else tensors
        full = dict(defaults)
        full.update(group)
        full["params"] = _tensors(tensors, f"{owner} group {g}")
        groups.append(full)
    return groups


class _GroupOptimizer(Optimizer):
    """An optimizer over torch-style parameter groups: param_groups is a list
    of dicts whose 'lr' may be changed between steps (as schedulers do)."""

    def __init__(self, groups, make, options, adamw_of=None):
        owner = type(self).__name__
        for g, group in enumerate(groups):
            group["lr"] = _number(group["lr"], "lr", owner)
            group["weight_decay"] = _number(group["weight_decay"], "weight_decay", owner)
        name = make.__name__ if hasattr(make, "__name__") else owner
        with _lib.LOCK:  # the groups hold the parameters' pointers until the call
            arrays = [_lib.PointerArray(p._ptr() for p in g["params"]).get() for g in groups]
            c_groups = (_lib.ParamGroup * len(groups))(*[
                _lib.ParamGroup(arrays[i], len(g["params"]), g["lr"], g["weight_decay"],
                                bool(adamw_of(g)) if adamw_of else False) for i, g in enumerate(groups)])
            ptr = check_ptr(make(c_groups, len(groups), ctypes.byref(options)), name)
        super().__init__([p for g in groups for p in g["params"]], ptr, groups[0]["lr"])
        self.param_groups = groups
        self.defaults = options
        self._written = [g["lr"] for g in groups]

    @property
    def lr(self):
        return self.param_groups[0]["lr"]

    @lr.setter
    def lr(self, value):
        value = _number(value, "lr", type(self).__name__)
        check(lib.nn_optimizer_set_lr(self._ptr, value), "nn_optimizer_set_lr")
        for g, group in enumerate(self.param_groups):
            group["lr"] = self._written[g] = lib.nn_optimizer_group_lr(self._ptr, g)
        self._lr = value

    def step(self):
        for g, group in enumerate(self.param_groups):
            if group["lr"] != self._written[g]:
                lr = _number(group["lr"], "lr", type(self).__name__)
                check(lib.nn_optimizer_set_group_lr(self._ptr, g, lr), "nn_optimizer_set_group_lr")
                self._written[g] = group["lr"]
        super().step()


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

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 maximize=False):
        owner = type(self).__name__
        groups = _param_groups(params, owner, {"lr": lr, "weight_decay": weight_decay})
        beta1, beta2 = _betas(betas, owner)
        options = _lib.AdamOptions(_number(lr, "lr", owner), beta1, beta2, _number(eps, "eps", owner),
                                   _number(weight_decay, "weight_decay", owner), bool(amsgrad), bool(maximize))
        make = lib.nn_adamw_new_groups if self._decoupled else lib.nn_adam_new_groups
        super().__init__(groups, make, options)


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
        groups = _param_groups(params, "RMSprop", {"lr": lr, "weight_decay": weight_decay})
        options = _lib.RmspropOptions(*[_number(v, n, "RMSprop") for v, n in (
            (lr, "lr"), (alpha, "alpha"), (eps, "eps"), (weight_decay, "weight_decay"), (momentum, "momentum"))],
            bool(centered), bool(maximize))
        super().__init__(groups, lib.nn_rmsprop_new_groups, options)


class Lion(_GroupOptimizer):
    """Lion(params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0, *,
    maximize=False), as lucidrains' lion-pytorch (torch has no Lion)."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0, *, maximize=False):
        groups = _param_groups(params, "Lion", {"lr": lr, "weight_decay": weight_decay})
        beta1, beta2 = _betas(betas, "Lion")
        options = _lib.LionOptions(_number(lr, "lr", "Lion"), beta1, beta2,
                                   _number(weight_decay, "weight_decay", "Lion"), bool(maximize))
        super().__init__(groups, lib.nn_lion_new_groups, options)


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
        super().__init__(groups, lib.nn_muon_new_groups, options, adamw_of=lambda g: not g["use_muon"])
# torch.optim.lr_scheduler's place: nn_engine.optim.lr_scheduler.
from . import lr_scheduler  # noqa: E402,F401
