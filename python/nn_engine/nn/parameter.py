"""Parameter (torch.nn.Parameter): a tensor a module trains."""
import numpy as np

from ..tensor import Tensor


class Parameter(Tensor):
    """Parameter(data, requires_grad=True): a copy of `data` (a Tensor, an
    array or a nested list) as a float32 tensor that requires grad and is
    kept until garbage-collected; set as a module's attribute, it is one of
    the module's parameters under that name."""
    __slots__ = ()

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            raise ValueError("Parameter: data is required (torch's empty Parameter() has no use here)")
        device = None
        if isinstance(data, Tensor):
            device = data._h.ctx
            data = data.sync()
        super().__init__(np.asarray(data, dtype=np.float32), requires_grad=bool(requires_grad), track=False,
                         device=device)

    def __repr__(self):
        return f"Parameter containing:\n{super().__repr__()}"
