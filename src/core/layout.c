/* Tensor layouts (layout.h): which shapes take channels-last, the strides
 * it gives, the pointwise operations' rule and the host-side reordering. */
#include <string.h>

#include "graph.h"
#include "layout.h"

nn_layout nn_layout_for_shape(int ndim, const int64_t *shape, nn_layout wanted) {
    if (wanted != NN_LAYOUT_CHANNELS_LAST || ndim != 4) return NN_LAYOUT_DENSE;
    return shape[1] > 1 && shape[2] * shape[3] > 1 ? NN_LAYOUT_CHANNELS_LAST : NN_LAYOUT_DENSE;
}

void nn_layout_strides(const nn_tensor *t, int64_t *stride) {
    if (t->layout == NN_LAYOUT_CHANNELS_LAST) {
        const int64_t c = t->shape[1], w = t->shape[3];
        stride[0] = t->shape[2] * w * c, stride[1] = 1, stride[2] = w * c, stride[3] = c;
        return;
    }
    int64_t step = 1;
    for (int d = t->ndim - 1; d >= 0; d--) stride[d] = step, step *= t->shape[d];
}

static bool same_shape(const nn_tensor *t, int ndim, const int64_t *shape) {
    return t->ndim == ndim && memcmp(t->shape, shape, sizeof *shape * (size_t)ndim) == 0;
}

nn_layout nn_layouts_pointwise(nn_tensor *const *inputs, int count, const void *params, int ndim,
                               const int64_t *shape, nn_layout *input_layouts) {
    (void)params;
    const nn_layout first = inputs[0] && same_shape(inputs[0], ndim, shape) ? inputs[0]->layout : NN_LAYOUT_DENSE;
    for (int i = 0; i < count; i++)
        input_layouts[i] = inputs[i] && same_shape(inputs[i], ndim, shape) ? first : NN_LAYOUT_DENSE;
    return first;
}

nn_layout nn_layouts_follow_input(nn_tensor *const *inputs, int count, const void *params, int ndim,
                                  const int64_t *shape, nn_layout *input_layouts) {
    (void)count, (void)params, (void)ndim, (void)shape;
    input_layouts[0] = inputs[0]->layout;
    return inputs[0]->layout;
}

/* Element i of the logical order (row-major over shape) and its offset in
 * the storage, for 4-byte elements. */
static void reorder(const nn_tensor *t, const uint32_t *from, uint32_t *to, bool to_logical) {
    int64_t stride[NN_MAX_DIMS];
    nn_layout_strides(t, stride);
    const int64_t n = t->shape[0], c = t->shape[1], h = t->shape[2], w = t->shape[3];
    int64_t logical = 0;
    for (int64_t in = 0; in < n; in++)
        for (int64_t ic = 0; ic < c; ic++)
            for (int64_t ih = 0; ih < h; ih++)
                for (int64_t iw = 0; iw < w; iw++, logical++) {
                    const int64_t stored = in * stride[0] + ic * stride[1] + ih * stride[2] + iw * stride[3];
                    if (to_logical) to[logical] = from[stored];
                    else to[stored] = from[logical];
                }
}

void nn_layout_to_logical(const nn_tensor *t, const void *storage, void *logical) {
    if (t->layout == NN_LAYOUT_DENSE) memcpy(logical, storage, (size_t)t->numel * 4);
    else reorder(t, storage, logical, true);
}

void nn_layout_from_logical(const nn_tensor *t, const void *logical, void *storage) {
    if (t->layout == NN_LAYOUT_DENSE) memcpy(storage, logical, (size_t)t->numel * 4);
    else reorder(t, logical, storage, false);
}
