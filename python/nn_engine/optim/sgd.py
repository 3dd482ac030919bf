"""SGD with torch.optim.SGD's semantics plus the seed's per-element
gradient clamp."""
import ctypes

from .. import _lib
from .._errors import check, check_ptr
from .._lib import lib
from .optimizer import Optimizer, _number, _param_groups, _set_group_option

class SGD(Optimizer):
    """SGD(params, lr, momentum=0.0, weight_decay=0.0, nesterov=False).

    One parameter group (param_groups[0], as torch's): its "lr" may change
    between steps, as schedulers change it; its other options are fixed at
    creation (the C SGD updates every parameter in one flat kernel).

    step(clip=None): clip clamps each gradient element to [-clip, clip] before
    the update, as the seed's SGD did (None: no clamp). max_grad_norm > 0
    rescales all gradients to that global L2 norm first."""

    _fixed = ("dampening", "nesterov", "maximize")
    _settable = ("momentum", "weight_decay")  # handed to the C optimizer when changed

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0, nesterov=False,
                 max_grad_norm=0.0, dampening=0, maximize=False):
        if dampening != 0 or maximize:
            raise ValueError(f"SGD: dampening={dampening!r}, maximize={maximize!r}: only torch's defaults (0, "
                             f"False) are supported")
        defaults = {"lr": lr, "momentum": momentum, "dampening": 0, "weight_decay": weight_decay,
                    "nesterov": bool(nesterov), "maximize": False}
        groups = _param_groups(params, "SGD", defaults)
        if len(groups) != 1:
            raise ValueError(f"SGD: {len(groups)} parameter groups: this SGD takes one (its options are the "
                             f"same for every parameter); AdamW, Adam, RMSprop and Lion take several")
        group = groups[0]
        for key in self._fixed + self._settable:
            if group[key] != defaults[key]:
                raise ValueError(f"SGD: the parameter group's {key} ({group[key]!r}) must be the optimizer's "
                                 f"({defaults[key]!r})")
        params = group["params"]
        options = _lib.SgdOptions(_number(group["lr"], "lr", "SGD"), _number(momentum, "momentum", "SGD"),
                                  _number(weight_decay, "weight_decay", "SGD"), bool(nesterov), 0.0,
                                  _number(max_grad_norm, "max_grad_norm", "SGD"))
        ptrs = _lib.PointerArray(p._ptr() for p in params)
        super().__init__(params, check_ptr(lib.nn_sgd_new(ptrs, len(params), ctypes.byref(options)),
                                           "nn_sgd_new"), options.lr)
        self._clip = 0.0
        self.momentum = options.momentum
        self.weight_decay = options.weight_decay
        self.nesterov = bool(nesterov)
        group["lr"] = options.lr
        self.param_groups = groups
        self.defaults = defaults

    @property
    def lr(self):
        return self.param_groups[0]["lr"] if hasattr(self, "param_groups") else self._lr

    @lr.setter
    def lr(self, value):
        Optimizer.lr.fset(self, value)
        if hasattr(self, "param_groups"):
            self.param_groups[0]["lr"] = self._lr

    def _groups_for_state(self):
        saved = {key: value for key, value in self.param_groups[0].items() if key != "params"}
        saved["params"] = list(range(len(self.params)))
        return [saved]

    def _load_groups(self, groups):
        group = groups[0]
        for key in self._fixed:
            if key in group and group[key] != self.defaults[key]:
                raise ValueError(f"SGD.load_state_dict: the saved {key} is {group[key]}, this optimizer's "
                                 f"{self.defaults[key]} (SGD's options are fixed at creation)")
        self.param_groups[0].update({key: value for key, value in group.items() if key != "params"})
        self.lr = group["lr"]

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
        group = self.param_groups[0]
        for key in self._fixed:
            if group[key] != self.defaults[key]:
                raise ValueError(f"SGD: param_groups[0]['{key}'] changed to {group[key]!r}; SGD's {key} is fixed "
                                 f"at creation ({self.defaults[key]!r})")
        for key in self._settable:
            if group[key] != getattr(self, key):
                value = _number(group[key], key, "SGD")
                check(_set_group_option(self._ptr, 0, key.encode(), value), "nn_optimizer_set_group_option")
                setattr(self, key, value)
        if group["lr"] != self._lr:
            Optimizer.lr.fset(self, group["lr"])
        super().step()
