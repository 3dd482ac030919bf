/* The layout checks of the normalisation kernels (kernels.h's
 * nn_norm_params), shared by every backend so each refuses the same
 * parameters with the same message. */
#ifndef NN_BACKENDS_NORM_LAYOUT_H
#define NN_BACKENDS_NORM_LAYOUT_H

#include <stdbool.h>

#include "kernels.h"

/* Sizes >= 0 (groups, channels, channel_inner >= 1), and the channels
 * tiling the elements (their count a multiple of channels * channel_inner). */
nn_status nn_norm_check(const char *backend, nn_kernel kernel, const nn_norm_params *p);
/* outer * groups * inner. */
int64_t nn_norm_elements(const nn_norm_params *p);
/* Each group is one channel's elements (BatchNorm): the weight is then
 * constant over a group (what sums_unweighted needs). */
static inline bool nn_norm_channel_groups(const nn_norm_params *p) {
    return p->groups == p->channels && p->inner == p->channel_inner;
}
/* BACKWARD_FROM_SUMS' affine outputs (`affine`: dweight or dbias given)
 * need sums without the weight, which are the affine gradients. */
nn_status nn_norm_affine_from_sums_check(const char *backend, const nn_norm_params *p, bool affine);
/* Channels >= 1 and count >= 2 (the unbiased variance divides by count - 1). */
nn_status nn_norm_running_check(const char *backend, const nn_norm_running_params *p, bool has_count);

#endif
