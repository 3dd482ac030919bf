/* run(): the registry's table of the Vulkan backend's entry points
 * (vk_run_<name>, kernel_list.h), and the entry points of the kernels that
 * are one dispatch of one shader: their checks, push constants and
 * dispatch sizes. The larger families have files of their own (vk_gemm.c,
 * vk_conv.c, vk_conv_pool.c, vk_linear_head.c). Semantics follow the CPU
 * kernels, the reference (src/backends/cpu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "vk_backend.h"

#define NN_ENTRY_SELF vk_backend
#define NN_ENTRY_RUN(name) vk_run_##name
NN_KERNEL_ENTRY_TABLE(kEntries)

nn_status vk_run(nn_backend *self, nn_kernel kernel, const nn_buffer_ref *a, int nargs, const void *params) {
    NN_TRY(nn_kernel_check_call("vulkan", kernel, a, nargs, params));
    return kEntries[kernel](as_vk(self), params, a);
}

bool vk_supports(nn_backend *self, nn_kernel kernel, const void *params) {
    switch (kernel) {
    case NN_KERNEL_CONV2D_POOL_FORWARD: return vk_conv_pool_fuses(self, params);
    case NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT: return vk_conv_pool_chains(self, params);
    case NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD: return vk_conv_pool_linear_fuses(self, params);
    case NN_KERNEL_LINEAR_HEAD_FORWARD: return vk_linear_head_fuses(self, params);
    case NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY: return vk_linear_head_loss_fuses(self, params);
    default: return false;
    }
}

/* ---- pointwise ---- */

nn_status vk_run_fill(vk_backend *vk, const nn_fill_params *f, const nn_buffer_ref *a) {
    NN_TRY(vk_fits32(NN_KERNEL_FILL, "count", f->count));
    if (f->count == 0) return NN_OK;
    if (a[0].offset + (size_t)f->count * 4 > a[0].buffer->bytes)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan fill: %lld words from byte %zu run past the buffer's %zu bytes",
                            (long long)f->count, a[0].offset, a[0].buffer->bytes);
    VK_PUSH(FILL) push = {.n = (uint32_t)f->count, .bits = f->bits};
    return vk_record(vk, NN_KERNEL_FILL, VK_PIPE_FILL, 0, a, 1, VK_PUSH_REF(push), vk_groups_for((uint64_t)f->count),
                     1, 1);
}

nn_status vk_run_relu_forward(vk_backend *vk, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    NN_TRY(vk_fits32(NN_KERNEL_RELU_FORWARD, "n", p->n));
    if (p->n == 0) return NN_OK;
    VK_PUSH(RELU_FORWARD) push = {.n = (uint32_t)p->n};
    return vk_record(vk, NN_KERNEL_RELU_FORWARD, VK_PIPE_RELU_FORWARD, 0, a, 2, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)p->n), 1, 1);
}

nn_status vk_run_relu_backward(vk_backend *vk, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    NN_TRY(vk_fits32(NN_KERNEL_RELU_BACKWARD, "n", p->n));
    if (p->n == 0) return NN_OK;
    VK_PUSH(RELU_BACKWARD) push = {.n = (uint32_t)p->n, .accumulate = p->accumulate};
    return vk_record(vk, NN_KERNEL_RELU_BACKWARD, VK_PIPE_RELU_BACKWARD, 0, a, 3, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)p->n), 1, 1);
}

static nn_status check_unary(nn_kernel kernel, const nn_pointwise_params *p) {
    NN_TRY(vk_fits32(kernel, "n", p->n));
    if (p->op < 0 || p->op >= NN_UNARY_COUNT)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: unknown function %d (unary_ops.h has %d)",
                            nn_kernel_name(kernel), p->op, (int)NN_UNARY_COUNT);
    return NN_OK;
}

