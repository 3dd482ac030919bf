/* The GEMM kernel family: latency-bound products (gemm_latency.comp, and
 * the tiles and splits conv_latency.comp shares), and for larger ones the
 * tiled kernel's tile choice, split-K and vec4-load variants.
 * C[b] = alpha op(A[b]) op(B[b]) + beta C[b] with the CPU's semantics
 * (kernels.h), including the summed batch (stride_c == 0) of conv's dW. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "vk_backend.h"

/* The product's push constants, which gemm.comp and gemm_latency.comp
 * both start with (after their offsets). */
typedef VK_PUSH(GEMM_PRODUCT) gemm_product;
typedef VK_PUSH(GEMM) gemm_push;
typedef VK_PUSH(GEMM_LATENCY) gemm_latency_push;
#define COPY_PRODUCT_FIELD(type, name) push.name = product->name;

static gemm_push tiled_push(const gemm_product *product) {
    gemm_push push = {.off = {0}};
    PUSH_GEMM_PRODUCT(COPY_PRODUCT_FIELD)
    return push;
}

static gemm_latency_push latency_push(const gemm_product *product) {
    gemm_latency_push push = {.off = {0}};
    PUSH_GEMM_PRODUCT(COPY_PRODUCT_FIELD)
    return push;
}

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
#define MAX_SPLITS 1024
/* A split walks at most this many k slices: each costs a memory wait and a
 * barrier, so a long walk with few output tiles (a small convolution's dW
 * at batch 256: 9,216 slices into one tile) is latency, not arithmetic. */
#define SPLIT_MAX_SLICES 16
#define SPLIT_MAX_PARTIALS ((int64_t)1 << 22) /* floats of partial sums (16 MiB) */

static int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

/* The tiled fp32 kernel's tiles by name: what NN_ENGINE_VULKAN_GEMM_TILES
 * forces (for benchmarks and tests) and, all but "thin", the candidates the
 * tuner measures (choose_tuned). Every tile sums each output over k in the
 * same order, so the choice changes the time, not the bits. */
static const char *const kTileNames[] = {"large", "large16", "large-db", "large16-db", "128x64",
                                         "64x128", "medium", "small", "thin"};
static const vk_pipeline_id kTilePipes[] = {VK_PIPE_GEMM_LARGE, VK_PIPE_GEMM_LARGE16, VK_PIPE_GEMM_LARGE_DB,
                                            VK_PIPE_GEMM_LARGE16_DB, VK_PIPE_GEMM_128X64, VK_PIPE_GEMM_64X128,
                                            VK_PIPE_GEMM_MEDIUM, VK_PIPE_GEMM_SMALL, VK_PIPE_GEMM_THIN};
#define TILES ((int)(sizeof kTilePipes / sizeof kTilePipes[0]))
#define TUNED_TILES (TILES - 1)

/* The tile NN_ENGINE_VULKAN_GEMM_TILES names, or -1. */
static int forced_tile(void) {
    const char *force = getenv("NN_ENGINE_VULKAN_GEMM_TILES");
    for (int i = 0; force && i < TILES; i++)
        if (!strcmp(force, kTileNames[i])) return i;
    return -1;
}

/* The tile configuration. long_k: the product will be split along k, so
 * the tile is picked for its efficiency, not for how many tiles there are. */
