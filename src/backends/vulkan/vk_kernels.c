/* run(): each kernel family's checks, push constants and dispatch size.
 * Push constants are four element offsets (one per buffer argument) then
 * the kernel's parameter struct from kernels.h; 64-bit sizes are narrowed
 * to 32 bits after checking they fit (so the shaders need no 64-bit
 * integers, which some devices lack). Semantics follow the CPU kernels,
 * the reference (src/backends/cpu). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "vk_backend.h"

#define WG 256
#define MAX_GROUPS 65535u /* the workgroup count every device allows per dimension */

static const int kArgCount[NN_KERNEL_COUNT] = {
    [NN_KERNEL_GEMM] = 3,           [NN_KERNEL_IM2COL] = 2,
    [NN_KERNEL_COL2IM] = 2,         [NN_KERNEL_MAXPOOL_FORWARD] = 3,
    [NN_KERNEL_MAXPOOL_BACKWARD] = 3, [NN_KERNEL_BIAS_ADD] = 2,
    [NN_KERNEL_BIAS_GRAD] = 2,      [NN_KERNEL_RELU_FORWARD] = 2,
    [NN_KERNEL_RELU_BACKWARD] = 3,  [NN_KERNEL_ELEMENTWISE] = 3,
    [NN_KERNEL_SOFTMAX_FORWARD] = 2, [NN_KERNEL_SOFTMAX_BACKWARD] = 3,
    [NN_KERNEL_SOFTMAX_CE_FORWARD] = 4, [NN_KERNEL_SOFTMAX_CE_BACKWARD] = 4,
    [NN_KERNEL_REDUCE_SUM] = 2,     [NN_KERNEL_BROADCAST_SCALAR] = 2,
    [NN_KERNEL_SUM_SQUARES] = 2,    [NN_KERNEL_SGD_UPDATE] = 4,
};

/* Arguments that may be absent (a NULL buffer): elementwise SCALE's b, the
 * SGD velocity and norm. Bit i = argument i. */
static int optional_args(nn_kernel kernel, const void *params) {
    if (kernel == NN_KERNEL_SGD_UPDATE) return (1 << 2) | (1 << 3);
    if (kernel == NN_KERNEL_ELEMENTWISE && ((const nn_pointwise_params *)params)->op == NN_EW_SCALE) return 1 << 1;
    return 0;
}

static uint32_t groups_for(uint64_t items) {
    uint64_t g = (items + WG - 1) / WG;
    return g > MAX_GROUPS ? MAX_GROUPS : (uint32_t)(g ? g : 1);
}

/* Record one dispatch: bind the blocks of the arguments, push their element
 * offsets followed by `tail`, dispatch gx x gy x gz workgroups. */
static nn_status record_variant(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant,
                               const nn_buffer_ref *args, int nargs, const void *tail, size_t tail_bytes,
                               uint32_t gx, uint32_t gy, uint32_t gz);

static nn_status record(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_buffer_ref *args,
                        int nargs, const void *tail, size_t tail_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
    return record_variant(vk, kernel, pipe, 0, args, nargs, tail, tail_bytes, gx, gy, gz);
}

static nn_status record_variant(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant,
                               const nn_buffer_ref *args,
                               int nargs, const void *tail, size_t tail_bytes, uint32_t gx, uint32_t gy,
                               uint32_t gz) {
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
    if (16 + tail_bytes > VK_PUSH_BYTES)
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: parameters exceed %d bytes", nn_kernel_name(kernel),
                            VK_PUSH_BYTES);
    memcpy(push + 4, tail, tail_bytes);
    VkPipeline pipeline;
    VkDescriptorSet set;
    VkCommandBuffer cmd;
    NN_TRY(vk_pipeline_get(vk, pipe, variant, &pipeline));
    NN_TRY(vk_descriptor_set(vk, blocks, &set));
    NN_TRY(vk_begin_command(vk, &cmd));
    vk->fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vk->fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vk->pipeline_layout, 0, 1, &set, 0, NULL);
    vk->fn.vkCmdPushConstants(cmd, vk->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                              (uint32_t)(16 + tail_bytes), push);
    vk->fn.vkCmdDispatch(cmd, gx, gy, gz);
    return vk_end_command(vk);
}

