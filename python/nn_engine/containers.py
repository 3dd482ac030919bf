"""Sequential (torch.nn.Sequential) and Flatten: layers chained in order,
their parameters and buffers under PyTorch's names ("0.weight", "2.bias")."""
from .model import Model
from .rearrange import flatten


class Sequential(Model):
    """Runs its layers in order: Sequential(Conv2d(1, 6, 5), ReLU(), ...).
    Layer i is attribute "i", so the state_dict keys are PyTorch's."""

    def __init__(self, *layers):
        super().__init__()
        self._count = 0
        for layer in layers:
            self.append(layer)

    def append(self, layer):
        if not callable(layer):
            raise TypeError(f"Sequential: layer {self._count} must be callable, got {type(layer).__name__}")
        setattr(self, str(self._count), layer)
        self._count += 1
        return self

    def __getitem__(self, index):
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"Sequential: index must be an int, got {type(index).__name__}")
        if not -self._count <= index < self._count:
            raise IndexError(f"Sequential: index {index} is out of range for {self._count} layers")
        return getattr(self, str(index % self._count))

    def __len__(self):
        return self._count

    def __iter__(self):
        return (getattr(self, str(i)) for i in range(self._count))

    def forward(self, x):
        for layer in self:
            x = layer(x)
        return x

    def __repr__(self):
        inner = "".join(f"\n  ({i}): {layer!r}" for i, layer in enumerate(self))
        return f"Sequential({inner}\n)"


class Flatten:
    """torch.nn.Flatten: dimensions start_dim..end_dim joined (default: all
    but the batch)."""

    def __init__(self, start_dim=1, end_dim=-1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def __call__(self, x):
        return flatten(x, self.start_dim, self.end_dim)

    def __repr__(self):
        return f"Flatten(start_dim={self.start_dim}, end_dim={self.end_dim})"