nn_status vk_run_unary_forward(vk_backend *vk, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    NN_TRY(check_unary(NN_KERNEL_UNARY_FORWARD, p));
    if (p->n == 0) return NN_OK;
    VK_PUSH(UNARY_FORWARD) push = {.n = (uint32_t)p->n, .op = p->op, .alpha = p->alpha, .beta = p->beta};
    return vk_record(vk, NN_KERNEL_UNARY_FORWARD, VK_PIPE_UNARY_FORWARD, 0, a, 2, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)p->n), 1, 1);
}

nn_status vk_run_unary_backward(vk_backend *vk, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    NN_TRY(check_unary(NN_KERNEL_UNARY_BACKWARD, p));
    if (p->n == 0) return NN_OK;
    VK_PUSH(UNARY_BACKWARD) push = {
        .n = (uint32_t)p->n, .op = p->op, .accumulate = p->accumulate, .alpha = p->alpha, .beta = p->beta};
    return vk_record(vk, NN_KERNEL_UNARY_BACKWARD, VK_PIPE_UNARY_BACKWARD, 0, a, 4, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)p->n), 1, 1);
}

nn_status vk_run_cast(vk_backend *vk, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    NN_TRY(vk_fits32(NN_KERNEL_CAST, "n", p->n));
    if (p->op < 0 || p->op >= NN_CAST_OP_COUNT)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan cast: unknown conversion %d (nn_cast_op)", p->op);
    if (p->n == 0) return NN_OK;
    VK_PUSH(CAST) push = {.n = (uint32_t)p->n, .op = p->op};
    return vk_record(vk, NN_KERNEL_CAST, VK_PIPE_CAST, 0, a, 2, VK_PUSH_REF(push), vk_groups_for((uint64_t)p->n), 1,
                     1);
}

nn_status vk_run_elementwise(vk_backend *vk, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    NN_TRY(vk_fits32(NN_KERNEL_ELEMENTWISE, "n", p->n));
    if (p->op != NN_EW_ADD && p->op != NN_EW_MUL && p->op != NN_EW_SCALE)
        return nn_set_error(NN_ERR_BACKEND, "vulkan elementwise: unknown op %d", p->op);
    if (p->op != NN_EW_SCALE && !a[1].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan elementwise: op %d needs b (buffer argument 1)", p->op);
    if (p->n == 0) return NN_OK;
    VK_PUSH(ELEMENTWISE) push = {.n = (uint32_t)p->n, .op = p->op, .accumulate = p->accumulate, .alpha = p->alpha};
    return vk_record(vk, NN_KERNEL_ELEMENTWISE, VK_PIPE_ELEMENTWISE, 0, a, 3, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)p->n), 1, 1);
}

nn_status vk_run_broadcast_scalar(vk_backend *vk, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    NN_TRY(vk_fits32(NN_KERNEL_BROADCAST_SCALAR, "n", p->n));
    if (p->n == 0) return NN_OK;
    VK_PUSH(BROADCAST_SCALAR) push = {.n = (uint32_t)p->n, .accumulate = p->accumulate, .alpha = p->alpha};
    return vk_record(vk, NN_KERNEL_BROADCAST_SCALAR, VK_PIPE_BROADCAST_SCALAR, 0, a, 2, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)p->n), 1, 1);
}

/* REDUCE_SUM and SUM_SQUARES: up to 4096 elements per workgroup in a first
 * pass of partial sums; one workgroup (and one pass) for small inputs. */
