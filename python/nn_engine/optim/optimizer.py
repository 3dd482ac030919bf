"""What every optimizer has (Optimizer: step, zero_grad, lr, state_dict
over the C optimizer interface, include/nn_optim.h) and torch's parameter
groups for the optimizers that take several (_GroupOptimizer)."""
import ctypes
import numbers

import numpy as np

from .. import _context, _lib
from .._errors import check, check_ptr
from .._lib import c_optimizer_p, c_tensor_p, lib
from ..tensor import Tensor, tensor_list

_state_count = _lib.declare("nn_optimizer_state_count", ctypes.c_int, [c_optimizer_p])
_state_name = _lib.declare("nn_optimizer_state_name", ctypes.c_char_p, [c_optimizer_p, ctypes.c_int])
_state = _lib.declare("nn_optimizer_state", c_tensor_p, [c_optimizer_p, ctypes.c_int, ctypes.c_int])
_set_group_option = _lib.declare("nn_optimizer_set_group_option", ctypes.c_int,
                                 [c_optimizer_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_float])


def _number(value, name, owner):
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a number, got {type(value).__name__}")
    return float(value)


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

    def valid(self):
        """Whether the C optimizer is alive (its state tensors' handles ask)."""
        return self._ptr is not None and (self._ctx is None or self._ctx.ptr is not None)

    def zero_grad(self, set_to_none=True):
        check(lib.nn_optimizer_zero_grad(self._ptr), "nn_optimizer_zero_grad")

    def step(self):
        check(lib.nn_optimizer_step(self._ptr), "nn_optimizer_step")

    # ---- state_dict: torch's layout, {"state": {index: {name: Tensor}}, "param_groups": [...]} ----

    def _statetensor_list(self):
        """[(param index, state name, Tensor)] of the C optimizer's state
        (exp_avg, step, momentum_buffer, ...), borrowed."""
        from .._context import BORROWED, Handle
        ctx = self._ctx
        out = []
        for s in range(_state_count(self._ptr)):
            name = _state_name(self._ptr, s).decode()
            for i in range(len(self.params)):
                handle = Handle(_state(self._ptr, i, s), ctx, BORROWED, parent=self)
                out.append((i, name, Tensor._wrap(handle)))
        return out

    def _groups_for_state(self):
        """The param_groups as state_dict() gives them (subclasses with groups override)."""
        return [{"params": list(range(len(self.params))), "lr": self.lr}]

    def state_dict(self):
        """torch's optimizer state_dict: "state" maps each parameter's index
        to its state (copies: exp_avg, exp_avg_sq, step, momentum_buffer, ...),
        "param_groups" lists each group's options with its parameters'
        indices. nn_engine.save writes it; load_state_dict takes it back."""
        state = {}
        for i, name, tensor in self._statetensor_list():
            state.setdefault(i, {})[name] = tensor.detach()
        return {"state": state, "param_groups": self._groups_for_state()}

    def load_state_dict(self, state_dict):
        """Restore what state_dict() returned (all or nothing): the same
        number of groups and parameters, each state of the same shape."""
        owner = type(self).__name__
        if not isinstance(state_dict, dict) or set(state_dict) != {"state", "param_groups"}:
            raise ValueError(f"{owner}.load_state_dict: expected a dict with 'state' and 'param_groups', got "
                             f"{type(state_dict).__name__}"
                             f"{' with ' + str(sorted(state_dict)) if isinstance(state_dict, dict) else ''}")
        groups = state_dict["param_groups"]
        mine = self._groups_for_state()
        if len(groups) != len(mine) or any(len(a.get("params", ())) != len(b["params"]) for a, b in zip(groups, mine)):
            raise ValueError(f"{owner}.load_state_dict: the saved groups hold "
                             f"{[len(g.get('params', ())) for g in groups]} parameters, this optimizer's "
                             f"{[len(g['params']) for g in mine]}")
        saved, uploads = state_dict["state"], []
        for i, name, tensor in self._statetensor_list():
            value = saved.get(i, saved.get(str(i), {})).get(name)
            if value is None:
                raise KeyError(f"{owner}.load_state_dict: parameter {i} has no saved {name!r}")
            array = np.asarray(value.numpy() if isinstance(value, Tensor) else value)
            if array.size != tensor.numel():
                raise ValueError(f"{owner}.load_state_dict: parameter {i}'s {name!r} has shape {array.shape}, "
                                 f"this optimizer's {tensor.shape}")
            uploads.append((tensor, array.astype(tensor.dtype).reshape(tensor.shape)))
        self._load_groups(groups)
        for tensor, array in uploads:
            tensor.upload(array)

    def _load_groups(self, groups):
        self.lr = groups[0]["lr"]

    def __del__(self):
        ptr = getattr(self, "_ptr", None)
        ctx = getattr(self, "_ctx", None)
        # In a garbage-collected cycle the context may be finalised first:
        # it has freed the optimizer's tensors, and the optimizer must not.
        if ptr and not _context._shutting_down and (ctx is None or ctx.ptr is not None):
            lib.nn_optimizer_free(ptr)
        self._ptr = None


