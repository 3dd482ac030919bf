/* The convolution kernels (kernels.h, nn_conv_params) on the CPU: the column
 * route, im2col + GEMM (+ col2im), in one of two arrangements:
 * - per image (the kernels' contract, one [rows, positions] block per
 *   image): one product per image. The forward keeps the column matrix for
 *   the weight gradient (nn_cpu_conv_keeps_columns) or, where none is
 *   passed, the columns go to a scratch buffer of the backend's (its free
 *   cache makes the reuse cheap), never more than about COLUMN_FLOATS of it
 *   at once: the images are taken in groups that fit;
 * - side by side, for layers with few output positions (side_by_side): a
 *   group's images in one [rows, images * positions] matrix and one product
 *   for the group, the outputs copied between filter-major and image-major
 *   order; nothing is kept: the weight gradient makes its own columns.
 * Channels-last activations are copied to and from dense ones around them
 * (conv_layout.h): the CPU computes in the dense layout. */
#include <string.h>

#include "base/error.h"
#include "cpu_backend.h"
#include "cpu_gemm.h"
#include "backends/conv_columns.h"
#include "backends/conv_layout.h"

#define COLUMN_FLOATS ((int64_t)1 << 24) /* 64 MiB */

/* Whether a layer's products run once for a group of images side by side:
 * where one image's product would be narrow (fewer output positions than
 * SIDE_BY_SIDE_POSITIONS) over a large weight matrix (a group's at least
 * SIDE_BY_SIDE_WEIGHTS floats), which the GEMM would pack again for every
 * image. Per image, ResNet's 7x7 and 4x4 layers ran up to 1.8x slower (512
 * filters over 4608 column rows, 16 positions); side by side, its 28x28 and
 * 14x14 layers ran up to 1.5x slower and LeNet-5's second (16 filters over
 * 150 rows, 64 positions) made its step 1.3x slower: the copies into and
 * out of filter-major order cost more than they save (bench/README.md). */
#define SIDE_BY_SIDE_POSITIONS 128
#define SIDE_BY_SIDE_WEIGHTS 65536

static bool side_by_side(const nn_conv_params *p) {
    const nn_conv_columns c = nn_conv_columns_plan(p, false, COLUMN_FLOATS);
    return c.positions < SIDE_BY_SIDE_POSITIONS && c.group_filters * c.group_k >= SIDE_BY_SIDE_WEIGHTS;
}

static nn_buffer *scratch(nn_backend *self, size_t bytes) { return self->alloc(self, bytes); }
static void scratch_done(nn_backend *self, nn_buffer *buffer) { self->free(self, buffer); }

nn_status nn_cpu_conv_layouts(nn_backend *self, nn_kernel kernel, const nn_conv_params *p, const nn_buffer_ref *a) {
    static const nn_conv_dense_host host = {scratch, scratch_done};
    NN_TRY(nn_conv_layout_check("cpu", kernel, p));
    return nn_conv_through_dense(self, &host, kernel, p, a, nn_kernel_arg_count(kernel));
}

/* dst [inner][outer][run] = src [outer][inner][run]: a group's outputs
 * between the images' order and the filters'. */
typedef struct swap_job {
    const float *src;
    float *dst;
    int64_t outer, inner, run;
} swap_job;

static void swap_runs(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    const swap_job *j = arg;
    for (int64_t e = begin; e < end; e++) { /* e = o * inner + i: src's order, read in turn */
        const int64_t o = e / j->inner, i = e % j->inner;
        memcpy(j->dst + (i * j->outer + o) * j->run, j->src + e * j->run, (size_t)j->run * sizeof(float));
    }
}

static void swap_outer(nn_thread_pool *pool, const float *src, float *dst, int64_t outer, int64_t inner, int64_t run) {
    swap_job job = {src, dst, outer, inner, run};
    nn_parallel_for(pool, outer * inner, NN_CPU_MIN_CHUNK / (run > 0 ? run : 1) + 1, swap_runs, &job);
}

/* One product per convolution group over a group of `part.batch` images
 * side by side: cols [K, B * P] and the outputs in filter-major order
 * ymajor [filters, B * P] (scratch); x, y and dy at the group's first image. */