static nn_status reduce(vk_backend *vk, nn_kernel kernel, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    NN_TRY(vk_fits32(kernel, "n", p->n));
    const bool squares = kernel == NN_KERNEL_SUM_SQUARES;
    VK_PUSH(REDUCE) push = {.n = (uint32_t)p->n, .square_input = squares, .final = 1, .accumulate = p->accumulate,
                            .alpha = squares ? 1.0f : p->alpha};
    uint64_t groups = ((uint64_t)p->n + 4095) / 4096;
    if (groups > 1024) groups = 1024;
    if (groups <= 1) return vk_record(vk, kernel, VK_PIPE_REDUCE, 0, a, 2, VK_PUSH_REF(push), 1, 1, 1);
    nn_buffer *partials = vk_scratch_alloc(vk, groups * sizeof(float));
    if (!partials) return nn_last_status();
    nn_buffer_ref first[2] = {a[0], {partials, 0, 0}}, second[2] = {{partials, 0, 0}, a[1]};
    push.final = 0;
    nn_status st = vk_record(vk, kernel, VK_PIPE_REDUCE, 0, first, 2, VK_PUSH_REF(push), (uint32_t)groups, 1, 1);
    if (st == NN_OK) {
        push.n = (uint32_t)groups;
        push.square_input = 0;
        push.final = 1;
        st = vk_record(vk, kernel, VK_PIPE_REDUCE, 0, second, 2, VK_PUSH_REF(push), 1, 1, 1);
    }
    /* Freed at once: a later user of the range is ordered after these two
     * dispatches (vk_stream.c); a plan keeps it. */
    vk_scratch_done(vk, partials);
    return st;
}

nn_status vk_run_reduce_sum(vk_backend *vk, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    return reduce(vk, NN_KERNEL_REDUCE_SUM, p, a);
}

nn_status vk_run_sum_squares(vk_backend *vk, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    return reduce(vk, NN_KERNEL_SUM_SQUARES, p, a);
}

nn_status vk_run_bias_add(vk_backend *vk, const nn_bias_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_BIAS_ADD;
    NN_TRY(vk_fits32(kernel, "elements", p->outer * p->channels * p->inner));
    if (p->channels < 0) return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: channels < 0", nn_kernel_name(kernel));
    const int64_t n = p->outer * p->channels * p->inner;
    if (n == 0) return NN_OK;
    VK_PUSH(BIAS_ADD) push = {.outer = (uint32_t)p->outer, .inner = (uint32_t)p->inner, .channels = (uint32_t)p->channels};
    return vk_record(vk, kernel, VK_PIPE_BIAS_ADD, 0, a, 2, VK_PUSH_REF(push), vk_groups_for((uint64_t)n), 1, 1);
}

/* bias_grad.comp's column mode: dy a [rows, channels] matrix, blocks of 64
 * channels, chunks of BIAS_COLUMN_ROWS rows (more where the work area or
 * the grid would overflow); false where it does not apply or fit. */
#define BIAS_COLUMN_BLOCK 64
#define BIAS_COLUMN_ROWS 512
static bool bias_grad_columns_fit(const nn_bias_params *p, int64_t *rows, int64_t *chunks, int64_t *blocks) {
    if (p->inner != 1 || p->channels < 16 || p->outer < 1) return false;
    *blocks = (p->channels + BIAS_COLUMN_BLOCK - 1) / BIAS_COLUMN_BLOCK;
    *rows = BIAS_COLUMN_ROWS;
    *chunks = (p->outer + *rows - 1) / *rows;
    while (*chunks > 1 &&
           (*chunks > VK_MAX_GROUPS || !vk_split_work_fits((uint64_t)*blocks, (uint64_t)(*chunks * p->channels)))) {
        *rows *= 2;
        *chunks = (p->outer + *rows - 1) / *rows;
    }
    return *blocks <= VK_MAX_GROUPS;
}

static nn_status bias_grad_columns(vk_backend *vk, const nn_bias_params *p, const nn_buffer_ref *a, int64_t rows,
                                   int64_t chunks, int64_t blocks) {
    VK_PUSH(BIAS_GRAD) push = {.outer = (uint32_t)p->outer, .inner = 1, .channels = (uint32_t)p->channels,
                               .accumulate = p->accumulate, .chunks = (uint32_t)chunks, .chunk = (uint32_t)rows,
                               .columns = 1};
    if (chunks == 1)
        return vk_record(vk, NN_KERNEL_BIAS_GRAD, VK_PIPE_BIAS_GRAD, 0, a, 2, VK_PUSH_REF(push), 1, (uint32_t)blocks, 1);
    vk_split_work work;
    NN_TRY(vk_split_work_take(vk, (uint64_t)blocks, (uint64_t)(chunks * p->channels), &work));
    push.counters = work.counters;
    nn_buffer_ref args[3] = {a[0], a[1], work.partials};
    return vk_record_split(vk, NN_KERNEL_BIAS_GRAD, VK_PIPE_BIAS_GRAD, 0, args, 3, NN_ARG(1) | NN_ARG(2), &work,
                           VK_PUSH_REF(push), (uint32_t)chunks, (uint32_t)blocks, 1);
}

