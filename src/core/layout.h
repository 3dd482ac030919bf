/* Tensor layouts (kernels.h's nn_layout): a tensor's logical shape is
 * PyTorch's, its storage may hold a 4-D activation [N, C, H, W] in
 * channels-last order. Each operation says which of its inputs it reads
 * in which layout and which layout its output takes (nn_op.layouts);
 * recording converts the inputs it does not take as they are (an
 * nn_to_layout node, with autograd), so every other operation keeps seeing
 * dense tensors. Host reads and writes see the logical order. Included by
 * src/ only. */
#ifndef NN_CORE_LAYOUT_H
#define NN_CORE_LAYOUT_H

#include "internal.h"

/* The layout a tensor of this shape takes when `wanted`: channels-last only
 * for 4-D shapes where it differs from dense (more than one channel and
 * more than one pixel); dense otherwise, the same memory. */
nn_layout nn_layout_for_shape(int ndim, const int64_t *shape, nn_layout wanted);

/* The element stride of each logical dimension of t in its storage. */
void nn_layout_strides(const nn_tensor *t, int64_t *stride);

/* The conversion operation (src/ops/to_layout.c): its output is its
 * input in the node's layout; its gradient the copy the other way. */
typedef struct nn_to_layout_node {
    int32_t layout; /* nn_layout */
} nn_to_layout_node;
extern const nn_op nn_op_to_layout;

/* The operation layouts of the pointwise kind (nn_op.layouts): inputs of
 * the output's shape are read in input 0's layout, the output takes it;
 * other inputs (per-channel parameters, broadcast operands) are dense. */
nn_layout nn_layouts_pointwise(nn_tensor *const *inputs, int count, const void *params, int ndim,
                               const int64_t *shape, nn_layout *input_layouts);

/* The layouts of an operation that reads input 0 in the layout it has and
 * gives its output that layout (pooling: another shape, the same kind of
 * tensor); other inputs dense. */
nn_layout nn_layouts_follow_input(nn_tensor *const *inputs, int count, const void *params, int ndim,
                                  const int64_t *shape, nn_layout *input_layouts);

/* Host copies between a storage in t's layout and the logical order. */
void nn_layout_to_logical(const nn_tensor *t, const void *storage, void *logical);
void nn_layout_from_logical(const nn_tensor *t, const void *logical, void *storage);

#endif
