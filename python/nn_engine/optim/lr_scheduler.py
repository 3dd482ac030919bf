"""Learning-rate schedulers with torch.optim.lr_scheduler's classes,
arguments and values: StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR,
LinearLR, OneCycleLR and SequentialLR. They run on the host, in double, with
torch 1.13's own recurrences, and write the optimizer's rate after each
step() (the device reads it at the next optimizer step). Call step() after
optimizer.step(), as in PyTorch.

An optimizer with param_groups (dicts holding "lr") has each group's rate
set; one without has its single rate (optimizer.lr) scheduled. A captured
step (nn_engine.capture) freezes host values: for schedules inside one, the
C API's device schedules (include/nn_schedule.h) compute the rate on the
device."""
import math
from bisect import bisect_right
from collections import Counter

__all__ = ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR", "OneCycleLR",
           "SequentialLR"]


class _Groups:
    """The optimizer's rates as torch's param_groups: its own groups, or one
    group standing for optimizer.lr."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        own = getattr(optimizer, "param_groups", None)
        self.own = own is not None
        self.groups = own if self.own else [{"lr": optimizer.lr}]

    def write(self, values):
        for group, lr in zip(self.groups, values):
            group["lr"] = lr
        if not self.own:
            self.optimizer.lr = values[0]


def _groups_of(optimizer, owner):
    if not hasattr(optimizer, "lr") and getattr(optimizer, "param_groups", None) is None:
        raise TypeError(f"{owner}: {type(optimizer).__name__} is not an Optimizer")
    groups = getattr(optimizer, "_lr_scheduler_groups", None)
    if groups is None:  # shared by every scheduler of this optimizer (SequentialLR's parts)
        groups = _Groups(optimizer)
        optimizer._lr_scheduler_groups = groups
    return groups


class _LRScheduler:
    def __init__(self, optimizer, last_epoch=-1, verbose=False):
        owner = type(self).__name__
        if last_epoch != -1:
            raise ValueError(f"{owner}: last_epoch must be -1 (resuming a torch scheduler's state is not "
                             f"supported), got {last_epoch}")
        self.optimizer = optimizer
        self._groups = _groups_of(optimizer, owner)
        for group in self.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [group["initial_lr"] for group in self.param_groups]
        self.last_epoch = last_epoch
        self.verbose = verbose
        self._initial_step()

    @property
    def param_groups(self):
        return self._groups.groups

    def _initial_step(self):
        self._step_count = 0
        self.step()

    def get_last_lr(self):
        return self._last_lr

    def get_lr(self):
        raise NotImplementedError

    def step(self, epoch=None):
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        self._groups.write(values)
        self._last_lr = [group["lr"] for group in self.param_groups]

    def state_dict(self):
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "_groups")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


def _positive_int(value, name, owner):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a positive integer, got {value!r}")
    return value


class StepLR(_LRScheduler):
    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        self.step_size = _positive_int(step_size, "step_size", "StepLR")
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.param_groups]
        return [group["lr"] * self.gamma for group in self.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(_LRScheduler):
    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in self.param_groups]
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in self.param_groups]

    def _get_closed_form_lr(self):
        milestones = list(sorted(self.milestones.elements()))
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ExponentialLR(_LRScheduler):
    def __init__(self, optimizer, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0:
            return [group["lr"] for group in self.param_groups]
        return [group["lr"] * self.gamma for group in self.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class LinearLR(_LRScheduler):
    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1,
                 verbose=False):
        if start_factor > 1.0 or start_factor < 0:
            raise ValueError(f"LinearLR: start_factor must be in [0, 1], got {start_factor}")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = _positive_int(total_iters, "total_iters", "LinearLR")
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.param_groups]
        if self.last_epoch > self.total_iters:
            return [group["lr"] for group in self.param_groups]
        return [group["lr"] * (1. + (self.end_factor - self.start_factor) /
                               (self.total_iters * self.start_factor + (self.last_epoch - 1) *
                                (self.end_factor - self.start_factor)))
                for group in self.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor) *
                           min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class CosineAnnealingLR(_LRScheduler):
    def __init__(self, optimizer, T_max, eta_min=0, last_epoch=-1, verbose=False):
        self.T_max = _positive_int(T_max, "T_max", "CosineAnnealingLR")
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0:
            return [group["lr"] for group in self.param_groups]
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, self.param_groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max)) /
                (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)) *
                (group["lr"] - self.eta_min) + self.eta_min
                for group in self.param_groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class SequentialLR(_LRScheduler):
    """Runs schedulers one after another, switching at the milestones (e.g.
    LinearLR for warm-up, then CosineAnnealingLR)."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1, verbose=False):
        for i, scheduler in enumerate(schedulers):
            if scheduler.optimizer is not optimizer:
                raise ValueError(f"SequentialLR: scheduler {i} belongs to another optimizer")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} milestones, "
                             f"got {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        self._groups = _groups_of(optimizer, "SequentialLR")
        self._groups.write([group["initial_lr"] for group in self.param_groups])
        for scheduler in self._schedulers:
            scheduler.last_epoch -= 1
        self._schedulers[0]._initial_step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self):
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler.step(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class OneCycleLR(_LRScheduler):
    """torch's OneCycleLR. cycle_momentum needs an optimizer whose
    param_groups hold "momentum" or "betas"; the SGD of nn_engine.optim
    keeps its momentum fixed, so pass cycle_momentum=False with it."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25., final_div_factor=1e4, three_phase=False, last_epoch=-1, verbose=False):
        groups = _groups_of(optimizer, "OneCycleLR")
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
        self.anneal_func = self._annealing_cos if anneal_strategy == "cos" else self._annealing_linear
        phases = [(float(pct_start * self.total_steps) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum")]
        if three_phase:
            phases += [(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                        "max_momentum"),
                       (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            phases += [(self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        self._schedule_phases = [dict(zip(("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum"), p))
                                 for p in phases]
        max_lrs = self._format_param("max_lr", groups.groups, max_lr)
        for i, group in enumerate(groups.groups):
            group["initial_lr"] = max_lrs[i] / div_factor
            group["max_lr"] = max_lrs[i]
            group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            first = groups.groups[0] if groups.groups else {}
            if "momentum" not in first and "betas" not in first:
                raise ValueError("OneCycleLR: optimizer must support momentum with `cycle_momentum` option enabled "
                                 "(its param_groups hold no momentum or betas); pass cycle_momentum=False")
            self.use_beta1 = "betas" in first
            max_momentums = self._format_param("max_momentum", groups.groups, max_momentum)
            base_momentums = self._format_param("base_momentum", groups.groups, base_momentum)
            for m_momentum, b_momentum, group in zip(max_momentums, base_momentums, groups.groups):
                if self.use_beta1:
                    group["betas"] = (m_momentum, *group["betas"][1:])
                else:
                    group["momentum"] = m_momentum
                group["max_momentum"] = m_momentum
                group["base_momentum"] = b_momentum
        super().__init__(optimizer, last_epoch, verbose)

    @staticmethod
    def _format_param(name, groups, param):
        if isinstance(param, (list, tuple)):
            if len(param) != len(groups):
                raise ValueError(f"OneCycleLR: expected {len(groups)} values for {name}, got {len(param)}")
            return param
        return [param] * len(groups)

    @staticmethod
    def _annealing_cos(start, end, pct):
        cos_out = math.cos(math.pi * pct) + 1
        return end + (start - end) / 2.0 * cos_out

    @staticmethod
    def _annealing_linear(start, end, pct):
        return (end - start) * pct + start

    def get_lr(self):
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {step_num + 1} times; total_steps is {self.total_steps}")
        lrs = []
        for group in self.param_groups:
            start_step = 0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    computed_lr = self.anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        computed_momentum = self.anneal_func(group[phase["start_momentum"]],
                                                             group[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(computed_lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (computed_momentum, *group["betas"][1:])
                else:
                    group["momentum"] = computed_momentum
        return lrs
