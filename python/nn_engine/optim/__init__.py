"""nn_engine.optim, as torch.optim: every optimizer is an Optimizer (step,
zero_grad, lr, param_groups, state_dict) over the C optimizer interface
(include/nn_optim.h); lr_scheduler holds torch's schedulers; CustomOptimizer
is the base of a user's own (its update written as custom kernels)."""
from . import lr_scheduler  # noqa: F401  (torch.optim.lr_scheduler's place)
from .adaptive import Adam, AdamW, Lion, Muon, RMSprop
from .custom import CustomOptimizer, UpdateRun
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Lion", "Muon", "CustomOptimizer", "UpdateRun",
           "lr_scheduler"]
