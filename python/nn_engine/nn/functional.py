"""nn_engine.nn.functional, as torch.nn.functional (import it as F): the
functions of nn_engine.functional under torch's signatures (conv2d takes
torch's arguments here; the seed's order is nn_engine.conv2d)."""
from ..functional import (adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool2d, batch_norm,  # noqa: F401
                          binary_cross_entropy_with_logits, conv2d, conv_transpose2d, cross_entropy, dropout, elu,
                          embedding, gelu, group_norm, hardsigmoid, hardswish, interpolate, l1_loss, layer_norm,
                          leaky_relu, linear, log_softmax, max_pool2d, mse_loss, nll_loss, relu, relu6,
                          scaled_dot_product_attention, sigmoid, silu, smooth_l1_loss, softmax, softplus, softsign,
                          tanh)
