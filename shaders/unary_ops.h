/* Elementwise functions of one tensor and their gradients, one row each.
 * The CPU backend (C) and the Vulkan shaders (GLSL) compile the same rows,
 * and each row is published as the operation nn_<name> with autograd and
 * ONNX export (src/ops/unary.c). A new function is a row here and its
 * declaration in include/nn_ops.h (and python/nn_engine/functional.py);
 * its kernels, gradient, export and parity case follow from the row.
 *
 *   U(ID, name, Onnx, forward, backward, export, public)
 *     ID        its code, NN_UNARY_<ID> (kernels.h), by position
 *     name      the operation nn_<name>
 *     Onnx      the ONNX operator that computes forward (its main one where
 *               export composes several)
 *     forward   y from float x and the parameters alpha, beta
 *     backward  dx from x, y (forward's value), dy and alpha, beta
 *     export    how src/ops/unary_onnx.c writes it, the function
 *               unary_onnx_<export>: `operator` (Onnx of x), `alpha_attribute`
 *               (Onnx with its attribute alpha = alpha), `scalar_after`
 *               (Onnx(x, alpha)), `scalar_before` (Onnx(alpha, x)), or the
 *               row's own composition of standard operators
 *     public    `of_x`: src/ops/unary.c defines nn_<name>(x); `with_scalars`:
 *               src/ops/unary_scalars.c defines the public function, which
 *               checks the parameters and records them (alpha, beta)
 *
 * Expressions are written in GLSL that C reads as well: literals with a
 * decimal point, arithmetic, ?:, abs, sign, exp, log, sqrt and the helpers
 * of unary_math.glsl (logistic, tanh_gate, erfc, log1p, expm1, softplus_of,
 * power, quiet_nan, positive_infinity), which cpu_unary.c maps to C. Keep them
 * finite where the math is: no exp of a large positive argument, no 0/0;
 * a NaN input gives NaN. Gradients at kinks and at NaN are PyTorch's.
 * Macros only. */
#ifndef NN_SHADERS_UNARY_OPS_H
#define NN_SHADERS_UNARY_OPS_H

/* tanh: an odd series below 1/4 (where the exponential form loses digits
 * to cancellation), the exponential of -2|x| above (never overflows).
 * gelu: x Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2, exact in relative
 * terms for negative x, where 1 + erf would cancel. gelu_tanh: PyTorch's
 * 0.5 x (1 + tanh(u)) = x logistic(2u) (tanh_gate), u = sqrt(2/pi) (x +
 * 0.044715 x^3).
 * softplus: alpha is PyTorch's beta, beta its threshold. clamp: alpha is
 * min, beta max (+-infinity for an absent side); min is applied first, so
 * min > max gives max, as in PyTorch. relu6 and clamp pass NaN through as
 * PyTorch does: said outright, as a GPU compiler may turn the comparisons
 * into min/max, which drop it. pow: x ** alpha. hardswish'
 * at 3 is 1, as PyTorch's vectorized kernel gives (its scalar tail says 1.5). */
