"""CustomOptimizer: an optimizer whose update the user writes (custom
kernels launched in place), with the rest the library's (nn_custom.h):
parameter groups in flat buffers, named state in state_dict and training
states, rates on the device for the schedulers, a step count, GradScaler's
skipped steps, capture.

    class SignSGD(CustomOptimizer):
        def __init__(self, params, lr=0.01):
            super().__init__(params, lr=lr)

        def update(self, run):
            SIGN.launch(run.param, run.grad, run.lr, written=(0,), grid=run.n)

update(run) is called once per run of parameters at each step():
run.param, run.grad and run.state[name] are views of run.n elements,
run.lr (and run.step, run.skip where there are) one-element tensors on the
device, run.options the group's options; the tensors are valid during the
call."""
import ctypes

from .. import _context, _errors, _lib
from .._context import BORROWED
from .._structs import CustomOptimizerDesc, CustomUpdate
from ..tensor import Tensor
from .optimizer import _GroupOptimizer, _param_groups

_new = _lib.declare("nn_custom_optimizer_new", _lib.c_optimizer_p,
                    [ctypes.POINTER(CustomOptimizerDesc), ctypes.POINTER(_lib.ParamGroup), ctypes.c_int])
_UPDATE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(CustomUpdate))
MAX_STATES, MAX_OPTIONS = 3, 4  # NN_CUSTOM_OPTIMIZER_MAX_STATES, _OPTIONS


class UpdateRun:
    """One run of an update (nn_custom_update)."""
    __slots__ = ("param", "grad", "state", "n", "lr", "step", "skip", "group", "weight_decay", "options")


class CustomOptimizer(_GroupOptimizer):
    """Base class of a user's optimizer. Class attributes: `states`, the
    per-parameter states' names (at most 3, zeros at first); `step_count`,
    whether each group counts its steps (run.step, advanced before the
    update). Keyword options beyond lr and weight_decay become each group's
    (param_groups' keys, run.options), at most 4. Define update(run)."""

    states = ()
    step_count = False

    def __init__(self, params, lr, weight_decay=0.0, **options):
        owner = type(self).__name__
        if len(self.states) > MAX_STATES or len(options) > MAX_OPTIONS:
            raise ValueError(f"{owner}: {len(self.states)} states and {len(options)} options; at most "
                             f"{MAX_STATES} and {MAX_OPTIONS}")
        defaults = dict(lr=lr, weight_decay=weight_decay, **options)
        groups = _param_groups(params, owner, defaults)
        self._option_names = list(options)
        self._entry = _UPDATE(self._run_update)  # kept: the library calls it at every step
        desc = CustomOptimizerDesc(name=owner.encode(), state_count=len(self.states), step_count=self.step_count,
                                   option_count=len(options), update=ctypes.cast(self._entry, ctypes.c_void_p))
        for i, name in enumerate(self.states):
            desc.states[i] = name.encode()
        for i, (name, value) in enumerate(options.items()):
            desc.options[i] = name.encode()
            desc.option_values[i] = float(value)

        def make(c_groups, count, desc_ref):
            return _new(desc_ref, c_groups, count)
        make.__name__ = "nn_custom_optimizer_new"
        super().__init__(groups, make, desc, defaults)

    def update(self, run):
        raise NotImplementedError(f"{type(self).__name__}: define update(self, run)")

    def _c_options(self, group):
        options = super()._c_options(group)
        options.update({name: group[name] for name in self._option_names})
        return options

    def _run_update(self, u_ptr):
        u = u_ptr.contents
        scope = _context.CallScope()
        ctx = self._ctx

        def borrowed(ptr):
            return Tensor._wrap(_context.Handle(ptr, ctx, BORROWED, parent=scope)) if ptr else None
        try:
            run = UpdateRun()
            run.param, run.grad, run.lr, run.step, run.skip = (borrowed(p) for p in (u.param, u.grad, u.lr, u.step,
                                                                                      u.skip))
            run.state = {name: borrowed(u.state[i]) for i, name in enumerate(self.states)}
            run.n, run.group, run.weight_decay = u.n, u.group, u.weight_decay
            run.options = {name: u.options[i] for i, name in enumerate(self._option_names)}
            self.update(run)
            return _errors.NN_OK
        except BaseException as e:  # noqa: B902 - raised again by step()
            _errors.keep_callback_exception(e)
            return _errors.NN_ERR_STATE
        finally:
            scope.open = False
