/* run(): each kernel family's checks, push constants and dispatch size.
 * Push constants are the element offsets of the buffer arguments (four
 * words, or eight for kernels of more than four) then the kernel's
 * parameter struct from kernels.h; 64-bit sizes are narrowed
 * to 32 bits after checking they fit (so the shaders need no 64-bit
 * integers, which some devices lack). Semantics follow the CPU kernels,
 * the reference (src/backends/cpu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "vk_backend.h"

#define WG 256

/* Arguments that may be absent (a NULL buffer): elementwise SCALE's b, the
 * SGD velocity and norm. Bit i = argument i. */
static int optional_args(nn_kernel kernel, const void *params) {
    if (kernel == NN_KERNEL_SGD_UPDATE) return (1 << 2) | (1 << 3);
    if (kernel == NN_KERNEL_GATHER_SAMPLES || kernel == NN_KERNEL_GATHER_ROWS) return (1 << 1) | (1 << 2);
    if (kernel == NN_KERNEL_SGD_UPDATE_DEVICE_LR) return 1 << 2;
    if (kernel == NN_KERNEL_GEMM_EPILOGUE) return 1 << 3; /* checked against the flags in vk_gemm.c */
    if (kernel == NN_KERNEL_CONV2D_FORWARD) return (1 << 3) | (1 << 4); /* bias (checked in vk_conv.c), columns */
    if (kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT) return 1 << 3; /* columns */
    /* bias, columns (checked in vk_conv_pool.c) */
    if (kernel == NN_KERNEL_CONV2D_POOL_FORWARD) return (1 << 2) | (1 << 5);
    /* dweight, dbias (one of them: vk_conv_pool.c), columns */
    if (kernel == NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT) return (1 << 3) | (1 << 4) | (1 << 5);
    if (kernel == NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT) return (1 << 5) | (1 << 6); /* dweight, dbias (one of them) */
    if (kernel == NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD) return (1 << 2) | (1 << 6); /* the biases */
    /* biases; x (read only with mask_input: checked in vk_linear_head.c), dx */
    if (kernel == NN_KERNEL_LINEAR_HEAD_FORWARD) return (1 << 2) | (1 << 4);
    if (kernel == NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA) return (1 << 4) | (1 << 6);
    /* biases, dh, dx (checked in linear_head.c) */
    if (kernel == NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY) return (1 << 2) | (1 << 4) | (1 << 10) | (1 << 11);
    if (kernel == NN_KERNEL_ELEMENTWISE && ((const nn_pointwise_params *)params)->op == NN_EW_SCALE) return 1 << 1;
    return 0;
}

uint32_t vk_groups_for(uint64_t items) {
    uint64_t g = (items + WG - 1) / WG;
    return g > VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)(g ? g : 1);
}

/* Record one dispatch (vk_backend.h). */
nn_status vk_record(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant, const nn_buffer_ref *args,
                    int nargs, const void *tail, size_t tail_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
    return vk_record_ex(vk, kernel, pipe, variant, args, nargs, nn_kernel_written_args(kernel), tail,
                        tail_bytes, gx, gy, gz);
}

/* Whether `label` contains one of the comma-separated names in `list`
 * (NN_ENGINE_VULKAN_SKIP). */
static bool skipped(const char *list, const char *label) {
    for (const char *at = list; *at;) {
        const char *end = strchr(at, ',');
        size_t n = end ? (size_t)(end - at) : strlen(at);
        for (const char *l = label; n && *l; l++)
            if (strncmp(l, at, n) == 0) return true;
        at += n + (end != NULL);
    }
    return false;
}

/* One dispatch of pipeline `pipe` (its `variant`, or specialised by
 * `special` when that is not NULL); `work`, when given, is a split's work
 * area, whose counters and partials are tracked as written (the counters
 * are not an argument of their own, and whichever argument carries the
 * partials, the kernel writes them). */