/* bias_grad.comp: chunks of 2,048 entries per workgroup; a channel with
 * several adds them in its last workgroup (vk_split_work.c). A bias too
 * large for the work area is walked by one workgroup per channel. Where dy
 * is a matrix of rows (inner 1) and at least 16 channels, the column mode
 * above reads its rows whole instead. */
nn_status vk_run_bias_grad(vk_backend *vk, const nn_bias_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_BIAS_GRAD;
    NN_TRY(vk_fits32(kernel, "elements", p->outer * p->channels * p->inner));
    if (p->channels < 0) return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: channels < 0", nn_kernel_name(kernel));
    if (p->channels == 0) return NN_OK;
    int64_t rows, column_chunks, blocks;
    if (bias_grad_columns_fit(p, &rows, &column_chunks, &blocks))
        return bias_grad_columns(vk, p, a, rows, column_chunks, blocks);
    const int64_t count = p->outer * p->inner;
    const int64_t chunks = count > 0 ? (count + 2047) / 2048 : 1;
    const uint32_t gy = (uint32_t)p->channels > VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)p->channels;
    VK_PUSH(BIAS_GRAD) push = {.outer = (uint32_t)p->outer, .inner = (uint32_t)p->inner,
                               .channels = (uint32_t)p->channels, .accumulate = p->accumulate, .chunks = 1,
                               .chunk = (uint32_t)((count + 2047) / 2048 * 2048)};
    if (chunks == 1 || chunks > VK_MAX_GROUPS ||
        !vk_split_work_fits((uint64_t)p->channels, (uint64_t)(chunks * p->channels)))
        return vk_record(vk, kernel, VK_PIPE_BIAS_GRAD, 0, a, 2, VK_PUSH_REF(push), 1, gy, 1);
    vk_split_work work;
    NN_TRY(vk_split_work_take(vk, (uint64_t)p->channels, (uint64_t)(chunks * p->channels), &work));
    push.chunks = (uint32_t)chunks;
    push.chunk = 2048;
    push.counters = work.counters;
    nn_buffer_ref args[3] = {a[0], a[1], work.partials};
    return vk_record_split(vk, kernel, VK_PIPE_BIAS_GRAD, 0, args, 3, NN_ARG(1) | NN_ARG(2), &work, VK_PUSH_REF(push),
                           (uint32_t)chunks, gy, 1);
}

nn_status vk_run_dropout_forward(vk_backend *vk, const nn_dropout_params *p, const nn_buffer_ref *a) {
    NN_TRY(vk_fits32(NN_KERNEL_DROPOUT_FORWARD, "n", p->n));
    if (p->n == 0) return NN_OK;
    VK_PUSH(DROPOUT_FORWARD) push = {.n = (uint32_t)p->n, .threshold = p->threshold, .scale = p->scale,
                                     .seed_lo = p->seed_lo, .seed_hi = p->seed_hi};
    return vk_record(vk, NN_KERNEL_DROPOUT_FORWARD, VK_PIPE_DROPOUT_FORWARD, 0, a, 4, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)p->n), 1, 1);
}

/* ---- max pooling ---- */

