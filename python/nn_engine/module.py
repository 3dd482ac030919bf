"""Module (torch.nn.Module): a tree of layers that owns parameters and
buffers. Every layer is one; a model subclasses it, sets layers and
parameters as attributes and defines forward.

Parameters are the Tensors that require grad found in the attributes, as
well as in lists, tuples and dicts of them (the seed's models keep layers
in plain lists; torch's ModuleList and ModuleDict are such containers here);
child modules are found the same way. Names are PyTorch's state_dict keys:
"features.0.weight"."""
import types

import numpy as np

from .tensor import Tensor


def _opaque(value):
    """Objects never searched for parameters or modules (an optimizer
    holds parameters but does not own them)."""
    from .metrics import Metrics
    from .optim import Optimizer
    return isinstance(value, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                              types.MethodType, np.ndarray, str, bytes, Optimizer, Metrics))


def _items(value):
    """(key, item) pairs of a container, or None for anything else."""
    if isinstance(value, (list, tuple)):
        return [(str(i), item) for i, item in enumerate(value)]
    if isinstance(value, dict):
        return [(str(key), item) for key, item in value.items()]
    return None


def _direct(module, plain=None):
    """(children, tensors) of a module: the modules and the Tensors in its
    attributes and in the containers and plain objects they hold (the
    seed's habit), each named by its path ("blocks.0"), not looking inside
    the child modules; each object once. The plain objects go into `plain`
    when given."""
    children, tensors, seen = [], [], {id(module)}

    def find(value, name):
        if isinstance(value, Tensor):
            tensors.append((name, value))
            return
        if _opaque(value) or id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, Module):
            children.append((name, value))
            return
        items = _items(value)
        if items is None and hasattr(value, "__dict__"):
            if plain is not None:
                plain.append(value)
            items = list(vars(value).items())
        for key, item in items or ():
            find(item, f"{name}.{key}")
    for key, item in vars(module).items():
        if key != "_buffers":
            find(item, key)
    return children, tensors


def _as_buffer(value, name):
    if value is None:
        return None
    if isinstance(value, Tensor):
        if value.requires_grad:
            raise ValueError(f"buffer {name!r} requires grad: a trained tensor is a parameter")
        return value
    return Tensor(value, track=False)