static nn_status dispatch(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant, const uint32_t *special,
                          const nn_buffer_ref *args, int nargs, unsigned written, const vk_split_work *work,
                          const void *tail, size_t tail_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
    if (nargs > (int)vk->arg_bindings)
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: %d buffer arguments; kernels on this device bind at most %u",
                            nn_kernel_name(kernel), nargs, vk->arg_bindings);
    if (vk->labels && !vk->profile_label[0])
        snprintf(vk->profile_label, sizeof vk->profile_label, "%s", nn_kernel_name(kernel));
    vk_access accesses[VK_ARG_BINDINGS + 2];
    int access_count = 0;
    for (int i = 0; i < nargs; i++)
        if (args[i].buffer) accesses[access_count++] = vk_access_of(args[i], (written >> i) & 1u);
    if (work) {
        accesses[access_count++] = work->counter_access;
        accesses[access_count++] = vk_access_of(work->partials, true);
    }
    uint32_t push[VK_PUSH_BYTES / 4] = {0};
    uint32_t blocks[VK_ARG_BINDINGS] = {0};
    uint32_t fallback = 0;
    for (int i = 0; i < nargs; i++)
        if (args[i].buffer) {
            fallback = args[i].buffer->block->id;
            break;
        }
    for (int i = 0; i < VK_ARG_BINDINGS; i++) {
        if (i >= nargs || !args[i].buffer) {
            blocks[i] = fallback; /* unused by the shader; any valid block */
            continue;
        }
        VkDeviceSize byte = args[i].buffer->offset + args[i].offset;
        if (byte % 4 != 0)
            return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: argument %d is at byte offset %zu, not a multiple of 4",
                                nn_kernel_name(kernel), i, args[i].offset);
        blocks[i] = args[i].buffer->block->id;
        push[i] = (uint32_t)(byte / 4);
    }
    const size_t offset_words = nargs <= VK_SMALL_ARG_COUNT   ? VK_SMALL_ARG_COUNT
                                : nargs <= VK_BASE_ARG_BINDINGS ? VK_BASE_ARG_BINDINGS
                                                                : VK_ARG_BINDINGS;
    if (4 * offset_words + tail_bytes > VK_PUSH_BYTES)
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: parameters exceed %d bytes", nn_kernel_name(kernel),
                            VK_PUSH_BYTES);
    memcpy(push + offset_words, tail, tail_bytes);
    VkPipeline pipeline;
    VkDescriptorSet set;
    VkCommandBuffer cmd;
    if (special) NN_TRY(vk_pipeline_special(vk, pipe, special, &pipeline));
    else NN_TRY(vk_pipeline_get(vk, pipe, variant, &pipeline));
    NN_TRY(vk_descriptor_set(vk, blocks, &set));
    NN_TRY(vk_begin_command(vk, accesses, access_count, &cmd));
    vk->fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vk->fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vk->pipeline_layout, 0, 1, &set, 0, NULL);
    vk->fn.vkCmdPushConstants(cmd, vk->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                              (uint32_t)(4 * offset_words + tail_bytes), push);
    if (vk->skip[0] && skipped(vk->skip, vk->profile_label)) gx = gy = gz = 0;
    vk->fn.vkCmdDispatch(cmd, gx, gy, gz);
    if (vk->trace) { /* the groups, after the name vk_end_command prints */
        size_t used = strlen(vk->profile_label);
        snprintf(vk->profile_label + used, sizeof vk->profile_label - used, " (groups %u x %u x %u)", gx, gy, gz);
    }
    return vk_end_command(vk);
}

nn_status vk_record_ex(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant, const nn_buffer_ref *args,
                       int nargs, unsigned written, const void *tail, size_t tail_bytes, uint32_t gx, uint32_t gy,
                       uint32_t gz) {
    return dispatch(vk, kernel, pipe, variant, NULL, args, nargs, written, NULL, tail, tail_bytes, gx, gy, gz);
}

