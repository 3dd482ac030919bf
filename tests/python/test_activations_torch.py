"""The elementwise functions of one tensor (activations, math, scalar
arithmetic) against PyTorch 1.13: values and the gradients backward gives,
on random inputs of awkward sizes (batch 1, odd and prime sizes) with the
kinks, bounds, large magnitudes and a NaN among them; the layers, the
Tensor operators and methods, and the errors bad arguments raise."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import nn_engine as nn
from nn_engine import functional as F

RNG = np.random.default_rng(23)
SHAPES = [(1, 7), (3, 5, 11)]
EDGES = [0.0, 3.0, -3.0, 6.0, -0.5, 1.25, 1.5, 2.0, 25.0, -25.0, 1e-4, -1e-4, math.nan]


def values(shape, edges=True):
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    if edges:
        flat = x.reshape(-1)
        count = min(len(EDGES), flat.size)
        flat[:count] = EDGES[:count]
    return x


# torch's hardswish gradient at 3 is 1 from its vectorized kernel and 1.5
# from its scalar tail (tensors under 8 elements); the engine gives 1.
KINKS_TORCH_DISAGREES_ON = {TF.hardswish: [3.0]}


def compare(ours_fn, torch_fn, shape, tol=1e-5, edges=True):
    """ours_fn and torch_fn on the same values: outputs (NaN where both give
    NaN), then the gradient of sum(out * w) for a random w, except at a NaN
    input, where torch's own gradient depends on whether its kernel ran
    vectorized."""
    x = values(shape, edges)
    a, ta = nn.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = ours_fn(a), torch_fn(ta)
    np.testing.assert_allclose(out.sync(), tout.detach().numpy(), rtol=tol, atol=tol / 10)
    w = RNG.uniform(-1, 1, x.shape).astype(np.float32)
    out.backward(nn.Tensor(w))
    (tout * torch.from_numpy(w)).sum().backward()
    defined = ~np.isnan(x) & ~np.isin(x, KINKS_TORCH_DISAGREES_ON.get(torch_fn, []))
    np.testing.assert_allclose(a.grad.sync()[defined], ta.grad.numpy()[defined], rtol=tol, atol=tol / 10)


FUNCTIONS = {
    "exp": (nn.exp, torch.exp),
    "log": (nn.log, torch.log),
    "sqrt": (nn.sqrt, torch.sqrt),
    "abs": (nn.abs, torch.abs),
    "neg": (nn.neg, torch.neg),
    "sigmoid": (nn.sigmoid, torch.sigmoid),
    "tanh": (nn.tanh, torch.tanh),
    "gelu": (F.gelu, TF.gelu),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh")),
    "silu": (F.silu, TF.silu),
    "relu6": (F.relu6, TF.relu6),
    "hardswish": (F.hardswish, TF.hardswish),
    "hardsigmoid": (F.hardsigmoid, TF.hardsigmoid),
    "softsign": (F.softsign, TF.softsign),
    "leaky_relu": (F.leaky_relu, TF.leaky_relu),
    "leaky_relu_0.2": (lambda x: F.leaky_relu(x, negative_slope=0.2), lambda x: TF.leaky_relu(x, 0.2)),
    "elu": (F.elu, TF.elu),
    "elu_0.7": (lambda x: F.elu(x, alpha=0.7), lambda x: TF.elu(x, alpha=0.7)),
    "softplus": (F.softplus, TF.softplus),
    "softplus_2_3": (lambda x: F.softplus(x, beta=2, threshold=3), lambda x: TF.softplus(x, 2, 3)),
    "softplus_0.5_-1": (lambda x: F.softplus(x, 0.5, -1), lambda x: TF.softplus(x, 0.5, -1)),
    "clamp": (lambda x: nn.clamp(x, -0.5, 1.25), lambda x: torch.clamp(x, -0.5, 1.25)),
    "clamp_min": (lambda x: nn.clamp(x, min=-0.5), lambda x: torch.clamp(x, min=-0.5)),
    "clamp_max": (lambda x: nn.clamp(x, max=1.25), lambda x: torch.clamp(x, max=1.25)),
    "clamp_crossed": (lambda x: nn.clamp(x, 1.5, -0.5), lambda x: torch.clamp(x, 1.5, -0.5)),
    "pow_2": (lambda x: nn.pow(x, 2), lambda x: torch.pow(x, 2)),
    "pow_3": (lambda x: nn.pow(x, 3), lambda x: torch.pow(x, 3)),
    "pow_-1": (lambda x: nn.pow(x, -1), lambda x: torch.pow(x, -1)),
    "pow_0.5": (lambda x: nn.pow(x, 0.5), lambda x: torch.pow(x, 0.5)),
    "pow_2.5": (lambda x: nn.pow(x, 2.5), lambda x: torch.pow(x, 2.5)),
    "pow_1": (lambda x: nn.pow(x, 1), lambda x: torch.pow(x, 1)),
    "pow_0": (lambda x: nn.pow(x, 0), lambda x: torch.pow(x, 0)),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_matches_torch(name, shape):
    ours, theirs = FUNCTIONS[name]
    compare(ours, theirs, shape)


OPERATORS = {
    "x + 2": lambda x: x + 2.0,
    "2 + x": lambda x: 2.0 + x,
    "x - 1": lambda x: x - 1,
    "1 - x": lambda x: 1 - x,
    "x * 3": lambda x: x * 3,
    "3 * x": lambda x: 3 * x,
    "x / 2": lambda x: x / 2,
    "x / 3": lambda x: x / 3,
    "2 / x": lambda x: 2 / x,
    "x ** 2": lambda x: x ** 2,
    "x ** 0.5": lambda x: x ** 0.5,
    "-x": lambda x: -x,
    "abs(x)": lambda x: abs(x),  # noqa: PLW0108 - the builtin on both sides
    ".exp()": lambda x: x.exp(),
    ".log()": lambda x: x.log(),
    ".sqrt()": lambda x: x.sqrt(),
    ".abs()": lambda x: x.abs(),
    ".neg()": lambda x: x.neg(),
    ".sigmoid()": lambda x: x.sigmoid(),
    ".tanh()": lambda x: x.tanh(),
    ".clamp(-1, 2)": lambda x: x.clamp(-1, 2),
    ".clamp(max=0.5)": lambda x: x.clamp(max=0.5),
    ".pow(3)": lambda x: x.pow(3),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("expression", sorted(OPERATORS))
def test_tensor_operator_matches_torch(expression, shape):
    """The same expression on an nn_engine Tensor and a torch tensor (x / s
    is x * (1 / s): within a rounding of torch's division)."""
    fn = OPERATORS[expression]
    compare(fn, fn, shape)


def test_x_divided_by_zero_is_infinite_as_torch():
    x = np.array([-2.0, 0.0, 3.0], np.float32)
    np.testing.assert_array_equal((nn.Tensor(x) / 0).sync(), (torch.tensor(x) / 0).numpy())


def test_tensor_with_tensor_keeps_add_and_mul_of_equal_shapes():
    x, y = values((3, 5), edges=False), values((3, 5), edges=False)
    np.testing.assert_allclose((nn.Tensor(x) + nn.Tensor(y)).sync(), x + y, rtol=1e-6)
    np.testing.assert_allclose((nn.Tensor(x) * nn.Tensor(y)).sync(), x * y, rtol=1e-6)


def test_tensor_to_the_power_of_a_tensor_raises_naming_the_operator():
    a, b = nn.Tensor(values((2, 3), edges=False)), nn.Tensor(values((3,), edges=False))
    with pytest.raises(TypeError, match="__pow__"):
        a ** b


def test_tensor_with_other_types_raises_type_error():
    x = nn.Tensor(values((2, 3), edges=False))
    for bad in (lambda: x + "1", lambda: x * None, lambda: "2" - x, lambda: [1] / x):
        with pytest.raises(TypeError):
            bad()


LAYERS = [
    (nn.GELU(), torch.nn.GELU()),
    (nn.GELU(approximate="tanh"), torch.nn.GELU(approximate="tanh")),
    (nn.LeakyReLU(), torch.nn.LeakyReLU()),
    (nn.LeakyReLU(0.3), torch.nn.LeakyReLU(0.3)),
    (nn.ELU(alpha=0.5), torch.nn.ELU(alpha=0.5)),
    (nn.SiLU(), torch.nn.SiLU()),
    (nn.ReLU6(), torch.nn.ReLU6()),
    (nn.Hardswish(), TF.hardswish),
    (nn.Hardsigmoid(), torch.nn.Hardsigmoid()),
    (nn.Softplus(beta=2, threshold=5), torch.nn.Softplus(beta=2, threshold=5)),
    (nn.Sigmoid(), torch.nn.Sigmoid()),
    (nn.Tanh(), torch.nn.Tanh()),
]


@pytest.mark.parametrize("ours, theirs", LAYERS, ids=[repr(ours) for ours, _ in LAYERS])
def test_layer_matches_torch(ours, theirs):
    compare(ours, theirs, (3, 5, 11))
    assert repr(ours).startswith(type(ours).__name__ + "(")


def test_layers_run_in_a_model():
    """An activation layer as a Model attribute: no parameters, forward through it."""
    class Net(nn.Model):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(5, 3)
            self.act = nn.GELU()

        def forward(self, x):
            return self.act(self.fc(x))

    net = Net()
    assert [name for name, _ in net.named_parameters()] == ["fc.weight", "fc.bias"]
    x = values((2, 5), edges=False)
    w, b = net.fc.w.sync(), net.fc.b.sync()
    want = TF.gelu(torch.from_numpy(x) @ torch.from_numpy(w).T + torch.from_numpy(b)).numpy()
    np.testing.assert_allclose(net(nn.Tensor(x)).sync(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call, error, message", [
    (lambda x: F.gelu(x, approximate="fast"), ValueError, "gelu: approximate must be 'none' or 'tanh'"),
    (lambda x: F.softplus(x, beta=-1), ValueError, "nn_softplus: beta must be > 0, got -1"),
    (lambda x: F.softplus(x, threshold=math.nan), ValueError, "nn_softplus: threshold"),
    (lambda x: F.leaky_relu(x, math.nan), ValueError, "nn_leaky_relu: negative_slope must be finite"),
    (lambda x: F.elu(x, alpha=math.inf), ValueError, "nn_elu: alpha must be finite"),
    (lambda x: nn.clamp(x), ValueError, "clamp: at least one of min and max"),
    (lambda x: nn.clamp(x, min=math.nan), ValueError, "nn_clamp: min must be a number"),
    (lambda x: nn.clamp(x, min="0"), TypeError, "clamp: min must be a number"),
    (lambda x: nn.pow(x, math.inf), ValueError, "nn_pow_scalar: exponent must be finite"),
    (lambda x: nn.pow(x, x), TypeError, "pow: exponent must be a number"),
    (lambda x: x + math.nan, ValueError, "nn_add_scalar: s must be a number"),
    (lambda x: nn.exp(np.ones(3)), TypeError, "exp: x must be an nn_engine.Tensor"),
    (lambda x: nn.GELU("fast"), ValueError, "GELU: approximate"),
    (lambda x: nn.Softplus(beta=0), ValueError, "Softplus: beta must be finite and > 0"),
])
def test_bad_arguments_raise_naming_them(call, error, message):
    x = nn.Tensor(values((2, 3), edges=False))
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(x)
