"""User-written operations and optimizers (issue 37) from Python: a fused
SiLU-gated linear unit whose gate is a custom shader (GLSL on Vulkan, NumPy
on the CPU) inside an autograd.Function, against PyTorch's silu(x W1) * (x W2)
forward and backward, on each device, through gradcheck and check_devices;
Signum (sign-SGD with momentum) written by a user as a CustomOptimizer
over parameter groups, against the same update in PyTorch, its state_dict
resumed; a captured step replaying as eager; errors from
the shader compiler, the CPU function and backward reaching the caller."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import nn_engine as ne
from nn_engine import functional as F

DEVICES = [d for d in ("cpu", "vulkan") if d in {x.backend for x in ne.devices() if x.usable}]

# The example's kernels, function and optimizer are the ones tested here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples"))
from custom_ops import GATE, SIGNUM, SiluGate, Signum  # noqa: E402


class GatedLinear(ne.nn.Module):
    """A SiLU-gated linear unit (SwiGLU's gate): silu(x W1) * (x W2), projected by W3."""

    def __init__(self, width, hidden):
        super().__init__()
        self.w1 = ne.nn.Linear(width, hidden, bias=False)
        self.w2 = ne.nn.Linear(width, hidden, bias=False)
        self.w3 = ne.nn.Linear(hidden, width, bias=False)

    def forward(self, x):
        return self.w3(SiluGate.apply(self.w1(x), self.w2(x)))


def _torch_gated(x, w1, w2, w3):
    return torch.nn.functional.linear(
        torch.nn.functional.silu(torch.nn.functional.linear(x, w1)) * torch.nn.functional.linear(x, w2), w3)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(1,), (7, 13), (3, 5, 11)])
def test_gate_forward_and_gradients_match_torch(device, shape):
    rng = np.random.default_rng(len(shape))
    ha, hb = rng.normal(0, 2, shape).astype(np.float32), rng.normal(0, 1, shape).astype(np.float32)
    a = ne.Tensor(ha, requires_grad=True, device=device)
    b = ne.Tensor(hb, requires_grad=True, device=device)
    y = SiluGate.apply(a, b)
    assert y.shape == shape and y.requires_grad
    w = rng.uniform(-1, 1, shape).astype(np.float32)
    (y * ne.Tensor(w, device=device)).sum().backward()
    ta, tb = torch.tensor(ha, requires_grad=True), torch.tensor(hb, requires_grad=True)
    ty = torch.nn.functional.silu(ta) * tb
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck_and_devices_agree(device):
    rng = np.random.default_rng(3)
    a = ne.Tensor(rng.normal(0, 1.5, (5, 9)).astype(np.float32), requires_grad=True, device=device)
    b = ne.Tensor(rng.normal(0, 1, (5, 9)).astype(np.float32), requires_grad=True, device=device)
    assert ne.autograd.gradcheck(SiluGate.apply, (a, b))
    assert ne.check_devices(SiluGate.apply, a, b)[0] == "cpu"


def test_gradcheck_finds_a_wrong_backward():
    class Wrong(SiluGate):
        @staticmethod
        def backward(ctx, grad):
            da, db = SiluGate.backward(ctx, grad)
            return da * 1.1, db

    a = ne.Tensor(np.linspace(-2, 2, 12, dtype=np.float32), requires_grad=True, device="cpu")
    b = ne.Tensor(np.linspace(1, 3, 12, dtype=np.float32), requires_grad=True, device="cpu")
    with pytest.raises(AssertionError, match="gradcheck: input 0"):
        ne.autograd.gradcheck(Wrong.apply, (a, b))


@pytest.mark.parametrize("device", DEVICES)
def test_gated_linear_unit_trains_as_torch(device):
    """Three SGD steps of the module with the custom gate against torch's."""
    ne.manual_seed(0)
    model = GatedLinear(6, 10).to(device)
    weights = [p.numpy().copy() for p in (model.w1.weight, model.w2.weight, model.w3.weight)]
    tw = [torch.tensor(w, requires_grad=True) for w in weights]
    opt, topt = ne.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(tw, lr=0.1)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x, target = rng.normal(0, 1, (9, 6)).astype(np.float32), rng.normal(0, 1, (9, 6)).astype(np.float32)
        opt.zero_grad()
        loss = F.mse_loss(model(ne.Tensor(x, device=device)), ne.Tensor(target, device=device))
        loss.backward()
        opt.step()
        topt.zero_grad()
        tloss = torch.nn.functional.mse_loss(_torch_gated(torch.tensor(x), *tw), torch.tensor(target))
        tloss.backward()
        topt.step()
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-5)
    for p, t in zip((model.w1.weight, model.w2.weight, model.w3.weight), tw):
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-6)