class Module:
    """Base class of layers and models (torch.nn.Module). Subclasses call
    super().__init__(), set layers, parameters and buffers as attributes and
    define forward; calling the module calls forward.

    Two attributes travel with the weights (save/load, and export, which can
    put the normalisation in front of the graph): input_normalization, None
    or (mean, std) per input channel as the data was fed to the model
    ((x - mean) / std on values in [0, 1]), and class_names, None or a list
    of str, one per output."""

    input_normalization = None
    class_names = None

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_buffers", {})

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward(self, x)")

    # ---- attributes: parameters made here outlive end_batch(); buffers ----

    def __getattr__(self, name):
        buffers = self.__dict__.get("_buffers", {})
        if name in buffers:
            return buffers[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name, value):
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers:
            buffers[name] = _as_buffer(value, name)
            return
        if isinstance(value, Tensor) and value.alive and value.requires_grad:
            value.persist()  # a parameter made in __init__ outlives end_batch()
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        buffers = self.__dict__.get("_buffers", {})
        if name in buffers:
            del buffers[name]
        else:
            object.__delattr__(self, name)

    def register_buffer(self, name, value, persistent=True):
        """Keep `value` (a Tensor, an array (copied) or None) as a buffer:
        state the model saves and loads but does not train, such as running
        statistics; read and replaced as the attribute `name`."""
        if not isinstance(name, str) or not name.isidentifier() or name == "_buffers":
            raise ValueError(f"register_buffer: name must be an identifier, got {name!r}")
        if name in vars(self):
            raise KeyError(f"register_buffer: {type(self).__name__} has an attribute {name!r} already")
        if not persistent:
            raise ValueError(f"register_buffer: {name!r}: persistent=False is not supported (every buffer "
                             f"is saved)")
        self.__dict__.setdefault("_buffers", {})[name] = _as_buffer(value, name)

    def register_parameter(self, name, param):
        """Set `param` (a Tensor that requires grad, or None) as the attribute `name`."""
        if param is not None and not (isinstance(param, Tensor) and param.requires_grad):
            raise TypeError(f"register_parameter: {name!r} must be a Tensor that requires grad "
                            f"(nn.Parameter) or None, got {type(param).__name__}")
        setattr(self, name, param)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module, got {type(module).__name__}")
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"add_module: module name must be a non-empty str without '.', got {name!r}")
        setattr(self, name, module)

    register_module = add_module

    # ---- the tree ----

    # What each module holds itself: the walks below are built from these
    # three, which a module kept in C (native.py) answers from the C module.

    def named_children(self):
        """[(name, Module)] of the modules directly under this one."""
        return _direct(self)[0]

    def _own_parameters(self):
        """[(name, Tensor)] of the parameters this module holds itself."""
        return [(name, t) for name, t in _direct(self)[1] if t.alive and t.requires_grad]

    def _own_buffers(self):
        return [(name, t) for name, t in self.__dict__.get("_buffers", {}).items() if t is not None]

    def children(self):
        return [module for _, module in self.named_children()]

    def named_modules(self, memo=None, prefix=""):
        """[(name, Module)]: this module ('') and every module under it, each once."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return []
        memo.add(id(self))
        out = [(prefix, self)]
        for name, child in self.named_children():
            out += child.named_modules(memo, f"{prefix}.{name}" if prefix else name)
        return out

    def modules(self):
        return [module for _, module in self.named_modules()]

    def _members(self, own, prefix, recurse, remove_duplicate=True):
        """[(dotted name, Tensor)] of own(module) over the modules, module by module (torch's order)."""
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        seen, out = set(), []
        for path, module in modules:
            for name, tensor in own(module):
                # by the C tensor: a library-built module lists a shared one through fresh handles
                key = tensor._h.ptr if tensor._h.ptr is not None else id(tensor._h)
                if not remove_duplicate or key not in seen:
                    seen.add(key)
                    out.append((f"{path}.{name}" if path else name, tensor))
        return out

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """[(name, Tensor)] with PyTorch's state_dict names, e.g. 'c1.weight',
        'blocks.0.bias', module by module; a shared parameter appears once."""
        return self._members(lambda m: m._own_parameters(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        """Every trainable Tensor found in the module (see named_parameters)."""
        return [tensor for _, tensor in self.named_parameters(recurse=recurse)]

    def named_buffers(self, prefix="", recurse=True):
        """[(name, Tensor)] of this module's buffers and those of the modules
        under it, under dotted names as named_parameters gives."""
        return self._members(lambda m: m._own_buffers(), prefix, recurse)

    def buffers(self, recurse=True):
        return [tensor for _, tensor in self.named_buffers(recurse=recurse)]

    def get_submodule(self, target):
        module = self
        for part in target.split(".") if target else []:
            children = dict(module.named_children())
            if part not in children:
                raise AttributeError(f"{type(module).__name__} has no submodule {part!r} (in {target!r})")
            module = children[part]
        return module

    def get_parameter(self, target):
        parameters = dict(self.named_parameters())
        if target not in parameters:
            raise AttributeError(f"{type(self).__name__} has no parameter {target!r}")
        return parameters[target]

    def apply(self, fn):
        """fn(module) for every module under this one, children first, then
        this one (torch's order); returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ---- training ----

    def train(self, mode=True):
        """Set `training` on this module and every module under it (their
        train(mode): a module kept in C switches the C module), and on plain
        objects under it that have a `training` attribute; returns self."""
        if not isinstance(mode, bool):
            raise ValueError(f"train: mode must be a bool, got {type(mode).__name__}")
        object.__setattr__(self, "training", mode)
        plain = []
        children, _ = _direct(self, plain)
        for _, child in children:
            child.train(mode)
        for obj in plain:
            if "training" in vars(obj):
                obj.training = mode
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad on every parameter (False freezes them: they keep
        their place in named_parameters() only while they require grad)."""
        for tensor in self.parameters():
            tensor.requires_grad = bool(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's gradient (an optimizer's zero_grad does the
        same for its own parameters)."""
        for tensor in self.parameters():
            tensor.grad = None

    # ---- state ----

    def _state(self):
        """[(name, Tensor)] in torch's state_dict order: module by module, its
        own parameters, then its buffers; a shared tensor under each name."""
        state = self._members(lambda m: m._own_parameters() + m._own_buffers(), "", True, remove_duplicate=False)
        names = [name for name, _ in state]
        clash = {name for name in names if names.count(name) > 1}
        if clash:
            raise ValueError(f"state_dict: {sorted(clash)} name both a parameter and a buffer")
        return state

    def state_dict(self):
        """{name: Tensor}: a copy of every parameter and buffer under its name,
        as torch's model.state_dict() (as NumPy: np.asarray(value))."""
        return {name: tensor.detach().clone() for name, tensor in self._state()}

    def load_state_dict(self, state, strict=True):
        """Copy values from {name: Tensor or array} into the parameters and
        buffers, all or nothing: shapes must match, and with strict=True the
        names must match exactly. Returns (missing_keys, unexpected_keys)."""
        from .model import IncompatibleKeys
        if not isinstance(state, dict):
            raise TypeError(f"load_state_dict: expected a dict, got {type(state).__name__}")
        own = dict(self._state())
        missing = [name for name in own if name not in state]
        unexpected = [name for name in state if name not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing {missing}, unexpected {unexpected}")
        arrays = {}
        for name, tensor in own.items():
            if name in state:
                array = np.asarray(state[name].numpy() if isinstance(state[name], Tensor) else state[name])
                if array.shape == () and tensor.shape == (1,):  # torch's 0-d counters (num_batches_tracked)
                    array = array.reshape(1)
                if array.shape != tensor.shape:
                    raise ValueError(f"load_state_dict: {name!r} has shape {array.shape}, the model's "
                                     f"{tensor.shape}")
                arrays[name] = array
        for name, array in arrays.items():
            own[name].upload(array)
        return IncompatibleKeys(missing, unexpected)

    def to(self, *args, **kwargs):
        """Move every parameter and buffer to a device ("cpu", "vulkan",
        "cuda" for the default GPU, "auto") in place, keeping the Tensor
        objects (so references to them stay good); returns self. Gradients
        are dropped; make the optimizer after moving, as in PyTorch. A dtype
        argument may only be float32 (the parameters' type)."""
        from .tensor import _device_and_dtype
        device, dtype = _device_and_dtype(args, kwargs, "Module.to")
        if dtype is not None and np.dtype(dtype) != np.float32:
            raise ValueError(f"Module.to: parameters are float32; converting them to {np.dtype(dtype)} is "
                             f"not supported (mixed precision: nn_engine.autocast)")
        if device is None:
            return self
        for _, tensor in self._own_parameters() + self._own_buffers():
            moved = tensor.to(device)
            if moved is not tensor:
                tensor._h = moved._h
        for child in self.children():  # each moves its own (one kept in C is built again there)
            child.to(device)
        return self

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}")

    # ---- files (the seed's Model; see model.py) ----

    def save(self, path):
        """Write the state_dict as a safetensors file (model.save_state)."""
        from .model import save_state
        return save_state(self, path)

    def load(self, path):
        """Load a file written by save() or `nnengine train --save`."""
        from .model import load_state
        return load_state(self, path)

    def export(self, path, input_shape=None, model_name=None, include_preprocessing=True, input_dtype=None):
        """Write the model as ONNX (model.export_onnx)."""
        from .model import export_onnx
        return export_onnx(self, path, input_shape, model_name, include_preprocessing, input_dtype)

    # ---- text ----

    def extra_repr(self):
        """The layer's own settings, inside its repr's parentheses."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = []
        for name, child in self.named_children():
            text = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        extra = self.extra_repr()
        if not lines:
            return f"{self._get_name()}({extra})"
        body = "\n  ".join(([extra] if extra else []) + lines)
        return f"{self._get_name()}(\n  {body}\n)"
