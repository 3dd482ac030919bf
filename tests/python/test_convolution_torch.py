"""Convolution with PyTorch's arguments, transposed convolution and
interpolate against PyTorch 1.13: values and the gradients of input, weight
and bias on awkward sizes (odd, prime, batch 1, rectangular 3x2 kernels,
stride (2, 1), padding (1, 0)), groups 2 and 3, depthwise with multiplier 2,
dilation 2, padding='same' / 'valid'; the layers' state_dict names; the seed's
conv2d call forms; errors as Python exceptions naming the argument."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import nn_engine as nn

RNG = np.random.default_rng(31)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def compare(ours_fn, torch_fn, arrays, tol=2e-5):
    """Values and the gradients of sum(out * r), r random, for every array."""
    ours = [nn.Tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = ours_fn(*ours), torch_fn(*theirs)
    assert out.shape == tuple(tout.shape)
    np.testing.assert_allclose(out.sync(), tout.detach().numpy(), rtol=tol, atol=tol)
    r = rand(*out.shape)
    out.backward(nn.Tensor(r))
    (tout * torch.from_numpy(r)).sum().backward()
    for mine, other in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.sync(), other.grad.numpy(), rtol=1e-4, atol=1e-4)


CONV_CASES = [
    # x shape, weight shape, bias, stride, padding, dilation, groups
    ((2, 4, 7, 6), (6, 2, 3, 2), True, (2, 1), (1, 0), 1, 2),
    ((1, 6, 9, 11), (9, 2, 3, 3), False, 1, 1, 1, 3),
    ((2, 3, 11, 9), (6, 1, 3, 3), True, 1, 2, 2, 3),           # depthwise, multiplier 2, dilation 2
    ((1, 5, 13, 11), (5, 1, 3, 3), True, 2, 1, 1, 5),          # depthwise (MobileNet's stride 2)
    ((3, 2, 13, 11), (5, 2, 3, 2), True, (2, 1), (1, 0), (2, 3), 1),
    ((2, 8, 17, 15), (16, 2, 3, 3), True, 1, 2, 2, 4),
    ((1, 3, 8, 7), (4, 3, 3, 2), True, 1, "same", (2, 1), 1),  # odd total padding: one more after
    ((2, 4, 9, 8), (6, 2, 4, 3), False, 1, "same", 1, 2),
    ((2, 3, 8, 7), (5, 3, 3, 3), True, 1, "valid", 1, 1),
]


@pytest.mark.parametrize("xs,ws,bias,stride,padding,dilation,groups", CONV_CASES)
def test_conv2d(xs, ws, bias, stride, padding, dilation, groups):
    arrays = [rand(*xs), rand(*ws)] + ([rand(ws[0])] if bias else [])

    def ours(x, w, b=None):
        return nn.functional.conv2d(x, w, b, stride, padding, dilation, groups)

    def theirs(x, w, b=None):
        return TF.conv2d(x, w, b, stride, padding, dilation, groups)

    compare(ours, theirs, arrays)


TRANSPOSE_CASES = [
    # x shape, weight shape, bias, stride, padding, output_padding, groups, dilation
    ((2, 3, 5, 4), (3, 4, 3, 3), True, 2, 1, 1, 1, 1),
    ((1, 4, 5, 7), (4, 3, 3, 2), True, (2, 1), (1, 0), (1, 0), 2, 2),
    ((1, 3, 6, 5), (3, 2, 2, 3), False, (3, 2), (0, 1), (0, 1), 3, 1),
    ((2, 6, 4, 5), (6, 1, 3, 3), True, 2, 1, 0, 3, 1),
]


@pytest.mark.parametrize("xs,ws,bias,stride,padding,output_padding,groups,dilation", TRANSPOSE_CASES)
def test_conv_transpose2d(xs, ws, bias, stride, padding, output_padding, groups, dilation):
    arrays = [rand(*xs), rand(*ws)] + ([rand(ws[1] * groups)] if bias else [])

    def ours(x, w, b=None):
        return nn.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation)

    def theirs(x, w, b=None):
        return TF.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation)

    compare(ours, theirs, arrays)


INTERPOLATE_CASES = [
    # x shape, size, scale_factor, mode, align_corners
    ((2, 3, 5, 7), (11, 3), None, "nearest", None),
    ((1, 2, 5, 7), None, 2, "nearest", None),
    ((1, 2, 5, 5), None, 1.5, "nearest", None),
    ((2, 3, 6, 9), (13, 17), None, "bilinear", False),
    ((1, 2, 6, 9), (13, 17), None, "bilinear", True),
    ((2, 1, 11, 13), (5, 4), None, "bilinear", False),
    ((1, 3, 3, 4), None, 3, "bilinear", False),
    ((1, 3, 3, 4), None, (2, 1.5), "bilinear", True),
    ((1, 1, 4, 5), (1, 7), None, "bilinear", True),
]


@pytest.mark.parametrize("xs,size,scale_factor,mode,align_corners", INTERPOLATE_CASES)
def test_interpolate(xs, size, scale_factor, mode, align_corners):
    compare(lambda x: nn.interpolate(x, size, scale_factor, mode, align_corners),
            lambda x: TF.interpolate(x, size, scale_factor, mode, align_corners), [rand(*xs)])


def test_layers_match_torch_and_keep_its_state_dict_names():
    torch.manual_seed(0)
    for ours, theirs in [
        (nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=2), torch.nn.Conv2d(4, 6, (3, 2), (2, 1), (1, 0), groups=2)),
        (nn.Conv2d(3, 6, 3, padding="same", dilation=2, groups=3, bias=False),
         torch.nn.Conv2d(3, 6, 3, padding="same", dilation=2, groups=3, bias=False)),
        (nn.ConvLayer(4, 4, (3, 3), 1, 1, dilation=1, groups=4, bias=True), torch.nn.Conv2d(4, 4, 3, 1, 1, groups=4)),
        (nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
         torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)),
    ]:
        model = nn.Model()
        model.layer = ours
        names = sorted(model.state_dict().keys())
        assert names == sorted(f"layer.{k}" for k in theirs.state_dict().keys())
        assert tuple(ours.filters.shape if hasattr(ours, "filters") else ours.weight.shape) == tuple(theirs.weight.shape)
        with torch.no_grad():
            theirs.weight.copy_(torch.from_numpy(model.state_dict()["layer.weight"].numpy()))
            if theirs.bias is not None:
                theirs.bias.copy_(torch.from_numpy(model.state_dict()["layer.bias"].numpy()))
        x = rand(2, 4 if not isinstance(ours, nn.Conv2d) or ours.in_channels == 4 else 3, 9, 8)
        np.testing.assert_allclose(ours(nn.Tensor(x)).sync(), theirs(torch.from_numpy(x)).detach().numpy(),
                                   rtol=2e-5, atol=2e-5)
    up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
    x = rand(1, 2, 5, 3)
    np.testing.assert_allclose(up(nn.Tensor(x)).sync(),
                               torch.nn.Upsample(scale_factor=2, mode="bilinear")(torch.from_numpy(x)).numpy(),
                               rtol=1e-5, atol=1e-5)


def test_seed_conv2d_forms_keep_working():
    x, w, b = rand(2, 3, 8, 8), rand(4, 3, 3, 3), rand(4)
    want = TF.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), 2, 1)
    for y in [nn.conv2d(nn.Tensor(x), nn.Tensor(w), nn.Tensor(b), 2, 1),
              nn.conv2d(x=nn.Tensor(x), filters=nn.Tensor(w), bias=nn.Tensor(b), stride=2, padding=1)]:
        np.testing.assert_allclose(y.sync(), want.numpy(), rtol=2e-5, atol=2e-5)
    for relu in [nn.conv2d(nn.Tensor(x), nn.Tensor(w), nn.Tensor(b), 2, 1, actType=1),
                 nn.conv2d(nn.Tensor(x), nn.Tensor(w), nn.Tensor(b), 2, 1, 1)]:  # the seed's order: actType 6th
        np.testing.assert_allclose(relu.sync(), torch.relu(want).numpy(), rtol=2e-5, atol=2e-5)
    layer = nn.ConvLayer(3, 4, 3, 2, 1)
    assert layer.filters.shape == (4, 3, 3, 3) and repr(layer) == "ConvLayer(3, 4, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))"
    assert layer(nn.Tensor(x), relu=True).shape == (2, 4, 4, 4)


@pytest.mark.parametrize("call,needle", [
    (lambda x, w: nn.functional.conv2d(x, w, groups=4), "groups 4"),
    (lambda x, w: nn.functional.conv2d(x, w, dilation=0), "dilation"),
    (lambda x, w: nn.functional.conv2d(x, w, padding="full"), "padding"),
    (lambda x, w: nn.functional.conv2d(x, w, stride=2, padding="same"), "strided"),
    (lambda x, w: nn.conv_transpose2d(x, nn.Tensor(rand(6, 2, 3, 3)), stride=2, output_padding=2), "output_padding"),
    (lambda x, w: nn.interpolate(x), "size or scale_factor"),
    (lambda x, w: nn.interpolate(x, size=4, mode="bicubic"), "mode"),
    (lambda x, w: nn.interpolate(x, size=4, align_corners=True), "align_corners"),
    (lambda x, w: nn.interpolate(x, scale_factor=-2.0), "-2"),
])
def test_bad_arguments_raise_naming_them(call, needle):
    x, w = nn.Tensor(rand(2, 6, 9, 9)), nn.Tensor(rand(4, 3, 3, 3))
    with pytest.raises((ValueError, RuntimeError, TypeError)) as info:
        call(x, w)
    assert needle in str(info.value)
