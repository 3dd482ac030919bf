"""Metrics: running mean loss and accuracy over an epoch."""
import numpy as np

from . import _lib
from ._errors import check
from ._lib import lib
from .tensor import Tensor

_accumulate = _lib.declare("nn_accumulate_metrics", _lib.c_status,
                           [_lib.c_tensor_p, _lib.c_tensor_p, _lib.c_tensor_p, _lib.c_tensor_p])
# The device sums are float32: whole numbers are exact up to 2^24, so they are
# read back and restarted before the rows counted there could pass that.
_EXACT_ROWS = 2**24


class _DeviceSums:
    """One context's running sums, kept on its device: the batch losses, and
    (nn_accumulate_metrics) the rows whose largest logit is at the label."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.loss = Tensor(np.zeros(1, np.float32), track=False, device=ctx)
        self.sums = Tensor(np.zeros(2, np.float32), track=False, device=ctx)  # [loss * rows, correct]
        self.rows = 0

    def add(self, loss, logits, labels):
        check(_accumulate(logits._ptr(), labels._ptr(), loss._ptr(), self.sums._ptr()), "nn_accumulate_metrics")
        # loss += the batch's loss, recorded nowhere for autograd.
        enabled = lib.nn_ctx_set_grad_enabled(self.ctx.ptr, False)
        try:
            total = lib.nn_add(self.loss._ptr(), loss._ptr())
            status = lib.nn_tensor_copy(self.loss._ptr(), total) if total else lib.nn_last_status()
        finally:
            lib.nn_ctx_set_grad_enabled(self.ctx.ptr, enabled)
        check(status, "Metrics.update")
        self.rows += logits.shape[0]

    def take(self):
        """(loss sum, correct) so far, and the sums restarted at zero."""
        loss, correct = float(self.loss.sync()[0]), int(self.sums.sync()[1])
        check(lib.nn_tensor_fill(self.loss._ptr(), 0.0), "nn_tensor_fill")
        check(lib.nn_tensor_fill(self.sums._ptr(), 0.0), "nn_tensor_fill")
        self.rows = 0
        return loss, correct


class Metrics:
    """metrics.update(loss, logits, labels) per batch, collect(n) ->
    (mean loss per batch, accuracy over n samples).

    With labels an int32 Tensor on the logits' device (what DataLoader
    gives), the sums stay on the device and nothing is read back until
    collect(): a step does not wait for the device. Other labels (NumPy, a
    Tensor elsewhere) read the loss and the logits back at each update."""

    def __init__(self):
        self.reset()

    def reset(self):
        self._loss_sum = 0.0
        self._correct = 0
        self._batches = 0
        self._devices = {}  # id(context) -> _DeviceSums

    def update(self, loss, logits, labels):
        for name, value in (("loss", loss), ("logits", logits)):
            if not isinstance(value, Tensor):
                raise TypeError(f"Metrics.update: {name} must be a Tensor, got "
                                f"{type(value).__name__}")
        if loss.numel() != 1:
            raise ValueError(f"Metrics.update: loss must have one element, got shape {loss.shape}")
        if logits.ndim != 2:
            raise ValueError(f"Metrics.update: logits must be [N, classes], got shape "
                             f"{logits.shape}")
        ctx = logits._h.ctx
        # The library checks the loss's dtype (and everything else) itself.
        if isinstance(labels, Tensor) and labels.dtype == np.int32 and labels._h.ctx is ctx and loss._h.ctx is ctx:
            if labels.numel() != logits.shape[0]:
                raise ValueError(f"Metrics.update: {labels.numel()} labels for {logits.shape[0]} "
                                 "rows of logits")
            sums = self._devices.get(id(ctx))
            if sums is None:
                sums = self._devices[id(ctx)] = _DeviceSums(ctx)
            elif sums.rows + logits.shape[0] > _EXACT_ROWS:
                self._fold(sums)
            sums.add(loss, logits, labels)
            self._batches += 1
            return
        y = labels.sync() if isinstance(labels, Tensor) else np.asarray(labels)
        y = y.reshape(-1)
        if y.shape[0] != logits.shape[0]:
            raise ValueError(f"Metrics.update: {y.shape[0]} labels for {logits.shape[0]} "
                             "rows of logits")
        self._loss_sum += float(loss.sync().reshape(-1)[0])
        predicted = logits.sync().argmax(axis=1)
        self._correct += int(np.count_nonzero(predicted == y.astype(np.int64)))
        self._batches += 1

    def _fold(self, sums):
        loss, correct = sums.take()
        self._loss_sum += loss
        self._correct += correct

    def _fold_all(self):
        for sums in self._devices.values():
            if sums.rows:
                self._fold(sums)

    def collect(self, num_samples):
        """(mean of the batch losses, correct / num_samples)."""
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples < 0:
            raise ValueError(f"Metrics.collect: num_samples must be an int >= 0, got "
                             f"{num_samples!r}")
        self._fold_all()
        mean_loss = self._loss_sum / self._batches if self._batches else 0.0
        accuracy = self._correct / num_samples if num_samples else 0.0
        return mean_loss, accuracy

    @property
    def correct(self):
        self._fold_all()
        return self._correct
