"""Convolution on the Vulkan device by each of its routes against PyTorch
1.13: NN_ENGINE_VULKAN_CONV=implicit (the implicit GEMM for every layer),
columns (im2col + GEMM + col2im beyond the small-layer kernels: the default)
and auto (the implicit GEMM where it saves the column memory). Values and the gradients of input, weight and bias on awkward
sizes: batch 1 and 3, odd channels, 1x1, 3x3 and 7x7 kernels, stride 2,
padding, dilation 2, groups 2, a transposed convolution (whose forward is the
data gradient), and layers large enough that auto takes the implicit GEMM. Skipped where there is no Vulkan device."""
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import nn_engine as nn

RNG = np.random.default_rng(23)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.fixture(params=["implicit", "columns", "auto"])
def route(request):
    try:
        nn.set_device("vulkan")
    except Exception as err:  # no Vulkan device in this build or machine
        pytest.skip(f"vulkan: {err}")
    before = os.environ.get("NN_ENGINE_VULKAN_CONV")
    os.environ["NN_ENGINE_VULKAN_CONV"] = request.param
    yield request.param
    if before is None:
        del os.environ["NN_ENGINE_VULKAN_CONV"]
    else:
        os.environ["NN_ENGINE_VULKAN_CONV"] = before
    nn.set_device("cpu")


def compare(ours_fn, torch_fn, arrays, tol):
    """Values and the gradients of sum(out * r), r random, for every array."""
    ours = [nn.Tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    out, tout = ours_fn(*ours), torch_fn(*theirs)
    assert out.shape == tuple(tout.shape)
    np.testing.assert_allclose(out.sync(), tout.detach().numpy(), rtol=tol, atol=tol)
    r = rand(*out.shape)
    out.backward(nn.Tensor(r))
    (tout * torch.from_numpy(r).double()).sum().backward()
    for mine, other in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.sync(), other.grad.numpy(), rtol=tol * 10, atol=tol * 10)


CONV_CASES = [
    # x shape, weight shape, bias, stride, padding, dilation, groups
    ((1, 3, 9, 11), (5, 3, 3, 3), True, 1, 1, 1, 1),           # batch 1, 3x3
    ((3, 5, 13, 10), (7, 5, 1, 1), False, 2, 0, 1, 1),         # 1x1 stride 2, batch 3
    ((2, 3, 17, 15), (9, 3, 7, 7), True, 2, 3, 1, 1),          # 7x7 stride 2 (a stem)
    ((3, 6, 12, 13), (8, 3, 3, 3), True, 1, 2, 2, 2),          # dilation 2, groups 2
    ((2, 6, 11, 9), (10, 3, 3, 3), False, 2, 1, 1, 2),         # groups 2, stride 2
    ((2, 32, 34, 33), (130, 32, 3, 3), True, 1, 1, 1, 1),      # the default's implicit GEMM
    ((2, 33, 19, 21), (67, 33, 3, 3), True, 2, 1, 1, 1),       # the default's, strided
]


@pytest.mark.parametrize("xs,ws,bias,stride,padding,dilation,groups", CONV_CASES)
def test_conv2d_routes(route, xs, ws, bias, stride, padding, dilation, groups):
    arrays = [rand(*xs), rand(*ws)] + ([rand(ws[0])] if bias else [])
    tol = 1e-4 * max(1.0, np.sqrt(ws[1] * ws[2] * ws[3] / 27))

    def ours(x, w, b=None):
        return nn.functional.relu(nn.functional.conv2d(x, w, b, stride, padding, dilation, groups))

    def theirs(x, w, b=None):
        return TF.relu(TF.conv2d(x, w, b, stride, padding, dilation, groups))

    compare(ours, theirs, arrays, tol)


def test_conv_transpose2d_routes(route):
    arrays = [rand(2, 12, 9, 7), rand(12, 5, 3, 3), rand(10)]

    def ours(x, w, b):
        return nn.conv_transpose2d(x, w, b, 2, 1, 1, 2, 1)

    def theirs(x, w, b):
        return TF.conv_transpose2d(x, w, b, 2, 1, 1, 2, 1)

    compare(ours, theirs, arrays, 2e-4)
