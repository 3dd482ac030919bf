/* The column route of the convolution kernels (kernels.h, nn_conv_params),
 * shared by the backends that take it (the CPU always, Vulkan for large
 * layers): im2col into a column matrix, a batched GEMM, col2im for the
 * data gradient. Images are taken in groups whose columns fit a bound, or
 * all at once into a column matrix the op keeps. */
#ifndef NN_CONV_COLUMNS_H
#define NN_CONV_COLUMNS_H

#include <stdbool.h>

#include "kernels.h"

/* The parameters any backend checks first: a geometry that describes a
 * convolution and an epilogue of bias and ReLU only; the message names
 * the backend and the kernel. */
nn_status nn_conv_params_check(const char *backend, nn_kernel kernel, const nn_conv_params *p);

typedef struct nn_conv_columns {
    int64_t k, positions;     /* K = channels * kernel_h * kernel_w, P = out_h * out_w */
    int64_t groups, group_k, group_filters; /* the convolution's groups; K and filters per group */
    int64_t plane_x, plane_y; /* floats per image of x and of y */
    int64_t per_image;        /* column floats per image (at least 1) */
    int64_t group;            /* images per pass */
} nn_conv_columns;

/* The sizes, and the group: the whole batch when the columns are kept,
 * else as many images as fit max_floats (at least one). */
nn_conv_columns nn_conv_columns_plan(const nn_conv_params *p, bool kept, int64_t max_floats);

/* The GEMM of `kernel` for `count` images from the group at `first`, for
 * one of the convolution's groups (A, B, C as the kernels.h comment writes
 * them, restricted to the group's filters and column rows: W and cols for
 * the forward, W^T and dy for the data gradient's columns, dy and cols^T
 * for the weight gradient, which adds the image groups after the first). */
nn_gemm_params nn_conv_columns_gemm(nn_kernel kernel, const nn_conv_params *p, const nn_conv_columns *c,
                                    int32_t count, int64_t first);

/* Where convolution group `group` starts, in floats, in each operand of its
 * GEMM: the weight (and dweight), the column matrix of an image, the
 * output (and dy) of an image, the bias. */
typedef struct nn_conv_group_offsets {
    int64_t weight, cols, y, bias;
} nn_conv_group_offsets;
nn_conv_group_offsets nn_conv_columns_group(const nn_conv_columns *c, int64_t group);

#endif
