"""Learning-rate schedulers with torch.optim.lr_scheduler's classes,
arguments and values: StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR,
LinearLR, OneCycleLR and SequentialLR. Call step() after optimizer.step(),
as in PyTorch.

Each is a C schedule (include/nn_schedule.h) over every parameter group:
the rates are written on the device by the kernel the CLI's schedules run
(so a captured step replays them), and get_last_lr() and param_groups'
"lr" hold the same formulas' values in double, which the library computes
on the host (nn_schedule_rate). The formulas are torch's closed forms: they
equal torch's chained recurrences to within a few units in the last place
of a double. OneCycleLR's momentum (beta1) is cycled by the C schedule too;
a step captured with it is refused at replay, as its constants change."""
import ctypes
import math
import numbers
from collections import Counter

from .. import _context, _lib
from .._errors import check, check_ptr, last_error_message
from .._lib import c_optimizer_p
from .._structs import ScheduleOptions

__all__ = ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR", "OneCycleLR",
           "SequentialLR"]

c_schedule_p = ctypes.c_void_p  # nn_schedule *
_new = _lib.declare("nn_schedule_new", c_schedule_p, [c_optimizer_p, ctypes.POINTER(ScheduleOptions)])
_sequential = _lib.declare("nn_schedule_sequential", c_schedule_p,
                           [c_optimizer_p, ctypes.POINTER(c_schedule_p), ctypes.c_int, ctypes.POINTER(ctypes.c_int64)])
_step = _lib.declare("nn_schedule_step", ctypes.c_int, [c_schedule_p])
_set_step = _lib.declare("nn_schedule_set_step", ctypes.c_int, [c_schedule_p, ctypes.c_int64])
_rate = _lib.declare("nn_schedule_rate", ctypes.c_double, [c_schedule_p, ctypes.c_int, ctypes.c_int64])
_momentum = _lib.declare("nn_schedule_momentum", ctypes.c_double, [c_schedule_p, ctypes.c_int, ctypes.c_int64])
_free = _lib.declare("nn_schedule_free", None, [c_schedule_p])
_group_count = _lib.declare("nn_optimizer_group_count", ctypes.c_int, [c_optimizer_p])

# The C kinds (nn_schedule_kind).
_STEP, _MULTISTEP, _EXPONENTIAL, _COSINE, _ONECYCLE, _LINEAR = 1, 2, 3, 4, 5, 6
_MAX_MILESTONES = 8


def _check_optimizer(optimizer, owner):
    groups = getattr(optimizer, "param_groups", None)
    if getattr(optimizer, "_ptr", None) is None or groups is None:
        raise TypeError(f"{owner}: {type(optimizer).__name__} is not an Optimizer")
    if len(groups) != _group_count(optimizer._ptr):
        raise ValueError(f"{owner}: the optimizer has {_group_count(optimizer._ptr)} parameter groups, its "
                         f"param_groups {len(groups)}")


def _positive_int(value, name, owner):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a positive integer, got {value!r}")
    return int(value)