static nn_status pool(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_pool_params *p,
                      const nn_buffer_ref *a) {
    const int64_t in = (int64_t)p->batch * p->channels * p->height * p->width;
    const int64_t out = (int64_t)p->batch * p->channels * p->out_h * p->out_w;
    NN_TRY(vk_fits32(kernel, "input size", in));
    NN_TRY(vk_fits32(kernel, "output size", out));
    if (p->kernel <= 0 || p->stride <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: invalid window", nn_kernel_name(kernel));
    const int64_t items = kernel == NN_KERNEL_MAXPOOL_FORWARD ? out : in;
    if (items == 0) return NN_OK;
    const int args = nn_kernel_arg_count(kernel);
    VK_PUSH(POOL) push = {.batch = p->batch, .channels = p->channels, .height = p->height, .width = p->width,
                          .kernel = p->kernel, .stride = p->stride, .pad = p->pad, .out_h = p->out_h,
                          .out_w = p->out_w, .accumulate = p->accumulate,
                          .channels_last = p->layout == NN_LAYOUT_CHANNELS_LAST};
    /* Channels-last in fours: an invocation takes four channels of a pixel,
     * vector loads, and its index arithmetic once for the four. */
    push.quads = push.channels_last && p->channels % 4 == 0;
    for (int i = 0; i < args; i++) push.quads = push.quads && vk_ref_aligned16(a[i]);
    return vk_record(vk, kernel, pipe, 0, a, args, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)(push.quads ? items / 4 : items)), 1, 1);
}

nn_status vk_run_maxpool_forward(vk_backend *vk, const nn_pool_params *p, const nn_buffer_ref *a) {
    return pool(vk, NN_KERNEL_MAXPOOL_FORWARD, VK_PIPE_MAXPOOL_FORWARD, p, a);
}

nn_status vk_run_maxpool_backward(vk_backend *vk, const nn_pool_params *p, const nn_buffer_ref *a) {
    return pool(vk, NN_KERNEL_MAXPOOL_BACKWARD, VK_PIPE_MAXPOOL_BACKWARD, p, a);
}

nn_status vk_run_maxpool_backward_masked(vk_backend *vk, const nn_pool_params *p, const nn_buffer_ref *a) {
    return pool(vk, NN_KERNEL_MAXPOOL_BACKWARD_MASKED, VK_PIPE_MAXPOOL_BACKWARD_MASKED, p, a);
}

/* ---- softmax and its losses ---- */