# ---- torch's parameter groups (every optimizer but SGD takes several) ----

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
        raise ValueError(f"{owner}: got an empty parameter list (an optimizer needs at least one parameter)")
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
        full["params"] = tensor_list(tensors, f"{owner} group {g}")
        groups.append(full)
    return groups


class _GroupOptimizer(Optimizer):
    """An optimizer over torch-style parameter groups: param_groups is a list
    of dicts whose options ('lr', 'weight_decay', and the class's own, such
    as Adam's 'betas' and 'eps') may be changed between steps, as schedulers
    do; each step hands the changed ones to the C optimizer. defaults holds
    the options given at creation."""

    # Group keys that are the same for every group (the C optimizer's options).
    _shared = ()

    def __init__(self, groups, make, options, defaults, adamw_of=None):
        owner = type(self).__name__
        for g, group in enumerate(groups):
            group["lr"] = _number(group["lr"], "lr", owner)
            group["weight_decay"] = _number(group["weight_decay"], "weight_decay", owner)
            for key in self._shared:
                if group.get(key, defaults[key]) != defaults[key]:
                    raise ValueError(f"{owner}: parameter group {g} sets {key}={group[key]!r}; {key} is the same "
                                     f"for every group here (give it to the optimizer: {key}={group[key]!r})")
        name = make.__name__ if hasattr(make, "__name__") else owner
        with _lib.LOCK:  # the groups hold the parameters' pointers until the call
            arrays = [_lib.PointerArray(p._ptr() for p in g["params"]).get() for g in groups]
            c_groups = (_lib.ParamGroup * len(groups))(*[
                _lib.ParamGroup(arrays[i], len(g["params"]), g["lr"], g["weight_decay"],
                                bool(adamw_of(g)) if adamw_of else False) for i, g in enumerate(groups)])
            ptr = check_ptr(make(c_groups, len(groups), ctypes.byref(options)), name)
        super().__init__([p for g in groups for p in g["params"]], ptr, groups[0]["lr"])
        self.param_groups = groups
        self.defaults = dict(defaults)
        self._written = [{} for _ in groups]  # what the C optimizer holds, by its option names
        self._sync()

    def _c_options(self, group):
        """{C option name: value} of a group (nn_optimizer_set_group_option's names)."""
        return {"lr": group["lr"], "weight_decay": group["weight_decay"]}

    def _sync(self):
        """Hand every group option changed since the last call to the C optimizer."""
        owner = type(self).__name__
        for g, group in enumerate(self.param_groups):
            for key in self._shared:
                if group.get(key, self.defaults[key]) != self.defaults[key]:
                    raise ValueError(f"{owner}: parameter group {g}'s {key} changed to {group[key]!r}; {key} is "
                                     f"fixed at creation here ({self.defaults[key]!r}): a scheduler cannot cycle "
                                     f"it (OneCycleLR: cycle_momentum=False)")
            for name, value in self._c_options(group).items():
                if self._written[g].get(name) != value:
                    value = _number(value, name, owner)
                    check(_set_group_option(self._ptr, g, name.encode(), value), "nn_optimizer_set_group_option")
                    self._written[g][name] = value
        self._lr = self.param_groups[0]["lr"]

    @property
    def lr(self):
        return self.param_groups[0]["lr"]

    @lr.setter
    def lr(self, value):
        value = _number(value, "lr", type(self).__name__)
        check(lib.nn_optimizer_set_lr(self._ptr, value), "nn_optimizer_set_lr")
        for g, group in enumerate(self.param_groups):
            group["lr"] = self._written[g]["lr"] = lib.nn_optimizer_group_lr(self._ptr, g)
        self._lr = value

    def step(self):
        self._sync()
        super().step()

    def add_param_group(self, param_group):
        raise NotImplementedError(f"{type(self).__name__}.add_param_group: the C optimizer's parameters are fixed "
                                  f"at creation (they share its buffers); make a new optimizer with every group")

    def _groups_for_state(self):
        out, first = [], 0
        for group in self.param_groups:
            saved = {key: value for key, value in group.items() if key != "params"}
            saved["params"] = list(range(first, first + len(group["params"])))
            first += len(group["params"])
            out.append(saved)
        return out

    def _load_groups(self, groups):
        for group, saved in zip(self.param_groups, groups):
            for key in self._shared:
                if key in saved and saved[key] != group.get(key, self.defaults.get(key)):
                    raise ValueError(f"{type(self).__name__}.load_state_dict: the saved {key} is {saved[key]!r}, "
                                     f"this optimizer's {group.get(key, self.defaults.get(key))!r}")
        for group, saved in zip(self.param_groups, groups):
            group.update({key: value for key, value in saved.items() if key != "params"})
        self._sync()