class _LRScheduler:
    """A C schedule of the optimizer's groups. Subclasses give its options
    (_options()) and, where each group's base is not its initial_lr,
    _group_lrs()."""

    def __init__(self, optimizer, last_epoch=-1, verbose=False):
        owner = type(self).__name__
        if last_epoch != -1:
            raise ValueError(f"{owner}: last_epoch must be -1 (resuming is load_state_dict's), got {last_epoch}")
        _check_optimizer(optimizer, owner)
        self.optimizer = optimizer
        for group in self.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [group["initial_lr"] for group in self.param_groups]
        self.verbose = verbose
        options = self._options()
        lrs = self._group_lrs()
        options.group_lrs = (ctypes.c_double * len(lrs))(*[float(v) for v in lrs])
        self._adopt(check_ptr(_new(optimizer._ptr, ctypes.byref(options)), "nn_schedule_new"))

    def _options(self):
        raise NotImplementedError

    def _group_lrs(self):
        return self.base_lrs

    def _adopt(self, ptr):
        """Take the C schedule ptr, now at step 0."""
        self._ptr = ptr
        self._ctx = self.optimizer._ctx  # freed in its context
        self.last_epoch = 0
        self._step_count = 1
        self._publish()

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def _publish(self):
        """The groups' rates (and a cycled momentum) of the step the device
        now holds, into param_groups, as the C optimizer holds them."""
        written = getattr(self.optimizer, "_written", None)
        for g, group in enumerate(self.param_groups):
            group["lr"] = _rate(self._ptr, g, self.last_epoch)
            if math.isnan(group["lr"]):
                raise ValueError(f"{type(self).__name__}: {last_error_message()}")
            momentum = _momentum(self._ptr, g, self.last_epoch)
            if not math.isnan(momentum):
                if "betas" in group:
                    group["betas"] = (momentum, *group["betas"][1:])
                    name = "beta1"
                else:
                    group["momentum"] = momentum
                    name = "momentum"
                if written is not None:
                    written[g][name] = momentum
            if written is not None:
                written[g]["lr"] = group["lr"]
        self.optimizer._lr = self.param_groups[0]["lr"]
        self._last_lr = [group["lr"] for group in self.param_groups]

    def get_last_lr(self):
        return self._last_lr

    def get_lr(self):
        return list(self._last_lr)

    def _check_next(self, epoch):
        """Refuse a step the schedule has no rate for (OneCycleLR's end)."""

    def step(self, epoch=None):
        """Advance one step (or go to step `epoch`) and write its rates."""
        target = self.last_epoch + 1 if epoch is None else epoch
        if not isinstance(target, numbers.Integral) or isinstance(target, bool) or not 0 <= target < 2 ** 31:
            raise ValueError(f"{type(self).__name__}.step: epoch must be an integer in [0, 2^31), got {epoch!r}")
        self._check_next(int(target))
        if epoch is None:
            check(_step(self._ptr), "nn_schedule_step")
        else:
            check(_set_step(self._ptr, int(target)), "nn_schedule_set_step")
        self._step_count += 1
        self.last_epoch = int(target)
        self._publish()

    _NOT_SAVED = ("optimizer", "_ptr", "_ctx", "_schedulers")

    def state_dict(self):
        return {key: value for key, value in self.__dict__.items() if key not in self._NOT_SAVED}

    def load_state_dict(self, state_dict):
        """Take back what state_dict() gave: the schedule goes to its step."""
        self.__dict__.update({key: value for key, value in state_dict.items() if key not in self._NOT_SAVED})
        check(_set_step(self._ptr, int(self.last_epoch)), "nn_schedule_set_step")
        self._publish()

    def __del__(self):
        ptr, ctx = getattr(self, "_ptr", None), getattr(self, "_ctx", None)
        if ptr and not _context._shutting_down and (ctx is None or ctx.ptr is not None):
            _free(ptr)
        self._ptr = None


class StepLR(_LRScheduler):
    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        self.step_size = _positive_int(step_size, "step_size", "StepLR")
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def _options(self):
        return ScheduleOptions(kind=_STEP, step_size=self.step_size, gamma=self.gamma)


class MultiStepLR(_LRScheduler):
    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def _options(self):
        ordered = sorted(self.milestones.elements())
        if len(ordered) > _MAX_MILESTONES:
            raise ValueError(f"MultiStepLR: at most {_MAX_MILESTONES} milestones, got {len(ordered)}")
        options = ScheduleOptions(kind=_MULTISTEP, gamma=self.gamma, milestone_count=len(ordered))
        for i, m in enumerate(ordered):
            options.milestones[i] = m
        return options


class ExponentialLR(_LRScheduler):
    def __init__(self, optimizer, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def _options(self):
        return ScheduleOptions(kind=_EXPONENTIAL, gamma=self.gamma)


class LinearLR(_LRScheduler):
    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1,
                 verbose=False):
        if not 0 < start_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = _positive_int(total_iters, "total_iters", "LinearLR")
        super().__init__(optimizer, last_epoch, verbose)

    def _options(self):
        return ScheduleOptions(kind=_LINEAR, start_factor=self.start_factor, end_factor=self.end_factor,
                               total_steps=self.total_iters)


class CosineAnnealingLR(_LRScheduler):
    def __init__(self, optimizer, T_max, eta_min=0, last_epoch=-1, verbose=False):
        self.T_max = _positive_int(T_max, "T_max", "CosineAnnealingLR")
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch, verbose)

    def _options(self):
        return ScheduleOptions(kind=_COSINE, total_steps=self.T_max, eta_min=self.eta_min)


