/* The functions of up to three broadcast operands that the BROADCAST kernel
 * computes, one row each: out (+)= alpha * f(a, b, c), each operand read
 * through its own strides (0 where it broadcasts). The CPU backend (C, in
 * double) and broadcast.comp (GLSL, in float) compile the same rows; the
 * operations (src/ops/broadcast.c) pick them by id.
 *
 *   B(ID, operands, f)
 *     ID        its code, NN_BROADCAST_<ID> (kernels.h), by position
 *     operands  how many of a, b, c it reads
 *     f         the value, an expression of a, b, c written in GLSL that C
 *               reads as well (arithmetic, comparisons, ?:)
 *
 * maximum and minimum propagate a NaN from either side (a != a is true for
 * NaN only); their gradient rows split ties evenly, as PyTorch does. */
#ifndef NN_SHADERS_BROADCAST_OPS_H
#define NN_SHADERS_BROADCAST_OPS_H

#define NN_BROADCAST_OPS(B)                                                            \
    B(COPY, 1, a)                                                                      \
    B(ADD, 2, a + b)                                                                   \
    B(SUB, 2, a - b)                                                                   \
    B(MUL, 2, a * b)                                                                   \
    B(DIV, 2, a / b)                                                                   \
    B(MAXIMUM, 2, (a > b || a != a) ? a : b)                                           \
    B(MINIMUM, 2, (a < b || a != a) ? a : b)                                           \
    /* a * b / c: the divisor's gradient, -dy * y / b, with alpha = -1 */              \
    B(MUL_DIV, 3, a * b / c)                                                           \
    /* a = dy, b = this operand, c = the other: maximum's and minimum's gradients */   \
    B(MAXIMUM_GRAD, 3, b > c ? a : (b == c ? 0.5 * a : 0.0))                           \
    B(MINIMUM_GRAD, 3, b < c ? a : (b == c ? 0.5 * a : 0.0))

#endif