/* Sizes and element indices must fit the shaders' 32-bit arithmetic. */
static nn_status fits32(nn_kernel kernel, const char *what, int64_t value) {
    if (value < 0 || value > (int64_t)UINT32_MAX)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %s = %lld is outside the 32-bit range the shaders index",
                            nn_kernel_name(kernel), what, (long long)value);
    return NN_OK;
}

/* ---- GEMM ---- */

typedef struct gemm_push {
    uint32_t m, n, k, trans_a, trans_b, lda, ldb, ldc, batch, summed, stride_a, stride_b, stride_c;
    float alpha, beta;
    uint32_t splits, split_steps;
} gemm_push;

/* Whether the shader may read a matrix as vec4s along its contiguous side:
 * its element offset, leading dimension, batch stride and that side's
 * extent must all be multiples of 4 (then a vec4 is wholly inside or
 * outside the matrix). NN_ENGINE_VULKAN_GEMM_SCALAR=1 turns it off, to
 * compare in benchmarks. */
static uint32_t vec4_ok(nn_buffer_ref ref, int64_t ld, int64_t stride, int64_t batch, int64_t contiguous) {
    const char *scalar = getenv("NN_ENGINE_VULKAN_GEMM_SCALAR");
    if (scalar && strcmp(scalar, "1") == 0) return 0;
    if (!ref.buffer) return 0;
    uint64_t byte = ref.buffer->offset + ref.offset;
    return byte % 16 == 0 && ld % 4 == 0 && (batch == 1 || stride % 4 == 0) && contiguous % 4 == 0;
}

/* Workgroups that keep a large GPU busy (two per multiprocessor on a
 * 132-SM H100/H200); fewer output tiles than this over a long k get split-K. */
#define SPLIT_TARGET_GROUPS 264
#define MAX_SPLITS 64

static int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

/* The tile configuration. long_k: the product will be split along k, so
 * the tile is picked for its efficiency, not for how many tiles there are. */
static vk_pipeline_id choose_gemm(int64_t m, int64_t n, int64_t outputs, bool long_k) {
    const char *force = getenv("NN_ENGINE_VULKAN_GEMM_TILES"); /* for benchmarks: large|large16|large-db|large16-db|medium|small|thin */
    if (force && *force) {
        if (!strcmp(force, "large")) return VK_PIPE_GEMM_LARGE;
        if (!strcmp(force, "large16")) return VK_PIPE_GEMM_LARGE16;
        if (!strcmp(force, "large-db")) return VK_PIPE_GEMM_LARGE_DB;
        if (!strcmp(force, "large16-db")) return VK_PIPE_GEMM_LARGE16_DB;
        if (!strcmp(force, "medium")) return VK_PIPE_GEMM_MEDIUM;
        if (!strcmp(force, "small")) return VK_PIPE_GEMM_SMALL;
        if (!strcmp(force, "thin")) return VK_PIPE_GEMM_THIN;
    }
    if (long_k) {
        if (m >= 128 && n >= 128) return VK_PIPE_GEMM_LARGE;
        if (m >= 64 && n >= 64) return VK_PIPE_GEMM_MEDIUM;
        return m <= 16 ? VK_PIPE_GEMM_THIN : VK_PIPE_GEMM_SMALL;
    }
    /* Big tiles only when there are enough of them to fill a large GPU. */
    if (m >= 128 && n >= 128 && ceil_div(m, 128) * ceil_div(n, 128) * outputs >= 96) return VK_PIPE_GEMM_LARGE;
    if (m >= 64 && n >= 64 && ceil_div(m, 64) * ceil_div(n, 64) * outputs >= 96) return VK_PIPE_GEMM_MEDIUM;
    if (m <= 16) return VK_PIPE_GEMM_THIN;
    return VK_PIPE_GEMM_SMALL;
}

