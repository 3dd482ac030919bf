"""Every function given a wrong shape or type raises an exception whose
message names the problem; nothing crashes the interpreter."""
import numpy as np
import pytest

import nn_engine as nn


def t(*shape):
    return nn.Tensor(np.ones(shape, dtype=np.float32))


# (call, exception, words the message must contain)
SHAPE_ERRORS = [
    (lambda: nn.matmul(t(2, 3), t(4, 5)), ValueError, "nn_matmul"),
    (lambda: nn.matmul(t(2, 3, 1), t(3, 5)), ValueError, "nn_matmul"),
    (lambda: nn.add(t(2, 3), t(3, 2)), ValueError, "nn_add"),
    (lambda: nn.mul(t(2, 3), t(2)), ValueError, "nn_mul"),
    (lambda: nn.relu(nn.Tensor(np.ones(3), dtype=np.int32)), ValueError, "nn_relu"),
    (lambda: nn.maxpool2d(t(2, 8)), ValueError, "nn_maxpool2d"),
    (lambda: nn.maxpool2d(t(1, 1, 2, 2), pool_size=3), ValueError, "nn_maxpool2d"),
    (lambda: nn.reshape(t(2, 3), (4, 2)), ValueError, "nn_reshape"),
    (lambda: nn.softmax_ce(t(3, 4), nn.Tensor(np.zeros(5), dtype=np.int32)), ValueError,
     "nn_softmax_cross_entropy"),
    (lambda: nn.softmax_ce(t(3, 4), np.array([0, 1, 4])), ValueError, "[0, 4)"),
    # A device-side label is checked by the kernel: reported when the loss is read.
    (lambda: nn.softmax_ce(t(3, 4), nn.Tensor([0, 7, 1], dtype=np.int32)).item(), ValueError,
     "label 7 at row 1 is outside [0, 4)"),
    (lambda: nn.softmax_ce(t(3, 4), nn.Tensor([0.5, 1, 2])), ValueError, "whole numbers"),
    (lambda: nn.add_bias(t(3, 4), t(5)), ValueError, "nn_add_bias"),
    (lambda: nn.Linear(8, 3)(t(2, 7)), ValueError, "nn_linear"),
    (lambda: nn.ConvLayer(3, 4, 3)(t(1, 2, 8, 8)), ValueError, "nn_conv2d"),
    (lambda: nn.ConvLayer(1, 4, 5)(t(1, 1, 3, 3)), ValueError, "nn_conv2d"),
    (lambda: nn.ConvLayer(1, 4, 3)(t(1, 9, 9)), ValueError, "nn_conv2d"),
    (lambda: t(2, 2).backward(nn.Tensor(np.ones(3))), ValueError, "grad has shape"),
    (lambda: nn.Tensor(np.ones((2, 2, 2, 2, 2, 2, 2))), ValueError, "at most 6 dimensions"),
    (lambda: nn.Tensor(np.ones((2, 0))), ValueError, ">= 1"),
    (lambda: nn.Tensor([[1, 2], [3]]), ValueError, "cannot make an array"),
    (lambda: nn.ReusableTensor((2, 0)), ValueError, ">= 1"),
    (lambda: t(2, 3).upload(np.ones((3, 2))), ValueError, "shape"),
    (lambda: t(2, 3).item(), ValueError, "6 elements"),
]

TYPE_ERRORS = [
    (lambda: nn.relu(np.ones(3)), "relu: x must be an nn_engine.Tensor"),
    (lambda: nn.softmax([1.0]), "softmax: x"),
    (lambda: nn.matmul(t(2, 2), "b"), "matmul: b"),
    (lambda: nn.add(None, t(2)), "add: a"),
    (lambda: nn.flatten(3), "flatten: input"),
    (lambda: nn.maxpool2d(t(1, 1, 4, 4), pool_size=2.5), "pool_size must be an int"),
    (lambda: nn.maxpool2d(t(1, 1, 4, 4), stride="2"), "stride must be an int"),
    (lambda: nn.softmax_ce(t(2, 3), 1), "labels must be a Tensor"),
    (lambda: nn.softmax_ce(np.ones((2, 3)), t(2)), "logits"),
    (lambda: nn.Linear(3, 2)([1, 2, 3]), "linear: x"),
    (lambda: nn.Tensor(np.array(["a", "b"])), "numeric"),
    (lambda: nn.Tensor(np.ones(3, dtype=np.complex64)), "numeric"),
    (lambda: nn.Tensor(np.ones(3), dtype=np.float64), "float32 or int32"),
    (lambda: nn.Tensor(t(2)), "already an nn_engine.Tensor"),
    (lambda: nn.SGD(t(2), lr=0.1), "iterable of Tensors"),
    (lambda: nn.SGD([np.ones(2)], lr=0.1), "parameter 0"),
    (lambda: nn.SGD([nn.Linear(2, 2).w], lr="fast"), "lr must be a number"),
    (lambda: nn.set_device(0), "device must be a str"),
    (lambda: nn.Metrics().update(1.0, t(2, 3), np.zeros(2)), "loss must be a Tensor"),
    (lambda: setattr(t(2), "grad", t(2)), "set to None"),
    (lambda: nn.Model().export(42, [1, 2]), "path must be a str"),
]

