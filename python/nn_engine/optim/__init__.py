"""nn_engine.optim, as torch.optim: every optimizer is an Optimizer (step,
zero_grad, lr, param_groups, state_dict) over the C optimizer interface
(include/nn_optim.h); lr_scheduler holds torch's schedulers."""
from . import lr_scheduler  # noqa: F401  (torch.optim.lr_scheduler's place)
from .adaptive import Adam, AdamW, Lion, Muon, RMSprop
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Lion", "Muon", "lr_scheduler"]
