/* Elementwise functions of one tensor and their gradients, one row each.
 * The CPU backend (C) and the Vulkan shaders (GLSL) compile the same rows,
 * and each row is published as the operation nn_<name> with autograd and
 * ONNX export (src/ops/unary.c). A new function is a row here and its
 * declaration in include/nn_ops.h (and python/nn_engine/functional.py);
 * its kernels, gradient, export and parity case follow from the row.
 *
 *   U(ID, name, Onnx, forward, backward)
 *     ID        its code, NN_UNARY_<ID> (kernels.h), by position
 *     name      the operation nn_<name>
 *     Onnx      the ONNX operator that computes forward
 *     forward   y from float x
 *     backward  dx from x, y (forward's value) and dy
 *
 * Expressions are written in GLSL that C reads as well: literals with a
 * decimal point, arithmetic, ?:, and abs, sign and exp (cpu_unary.c maps
 * abs and sign to C). Keep them finite where the math is: no exp of a large
 * positive argument, no 0/0; a NaN input gives NaN. Macros only. */
#ifndef NN_SHADERS_UNARY_OPS_H
#define NN_SHADERS_UNARY_OPS_H

/* tanh: an odd series below 1/4 (where the exponential form loses digits
 * to cancellation), the exponential of -2|x| above (never overflows). */
#define NN_UNARY_OPS(U)                                                                                      \
    U(SIGMOID, sigmoid, Sigmoid, 1.0 / (1.0 + exp(-x)), dy * y * (1.0 - y))                                   \
    U(TANH, tanh, Tanh,                                                                                      \
      abs(x) < 0.25                                                                                          \
          ? x * (1.0 + x * x * (-1.0 / 3.0 + x * x * (2.0 / 15.0 + x * x * (-17.0 / 315.0 + x * x * (62.0 / 2835.0))))) \
          : sign(x) * (1.0 - exp(-2.0 * abs(x))) / (1.0 + exp(-2.0 * abs(x))),                               \
      dy * (1.0 - y * y))

#endif