VALUE_ERRORS = [
    (lambda: nn.Linear(0, 3), "in_features must be a positive int"),
    (lambda: nn.Linear(3, -1), "out_features must be a positive int"),
    (lambda: nn.Linear(2.0, 3), "in_features"),
    (lambda: nn.ConvLayer(1, 2, 0), "kernel_size"),
    (lambda: nn.ConvLayer(1, 2, 3, stride=0), "stride"),
    (lambda: nn.ConvLayer(1, 2, 3, padding=-1), "padding"),
    (lambda: nn.maxpool2d(t(1, 1, 4, 4), pool_size=0), "pool_size must be >= 1"),
    (lambda: nn.conv2d(t(1, 1, 4, 4), t(1, 1, 3, 3), actType=2), "actType"),
    (lambda: nn.SGD([], lr=0.1), "at least one parameter"),
    (lambda: nn.SGD([t(2)], lr=0.1), "parameter 0 must be float32 and require grad"),
    (lambda: nn.SGD([nn.Linear(2, 2).w], lr=-1), "lr must be finite and >= 0"),
    (lambda: nn.set_device("tpu"), "unknown device 'tpu'"),
    (lambda: nn.manual_seed(-1), "seed"),
    (lambda: nn.Metrics().collect(-3), "num_samples"),
    (lambda: nn.Model().export("x.onnx", [1, 0, 3]), "input_shape"),
    (lambda: nn.Model().export("x.onnx"), "input_shape is required"),
]


@pytest.mark.parametrize("call,exc,words", SHAPE_ERRORS,
                         ids=[f"shape{i}" for i in range(len(SHAPE_ERRORS))])
def test_shape_errors(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value)


@pytest.mark.parametrize("call,words", TYPE_ERRORS,
                         ids=[f"type{i}" for i in range(len(TYPE_ERRORS))])
def test_type_errors(call, words):
    with pytest.raises(TypeError) as info:
        call()
    assert words in str(info.value)


@pytest.mark.parametrize("call,words", VALUE_ERRORS,
                         ids=[f"value{i}" for i in range(len(VALUE_ERRORS))])
def test_value_errors(call, words):
    with pytest.raises(ValueError) as info:
        call()
    assert words in str(info.value)


def test_sgd_clip_must_be_positive():
    layer = nn.Linear(2, 2)
    opt = nn.SGD([layer.w, layer.b], lr=0.1)
    with pytest.raises(ValueError, match="clip must be > 0"):
        opt.step(clip=0)
    with pytest.raises(ValueError, match="nesterov needs momentum"):
        nn.SGD([layer.w, layer.b], lr=0.1, nesterov=True)


def test_backward_twice_is_a_runtime_error():
    x = nn.Tensor(np.ones((2, 3)), requires_grad=True)
    loss = nn.sum(nn.relu(x))
    loss.backward()
    with pytest.raises(RuntimeError, match="nn_backward"):
        loss.backward()


def test_backward_without_grad_is_an_error():
    with pytest.raises(RuntimeError, match="does not require grad"):
        nn.sum(t(3)).backward()


def test_export_to_a_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        nn.Model().export(str(tmp_path / "no" / "such" / "m.onnx"), [1, 3])


def test_mixed_devices_name_both_and_the_fix():
    if "vulkan" not in {d.backend for d in nn.devices() if d.usable}:
        pytest.skip("no usable Vulkan device")
    on_cpu = t(3, 5)
    on_gpu = nn.Tensor(np.ones((5, 2), dtype=np.float32), device="vulkan")
    gpu_name = on_gpu._h.ctx.device_name
    cpu_name = on_cpu._h.ctx.device_name
    with pytest.raises(RuntimeError) as error:
        nn.matmul(on_cpu, on_gpu)
    message = str(error.value)
    for words in [f"nn_matmul: b is on {gpu_name}", f"a on {cpu_name}", ".to()"]:
        assert words in message, message
    assert gpu_name.startswith("vulkan") and cpu_name.startswith("cpu"), (gpu_name, cpu_name)
    # A layer on the CPU given a GPU input; .to() then makes it work.
    layer = nn.Linear(5, 2)
    x = nn.Tensor(np.ones((3, 5), dtype=np.float32), device="vulkan")
    with pytest.raises(RuntimeError) as error:
        layer(x)
    assert f"is on {cpu_name}" in str(error.value) and f"x on {gpu_name}" in str(error.value), str(error.value)
    np.testing.assert_allclose(layer(x.to("cpu")).numpy(), layer(t(3, 5)).numpy(), rtol=1e-6)