/* The sizes every softmax kernel takes. */
static nn_status softmax_check(nn_kernel kernel, const nn_softmax_params *p) {
    if (p->rows < 0 || p->cols <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: rows=%d cols=%d", nn_kernel_name(kernel), p->rows, p->cols);
    return vk_fits32(kernel, "rows * cols", (int64_t)p->rows * p->cols);
}

static nn_status softmax(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_softmax_params *p,
                         const nn_buffer_ref *a, uint32_t groups) {
    NN_TRY(softmax_check(kernel, p));
    if (p->rows == 0) return NN_OK;
    VK_PUSH(SOFTMAX) push = {.rows = p->rows, .cols = p->cols, .accumulate = p->accumulate};
    return vk_record(vk, kernel, pipe, 0, a, nn_kernel_arg_count(kernel), VK_PUSH_REF(push), groups, 1, 1);
}

nn_status vk_run_softmax_forward(vk_backend *vk, const nn_softmax_params *p, const nn_buffer_ref *a) {
    return softmax(vk, NN_KERNEL_SOFTMAX_FORWARD, VK_PIPE_SOFTMAX_FORWARD, p, a, vk_groups_for((uint64_t)p->rows));
}

nn_status vk_run_softmax_backward(vk_backend *vk, const nn_softmax_params *p, const nn_buffer_ref *a) {
    return softmax(vk, NN_KERNEL_SOFTMAX_BACKWARD, VK_PIPE_SOFTMAX_BACKWARD, p, a, vk_groups_for((uint64_t)p->rows));
}

#define CE_WIDE_COLS 32    /* rows wider than this take a workgroup each (softmax_ce_rows.glsl) */
#define CE_MAX_GROUPS 4096 /* workgroups of a cross-entropy kernel: the rest taken in turn */

/* softmax_ce_rows.glsl: narrow rows an invocation each, wide ones a
 * workgroup each; several workgroups add their losses in the split work
 * area, so the mean is one sum in a fixed order. */
static nn_status cross_entropy(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_softmax_params *p,
                               const nn_buffer_ref *a) {
    NN_TRY(softmax_check(kernel, p));
    if (p->rows == 0) return NN_OK;
    VK_PUSH(SOFTMAX) push = {.rows = p->rows, .cols = p->cols, .accumulate = p->accumulate,
                             .row_groups = p->cols > CE_WIDE_COLS};
    int64_t groups = push.row_groups ? p->rows : ((int64_t)p->rows + 255) / 256;
    if (groups > CE_MAX_GROUPS) groups = CE_MAX_GROUPS;
    nn_buffer_ref args[5] = {a[0], a[1], a[2], a[3], {0}};
    if (groups == 1) return vk_record(vk, kernel, pipe, 0, args, 5, VK_PUSH_REF(push), 1, 1, 1);
    vk_split_work work;
    NN_TRY(vk_split_work_take(vk, 1, (uint64_t)groups * 2, &work));
    push.counters = work.counters;
    args[4] = work.partials;
    return vk_record_split(vk, kernel, pipe, 0, args, 5, nn_kernel_written_args(kernel) | NN_ARG(4), &work,
                           VK_PUSH_REF(push), (uint32_t)groups, 1, 1);
}

nn_status vk_run_softmax_ce_forward(vk_backend *vk, const nn_softmax_params *p, const nn_buffer_ref *a) {
    return cross_entropy(vk, NN_KERNEL_SOFTMAX_CE_FORWARD, VK_PIPE_SOFTMAX_CE_FORWARD, p, a);
}

nn_status vk_run_softmax_ce_fused(vk_backend *vk, const nn_softmax_params *p, const nn_buffer_ref *a) {
    return cross_entropy(vk, NN_KERNEL_SOFTMAX_CE_FUSED, VK_PIPE_SOFTMAX_CE_FUSED, p, a);
}

nn_status vk_run_softmax_ce_backward(vk_backend *vk, const nn_softmax_params *p, const nn_buffer_ref *a) {
    return softmax(vk, NN_KERNEL_SOFTMAX_CE_BACKWARD, VK_PIPE_SOFTMAX_CE_BACKWARD, p, a,
                   vk_groups_for((uint64_t)p->rows * (uint64_t)(p->cols > 0 ? p->cols : 0)));
}

nn_status vk_run_metrics_accumulate(vk_backend *vk, const nn_metrics_params *p, const nn_buffer_ref *a) {
    if (p->rows < 0 || p->cols <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan metrics_accumulate: rows=%d cols=%d", p->rows, p->cols);
    NN_TRY(vk_fits32(NN_KERNEL_METRICS_ACCUMULATE, "rows * cols", (int64_t)p->rows * p->cols));
    VK_PUSH(METRICS_ACCUMULATE) push = {.rows = p->rows, .cols = p->cols};
    return vk_record(vk, NN_KERNEL_METRICS_ACCUMULATE, VK_PIPE_METRICS_ACCUMULATE, 0, a, 4, VK_PUSH_REF(push), 1, 1,
                     1);
}

/* ---- optimizers ---- */

static nn_status sgd(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_sgd_params *p,
                     const nn_buffer_ref *a) {
    NN_TRY(vk_fits32(kernel, "n", p->n));
    if (p->momentum != 0.0f && !a[2].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: momentum %g needs a velocity buffer", nn_kernel_name(kernel),
                            (double)p->momentum);
    if (p->n == 0) return NN_OK;
    VK_PUSH(SGD_UPDATE) push = {.n = (uint32_t)p->n, .lr = p->lr, .momentum = p->momentum,
                                .weight_decay = p->weight_decay, .clip_value = p->clip_value,
                                .max_grad_norm = p->max_grad_norm, .nesterov = p->nesterov,
                                .has_velocity = a[2].buffer != NULL, .has_norm = a[3].buffer != NULL,
                                .has_skip = a[4].buffer != NULL};
    return vk_record(vk, kernel, pipe, 0, a, 5, VK_PUSH_REF(push), vk_groups_for((uint64_t)p->n), 1, 1);
}

nn_status vk_run_sgd_update(vk_backend *vk, const nn_sgd_params *p, const nn_buffer_ref *a) {
    return sgd(vk, NN_KERNEL_SGD_UPDATE, VK_PIPE_SGD_UPDATE, p, a);
}

nn_status vk_run_sgd_update_device_lr(vk_backend *vk, const nn_sgd_params *p, const nn_buffer_ref *a) {
    return sgd(vk, NN_KERNEL_SGD_UPDATE_DEVICE_LR, VK_PIPE_SGD_UPDATE_DEVICE_LR, p, a);
}

/* ---- device-side training loops ---- */

static nn_status gather(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_gather_params *p,
                        const nn_buffer_ref *a) {
    if (p->rows < 0 || p->row_elems < 0 || p->positions < 0 || p->table_rows < 0 || p->plane <= 0 ||
        p->row_elems / p->plane > 4)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: invalid sizes (rows %d, row elements %d, plane %d)",
                            nn_kernel_name(kernel), p->rows, p->row_elems, p->plane);
    NN_TRY(nn_gather_check_augment("vulkan", kernel, p));
    const int64_t n = (int64_t)p->rows * p->row_elems;
    NN_TRY(vk_fits32(kernel, "output elements", n));
    NN_TRY(vk_fits32(kernel, "table bytes", (int64_t)p->table_rows * p->row_elems * 4));
    if (n == 0) return NN_OK;
    VK_PUSH(GATHER) push = {.rows = p->rows, .row_elems = p->row_elems, .first = p->first, .stride = p->stride,
                            .positions = p->positions, .table_rows = p->table_rows, .plane = p->plane,
                            .has_order = a[1].buffer != NULL, .has_counter = a[2].buffer != NULL,
                            .width = p->width, .crop_pad = p->crop_pad, .flip = p->flip, .seed_lo = p->seed_lo,
                            .seed_hi = p->seed_hi, .draw_row = p->draw_row};
    memcpy(push.scale, p->scale, sizeof push.scale);
    memcpy(push.shift, p->shift, sizeof push.shift);
    const int nargs = kernel == NN_KERNEL_GATHER_SAMPLES ? 5 : 4;
    if ((p->crop_pad || p->flip) && (nargs < 5 || !a[4].buffer))
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: augmentation needs the draw counter (argument 4)",
                            nn_kernel_name(kernel));
    return vk_record(vk, kernel, pipe, 0, a, nargs, VK_PUSH_REF(push), vk_groups_for((uint64_t)n), 1, 1);
}

nn_status vk_run_gather_samples(vk_backend *vk, const nn_gather_params *p, const nn_buffer_ref *a) {
    return gather(vk, NN_KERNEL_GATHER_SAMPLES, VK_PIPE_GATHER_SAMPLES, p, a);
}

nn_status vk_run_gather_rows(vk_backend *vk, const nn_gather_params *p, const nn_buffer_ref *a) {
    return gather(vk, NN_KERNEL_GATHER_ROWS, VK_PIPE_GATHER_ROWS, p, a);
}

nn_status vk_run_counter_add(vk_backend *vk, const nn_counter_params *p, const nn_buffer_ref *a) {
    VK_PUSH(COUNTER_ADD) push = {.delta = p->delta, .has_skip = a[1].buffer != NULL};
    return vk_record(vk, NN_KERNEL_COUNTER_ADD, VK_PIPE_COUNTER_ADD, 0, a, 2, VK_PUSH_REF(push), 1, 1, 1);
}