static nn_status run_gemm(vk_backend *vk, const nn_buffer_ref *a, const nn_gemm_params *p) {
    bool ok = p->m >= 0 && p->n >= 0 && p->k >= 0 && p->batch >= 0 && p->stride_a >= 0 && p->stride_b >= 0 &&
              p->stride_c >= 0 && p->lda >= (p->trans_a ? p->m : p->k) && p->ldb >= (p->trans_b ? p->k : p->n) &&
              p->ldc >= p->n;
    bool empty = p->m == 0 || p->n == 0 || p->batch == 0;
    if (ok && !empty) {
        if (!a[2].buffer || (p->k > 0 && p->alpha != 0.0f && (!a[0].buffer || !a[1].buffer))) ok = false;
        if (p->batch > 1 && p->stride_c != 0 && p->stride_c < (int64_t)(p->m - 1) * p->ldc + p->n) ok = false;
    }
    if (!ok)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan gemm m=%d n=%d k=%d batch=%d lda=%d ldb=%d ldc=%d: %s", p->m,
                            p->n, p->k, p->batch, p->lda, p->ldb, p->ldc, "invalid sizes or strides");
    if (empty) return NN_OK;
    bool summed = p->stride_c == 0 && p->batch > 1;
    /* Nothing to multiply: C = beta C, as the CPU (no 0 * NaN from A or B). */
    int32_t k = p->alpha == 0.0f ? 0 : p->k;
    /* The largest index each matrix reaches must fit 32 bits. */
    int64_t last = p->batch - 1;
    NN_TRY(fits32(NN_KERNEL_GEMM, "A's last index", last * p->stride_a + (int64_t)p->lda * (p->trans_a ? p->k : p->m)));
    NN_TRY(fits32(NN_KERNEL_GEMM, "B's last index", last * p->stride_b + (int64_t)p->ldb * (p->trans_b ? p->n : p->k)));
    NN_TRY(fits32(NN_KERNEL_GEMM, "C's last index", (summed ? 0 : last * p->stride_c) + (int64_t)p->ldc * p->m));
    int64_t outputs = summed ? 1 : p->batch;
    int64_t products = summed ? p->batch : 1;
    /* A long walk over k (in slices of 16) into one output may be split. */
    bool long_k = outputs == 1 && products * ceil_div(k, 16) >= 64;
    vk_pipeline_id pipe = choose_gemm(p->m, p->n, outputs, long_k);
    uint32_t bm, bn, bk;
    vk_gemm_tiles(pipe, &bm, &bn, &bk);
    int64_t gx = ceil_div(p->n, bn), gy = ceil_div(p->m, bm);
    if (gx > MAX_GROUPS || gy > MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan gemm: m=%d n=%d needs more than %u workgroups per dimension",
                            p->m, p->n, MAX_GROUPS);
    gemm_push push = {(uint32_t)p->m, (uint32_t)p->n, (uint32_t)k, p->trans_a != 0, p->trans_b != 0,
                      (uint32_t)p->lda, (uint32_t)p->ldb, (uint32_t)p->ldc, (uint32_t)p->batch, summed,
                      (uint32_t)p->stride_a, (uint32_t)p->stride_b, (uint32_t)p->stride_c, p->alpha, p->beta,
                      1, 0};
    int variant = (int)vec4_ok(a[0], p->lda, p->stride_a, p->batch, p->trans_a ? p->m : k) |
                  (int)vec4_ok(a[1], p->ldb, p->stride_b, p->batch, p->trans_b ? k : p->n) << 1;
    /* Split-K: each of `splits` workgroup layers walks an equal share of the
     * (product, k slice) steps into a scratch partial; a second kernel adds
     * the partials in order (deterministic, no atomics). */
    int64_t steps = products * ceil_div(k, bk), splits = 1;
    if (long_k && gx * gy < SPLIT_TARGET_GROUPS) {
        splits = ceil_div(SPLIT_TARGET_GROUPS, gx * gy);
        if (splits > steps / 8) splits = steps / 8; /* at least 8 steps each */
        if (splits > MAX_SPLITS) splits = MAX_SPLITS;
    }
    if (splits < 2) {
        uint32_t gz = outputs > MAX_GROUPS ? MAX_GROUPS : (uint32_t)outputs; /* the shader strides over the rest */
        return record_variant(vk, NN_KERNEL_GEMM, pipe, variant, a, 3, &push, sizeof push, (uint32_t)gx,
                              (uint32_t)gy, gz);
    }
    int64_t split_steps = ceil_div(steps, splits);
    splits = ceil_div(steps, split_steps);
    int64_t partial = (int64_t)p->m * p->n;
    NN_TRY(fits32(NN_KERNEL_GEMM, "split-K scratch entries", splits * partial));
    nn_buffer *scratch = vk_buffer_alloc(&vk->base, (size_t)(splits * partial) * sizeof(float));
    if (!scratch) return nn_last_status();
    push.ldc = (uint32_t)p->n;
    push.stride_c = (uint32_t)partial;
    push.alpha = 1.0f;
    push.beta = 0.0f;
    push.splits = (uint32_t)splits;
    push.split_steps = (uint32_t)split_steps;
    nn_buffer_ref first[3] = {a[0], a[1], {scratch, 0}}, second[2] = {{scratch, 0}, a[2]};
    nn_status st = record_variant(vk, NN_KERNEL_GEMM, pipe, variant, first, 3, &push, sizeof push, (uint32_t)gx,
                                  (uint32_t)gy, (uint32_t)splits);
    if (st == NN_OK) {
        struct { uint32_t m, n, ldc, splits; float alpha, beta; } sum = {
            (uint32_t)p->m, (uint32_t)p->n, (uint32_t)p->ldc, (uint32_t)splits, p->alpha, p->beta};
        st = record(vk, NN_KERNEL_GEMM, VK_PIPE_GEMM_SPLITK, second, 2, &sum, sizeof sum,
                    groups_for((uint64_t)partial), 1, 1);
    }
    vk_buffer_free(&vk->base, scratch); /* safe at once: see vk_memory.c */
    return st;
}

