/* Fused Conv2d -> ReLU -> MaxPool2d in double precision: the reference the
 * fused kernels are tested against (test_conv_pool.c, and the chained
 * weight gradient in test_conv_pool_chain.c), with the cases' parameters
 * and inputs. */
#ifndef NN_TESTS_CONV_POOL_REFERENCE_H
#define NN_TESTS_CONV_POOL_REFERENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/kernels.h"

typedef struct conv_pool_case {
    int batch, channels, height, width, filters, kernel_h, kernel_w, stride, pad, pool;
} conv_pool_case;

/* The case's parameters (accumulate off), with or without a bias. */
nn_conv_pool_params conv_pool_params_of(const conv_pool_case *c, bool bias);

/* n multiples of 1/denominator in [-3, 3] / denominator (malloc'ed): every
 * convolution of them is exact in float whatever the order of its sums. */
float *conv_pool_steps(size_t n, float denominator, unsigned seed);
/* n uniform floats in [-1, 1) (malloc'ed). */
float *conv_pool_randoms(size_t n, unsigned seed);

/* Element counts of x, the weight, z (the convolution's output) and y. */
typedef struct conv_pool_sizes {
    size_t x, w, z, y;
} conv_pool_sizes;
conv_pool_sizes conv_pool_sizes_of(const nn_conv_pool_params *p);

/* The layers' output, winners and gradients in double, from x, w, b (or
 * NULL) and the output's gradient dy (NULL: the gradients are zero). */
typedef struct conv_pool_reference {
    double *y, *dw, *db, *dx;
    int32_t *winners;
} conv_pool_reference;
conv_pool_reference conv_pool_reference_of(const nn_conv_pool_params *p, const float *x, const float *w,
                                           const float *b, const float *dy);
void conv_pool_reference_free(conv_pool_reference *r);

#endif