static vk_pipeline_id choose_gemm(int64_t m, int64_t n, int64_t outputs, bool long_k) {
    const int forced = forced_tile();
    if (forced >= 0) return kTilePipes[forced];
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

/* The matrix-core tile: the large one where there are enough of them to
 * fill a large GPU (as choose_gemm). */
static vk_pipeline_id choose_coopmat(int64_t m, int64_t n, int64_t outputs, bool long_k) {
    const char *force = getenv("NN_ENGINE_VULKAN_GEMM_TILES");
    if (force && !strcmp(force, "coopmat")) return VK_PIPE_GEMM_COOPMAT;
    if (force && !strcmp(force, "coopmat-medium")) return VK_PIPE_GEMM_COOPMAT_MEDIUM;
    if (m >= 128 && n >= 128 && (long_k || ceil_div(m, 128) * ceil_div(n, 128) * outputs >= 96))
        return VK_PIPE_GEMM_COOPMAT;
    return VK_PIPE_GEMM_COOPMAT_MEDIUM;
}

/* Unsplit fp32 products of at least this many multiply-adds have their
 * tile measured (smaller ones cost less than the measuring). */
#define TUNE_MIN_MACS ((int64_t)1 << 27)

/* An unsplit tiled product with tile `pipe` (its grid from the tile). */
static nn_status record_tiled(vk_backend *vk, vk_pipeline_id pipe, int variant, const nn_buffer_ref *a, int nargs,
                              gemm_push push, uint32_t gz) {
    uint32_t bm, bn, bk;
    vk_gemm_tiles(pipe, &bm, &bn, &bk);
    const int64_t gx = ceil_div(push.n, bn), gy = ceil_div(push.m, bm);
    if (gx > VK_MAX_GROUPS || gy > VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan gemm: m=%u n=%u needs more than %u workgroups per dimension",
                            push.m, push.n, VK_MAX_GROUPS);
    return vk_record(vk, NN_KERNEL_GEMM, pipe, variant, a, nargs, VK_PUSH_REF(push), (uint32_t)gx, (uint32_t)gy, gz);
}

/* The tuner's view of a product: the candidate tiles write a scratch C. */
typedef struct gemm_tune_context {
    vk_pipeline_id pipes[TUNED_TILES];
    nn_buffer_ref args[3];
    gemm_push push;
    int variant;
    uint32_t gz;
} gemm_tune_context;

static nn_status record_candidate(vk_backend *vk, void *ctx, int candidate) {
    const gemm_tune_context *t = ctx;
    return record_tiled(vk, t->pipes[candidate], t->variant, t->args, 3, t->push, t->gz);
}

/* The tile of an unsplit fp32 product without epilogue: the tuner's
 * (cached or measured on a scratch C, vk_tune.c) where the product is
 * large enough and no tile is forced, else `guess` (the heuristic's).
 * Split products keep the heuristic's tile: their split counts follow it. */
static nn_status choose_tuned(vk_backend *vk, const nn_buffer_ref *a, const gemm_push *push, int variant,
                              uint32_t gz, int64_t c_floats, vk_pipeline_id guess, vk_pipeline_id *pipe,
                              const char **how) {
    const bool forced = forced_tile() >= 0;
    *pipe = guess;
    *how = forced ? "forced" : vk_tune_source_name(VK_TUNE_FROM_HEURISTIC);
    const int64_t macs = (int64_t)push->m * push->n * (push->k > 0 ? push->k : 1) * push->batch;
    if (forced || macs < TUNE_MIN_MACS) return NN_OK;
    /* The candidates: the tiles whose shared memory fits the device. */
    gemm_tune_context ctx = {.args = {a[0], a[1], a[2]}, .push = *push, .variant = variant, .gz = gz};
    const char *names[TUNED_TILES];
    vk_tune_request req = {.names = names, .heuristic = -1, .record = record_candidate, .ctx = &ctx};
    for (int i = 0; i < TUNED_TILES; i++)
        if (vk_tile_fits(vk, kTilePipes[i])) {
            if (kTilePipes[i] == guess) req.heuristic = req.count;
            names[req.count] = kTileNames[i];
            ctx.pipes[req.count++] = kTilePipes[i];
        }
    if (req.heuristic < 0) return NN_OK; /* the heuristic's tile is no candidate ("thin"): it stays */
    /* The key: the product as the kernel sees it (no offsets, alpha or beta's value), its loads and precision. */
    const uint32_t key[] = {(uint32_t)variant | 2u << 16 /* the tiled GEMM's tiles */, push->m, push->n, push->k,
                            push->trans_a, push->trans_b, push->lda, push->ldb, push->ldc, push->batch, push->summed,
                            push->stride_a, push->stride_b, push->stride_c, push->beta != 0.0f, gz};
    memcpy(req.key, key, sizeof key);
    const VkDeviceSize peak = vk->peak_in_use;
    nn_buffer *scratch = NULL;
    nn_status st = NN_OK;
    if (vk_tune_will_measure(vk, &req)) {
        scratch = vk_buffer_alloc(&vk->base, (size_t)c_floats * sizeof(float));
        if (!scratch) st = nn_last_status();
        ctx.args[2] = (nn_buffer_ref){scratch, 0, (size_t)c_floats * sizeof(float)};
    }
    int choice = req.heuristic;
    vk_tune_source source = VK_TUNE_FROM_HEURISTIC;
    if (st == NN_OK) st = vk_tune_choose(vk, &req, &choice, &source);
    /* The candidates ran to completion inside vk_tune_choose: free at once,
     * and leave the peak as the step's own (the tuner's buffers are not the step's). */
    if (scratch) vk_buffer_free(&vk->base, scratch);
    vk->peak_in_use = peak > vk->bytes_in_use ? peak : vk->bytes_in_use;
    NN_TRY(st);
    *pipe = ctx.pipes[choice];
    *how = vk_tune_source_name(source);
    return NN_OK;
}

/* The name of a tiled fp32 GEMM pipeline, for the profile's labels. */
static const char *tile_name(vk_pipeline_id pipe) {
    for (int i = 0; i < TILES; i++)
        if (kTilePipes[i] == pipe) return kTileNames[i];
    return "?";
}

/* The epilogue's flags and aux buffer, checked as the CPU checks them. */
static nn_status check_epilogue(const nn_buffer_ref *a, int32_t epi) {
    int32_t bias = epi & (NN_EPI_BIAS_COLS | NN_EPI_BIAS_ROWS);
    if ((epi & ~(NN_EPI_BIAS_COLS | NN_EPI_BIAS_ROWS | NN_EPI_RELU | NN_EPI_MASK)) ||
        bias == (NN_EPI_BIAS_COLS | NN_EPI_BIAS_ROWS) || (bias && (epi & NN_EPI_MASK)))
        return nn_set_error(NN_ERR_BACKEND, "vulkan gemm_epilogue: invalid epilogue flags 0x%x", (unsigned)epi);
    if ((bias || (epi & NN_EPI_MASK)) && !a[3].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan gemm_epilogue: epilogue 0x%x needs the aux buffer", (unsigned)epi);
    return NN_OK;
}

/* Split-K's two dispatches: the partial products of `splits` workgroup
 * layers into a scratch buffer, then gemm_splitk.comp adding them in order
 * (deterministic, no atomics) with alpha, beta and the epilogue into C. */
static nn_status record_split(vk_backend *vk, const nn_buffer_ref *a, const nn_gemm_params *p,
                              const gemm_product *product, uint32_t epilogue, vk_pipeline_id pipe, int variant,
                              uint32_t gx, uint32_t gy, int64_t splits, int64_t split_steps) {
    int64_t partial = (int64_t)p->m * p->n;
    NN_TRY(vk_fits32(NN_KERNEL_GEMM, "split-K scratch entries", splits * partial));
    nn_buffer *scratch = vk_scratch_alloc(vk, (size_t)(splits * partial) * sizeof(float));
    if (!scratch) return nn_last_status();
    gemm_push push = tiled_push(product);
    push.ldc = (uint32_t)p->n;
    push.stride_c = (uint32_t)partial;
    push.alpha = 1.0f;
    push.beta = 0.0f;
    push.splits = (uint32_t)splits;
    push.split_steps = (uint32_t)split_steps;
    push.epilogue = 0; /* applied when the partials are added */
    nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref first[3] = {a[0], a[1], {scratch, 0, 0}},
                  second[3] = {{scratch, 0, 0}, a[2], epilogue ? a[3] : none};
    nn_status st = vk_record(vk, NN_KERNEL_GEMM, pipe, variant, first, 3, VK_PUSH_REF(push), gx, gy, (uint32_t)splits);
    if (st == NN_OK) {
        if (vk->labels)
            snprintf(vk->profile_label, sizeof vk->profile_label, "gemm split-K sum m%d n%d of %lld", p->m, p->n,
                     (long long)splits);
        VK_PUSH(GEMM_SPLITK) sum = {.m = (uint32_t)p->m, .n = (uint32_t)p->n, .ldc = (uint32_t)p->ldc,
                                    .splits = (uint32_t)splits, .alpha = p->alpha, .beta = p->beta,
                                    .epilogue = epilogue};
        st = vk_record_ex(vk, NN_KERNEL_GEMM, VK_PIPE_GEMM_SPLITK, 0, second, epilogue ? 3 : 2, NN_ARG(1),
                          VK_PUSH_REF(sum), vk_groups_for((uint64_t)partial), 1, 1);
    }
    vk_scratch_done(vk, scratch); /* freed at once (vk_stream.c orders reuse), or kept by a plan */
    return st;
}

/* Latency-bound products (small ones: few outputs, a short k or a small
 * batch) go to gemm_latency.comp: one output per invocation, a whole k slice
 * of 64 in flight per step, the epilogue compiled in, and splits that add
 * their own partials (no second dispatch, so no barrier between the two).
 * Above this many multiply-adds the tiled kernels' register blocking pays. */
#define LATENCY_MAX_MACS ((int64_t)1 << 26)
/* A split's last workgroup adds every partial of its tile one after
 * another, so splits trade the walk's length against that sum's: about
 * sqrt(32 * steps) splits (a small weight gradient of 576 steps: 116
 * splits of 5 steps), at most this many; 32 beat 2, 8 and 128
 * (bench/README.md). */
#define LATENCY_MAX_SPLITS 256
/* Split only products with fewer output tiles than an H100 or H200 has
 * multiprocessors: with more, every multiprocessor already has a tile. */
#define LATENCY_SPLIT_BELOW_TILES 132

bool vk_latency_wanted(int64_t macs) {
    const char *force = getenv("NN_ENGINE_VULKAN_GEMM_TILES");
    if (force && *force) return strcmp(force, "latency") == 0;
    return macs <= LATENCY_MAX_MACS;
}

nn_status vk_latency_plan_for(int32_t m, int32_t n, int32_t k, int64_t outputs, int64_t products, bool conv,
                              vk_latency_plan *out) {
    bool narrow = m <= 8;
    out->pipe = conv ? (narrow ? VK_PIPE_CONV_LATENCY_FEW_ROWS : VK_PIPE_CONV_LATENCY)
                     : (narrow ? VK_PIPE_GEMM_LATENCY_FEW_ROWS : VK_PIPE_GEMM_LATENCY);
    uint32_t bm, bn, bk;
    vk_gemm_tiles(out->pipe, &bm, &bn, &bk);
    out->tiles = ceil_div(m, bm) * ceil_div(n, bn);
    if (out->tiles > VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan gemm: m=%d n=%d needs more than %u workgroups", m, n,
                            VK_MAX_GROUPS);
    int64_t steps = products * ceil_div(k, bk);
    out->splits = 1;
    out->split_steps = steps;
    /* A split's partials go to binding 4, so products with a bias or a mask
     * (binding 3) split too: a Linear of 60 tiles and four k slices walks in
     * four splits. */
    if (outputs == 1 && steps >= 4 && out->tiles < LATENCY_SPLIT_BELOW_TILES) {
        int64_t splits = (int64_t)ceil(sqrt(32.0 * (double)steps));
        if (splits > LATENCY_MAX_SPLITS) splits = LATENCY_MAX_SPLITS;
        int64_t split_steps = ceil_div(steps, splits);
        splits = ceil_div(steps, split_steps);
        if (vk_split_work_fits((uint64_t)out->tiles, (uint64_t)(splits * m * (int64_t)n))) {
            out->splits = splits;
            out->split_steps = split_steps;
        }
    }
    return NN_OK;
}

nn_status vk_latency_record(vk_backend *vk, nn_kernel kernel, const vk_latency_plan *plan, int variant,
                            const nn_buffer_ref *a, int nargs, vk_push_ref push, uint32_t *counters, int64_t outputs,
                            int32_t m, int32_t n) {
    /* Always five arguments (so eight offsets in the push constants, as the
     * shaders declare): A, B, C, the epilogue's aux and the work area. */
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref args[5] = {a[0], a[1], a[2], nargs > 3 ? a[3] : none, none};
    if (plan->splits < 2) {
        uint32_t gz = outputs > VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)outputs; /* the shader strides over the rest */
        return vk_record_ex(vk, kernel, plan->pipe, variant, args, 5, NN_ARG(2), push, (uint32_t)plan->tiles, 1, gz);
    }
    vk_split_work work;
    NN_TRY(vk_split_work_take(vk, (uint64_t)plan->tiles, (uint64_t)(plan->splits * m * (int64_t)n), &work));
    *counters = work.counters;
    args[4] = work.partials;
    return vk_record_split(vk, kernel, plan->pipe, variant, args, 5, NN_ARG(2) | NN_ARG(4), &work, push,
                           (uint32_t)plan->tiles, 1, (uint32_t)plan->splits);
}

static nn_status run_latency(vk_backend *vk, const nn_buffer_ref *a, int nargs, const nn_gemm_params *p,
                             const gemm_product *product, uint32_t epilogue, int32_t k, int64_t outputs,
                             int64_t products) {
    vk_latency_plan plan;
    NN_TRY(vk_latency_plan_for(p->m, p->n, k, outputs, products, false, &plan));
    gemm_latency_push push = latency_push(product);
    push.splits = (uint32_t)plan.splits;
    push.split_steps = (uint32_t)plan.split_steps;
    if (vk->labels)
        snprintf(vk->profile_label, sizeof vk->profile_label, "gemm m%d n%d k%d b%d %c%c%s latency%s", p->m, p->n,
                 k, p->batch, p->trans_a ? 'T' : 'N', p->trans_b ? 'T' : 'N', epilogue ? " epilogue" : "",
                 plan.splits > 1 ? " split" : "");
    return vk_latency_record(vk, NN_KERNEL_GEMM, &plan, p->precision << 2 /* ROUND */, a, nargs, VK_PUSH_REF(push),
                             &push.counters, outputs, p->m, p->n);
}

/* A tiled product with an epilogue: the plain kernel, then
 * gemm_epilogue_pass.comp. Compiled into the tiled kernel, the epilogue made
 * it many times slower (bench/README.md), most likely by pushing its
 * accumulators out of registers. With beta == 0 the pass works on C in
 * place; otherwise the product goes to a scratch T first. */
static nn_status record_with_epilogue_pass(vk_backend *vk, const nn_buffer_ref *a, const nn_gemm_params *p,
                                           const gemm_product *product, uint32_t epilogue, vk_pipeline_id pipe,
                                           int variant, uint32_t gx, uint32_t gy, uint32_t gz, int64_t outputs) {
    gemm_push push = tiled_push(product);
    push.epilogue = 0;
    nn_buffer *scratch = NULL;
    nn_buffer_ref t = a[2];
    uint32_t ld_t = (uint32_t)p->ldc, stride_t = (uint32_t)p->stride_c;
    if (p->beta != 0.0f) {
        int64_t plane = (int64_t)p->m * p->n;
        NN_TRY(vk_fits32(NN_KERNEL_GEMM, "epilogue scratch entries", plane * outputs));
        scratch = vk_scratch_alloc(vk, (size_t)(plane * outputs) * sizeof(float));
        if (!scratch) return nn_last_status();
        t = (nn_buffer_ref){scratch, 0, 0};
        ld_t = (uint32_t)p->n;
        stride_t = (uint32_t)plane;
        push.ldc = ld_t;
        push.stride_c = stride_t;
        push.beta = 0.0f;
    }
    nn_buffer_ref plain[3] = {a[0], a[1], t};
    nn_status st = vk_record(vk, NN_KERNEL_GEMM, pipe, variant, plain, 3, VK_PUSH_REF(push), gx, gy, gz);
    if (st == NN_OK) {
        if (vk->labels) snprintf(vk->profile_label, sizeof vk->profile_label, "gemm epilogue pass m%d n%d b%lld",
                                  p->m, p->n, (long long)outputs);
        VK_PUSH(GEMM_EPILOGUE_PASS) pass = {.m = (uint32_t)p->m, .n = (uint32_t)p->n, .ldc = (uint32_t)p->ldc,
                                            .ld_t = ld_t, .batch = (uint32_t)outputs,
                                            .stride_c = (uint32_t)p->stride_c, .stride_t = stride_t,
                                            .beta = p->beta, .epilogue = epilogue};
        nn_buffer_ref args[3] = {t, a[2], a[3]};
        st = vk_record_ex(vk, NN_KERNEL_GEMM, VK_PIPE_GEMM_EPILOGUE_PASS, 0, args, 3, NN_ARG(1), VK_PUSH_REF(pass),
                          vk_groups_for((uint64_t)(p->m * (int64_t)p->n * outputs)), 1, 1);
    }
    if (scratch) vk_scratch_done(vk, scratch);
    return st;
}

/* B read transposed (NT: a Linear's weight [out, in] in its forward) runs
 * the fp32 tiled kernels at three quarters of the rate of B as stored [k,
 * n] (bench/README.md, issue 34); where the product is long enough in m to
 * repay it, B is transposed once into scratch and the product runs NN.
 * NN_ENGINE_VULKAN_GEMM_TRANSPOSE_B=0 keeps NT (for A/B runs). */
#define TRANSPOSE_B_MIN_M 512

static bool transpose_b_pays(vk_backend *vk, const nn_gemm_params *p) {
    if (!p->trans_b || p->m < TRANSPOSE_B_MIN_M || p->k < 16 || p->n < 16 || p->alpha == 0.0f) return false;
    if (vk_on_matrix_cores(vk, p->precision)) return false; /* gemm_coopmat.comp reads B^T as fast */
    if (p->batch > 1 && p->stride_b != 0) return false; /* one B for the whole batch only */
    const char *env = getenv("NN_ENGINE_VULKAN_GEMM_TRANSPOSE_B");
    return !(env && strcmp(env, "0") == 0);
}

static nn_status record_b_transposed(vk_backend *vk, const nn_buffer_ref *a, const nn_gemm_params *p,
                                     int32_t epilogue) {
    const int64_t words = (int64_t)p->k * p->n;
    NN_TRY(vk_fits32(NN_KERNEL_GEMM, "transposed B entries", words));
    nn_buffer *scratch = vk_scratch_alloc(vk, (size_t)words * sizeof(float));
    if (!scratch) return nn_last_status();
    const nn_buffer_ref bt = {scratch, 0, (size_t)words * sizeof(float)};
    const nn_strided_copy_params copy = {.ndim = 2, .shape = {p->k, p->n}, .src_stride = {1, p->ldb},
                                         .dst_stride = {p->n, 1}};
    const nn_buffer_ref copy_args[2] = {a[1], bt};
    nn_status st = vk_run_strided_copy(vk, &copy, copy_args);
    if (st == NN_OK) {
        nn_gemm_params stored = *p;
        stored.trans_b = 0;
        stored.ldb = p->n;
        stored.stride_b = 0;
        const nn_buffer_ref args[4] = {a[0], bt, a[2], epilogue ? a[3] : (nn_buffer_ref){NULL, 0, 0}};
        st = vk_gemm_record(vk, args, &stored, epilogue);
    }
    vk_scratch_done(vk, scratch); /* freed at once (vk_stream.c orders reuse), or kept by a plan */
    return st;
}

nn_status vk_gemm_record(vk_backend *vk, const nn_buffer_ref *a, const nn_gemm_params *p, int32_t epilogue) {
    if (epilogue) NN_TRY(check_epilogue(a, epilogue));
    const int nargs = epilogue ? 4 : 3;
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
    if (transpose_b_pays(vk, p)) return record_b_transposed(vk, a, p, epilogue);
    bool summed = p->stride_c == 0 && p->batch > 1;
    /* Nothing to multiply: C = beta C, as the CPU (no 0 * NaN from A or B). */
    int32_t k = p->alpha == 0.0f ? 0 : p->k;
    /* The largest index each matrix reaches must fit 32 bits. */
    int64_t last = p->batch - 1;
    NN_TRY(vk_fits32(NN_KERNEL_GEMM, "A's last index", last * p->stride_a + (int64_t)p->lda * (p->trans_a ? p->k : p->m)));
    NN_TRY(vk_fits32(NN_KERNEL_GEMM, "B's last index", last * p->stride_b + (int64_t)p->ldb * (p->trans_b ? p->n : p->k)));
    NN_TRY(vk_fits32(NN_KERNEL_GEMM, "C's last index", (summed ? 0 : last * p->stride_c) + (int64_t)p->ldc * p->m));
    int64_t outputs = summed ? 1 : p->batch;
    int64_t products = summed ? p->batch : 1;
    /* A long walk over k (in slices of 16) into one output may be split. */
    bool long_k = outputs == 1 && products * ceil_div(k, 16) >= 64;
    /* fp16 products on matrix cores where the device has them, whatever their size. */
    const bool cores = vk_on_matrix_cores(vk, p->precision);
    vk_pipeline_id pipe = cores ? choose_coopmat(p->m, p->n, outputs, long_k) : choose_gemm(p->m, p->n, outputs, long_k);
    uint32_t bm, bn, bk;
    vk_gemm_tiles(pipe, &bm, &bn, &bk);
    int64_t gx = ceil_div(p->n, bn), gy = ceil_div(p->m, bm);
    if (gx > VK_MAX_GROUPS || gy > VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan gemm: m=%d n=%d needs more than %u workgroups per dimension",
                            p->m, p->n, VK_MAX_GROUPS);
    const gemm_product product = {
        .m = (uint32_t)p->m, .n = (uint32_t)p->n, .k = (uint32_t)k, .trans_a = p->trans_a != 0,
        .trans_b = p->trans_b != 0, .lda = (uint32_t)p->lda, .ldb = (uint32_t)p->ldb, .ldc = (uint32_t)p->ldc,
        .batch = (uint32_t)p->batch, .summed = summed, .stride_a = (uint32_t)p->stride_a,
        .stride_b = (uint32_t)p->stride_b, .stride_c = (uint32_t)p->stride_c, .alpha = p->alpha, .beta = p->beta,
        .splits = 1, .epilogue = (uint32_t)epilogue};
    if (!cores && vk_latency_wanted((int64_t)p->m * p->n * (k > 0 ? k : 1) * p->batch))
        return run_latency(vk, a, nargs, p, &product, (uint32_t)epilogue, k, outputs, products);
    int variant = (int)vec4_ok(a[0], p->lda, p->stride_a, p->batch, p->trans_a ? p->m : k) |
                  (int)vec4_ok(a[1], p->ldb, p->stride_b, p->batch, p->trans_b ? k : p->n) << 1;
    /* Constant 9: the operands' rounding (shaders/precision.glsl), or on the
     * matrix cores (which take fp16) the transposes (gemm_coopmat.comp). */
    if (cores) variant |= ((p->trans_a != 0) | (p->trans_b != 0) << 1) << 2;
    else variant |= p->precision << 2;
    /* Split-K: each of `splits` workgroup layers walks an equal share of the
     * (product, k slice) steps into a scratch partial; a second kernel adds
     * the partials in order (deterministic, no atomics). */
    int64_t steps = products * ceil_div(k, bk), splits = 1;
    if (long_k && gx * gy < SPLIT_TARGET_GROUPS) {
        splits = ceil_div(SPLIT_TARGET_GROUPS, gx * gy);
        /* Short walks only where the partial sums stay small (a small dW):
         * for a large C the partials' traffic would cost more than the walk. */
        int64_t short_walks = ceil_div(steps, SPLIT_MAX_SLICES);
        if (splits < short_walks && (int64_t)p->m * p->n * short_walks <= SPLIT_MAX_PARTIALS) splits = short_walks;
        if (splits > steps / 8) splits = steps / 8; /* at least 8 steps each */
        if (splits > MAX_SPLITS) splits = MAX_SPLITS;
    }
    if (vk->labels)
        snprintf(vk->profile_label, sizeof vk->profile_label, "gemm m%d n%d k%d b%d %c%c%s%s", p->m, p->n, k,
                 p->batch, p->trans_a ? 'T' : 'N', p->trans_b ? 'T' : 'N', epilogue ? " epilogue" : "",
                 splits > 1 ? " split-K" : "");
    if (splits < 2) {
        uint32_t gz = outputs > VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)outputs; /* the shader strides over the rest */
        gemm_push push = tiled_push(&product);
        push.epilogue = 0; /* an epilogue runs as a pass of its own after the product the tile is chosen for */
        if (!cores) {
            const int64_t c_floats = (summed ? 0 : last * p->stride_c) + (int64_t)p->ldc * p->m;
            const char *how;
            NN_TRY(choose_tuned(vk, a, &push, variant, gz, c_floats, pipe, &pipe, &how));
            if (vk->labels) {
                const size_t used = strlen(vk->profile_label);
                snprintf(vk->profile_label + used, sizeof vk->profile_label - used, " %s %s", tile_name(pipe), how);
            }
        }
        if (epilogue) {
            vk_gemm_tiles(pipe, &bm, &bn, &bk); /* the tuner's tile may not be the heuristic's */
            return record_with_epilogue_pass(vk, a, p, &product, (uint32_t)epilogue, pipe, variant,
                                             (uint32_t)ceil_div(p->n, bn), (uint32_t)ceil_div(p->m, bm), gz, outputs);
        }
        return record_tiled(vk, pipe, variant, a, nargs, push, gz);
    }
    int64_t split_steps = ceil_div(steps, splits);
    splits = ceil_div(steps, split_steps);
    return record_split(vk, a, p, &product, (uint32_t)epilogue, pipe, variant, (uint32_t)gx, (uint32_t)gy, splits,
                        split_steps);
}

nn_status vk_run_gemm(vk_backend *vk, const nn_gemm_params *p, const nn_buffer_ref *a) {
    return vk_gemm_record(vk, a, p, 0);
}

nn_status vk_run_gemm_epilogue(vk_backend *vk, const nn_gemm_epilogue_params *e, const nn_buffer_ref *a) {
    return vk_gemm_record(vk, a, &e->gemm, e->epilogue);
}