nn_status vk_record_split(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant,
                          const nn_buffer_ref *args, int nargs, unsigned written, const vk_split_work *work,
                          const void *tail, size_t tail_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
    return dispatch(vk, kernel, pipe, variant, NULL, args, nargs, written, work, tail, tail_bytes, gx, gy, gz);
}

nn_status vk_record_special(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe,
                            const uint32_t constants[VK_SPECIAL_CONSTANTS], const nn_buffer_ref *args, int nargs,
                            const vk_split_work *work, const void *tail, size_t tail_bytes, uint32_t gx,
                            uint32_t gy, uint32_t gz) {
    return dispatch(vk, kernel, pipe, 0, constants, args, nargs, nn_kernel_written_args(kernel), work, tail,
                    tail_bytes, gx, gy, gz);
}

static nn_status record(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_buffer_ref *args,
                        int nargs, const void *tail, size_t tail_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
    return vk_record(vk, kernel, pipe, 0, args, nargs, tail, tail_bytes, gx, gy, gz);
}

/* Sizes and element indices must fit the shaders' 32-bit arithmetic. */
nn_status vk_fits32(nn_kernel kernel, const char *what, int64_t value) {
    if (value < 0 || value > (int64_t)UINT32_MAX)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %s = %lld is outside the 32-bit range the shaders index",
                            nn_kernel_name(kernel), what, (long long)value);
    return NN_OK;
}