def _torch_signum(params, lrs, beta, buffers):
    with torch.no_grad():
        for p, lr, m in zip(params, lrs, buffers):
            m.mul_(beta).add_((1 - beta) * p.grad)
            p -= lr * torch.sign(m)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_signum_written_by_a_user_matches_torch(device, momentum):
    """Two parameter groups (biases at another rate), four steps, then its
    state_dict into a fresh optimizer, which continues as the first."""
    ne.manual_seed(2)
    model = ne.nn.Sequential(ne.nn.Linear(5, 7), ne.nn.ReLU(), ne.nn.Linear(7, 3)).to(device)
    tmodel = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
    tmodel.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    groups = [{"params": [model[0].weight, model[2].weight]}, {"params": [model[0].bias, model[2].bias], "lr": 0.03}]
    opt = Signum(groups, lr=0.01, momentum=momentum)
    tparams = [tmodel[0].weight, tmodel[2].weight, tmodel[0].bias, tmodel[2].bias]
    tbuffers = [torch.zeros_like(p) for p in tparams]
    rng = np.random.default_rng(4)
    for s in range(6):
        if s == 4:  # the state so far, into a fresh optimizer over the same parameters
            saved = opt.state_dict()
            opt = Signum(groups, lr=0.5, momentum=0.1)
            opt.load_state_dict(saved)
            assert opt.param_groups[1]["lr"] == 0.03 and opt.param_groups[0]["momentum"] == momentum
        x, y = rng.normal(0, 1, (8, 5)).astype(np.float32), rng.integers(0, 3, 8)
        opt.zero_grad()
        F.cross_entropy(model(ne.Tensor(x, device=device)), ne.Tensor(y, dtype=np.int32, device=device)).backward()
        opt.step()
        tmodel.zero_grad()
        torch.nn.functional.cross_entropy(tmodel(torch.tensor(x)), torch.tensor(y)).backward()
        _torch_signum(tparams, [0.01, 0.01, 0.03, 0.03], momentum, tbuffers)
    for k, v in model.state_dict().items():
        np.testing.assert_allclose(v.numpy(), tmodel.state_dict()[k].numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(opt.state_dict()["state"][0]["momentum_buffer"].numpy(), tbuffers[0].numpy(),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
def test_custom_ops_in_a_captured_step_replay_as_eager(device):
    ne.manual_seed(5)
    model = GatedLinear(4, 8).to(device)
    opts = [Signum(model.parameters(), lr=0.01)]
    start = [p.numpy().copy() for p in model.parameters()]

    def step(x, t):
        opts[-1].zero_grad()
        loss = F.mse_loss(model(x), t)
        loss.backward()
        opts[-1].step()
        return loss

    rng = np.random.default_rng(6)
    batches = [(rng.normal(0, 1, (5, 4)).astype(np.float32), rng.normal(0, 1, (5, 4)).astype(np.float32))
               for _ in range(4)]
    captured = ne.capture(step)
    replayed = [captured(ne.Tensor(x, device=device), ne.Tensor(t, device=device)).item() for x, t in batches]
    after = [p.numpy().copy() for p in model.parameters()]
    with ne.no_grad():
        for p, values in zip(model.parameters(), start):
            p.copy_(ne.Tensor(values, device=device))
    opts.append(Signum(model.parameters(), lr=0.01))  # its momentum from zero again
    eager = [step(ne.Tensor(x, device=device), ne.Tensor(t, device=device)).item() for x, t in batches]
    assert replayed == eager
    for p, values in zip(model.parameters(), after):
        np.testing.assert_array_equal(p.numpy(), values)


def test_errors_name_the_kernel_and_reach_the_caller():
    with pytest.raises(ValueError, match=r"custom kernel broken: the GLSL does not compile:\n.*broken:2:"):
        ne.CustomKernel("broken", glsl="void main() {\n    undefined_thing;\n}")

    def failing(bufs, params, grid):
        raise ZeroDivisionError("the user's CPU code failed")

    bad = ne.CustomKernel("fails_on_cpu", cpu=failing)
    x = ne.Tensor(np.ones(4, np.float32), device="cpu")
    y = bad(x, shape=(4,), grid=4)
    with pytest.raises(ZeroDivisionError, match="the user's CPU code failed") as info:
        y.numpy()
    assert "custom kernel fails_on_cpu failed on the CPU" in str(info.value.__cause__)

    class Raises(SiluGate):
        @staticmethod
        def backward(ctx, grad):
            raise KeyError("in backward")

    a = ne.Tensor(np.ones(3, np.float32), requires_grad=True, device="cpu")
    with pytest.raises(KeyError, match="in backward"):
        Raises.apply(a, a).sum().backward()

    class TooFew(SiluGate):
        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(ValueError, match="TooFew.backward returned 1 gradients for 2 forward arguments"):
        TooFew.apply(a, a).sum().backward()
    with pytest.raises(RuntimeError, match="silu_gate: input 0 requires grad"):
        GATE(a, a, shape=(3,), grid=3)
    with pytest.raises(ValueError, match="parameter words; at most 12"):
        GATE(x, x, shape=(4,), grid=4, params=[1.0] * 13)
    with pytest.raises(ValueError, match="names a position past the 2 tensors"):
        SIGNUM.launch(x, x, written=(2,), grid=4)

    class Broken(Signum):
        def update(self, run):
            raise IndexError("the user's update failed")

    w = ne.Tensor(np.ones(3, np.float32), requires_grad=True, device="cpu")
    opt = Broken([w])
    (w * w).sum().backward()
    with pytest.raises(IndexError, match="the user's update failed") as info:
        opt.step()
    assert "optimizer Broken: update" in str(info.value.__cause__)


class GateWithoutOnnx(SiluGate):
    """The same function with no ONNX form."""
    symbolic = None


class UnexportableGatedLinear(GatedLinear):
    def forward(self, x):
        return self.w3(GateWithoutOnnx.apply(self.w1(x), self.w2(x)))


def test_a_model_with_a_custom_function_exports_its_composition_or_is_refused(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    ne.manual_seed(7)
    model = GatedLinear(6, 10)  # SiluGate's symbolic: silu(a) * b
    x = np.random.default_rng(8).normal(0, 1, (3, 6)).astype(np.float32)
    want = model(ne.Tensor(x)).numpy()
    path = model.export(tmp_path / "gated.onnx", input_shape=[1, 6])
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="custom function GateWithoutOnnx has no ONNX form"):
        UnexportableGatedLinear(6, 10).export(tmp_path / "refused.onnx", input_shape=[1, 6])


def test_a_model_with_a_custom_function_saves_and_loads(tmp_path):
    ne.manual_seed(9)
    model, fresh = GatedLinear(5, 8), GatedLinear(5, 8)
    x = ne.Tensor(np.random.default_rng(10).normal(0, 1, (4, 5)).astype(np.float32))
    ne.save(model.state_dict(), tmp_path / "gated.pt")
    fresh.load_state_dict(ne.load(tmp_path / "gated.pt"))
    np.testing.assert_array_equal(fresh(x).numpy(), model(x).numpy())


SCALE_BODY = """
void main() {
    uint i = NN_INDEX.x;
    if (i >= NN_GRID.x) return;
    NN_STORE(1, i, NN_LOAD(0, i) * NN_PARAM_FLOAT(0));
}"""


@pytest.mark.skipif(not shutil.which("glslc"), reason="glslc compiles the SPIR-V")
def test_a_kernel_from_spirv_compiled_with_the_prelude():
    def spirv(local):
        return subprocess.run(["glslc", "-fshader-stage=compute", "-", "-o", "-"], check=True, capture_output=True,
                              input=(ne.glsl_prelude(local) + SCALE_BODY).encode()).stdout
    scale = ne.CustomKernel("scale_spirv", spirv=spirv((64,)), local_size=(64,),
                            cpu=lambda bufs, params, grid: np.multiply(bufs[0], params.float(0), out=bufs[1]))
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    for device in DEVICES:
        y = scale(ne.Tensor(x, device=device), shape=x.shape, grid=x.size, params=[2.5])
        np.testing.assert_array_equal(y.numpy(), x * np.float32(2.5))
    with pytest.raises(ValueError, match="scale_wrong: the shader's workgroup is 64 x 1 x 1, the kernel's local_size "
                                         "128 x 1 x 1"):
        ne.CustomKernel("scale_wrong", spirv=spirv((64,)), local_size=(128,))
    with pytest.raises(ValueError, match="not_spirv: spirv is not a SPIR-V module"):
        ne.CustomKernel("not_spirv", spirv=b"\0" * 64)


def test_the_readme_example_runs():
    """README.md's section on custom operations, its code as written."""
    import re
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    section = text[text.index("## Your own operations and optimizers"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})


def test_a_kernel_whose_cpu_code_is_library_operations():
    """cpu_ops: on the CPU the call is the composition (with its gradient); on the GPU the shader."""
    scale = ne.CustomKernel("scale_ops", glsl=SCALE_BODY, cpu_ops=lambda x, params: x * params[0])
    x = np.linspace(-2, 2, 333, dtype=np.float32)
    for device in DEVICES:
        y = scale(ne.Tensor(x, device=device), shape=x.shape, grid=x.size, params=[-1.5])
        np.testing.assert_allclose(y.numpy(), x * np.float32(-1.5), rtol=1e-6)
    t = ne.Tensor(x, requires_grad=True, device="cpu")
    scale(t, shape=x.shape, grid=x.size, params=[3.0]).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.full_like(x, 3.0))
