"""The containers of torch.nn: Sequential, ModuleList and ModuleDict, and
Flatten. Their modules are attributes named as PyTorch names them ("0",
"1", or the dict's keys), so the state_dict keys are PyTorch's ("0.weight",
"features.conv1.bias")."""
from collections import OrderedDict

from .module import Module
from .rearrange import flatten


def _check_module(value, owner, what):
    if not isinstance(value, Module):
        raise TypeError(f"{owner}: {what} must be an nn_engine.nn.Module, got {type(value).__name__}")
    return value


def _check_key(key, owner):
    if not isinstance(key, str) or not key or "." in key or key.startswith("_"):
        raise KeyError(f"{owner}: a key must be a non-empty str without '.' that does not start with '_', "
                       f"got {key!r}")
    return key


class _Indexed(Module):
    """Modules under the names "0", "1", ...: what Sequential and ModuleList share."""

    def __init__(self):
        super().__init__()
        object.__setattr__(self, "_count", 0)

    def _index(self, index):
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"{type(self).__name__}: index must be an int or a slice, got {type(index).__name__}")
        if not -self._count <= index < self._count:
            raise IndexError(f"{type(self).__name__}: index {index} is out of range for {self._count} modules")
        return index % self._count

    def append(self, module):
        _check_module(module, type(self).__name__, f"module {self._count}")
        setattr(self, str(self._count), module)
        object.__setattr__(self, "_count", self._count + 1)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def _modules_list(self):
        return [getattr(self, str(i)) for i in range(self._count)]

    def _replace_all(self, modules):
        for i in range(self._count):
            delattr(self, str(i))
        object.__setattr__(self, "_count", 0)
        self.extend(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)._from_list(self._modules_list()[index])
        return getattr(self, str(self._index(index)))

    def __setitem__(self, index, module):
        setattr(self, str(self._index(index)), _check_module(module, type(self).__name__, "module"))

    def __delitem__(self, index):
        modules = self._modules_list()
        del modules[index if isinstance(index, slice) else self._index(index)]
        self._replace_all(modules)

    def insert(self, index, module):
        modules = self._modules_list()
        modules.insert(index, _check_module(module, type(self).__name__, "module"))
        self._replace_all(modules)

    def __len__(self):
        return self._count

    def __iter__(self):
        return iter(self._modules_list())


class Sequential(_Indexed):
    """Runs its modules in order: Sequential(Conv2d(1, 6, 5), ReLU(), ...),
    module i named "i"; or Sequential(OrderedDict([("conv", ...), ...])),
    each named by its key."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for key, module in modules[0].items():
                self.add_module(_check_key(key, "Sequential"), _check_module(module, "Sequential", repr(key)))
            object.__setattr__(self, "_keys", list(modules[0]))
        else:
            object.__setattr__(self, "_keys", None)
            for module in modules:
                if not callable(module):
                    raise TypeError(f"Sequential: module {self._count} must be callable, got "
                                    f"{type(module).__name__}")
                self.append(module)

    @classmethod
    def _from_list(cls, modules):
        return cls(*modules)

    def append(self, module):
        if self._keys is not None:
            raise TypeError("Sequential: append to a Sequential made of an OrderedDict: use add_module(name, m)")
        if not callable(module):
            raise TypeError(f"Sequential: module {self._count} must be callable, got {type(module).__name__}")
        setattr(self, str(self._count), module)
        object.__setattr__(self, "_count", self._count + 1)
        return self

    def _modules_list(self):
        if self._keys is not None:
            return [getattr(self, key) for key in self._keys]
        return super()._modules_list()

    def __len__(self):
        return len(self._keys) if self._keys is not None else self._count

    def __getitem__(self, index):
        if self._keys is None:
            return super().__getitem__(index)
        modules = self._modules_list()
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(zip(self._keys, modules))[index]))
        return modules[index]

    def add_module(self, name, module):
        super().add_module(name, module)
        if self.__dict__.get("_keys") is not None and name not in self._keys:
            self._keys.append(name)

    def forward(self, x):
        for module in self:
            x = module(x)
        return x


class ModuleList(_Indexed):
    """A list of modules (torch.nn.ModuleList): their parameters are the
    owner's, under "<name>.<index>."."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    @classmethod
    def _from_list(cls, modules):
        return cls(modules)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward: iterate over it in the owner's forward")

    def __iadd__(self, modules):
        return self.extend(modules)


class ModuleDict(Module):
    """A dict of modules (torch.nn.ModuleDict), in insertion order: their
    parameters are the owner's, under "<name>.<key>."."""

    def __init__(self, modules=None):
        super().__init__()
        object.__setattr__(self, "_keys", [])
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key, module):
        _check_module(module, "ModuleDict", repr(key))
        setattr(self, _check_key(key, "ModuleDict"), module)
        if key not in self._keys:
            self._keys.append(key)

    def __delitem__(self, key):
        self.pop(key)

    def pop(self, key):
        module = self[key]
        delattr(self, key)
        self._keys.remove(key)
        return module

    def update(self, modules):
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self[key] = module

    def keys(self):
        return list(self._keys)

    def values(self):
        return [getattr(self, key) for key in self._keys]

    def items(self):
        return [(key, getattr(self, key)) for key in self._keys]

    def clear(self):
        for key in list(self._keys):
            self.pop(key)

    def __contains__(self, key):
        return key in self._keys

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(list(self._keys))

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward: index it in the owner's forward")


class Flatten(Module):
    """torch.nn.Flatten: dimensions start_dim..end_dim joined (default: all
    but the batch)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