static nn_status run_conv(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_conv_geometry *g) {
    int64_t columns = (int64_t)g->batch * g->channels * g->kernel_h * g->kernel_w * g->out_h * g->out_w;
    int64_t pixels = (int64_t)g->batch * g->channels * g->height * g->width;
    NN_TRY(vk_fits32(kernel, "column entries", columns));
    NN_TRY(vk_fits32(kernel, "image pixels", pixels));
    if (g->batch < 0 || g->channels < 0 || g->kernel_h <= 0 || g->kernel_w <= 0 || g->stride_h <= 0 ||
        g->stride_w <= 0 || g->out_h < 0 || g->out_w < 0 || g->height < 0 || g->width < 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: invalid geometry", nn_kernel_name(kernel));
    bool im2col = kernel == NN_KERNEL_IM2COL;
    int64_t items = im2col ? columns : pixels;
    if (items == 0) return NN_OK;
    return record(vk, kernel, im2col ? VK_PIPE_IM2COL : VK_PIPE_COL2IM, a, 2, g, sizeof *g, vk_groups_for(items), 1, 1);
}

static nn_status run_pool(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_pool_params *p) {
    int64_t in = (int64_t)p->batch * p->channels * p->height * p->width;
    int64_t out = (int64_t)p->batch * p->channels * p->out_h * p->out_w;
    NN_TRY(vk_fits32(kernel, "input size", in));
    NN_TRY(vk_fits32(kernel, "output size", out));
    if (p->kernel <= 0 || p->stride <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: invalid window", nn_kernel_name(kernel));
    bool forward = kernel == NN_KERNEL_MAXPOOL_FORWARD;
    bool masked = kernel == NN_KERNEL_MAXPOOL_BACKWARD_MASKED;
    int64_t items = forward ? out : in;
    if (items == 0) return NN_OK;
    vk_pipeline_id pipe = forward ? VK_PIPE_MAXPOOL_FORWARD : masked ? VK_PIPE_MAXPOOL_BACKWARD_MASKED
                                                                     : VK_PIPE_MAXPOOL_BACKWARD;
    return record(vk, kernel, pipe, a, masked ? 4 : 3, p, sizeof *p, vk_groups_for(items), 1, 1);
}

static nn_status run_bias(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_bias_params *p) {
    NN_TRY(vk_fits32(kernel, "elements", p->outer * p->channels * p->inner));
    if (p->channels < 0) return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: channels < 0", nn_kernel_name(kernel));
    struct { uint32_t outer, inner, channels; int32_t accumulate; } push = {
        (uint32_t)p->outer, (uint32_t)p->inner, (uint32_t)p->channels, p->accumulate};
    if (kernel == NN_KERNEL_BIAS_ADD) {
        int64_t n = p->outer * p->channels * p->inner;
        if (n == 0) return NN_OK;
        return record(vk, kernel, VK_PIPE_BIAS_ADD, a, 2, &push, 12, vk_groups_for((uint64_t)n), 1, 1);
    }
    if (p->channels == 0) return NN_OK;
    /* bias_grad.comp: chunks of 2,048 entries per workgroup; a channel with
     * several adds them in its last workgroup (vk_split_work.c). A bias too
     * large for the work area is walked by one workgroup per channel. */
    int64_t count = p->outer * p->inner;
    int64_t chunks = count > 0 ? (count + 2047) / 2048 : 1;
    uint32_t gy = (uint32_t)p->channels > VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)p->channels;
    struct { uint32_t outer, inner, channels; int32_t accumulate; uint32_t chunks, chunk, counters; } grad = {
        push.outer, push.inner, push.channels, push.accumulate, 1, (uint32_t)((count + 2047) / 2048 * 2048), 0};
    if (chunks == 1 || chunks > VK_MAX_GROUPS ||
        !vk_split_work_fits((uint64_t)p->channels, (uint64_t)(chunks * p->channels)))
        return record(vk, kernel, VK_PIPE_BIAS_GRAD, a, 2, &grad, sizeof grad, 1, gy, 1);
    vk_split_work work;
    NN_TRY(vk_split_work_take(vk, (uint64_t)p->channels, (uint64_t)(chunks * p->channels), &work));
    grad.chunks = (uint32_t)chunks;
    grad.chunk = 2048;
    grad.counters = work.counters;
    nn_buffer_ref args[3] = {a[0], a[1], work.partials};
    return vk_record_split(vk, kernel, VK_PIPE_BIAS_GRAD, 0, args, 3, (1u << 1) | (1u << 2), &work, &grad,
                           sizeof grad, (uint32_t)chunks, gy, 1);
}

static nn_status run_pointwise(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a,
                               const nn_pointwise_params *p) {
    NN_TRY(vk_fits32(kernel, "n", p->n));
    uint32_t n = (uint32_t)p->n;
    switch (kernel) {
    case NN_KERNEL_RELU_FORWARD:
        if (!n) return NN_OK;
        return record(vk, kernel, VK_PIPE_RELU_FORWARD, a, 2, &n, 4, vk_groups_for(n), 1, 1);
    case NN_KERNEL_RELU_BACKWARD: {
        if (!n) return NN_OK;
        struct { uint32_t n; int32_t acc; } push = {n, p->accumulate};
        return record(vk, kernel, VK_PIPE_RELU_BACKWARD, a, 3, &push, sizeof push, vk_groups_for(n), 1, 1);
    }
    case NN_KERNEL_ELEMENTWISE: {
        if (p->op != NN_EW_ADD && p->op != NN_EW_MUL && p->op != NN_EW_SCALE)
            return nn_set_error(NN_ERR_BACKEND, "vulkan elementwise: unknown op %d", p->op);
        if (!n) return NN_OK;
        struct { uint32_t n; int32_t op, acc; float alpha; } push = {n, p->op, p->accumulate, p->alpha};
        return record(vk, kernel, VK_PIPE_ELEMENTWISE, a, 3, &push, sizeof push, vk_groups_for(n), 1, 1);
    }
    case NN_KERNEL_BROADCAST_SCALAR: {
        if (!n) return NN_OK;
        struct { uint32_t n; int32_t acc; float alpha; } push = {n, p->accumulate, p->alpha};
        return record(vk, kernel, VK_PIPE_BROADCAST_SCALAR, a, 2, &push, sizeof push, vk_groups_for(n), 1, 1);
    }
    case NN_KERNEL_REDUCE_SUM:
    case NN_KERNEL_SUM_SQUARES: {
        struct { uint32_t n; int32_t square_input, final, acc; float alpha; } push = {
            n, kernel == NN_KERNEL_SUM_SQUARES, 1, p->accumulate,
            kernel == NN_KERNEL_SUM_SQUARES ? 1.0f : p->alpha};
        /* Up to 4096 elements per workgroup in the first pass; one workgroup
         * is enough (and one pass) for small inputs. */
        uint64_t groups = ((uint64_t)n + 4095) / 4096;
        if (groups > 1024) groups = 1024;
        if (groups <= 1) return record(vk, kernel, VK_PIPE_REDUCE, a, 2, &push, sizeof push, 1, 1, 1);
        nn_buffer *partials = vk_buffer_alloc(&vk->base, groups * sizeof(float));
        if (!partials) return nn_last_status();
        nn_buffer_ref first[2] = {a[0], {partials, 0, 0}}, second[2] = {{partials, 0, 0}, a[1]};
        push.final = 0;
        nn_status st = record(vk, kernel, VK_PIPE_REDUCE, first, 2, &push, sizeof push, (uint32_t)groups, 1, 1);
        if (st == NN_OK) {
            push.n = (uint32_t)groups;
            push.square_input = 0;
            push.final = 1;
            st = record(vk, kernel, VK_PIPE_REDUCE, second, 2, &push, sizeof push, 1, 1, 1);
        }
        /* Freed at once: a later user of the range is ordered after these
         * two dispatches (vk_stream.c); a plan keeps it. */
        vk_scratch_done(vk, partials);
        return st;
    }
    default: break;
    }
    return nn_set_error(NN_ERR_BACKEND, "vulkan: kernel %s is not implemented", nn_kernel_name(kernel));
}

static nn_status run_softmax(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_softmax_params *p) {
    if (p->rows < 0 || p->cols <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: rows=%d cols=%d", nn_kernel_name(kernel), p->rows, p->cols);
    NN_TRY(vk_fits32(kernel, "rows * cols", (int64_t)p->rows * p->cols));
    if (p->rows == 0) return NN_OK;
    switch (kernel) {
    case NN_KERNEL_SOFTMAX_FORWARD:
        return record(vk, kernel, VK_PIPE_SOFTMAX_FORWARD, a, 2, p, sizeof *p, vk_groups_for(p->rows), 1, 1);
    case NN_KERNEL_SOFTMAX_BACKWARD:
        return record(vk, kernel, VK_PIPE_SOFTMAX_BACKWARD, a, 3, p, sizeof *p, vk_groups_for(p->rows), 1, 1);
    case NN_KERNEL_SOFTMAX_CE_FORWARD:
        return record(vk, kernel, VK_PIPE_SOFTMAX_CE_FORWARD, a, 4, p, sizeof *p, 1, 1, 1);
    case NN_KERNEL_SOFTMAX_CE_FUSED:
        return record(vk, kernel, VK_PIPE_SOFTMAX_CE_FUSED, a, 4, p, sizeof *p, 1, 1, 1);
    default:
        return record(vk, kernel, VK_PIPE_SOFTMAX_CE_BACKWARD, a, 4, p, sizeof *p,
                      vk_groups_for((uint64_t)p->rows * p->cols), 1, 1);
    }
}

static nn_status run_sgd(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_sgd_params *p) {
    NN_TRY(vk_fits32(kernel, "n", p->n));
    if (p->momentum != 0.0f && !a[2].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: momentum %g needs a velocity buffer",
                            nn_kernel_name(kernel), (double)p->momentum);
    if (p->n == 0) return NN_OK;
    struct {
        uint32_t n;
        float lr, momentum, weight_decay, clip_value, max_grad_norm;
        int32_t nesterov, has_velocity, has_norm;
    } push = {(uint32_t)p->n, p->lr, p->momentum, p->weight_decay, p->clip_value, p->max_grad_norm,
              p->nesterov, a[2].buffer != NULL, a[3].buffer != NULL};
    vk_pipeline_id pipe = kernel == NN_KERNEL_SGD_UPDATE ? VK_PIPE_SGD_UPDATE : VK_PIPE_SGD_UPDATE_DEVICE_LR;
    return record(vk, kernel, pipe, a, 4, &push, sizeof push, vk_groups_for((uint64_t)p->n), 1, 1);
}

static nn_status run_gather(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_gather_params *p) {
    if (p->rows < 0 || p->row_elems < 0 || p->positions < 0 || p->table_rows < 0 || p->plane <= 0 ||
        p->row_elems / p->plane > 4)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: invalid sizes (rows %d, row elements %d, plane %d)",
                            nn_kernel_name(kernel), p->rows, p->row_elems, p->plane);
    int64_t n = (int64_t)p->rows * p->row_elems;
    NN_TRY(vk_fits32(kernel, "output elements", n));
    NN_TRY(vk_fits32(kernel, "table bytes", (int64_t)p->table_rows * p->row_elems * 4));
    if (n == 0) return NN_OK;
    struct {
        int32_t rows, row_elems, first, stride, positions, table_rows, plane;
        float scale[4], shift[4];
        int32_t has_order, has_counter;
    } push = {p->rows, p->row_elems, p->first, p->stride, p->positions, p->table_rows, p->plane,
              {p->scale[0], p->scale[1], p->scale[2], p->scale[3]}, {p->shift[0], p->shift[1], p->shift[2], p->shift[3]},
              a[1].buffer != NULL, a[2].buffer != NULL};
    vk_pipeline_id pipe = kernel == NN_KERNEL_GATHER_SAMPLES ? VK_PIPE_GATHER_SAMPLES : VK_PIPE_GATHER_ROWS;
    return record(vk, kernel, pipe, a, 4, &push, sizeof push, vk_groups_for((uint64_t)n), 1, 1);
}

static nn_status run_metrics(vk_backend *vk, const nn_buffer_ref *a, const nn_metrics_params *p) {
    if (p->rows < 0 || p->cols <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan metrics_accumulate: rows=%d cols=%d", p->rows, p->cols);
    NN_TRY(vk_fits32(NN_KERNEL_METRICS_ACCUMULATE, "rows * cols", (int64_t)p->rows * p->cols));
    return record(vk, NN_KERNEL_METRICS_ACCUMULATE, VK_PIPE_METRICS_ACCUMULATE, a, 4, p, sizeof *p, 1, 1, 1);
}

/* dropout */
static nn_status run_dropout(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_dropout_params *p) {
    NN_TRY(vk_fits32(kernel, "n", p->n));
    if (p->n == 0) return NN_OK;
    struct { uint32_t n, threshold; float scale; uint32_t seed_lo, seed_hi; } push = {
        (uint32_t)p->n, p->threshold, p->scale, p->seed_lo, p->seed_hi};
    return record(vk, kernel, VK_PIPE_DROPOUT_FORWARD, a, 4, &push, sizeof push, vk_groups_for((uint64_t)p->n), 1, 1);
}

nn_status vk_run(nn_backend *self, nn_kernel kernel, const nn_buffer_ref *a, int nargs, const void *params) {
    vk_backend *vk = as_vk(self);
    NN_TRY(nn_kernel_check_call("vulkan", kernel, nargs, params));
    int optional = optional_args(kernel, params);
    for (int i = 0; i < nargs; i++)
        if (!a[i].buffer && !(optional & (1 << i)) && kernel != NN_KERNEL_GEMM && kernel != NN_KERNEL_GEMM_EPILOGUE)
            return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: buffer argument %d is missing", nn_kernel_name(kernel), i);
    switch (kernel) {
    case NN_KERNEL_GEMM: return vk_run_gemm(vk, a, params, 0);
    case NN_KERNEL_IM2COL:
    case NN_KERNEL_COL2IM: return run_conv(vk, kernel, a, params);
    case NN_KERNEL_CONV2D_FORWARD:
    case NN_KERNEL_CONV2D_BACKWARD_DATA:
    case NN_KERNEL_CONV2D_BACKWARD_WEIGHT: return vk_run_conv(vk, kernel, a, params);
    case NN_KERNEL_MAXPOOL_FORWARD:
    case NN_KERNEL_MAXPOOL_BACKWARD: return run_pool(vk, kernel, a, params);
    case NN_KERNEL_BIAS_ADD:
    case NN_KERNEL_BIAS_GRAD: return run_bias(vk, kernel, a, params);
    case NN_KERNEL_RELU_FORWARD:
    case NN_KERNEL_RELU_BACKWARD:
    case NN_KERNEL_ELEMENTWISE:
    case NN_KERNEL_BROADCAST_SCALAR:
    case NN_KERNEL_REDUCE_SUM:
    case NN_KERNEL_SUM_SQUARES: return run_pointwise(vk, kernel, a, params);
    case NN_KERNEL_SOFTMAX_FORWARD:
    case NN_KERNEL_SOFTMAX_BACKWARD:
    case NN_KERNEL_SOFTMAX_CE_FORWARD:
    case NN_KERNEL_SOFTMAX_CE_BACKWARD: return run_softmax(vk, kernel, a, params);
    case NN_KERNEL_GATHER_SAMPLES:
    case NN_KERNEL_GATHER_ROWS: return run_gather(vk, kernel, a, params);
    case NN_KERNEL_COUNTER_ADD:
        return record(vk, kernel, VK_PIPE_COUNTER_ADD, a, 1, params, sizeof(nn_counter_params), 1, 1, 1);
    case NN_KERNEL_FILL: {
        const nn_fill_params *f = params;
        NN_TRY(vk_fits32(kernel, "count", f->count));
        if (f->count == 0) return NN_OK;
        if (a[0].offset + (size_t)f->count * 4 > a[0].buffer->bytes)
            return nn_set_error(NN_ERR_ARGUMENT, "vulkan fill: %lld words from byte %zu run past the buffer's %zu bytes",
                                (long long)f->count, a[0].offset, a[0].buffer->bytes);
        struct { uint32_t n, bits; } push = {(uint32_t)f->count, f->bits};
        return record(vk, kernel, VK_PIPE_FILL, a, 1, &push, sizeof push, vk_groups_for((uint64_t)f->count), 1, 1);
    }
    case NN_KERNEL_METRICS_ACCUMULATE: return run_metrics(vk, a, params);
    case NN_KERNEL_SGD_UPDATE: return run_sgd(vk, kernel, a, params);
    /* fusion */
    case NN_KERNEL_GEMM_EPILOGUE: {
        const nn_gemm_epilogue_params *e = params;
        return vk_run_gemm(vk, a, &e->gemm, e->epilogue);
    }
    case NN_KERNEL_MAXPOOL_BACKWARD_MASKED: return run_pool(vk, kernel, a, params);
    case NN_KERNEL_SOFTMAX_CE_FUSED: return run_softmax(vk, kernel, a, params);
    case NN_KERNEL_SGD_UPDATE_DEVICE_LR: return run_sgd(vk, kernel, a, params);
    /* dropout */
    case NN_KERNEL_DROPOUT_FORWARD: return run_dropout(vk, kernel, a, params);
    case NN_KERNEL_CONV2D_POOL_FORWARD:
    case NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT:
    case NN_KERNEL_CONV2D_POOL_BACKWARD_DATA: return vk_run_conv_pool(vk, kernel, a, params);
    case NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT: return vk_run_conv_pool_chain(vk, a, params);
    case NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD: return vk_run_conv_pool_linear(vk, a, params);
    case NN_KERNEL_LINEAR_HEAD_FORWARD:
    case NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA:
    case NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY: return vk_run_linear_head(vk, kernel, a, params);
    case NN_KERNEL_COUNT: break;
    }
    return nn_set_error(NN_ERR_BACKEND, "vulkan: kernel %s is not implemented", nn_kernel_name(kernel));
}
