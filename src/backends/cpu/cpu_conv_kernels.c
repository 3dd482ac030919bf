/* The convolution kernels (kernels.h, nn_conv_params) on the CPU: the column
 * route, im2col + GEMM (+ col2im). The CPU keeps the column matrix from
 * forward to backward (nn_cpu_conv_keeps_columns): the forward fills the
 * op's, the weight gradient reads it. Without one (no backward to come, or
 * the data gradient's) the columns go to a scratch buffer of the
 * backend's (its free cache makes the reuse cheap), never more than about
 * COLUMN_FLOATS of it at once: the images are taken in groups that fit.
 * Channels-last activations are copied to and from dense ones around them
 * (conv_layout.h): the CPU computes in the dense layout. */
#include "core/error.h"
#include "cpu_backend.h"
#include "cpu_gemm.h"
#include "backends/conv_columns.h"
#include "backends/conv_layout.h"

#define COLUMN_FLOATS ((int64_t)1 << 24) /* 64 MiB */

static nn_buffer *scratch(nn_backend *self, size_t bytes) { return self->alloc(self, bytes); }
static void scratch_done(nn_backend *self, nn_buffer *buffer) { self->free(self, buffer); }

nn_status nn_cpu_conv_layouts(nn_backend *self, nn_kernel kernel, const nn_conv_params *p, const nn_buffer_ref *a) {
    static const nn_conv_dense_host host = {scratch, scratch_done};
    NN_TRY(nn_conv_layout_check("cpu", kernel, p));
    return nn_conv_through_dense(self, &host, kernel, p, a, nn_kernel_arg_count(kernel));
}

nn_status nn_cpu_conv2d(nn_backend *self, nn_thread_pool *pool, nn_kernel kernel, const nn_conv_params *cp,
                        const nn_buffer_ref *a) {
    NN_TRY(nn_conv_params_check("cpu", kernel, cp));
    if (nn_conv_channels_last(cp)) return nn_cpu_conv_layouts(self, kernel, cp, a);
    const nn_conv_geometry g = cp->g;
    if (g.batch == 0) { /* the sum over no images */
        int64_t weights = (int64_t)cp->filters * (g.channels / nn_conv_groups(cp)) * g.kernel_h * g.kernel_w;
        if (kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT && !g.accumulate)
            for (int64_t i = 0; i < weights; i++) nn_cpu_f32(a[2])[i] = 0.0f;
        return NN_OK;
    }
    /* The op's columns: filled by the forward, read by the weight gradient. */
    float *kept = kernel == NN_KERNEL_CONV2D_FORWARD ? nn_cpu_f32(a[4])
                  : kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT ? nn_cpu_f32(a[3]) : NULL;
    const nn_conv_columns c = nn_conv_columns_plan(cp, kept != NULL, COLUMN_FLOATS);
    nn_buffer *scratch = kept ? NULL : self->alloc(self, (size_t)(c.group * c.per_image) * sizeof(float));
    if (!kept && !scratch) return nn_last_status();
    float *cols = kept ? kept : scratch->data;
    const float *x = kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT ? nn_cpu_f32(a[1]) : nn_cpu_f32(a[0]);
    const float *w = nn_cpu_f32(a[1]), *dy = nn_cpu_f32(a[0]);
    float *out = nn_cpu_f32(a[2]);
    nn_status st = NN_OK;
    for (int64_t first = 0; first < g.batch && st == NN_OK; first += c.group) {
        nn_conv_geometry part = g;
        part.batch = (int32_t)(g.batch - first < c.group ? g.batch - first : c.group);
        nn_gemm_params p = nn_conv_columns_gemm(kernel, cp, &c, part.batch, first);
        /* One GEMM per convolution group, over the group's filters and column rows. */
        if (kernel == NN_KERNEL_CONV2D_FORWARD) {
            st = nn_cpu_im2col(pool, &part, x + first * c.plane_x, cols);
            nn_gemm_epilogue_params e = {.gemm = p, .epilogue = cp->epilogue};
            const float *bias = nn_cpu_f32(a[3]);
            for (int64_t grp = 0; grp < c.groups && st == NN_OK; grp++) {
                const nn_conv_group_offsets o = nn_conv_columns_group(&c, grp);
                st = nn_cpu_gemm_epilogue(pool, &e, w + o.weight, cols + o.cols, out + first * c.plane_y + o.y,
                                          bias ? bias + o.bias : NULL);
            }
        } else if (kernel == NN_KERNEL_CONV2D_BACKWARD_DATA) {
            for (int64_t grp = 0; grp < c.groups && st == NN_OK; grp++) {
                const nn_conv_group_offsets o = nn_conv_columns_group(&c, grp);
                st = nn_cpu_gemm(pool, &p, w + o.weight, dy + first * c.plane_y + o.y, cols + o.cols);
            }
            if (st == NN_OK) st = nn_cpu_col2im(pool, &part, cols, out + first * c.plane_x);
        } else {
            if (!kept) st = nn_cpu_im2col(pool, &part, x + first * c.plane_x, cols);
            for (int64_t grp = 0; grp < c.groups && st == NN_OK; grp++) {
                const nn_conv_group_offsets o = nn_conv_columns_group(&c, grp);
                st = nn_cpu_gemm(pool, &p, dy + first * c.plane_y + o.y, cols + o.cols, out + o.weight);
            }
        }
    }
    if (scratch) self->free(self, scratch);
    if (st == NN_ERR_MEMORY) return nn_set_error(st, "cpu conv2d: out of scratch memory");
    return st;
}

bool nn_cpu_conv_keeps_columns(nn_backend *self, const nn_conv_params *p) {
    (void)self, (void)p;
    return true; /* every layer takes the column route here */
}