static nn_status side_by_side_group(nn_thread_pool *pool, nn_kernel kernel, const nn_conv_params *cp,
                                    const nn_conv_columns *c, const nn_conv_geometry *part, bool first_group,
                                    const float *x, const float *w, const float *dy, const float *bias, float *out,
                                    float *cols, float *ymajor) {
    const nn_cpu_columns side = nn_cpu_columns_side_by_side(part);
    const int32_t span = (int32_t)(part->batch * c->positions); /* the products' width (or depth) */
    const int32_t gk = (int32_t)c->group_k, gf = (int32_t)c->group_filters;
    const int64_t filters = c->groups * c->group_filters;
    nn_status st = NN_OK;
    if (kernel != NN_KERNEL_CONV2D_FORWARD) swap_outer(pool, dy, ymajor, part->batch, filters, c->positions);
    if (kernel != NN_KERNEL_CONV2D_BACKWARD_DATA) st = nn_cpu_im2col_as(pool, part, side, x, cols);
    for (int64_t grp = 0; grp < c->groups && st == NN_OK; grp++) {
        const float *wg = w + grp * gf * gk;
        float *cg = cols + grp * gk * span, *yg = ymajor + grp * gf * span;
        nn_gemm_params p = {.batch = 1, .alpha = 1.0f, .precision = cp->precision};
        if (kernel == NN_KERNEL_CONV2D_FORWARD) { /* Y [gf, BP] = W [gf, gk] cols [gk, BP] */
            p.m = gf, p.n = span, p.k = gk, p.lda = gk, p.ldb = span, p.ldc = span;
            const nn_gemm_epilogue_params e = {.gemm = p, .epilogue = cp->epilogue};
            st = nn_cpu_gemm_epilogue(pool, &e, wg, cg, yg, bias ? bias + grp * gf : NULL);
        } else if (kernel == NN_KERNEL_CONV2D_BACKWARD_DATA) { /* dcols [gk, BP] = W^T [gk, gf] dY [gf, BP] */
            p.m = gk, p.n = span, p.k = gf, p.trans_a = 1, p.lda = gk, p.ldb = span, p.ldc = span;
            st = nn_cpu_gemm(pool, &p, wg, yg, cg);
        } else { /* dW [gf, gk] (+)= dY [gf, BP] cols^T [BP, gk] */
            p.m = gf, p.n = gk, p.k = span, p.trans_b = 1, p.lda = span, p.ldb = span, p.ldc = gk;
            p.beta = !first_group || cp->g.accumulate ? 1.0f : 0.0f;
            st = nn_cpu_gemm(pool, &p, yg, cg, out + grp * gf * gk);
        }
    }
    if (st != NN_OK) return st;
    if (kernel == NN_KERNEL_CONV2D_FORWARD) swap_outer(pool, ymajor, out, filters, part->batch, c->positions);
    if (kernel == NN_KERNEL_CONV2D_BACKWARD_DATA) st = nn_cpu_col2im_as(pool, part, side, cols, out);
    return st;
}

static nn_status conv_side_by_side(nn_backend *self, nn_thread_pool *pool, nn_kernel kernel, const nn_conv_params *cp,
                                   const nn_buffer_ref *a) {
    const nn_conv_geometry g = cp->g;
    const nn_conv_columns c = nn_conv_columns_plan(cp, false, COLUMN_FLOATS);
    const int64_t outputs = (int64_t)cp->filters * c.positions; /* per image */
    nn_buffer *scratch = self->alloc(self, (size_t)(c.group * (c.per_image + outputs)) * sizeof(float));
    if (!scratch) return nn_set_error(NN_ERR_MEMORY, "cpu conv2d: out of scratch memory");
    float *cols = scratch->data, *ymajor = cols + c.group * c.per_image;
    const float *x = nn_cpu_f32(a[kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT ? 1 : 0]);
    const float *w = nn_cpu_f32(a[1]), *dy = nn_cpu_f32(a[0]);
    const float *bias = kernel == NN_KERNEL_CONV2D_FORWARD ? nn_cpu_f32(a[3]) : NULL;
    float *out = nn_cpu_f32(a[2]);
    /* The output per image: y's, dx's; the weight gradient sums every group into one. */
    const int64_t out_step = kernel == NN_KERNEL_CONV2D_FORWARD         ? c.plane_y
                             : kernel == NN_KERNEL_CONV2D_BACKWARD_DATA ? c.plane_x
                                                                        : 0;
    nn_status st = NN_OK;
    for (int64_t first = 0; first < g.batch && st == NN_OK; first += c.group) {
        nn_conv_geometry part = g;
        part.batch = (int32_t)(g.batch - first < c.group ? g.batch - first : c.group);
        st = side_by_side_group(pool, kernel, cp, &c, &part, first == 0, x + first * c.plane_x, w,
                                dy + first * c.plane_y, bias, out + first * out_step, cols, ymajor);
    }
    self->free(self, scratch);
    if (st == NN_ERR_MEMORY) return nn_set_error(st, "cpu conv2d: out of scratch memory");
    return st;
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
    /* The op's columns, where given: filled by the forward, read by the weight gradient. */
    float *kept = kernel == NN_KERNEL_CONV2D_FORWARD ? nn_cpu_f32(a[4])
                  : kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT ? nn_cpu_f32(a[3]) : NULL;
    if (!kept && side_by_side(cp)) return conv_side_by_side(self, pool, kernel, cp, a);
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
    (void)self;
    return !side_by_side(p); /* side by side, the weight gradient makes its own */
}
