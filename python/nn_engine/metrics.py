"""Metrics: running mean loss and accuracy over an epoch."""
import numpy as np

from .tensor import Tensor


class Metrics:
    """metrics.update(loss, logits, labels) per batch, collect(n) ->
    (mean loss per batch, accuracy over n samples).

    The seed accumulated both on the GPU; here each update reads back the
    loss (one float), the logits and the labels, because the C library has
    no argmax kernel yet. On the CPU backend that is a copy."""

    def __init__(self):
        self.reset()

    def reset(self):
        self._loss_sum = 0.0
        self._correct = 0
        self._batches = 0

    def update(self, loss, logits, labels):
        for name, value in (("loss", loss), ("logits", logits)):
            if not isinstance(value, Tensor):
                raise TypeError(f"Metrics.update: {name} must be a Tensor, got "
                                f"{type(value).__name__}")
        if loss.size != 1:
            raise ValueError(f"Metrics.update: loss must have one element, got shape {loss.shape}")
        if logits.ndim != 2:
            raise ValueError(f"Metrics.update: logits must be [N, classes], got shape "
                             f"{logits.shape}")
        y = labels.sync() if isinstance(labels, Tensor) else np.asarray(labels)
        y = y.reshape(-1)
        if y.shape[0] != logits.shape[0]:
            raise ValueError(f"Metrics.update: {y.shape[0]} labels for {logits.shape[0]} "
                             "rows of logits")
        self._loss_sum += float(loss.sync().reshape(-1)[0])
        predicted = logits.sync().argmax(axis=1)
        self._correct += int(np.count_nonzero(predicted == y.astype(np.int64)))
        self._batches += 1

    def collect(self, num_samples):
        """(mean of the batch losses, correct / num_samples)."""
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples < 0:
            raise ValueError(f"Metrics.collect: num_samples must be an int >= 0, got "
                             f"{num_samples!r}")
        mean_loss = self._loss_sum / self._batches if self._batches else 0.0
        accuracy = self._correct / num_samples if num_samples else 0.0
        return mean_loss, accuracy

    @property
    def correct(self):
        return self._correct