class SequentialLR(_LRScheduler):
    """Runs schedulers one after another, switching at the milestones (e.g.
    LinearLR for warm-up, then CosineAnnealingLR): one C schedule made of
    theirs, each part from its own step 0 at its milestone."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1, verbose=False):
        if last_epoch != -1:
            raise ValueError(f"SequentialLR: last_epoch must be -1, got {last_epoch}")
        _check_optimizer(optimizer, "SequentialLR")
        for i, scheduler in enumerate(schedulers):
            if scheduler.optimizer is not optimizer:
                raise ValueError(f"SequentialLR: scheduler {i} belongs to another optimizer")
            if isinstance(scheduler, SequentialLR):
                raise ValueError(f"SequentialLR: scheduler {i} is a SequentialLR (sequences do not nest)")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} milestones, "
                             f"got {len(milestones)}")
        self.optimizer = optimizer
        self.verbose = verbose
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.base_lrs = [group["initial_lr"] for group in self.param_groups]
        parts = (c_schedule_p * len(schedulers))(*[s._ptr for s in schedulers])
        points = (ctypes.c_int64 * max(1, len(milestones)))(*milestones)
        self._adopt(check_ptr(_sequential(optimizer._ptr, parts, len(schedulers), points), "nn_schedule_sequential"))

    def state_dict(self):
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        for scheduler, saved in zip(self._schedulers, state_dict.get("_schedulers", ())):
            scheduler.__dict__.update({k: v for k, v in saved.items() if k not in self._NOT_SAVED})
        super().load_state_dict(state_dict)


class OneCycleLR(_LRScheduler):
    """torch's OneCycleLR. cycle_momentum moves SGD's and RMSprop's momentum
    (made without, they get their buffers then, as torch's) or Adam's,
    AdamW's and Lion's beta1 (their param_groups' "betas")."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25., final_div_factor=1e4, three_phase=False, last_epoch=-1, verbose=False):
        _check_optimizer(optimizer, "OneCycleLR")
        groups = optimizer.param_groups
        if total_steps is None and (epochs is None or steps_per_epoch is None):
            raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
        if total_steps is not None:
            self.total_steps = _positive_int(total_steps, "total_steps", "OneCycleLR")
        else:
            self.total_steps = (_positive_int(epochs, "epochs", "OneCycleLR") *
                                _positive_int(steps_per_epoch, "steps_per_epoch", "OneCycleLR"))
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"OneCycleLR: pct_start must be a float in [0, 1], got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        self.pct_start, self.div_factor, self.final_div_factor = pct_start, div_factor, final_div_factor
        self.three_phase = bool(three_phase)
        self.cycle_momentum = bool(cycle_momentum)
        self._max_lrs = self._format_param("max_lr", groups, max_lr)
        # torch's group keys (what its scripts read); the C schedule computes the curve
        for group, peak in zip(groups, self._max_lrs):
            group["initial_lr"] = peak / div_factor
            group["max_lr"] = peak
            group["min_lr"] = group["initial_lr"] / final_div_factor
        if self.cycle_momentum:
            self.base_momentum = self._one_value("base_momentum", groups, base_momentum)
            self.max_momentum = self._one_value("max_momentum", groups, max_momentum)
            for group in groups:
                group["max_momentum"], group["base_momentum"] = self.max_momentum, self.base_momentum
        super().__init__(optimizer, last_epoch, verbose)

    @staticmethod
    def _format_param(name, groups, param):
        if isinstance(param, (list, tuple)):
            if len(param) != len(groups):
                raise ValueError(f"OneCycleLR: expected {len(groups)} values for {name}, got {len(param)}")
            return list(param)
        return [param] * len(groups)

    @staticmethod
    def _one_value(name, groups, param):
        values = set(OneCycleLR._format_param(name, groups, param))
        if len(values) != 1:
            raise ValueError(f"OneCycleLR: {name} must be the same for every group here, got {param!r}")
        return float(values.pop())

    def _options(self):
        options = ScheduleOptions(kind=_ONECYCLE, max_lr=self._max_lrs[0], total_steps=self.total_steps,
                                  pct_start=self.pct_start, anneal_linear=self.anneal_strategy == "linear",
                                  div_factor=self.div_factor, final_div_factor=self.final_div_factor,
                                  three_phase=self.three_phase, cycle_momentum=self.cycle_momentum)
        if self.cycle_momentum:
            options.base_momentum, options.max_momentum = self.base_momentum, self.max_momentum
        return options

    def _group_lrs(self):
        return self._max_lrs

    def _check_next(self, epoch):
        if epoch > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {epoch + 1} times; total_steps is {self.total_steps}")