/* ---- the rest ---- */

static nn_status run_conv(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_conv_geometry *g) {
    int64_t columns = (int64_t)g->batch * g->channels * g->kernel_h * g->kernel_w * g->out_h * g->out_w;
    int64_t pixels = (int64_t)g->batch * g->channels * g->height * g->width;
    NN_TRY(fits32(kernel, "column entries", columns));
    NN_TRY(fits32(kernel, "image pixels", pixels));
    if (g->batch < 0 || g->channels < 0 || g->kernel_h <= 0 || g->kernel_w <= 0 || g->stride_h <= 0 ||
        g->stride_w <= 0 || g->out_h < 0 || g->out_w < 0 || g->height < 0 || g->width < 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: invalid geometry", nn_kernel_name(kernel));
    bool im2col = kernel == NN_KERNEL_IM2COL;
    int64_t items = im2col ? columns : pixels;
    if (items == 0) return NN_OK;
    return record(vk, kernel, im2col ? VK_PIPE_IM2COL : VK_PIPE_COL2IM, a, 2, g, sizeof *g, groups_for(items), 1, 1);
}

static nn_status run_pool(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_pool_params *p) {
    int64_t in = (int64_t)p->batch * p->channels * p->height * p->width;
    int64_t out = (int64_t)p->batch * p->channels * p->out_h * p->out_w;
    NN_TRY(fits32(kernel, "input size", in));
    NN_TRY(fits32(kernel, "output size", out));
    if (p->kernel <= 0 || p->stride <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: invalid window", nn_kernel_name(kernel));
    bool forward = kernel == NN_KERNEL_MAXPOOL_FORWARD;
    int64_t items = forward ? out : in;
    if (items == 0) return NN_OK;
    return record(vk, kernel, forward ? VK_PIPE_MAXPOOL_FORWARD : VK_PIPE_MAXPOOL_BACKWARD, a, 3, p, sizeof *p,
                  groups_for(items), 1, 1);
}

static nn_status run_bias(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_bias_params *p) {
    NN_TRY(fits32(kernel, "elements", p->outer * p->channels * p->inner));
    if (p->channels < 0) return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: channels < 0", nn_kernel_name(kernel));
    struct { uint32_t outer, inner, channels; int32_t accumulate; } push = {
        (uint32_t)p->outer, (uint32_t)p->inner, (uint32_t)p->channels, p->accumulate};
    if (kernel == NN_KERNEL_BIAS_ADD) {
        int64_t n = p->outer * p->channels * p->inner;
        if (n == 0) return NN_OK;
        return record(vk, kernel, VK_PIPE_BIAS_ADD, a, 2, &push, 12, groups_for((uint64_t)n), 1, 1);
    }
    if (p->channels == 0) return NN_OK;
    uint32_t groups = (uint32_t)p->channels > MAX_GROUPS ? MAX_GROUPS : (uint32_t)p->channels;
    return record(vk, kernel, VK_PIPE_BIAS_GRAD, a, 2, &push, sizeof push, groups, 1, 1);
}

static nn_status run_pointwise(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a,
                               const nn_pointwise_params *p) {
    NN_TRY(fits32(kernel, "n", p->n));
    uint32_t n = (uint32_t)p->n;
    switch (kernel) {
    case NN_KERNEL_RELU_FORWARD:
        if (!n) return NN_OK;
        return record(vk, kernel, VK_PIPE_RELU_FORWARD, a, 2, &n, 4, groups_for(n), 1, 1);
    case NN_KERNEL_RELU_BACKWARD: {
        if (!n) return NN_OK;
        struct { uint32_t n; int32_t acc; } push = {n, p->accumulate};
        return record(vk, kernel, VK_PIPE_RELU_BACKWARD, a, 3, &push, sizeof push, groups_for(n), 1, 1);
    }
    case NN_KERNEL_ELEMENTWISE: {
        if (p->op != NN_EW_ADD && p->op != NN_EW_MUL && p->op != NN_EW_SCALE)
            return nn_set_error(NN_ERR_BACKEND, "vulkan elementwise: unknown op %d", p->op);
        if (!n) return NN_OK;
        struct { uint32_t n; int32_t op, acc; float alpha; } push = {n, p->op, p->accumulate, p->alpha};
        return record(vk, kernel, VK_PIPE_ELEMENTWISE, a, 3, &push, sizeof push, groups_for(n), 1, 1);
    }
    case NN_KERNEL_BROADCAST_SCALAR: {
        if (!n) return NN_OK;
        struct { uint32_t n; int32_t acc; float alpha; } push = {n, p->accumulate, p->alpha};
        return record(vk, kernel, VK_PIPE_BROADCAST_SCALAR, a, 2, &push, sizeof push, groups_for(n), 1, 1);
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
        nn_buffer_ref first[2] = {a[0], {partials, 0}}, second[2] = {{partials, 0}, a[1]};
        push.final = 0;
        nn_status st = record(vk, kernel, VK_PIPE_REDUCE, first, 2, &push, sizeof push, (uint32_t)groups, 1, 1);
        if (st == NN_OK) {
            push.n = (uint32_t)groups;
            push.square_input = 0;
            push.final = 1;
            st = record(vk, kernel, VK_PIPE_REDUCE, second, 2, &push, sizeof push, 1, 1, 1);
        }
        /* Freed at once: a later user of the range is ordered after these
         * two dispatches (vk_memory.c). */
        vk_buffer_free(&vk->base, partials);
        return st;
    }
    default: break;
    }
    return nn_set_error(NN_ERR_BACKEND, "vulkan: kernel %s is not implemented", nn_kernel_name(kernel));
}

static nn_status run_softmax(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_softmax_params *p) {
    if (p->rows < 0 || p->cols <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: rows=%d cols=%d", nn_kernel_name(kernel), p->rows, p->cols);
    NN_TRY(fits32(kernel, "rows * cols", (int64_t)p->rows * p->cols));
    if (p->rows == 0) return NN_OK;
    switch (kernel) {
    case NN_KERNEL_SOFTMAX_FORWARD:
        return record(vk, kernel, VK_PIPE_SOFTMAX_FORWARD, a, 2, p, sizeof *p, groups_for(p->rows), 1, 1);
    case NN_KERNEL_SOFTMAX_BACKWARD:
        return record(vk, kernel, VK_PIPE_SOFTMAX_BACKWARD, a, 3, p, sizeof *p, groups_for(p->rows), 1, 1);
    case NN_KERNEL_SOFTMAX_CE_FORWARD:
        return record(vk, kernel, VK_PIPE_SOFTMAX_CE_FORWARD, a, 4, p, sizeof *p, 1, 1, 1);
    default:
        return record(vk, kernel, VK_PIPE_SOFTMAX_CE_BACKWARD, a, 4, p, sizeof *p,
                      groups_for((uint64_t)p->rows * p->cols), 1, 1);
    }
}

static nn_status run_sgd(vk_backend *vk, const nn_buffer_ref *a, const nn_sgd_params *p) {
    NN_TRY(fits32(NN_KERNEL_SGD_UPDATE, "n", p->n));
    if (p->momentum != 0.0f && !a[2].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan sgd_update: momentum %g needs a velocity buffer",
                            (double)p->momentum);
    if (p->n == 0) return NN_OK;
    struct {
        uint32_t n;
        float lr, momentum, weight_decay, clip_value, max_grad_norm;
        int32_t nesterov, has_velocity, has_norm;
    } push = {(uint32_t)p->n, p->lr, p->momentum, p->weight_decay, p->clip_value, p->max_grad_norm,
              p->nesterov, a[2].buffer != NULL, a[3].buffer != NULL};
    return record(vk, NN_KERNEL_SGD_UPDATE, VK_PIPE_SGD_UPDATE, a, 4, &push, sizeof push,
                  groups_for((uint64_t)p->n), 1, 1);
}

nn_status vk_run(nn_backend *self, nn_kernel kernel, const nn_buffer_ref *a, int nargs, const void *params) {
    vk_backend *vk = as_vk(self);
    if ((unsigned)kernel >= NN_KERNEL_COUNT)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: no kernel with id %d", (int)kernel);
    if (nargs != kArgCount[kernel] || !params)
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: called with %d buffers (wants %d)%s", nn_kernel_name(kernel),
                            nargs, kArgCount[kernel], params ? "" : " and no parameters");
    int optional = optional_args(kernel, params);
    for (int i = 0; i < nargs; i++)
        if (!a[i].buffer && !(optional & (1 << i)) && kernel != NN_KERNEL_GEMM)
            return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: buffer argument %d is missing", nn_kernel_name(kernel), i);
    switch (kernel) {
    case NN_KERNEL_GEMM: return run_gemm(vk, a, params);
    case NN_KERNEL_IM2COL:
    case NN_KERNEL_COL2IM: return run_conv(vk, kernel, a, params);
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
    case NN_KERNEL_SGD_UPDATE: return run_sgd(vk, a, params);
    case NN_KERNEL_COUNT: break;
    }
    return nn_set_error(NN_ERR_BACKEND, "vulkan: kernel %s is not implemented", nn_kernel_name(kernel));
}