#define NN_UNARY_OPS(U)                                                                                      \
    U(SIGMOID, sigmoid, Sigmoid, 1.0 / (1.0 + exp(-x)), dy * y * (1.0 - y), operator, of_x)                  \
    U(TANH, tanh, Tanh,                                                                                      \
      abs(x) < 0.25                                                                                          \
          ? x * (1.0 + x * x * (-1.0 / 3.0 + x * x * (2.0 / 15.0 + x * x * (-17.0 / 315.0 + x * x * (62.0 / 2835.0))))) \
          : sign(x) * (1.0 - exp(-2.0 * abs(x))) / (1.0 + exp(-2.0 * abs(x))),                               \
      dy * (1.0 - y * y), operator, of_x)                                                                    \
    U(NEG, neg, Neg, -x, -dy, operator, of_x)                                                                \
    U(EXP, exp, Exp, exp(x), dy * y, operator, of_x)                                                         \
    U(LOG, log, Log, x < 0.0 ? quiet_nan() : x == 0.0 ? -positive_infinity() : log(x), dy / x, operator, of_x) \
    U(SQRT, sqrt, Sqrt, x < 0.0 ? quiet_nan() : sqrt(x), dy * 0.5 / y, operator, of_x)                       \
    U(ABS, abs, Abs, abs(x), x > 0.0 ? dy : x < 0.0 ? -dy : 0.0, operator, of_x)                                                   \
    U(GELU, gelu, Erf, 0.5 * x * erfc(-0.70710678118654752 * x),                                             \
      dy * (0.5 * erfc(-0.70710678118654752 * x) + x * 0.39894228040143268 * exp(-0.5 * x * x)), gelu,        \
      with_scalars)                                                                                          \
    U(GELU_TANH, gelu_tanh, Tanh, x * tanh_gate(x),                                                          \
      dy * (tanh_gate(x) + x * tanh_gate(x) * (1.0 - tanh_gate(x)) * 1.5957691216057308 * (1.0 + 0.134145 * x * x)), \
      gelu_tanh, with_scalars)                                                                               \
    U(SILU, silu, Sigmoid, x * logistic(x), dy * logistic(x) * (1.0 + x * (1.0 - logistic(x))), silu, of_x)  \
    U(RELU6, relu6, Clip, isnan(x) ? x : x < 0.0 ? 0.0 : x > 6.0 ? 6.0 : x, x <= 0.0 || x >= 6.0 ? 0.0 : dy,  \
      relu6, of_x)                                                                                           \
    U(HARDSWISH, hardswish, HardSwish, x <= -3.0 ? 0.0 : x >= 3.0 ? x : x * (x + 3.0) / 6.0,                  \
      x < -3.0 ? 0.0 : x < 3.0 ? dy * (x / 3.0 + 0.5) : dy, hardswish, of_x)                                 \
    U(HARDSIGMOID, hardsigmoid, HardSigmoid, x <= -3.0 ? 0.0 : x >= 3.0 ? 1.0 : x / 6.0 + 0.5,                \
      x > -3.0 && x < 3.0 ? dy / 6.0 : 0.0, hardsigmoid, of_x)                                               \
    U(SOFTSIGN, softsign, Softsign, x / (1.0 + abs(x)), dy / ((1.0 + abs(x)) * (1.0 + abs(x))), operator, of_x) \
    U(LEAKY_RELU, leaky_relu, LeakyRelu, x > 0.0 ? x : x * alpha, x > 0.0 ? dy : dy * alpha, alpha_attribute,  \
      with_scalars)                                                                                          \
    U(ELU, elu, Elu, x > 0.0 ? x : alpha * expm1(x), x <= 0.0 ? dy * alpha * exp(x) : dy, alpha_attribute,     \
      with_scalars)                                                                                          \
    U(SOFTPLUS, softplus, Softplus, x * alpha > beta ? x : softplus_of(x * alpha) / alpha,                    \
      x * alpha > beta ? dy : dy * logistic(x * alpha), softplus, with_scalars)                               \
    U(CLAMP, clamp, Clip, isnan(x) ? x : (x < alpha ? alpha : x) > beta ? beta : (x < alpha ? alpha : x),    \
      x >= alpha && x <= beta ? dy : 0.0, clip, with_scalars)                                                 \
    U(POW_SCALAR, pow_scalar, Pow, power(x, alpha), alpha == 0.0 ? 0.0 : dy * alpha * power(x, alpha - 1.0),  \
      scalar_after, with_scalars)                                                                            \
    U(ADD_SCALAR, add_scalar, Add, x + alpha, dy, scalar_after, with_scalars)                                \
    U(MUL_SCALAR, mul_scalar, Mul, x * alpha, dy * alpha, scalar_after, with_scalars)                        \
    U(RSUB_SCALAR, rsub_scalar, Sub, alpha - x, -dy, scalar_before, with_scalars)                            \
    U(RDIV_SCALAR, rdiv_scalar, Div, alpha / x, -dy * y / x, scalar_before, with_scalars)

#endif
