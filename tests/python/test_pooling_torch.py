"""The pooling functions and layers against PyTorch 1.13 (values and the
gradients backward gives) on awkward sizes: rectangular, strided, padded,
dilated and ceil_mode windows (some running past the padded edge), every
average divisor rule, adaptive outputs that are uneven, global, larger than
the input or keep a size (None), unbatched inputs, ties and -inf."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import nn_engine as nn

RNG = np.random.default_rng(23)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def compare(ours_fn, torch_fn, array, tol=1e-5):
    """Values and the gradient of sum(out * w), w random, on both sides."""
    x, tx = nn.Tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
    out, tout = ours_fn(x), torch_fn(tx)
    assert out.shape == tuple(tout.shape)
    np.testing.assert_allclose(out.sync(), tout.detach().numpy(), rtol=tol, atol=tol)
    w = rand(*out.shape)
    out.backward(nn.Tensor(w))
    (tout * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(x.grad.sync(), tx.grad.numpy(), rtol=tol, atol=tol)


MAX_CASES = [
    # shape, kernel_size, stride, padding, dilation, ceil_mode
    ((2, 3, 7, 9), (3, 2), (2, 1), 1, 1, False),
    ((1, 2, 11, 13), 3, (2, 3), 1, (2, 3), True),
    ((1, 1, 5, 5), 2, None, 0, 1, True),          # a last window past the edge
    ((3, 2, 17, 6), (5, 3), (3, 2), (2, 1), (1, 2), True),
    ((2, 4, 9, 7), 3, 2, 1, 1, False),            # square: runs as nn_maxpool2d_ex
    ((3, 8, 8), 2, 2, 0, 2, False),               # unbatched
]


@pytest.mark.parametrize("shape,kernel,stride,padding,dilation,ceil_mode", MAX_CASES)
def test_max_pool2d(shape, kernel, stride, padding, dilation, ceil_mode):
    compare(lambda x: nn.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode),
            lambda x: TF.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode), rand(*shape))


@pytest.mark.parametrize("shape,kernel,stride,padding,dilation,ceil_mode", MAX_CASES[:4])
def test_max_pool2d_ties_go_to_the_first_maximum(shape, kernel, stride, padding, dilation, ceil_mode):
    whole = np.round(rand(*shape)).astype(np.float32)  # few values: windows tie
    compare(lambda x: nn.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode),
            lambda x: TF.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode), whole)


def test_max_pool2d_padding_never_wins_over_minus_infinity():
    array = np.full((1, 2, 5, 6), -np.inf, dtype=np.float32)
    array[0, 1, 2:, 3:] = rand(3, 3)
    compare(lambda x: nn.max_pool2d(x, (3, 2), 2, 1, (1, 2), True),
            lambda x: TF.max_pool2d(x, (3, 2), 2, 1, (1, 2), True), array)


AVG_CASES = [
    # shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    ((2, 3, 7, 9), (3, 2), (2, 1), 1, False, True, None),
    ((1, 2, 7, 9), (3, 2), (2, 1), 1, False, False, None),
    ((1, 2, 6, 8), 3, 2, 1, True, True, None),    # ceil_mode windows past the padded edge
    ((2, 1, 6, 8), 3, 2, 1, True, False, None),
    ((1, 3, 5, 11), (3, 5), (2, 3), (1, 2), True, True, 4),
    ((1, 1, 13, 7), 4, None, 2, False, False, 3),
    ((3, 7, 5), 2, 1, 0, False, True, None),      # unbatched
]


@pytest.mark.parametrize("shape,kernel,stride,padding,ceil_mode,include_pad,divisor", AVG_CASES)
def test_avg_pool2d(shape, kernel, stride, padding, ceil_mode, include_pad, divisor):
    compare(lambda x: nn.avg_pool2d(x, kernel, stride, padding, ceil_mode, include_pad, divisor),
            lambda x: TF.avg_pool2d(x, kernel, stride, padding, ceil_mode, include_pad, divisor), rand(*shape))


ADAPTIVE_CASES = [
    ((2, 3, 7, 9), (3, 4)),
    ((1, 2, 5, 6), 1),           # global pooling
    ((1, 1, 3, 4), (7, 9)),      # larger than the input
    ((2, 1, 13, 11), (5, None)),  # None keeps the width
    ((3, 10, 6), (4, 5)),        # unbatched
    ((1, 2, 12, 8), (6, 4)),     # sizes that divide
]


@pytest.mark.parametrize("shape,output_size", ADAPTIVE_CASES)
def test_adaptive_avg_pool2d(shape, output_size):
    compare(lambda x: nn.adaptive_avg_pool2d(x, output_size),
            lambda x: TF.adaptive_avg_pool2d(x, output_size), rand(*shape))


@pytest.mark.parametrize("shape,output_size", ADAPTIVE_CASES)
def test_adaptive_max_pool2d(shape, output_size):
    compare(lambda x: nn.adaptive_max_pool2d(x, output_size),
            lambda x: TF.adaptive_max_pool2d(x, output_size), rand(*shape))


def test_layers_match_torch_modules():
    array = rand(2, 3, 11, 10)
    for ours, theirs in [
        (nn.MaxPool2d((3, 2), stride=2, padding=1, dilation=(1, 2), ceil_mode=True),
         torch.nn.MaxPool2d((3, 2), stride=2, padding=1, dilation=(1, 2), ceil_mode=True)),
        (nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
         torch.nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
        (nn.AvgPool2d(2, divisor_override=3), torch.nn.AvgPool2d(2, divisor_override=3)),
        (nn.AdaptiveAvgPool2d((4, None)), torch.nn.AdaptiveAvgPool2d((4, None))),
        (nn.AdaptiveMaxPool2d(3), torch.nn.AdaptiveMaxPool2d(3)),
    ]:
        compare(ours, theirs, array)
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"


def test_seed_maxpool2d_keeps_working():
    compare(lambda x: nn.maxpool2d(x, 2, 2), lambda x: TF.max_pool2d(x, 2, 2), rand(2, 3, 9, 8))


@pytest.mark.parametrize("call,message", [
    (lambda x: nn.max_pool2d(x, (2, 3), padding=(0, 2)), "nn_maxpool2d_window: the width padding"),
    (lambda x: nn.max_pool2d(x, 7), "nn_maxpool2d_window: the height window reaches 7"),
    (lambda x: nn.avg_pool2d(x, 2, divisor_override=0), "avg_pool2d: divisor_override must be >= 1"),
    (lambda x: nn.max_pool2d(x, (2, 2, 2)), "max_pool2d: kernel_size must be an int or a pair"),
    (lambda x: nn.adaptive_avg_pool2d(x, (0, 2)), "adaptive_avg_pool2d: output_size must be >= 1"),
    (lambda x: nn.adaptive_max_pool2d(nn.Tensor(rand(4, 5)), 2), "nn_adaptive_maxpool2d: x must be"),
])
def test_bad_arguments_raise_with_the_function_named(call, message):
    with pytest.raises(ValueError, match=message):
        call(nn.Tensor(rand(1, 2, 5, 6)))
