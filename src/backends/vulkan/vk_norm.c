/* The normalisation kernels (kernels.h's nn_norm_params) on Vulkan, shaped
 * to fill a large GPU whatever the groups look like:
 *   STATS            groups of at most a PIECE (LayerNorm's rows) several a
 *                    workgroup, row_threads invocations each; larger ones
 *                    workgroups over chunks of each group (norm_stats.comp);
 *                    few, large groups (BatchNorm) are cut into enough
 *                    chunks for about SPLIT_TARGET workgroups in all, whose
 *                    moments the group's last workgroup merges;
 *   APPLY            one pass, four elements per invocation where the
 *                    layout and alignment allow (norm_apply.comp);
 *   BACKWARD_DATA    groups of at most a PIECE (LayerNorm rows): several
 *                    a workgroup as STATS, held in registers, one pass
 *                    (norm_backward_data.comp); larger ones: the split sums
 *                    (norm_backward_sums.comp), then one pointwise pass
 *                    (norm_backward_pointwise.comp);
 *   BACKWARD_AFFINE  split per channel over its runs
 *                    (norm_backward_affine.comp), or, where channel_inner is
 *                    1 (LayerNorm, BatchNorm over channels-last tensors or
 *                    [N, C]), down the rows (norm_columns.comp).
 * BatchNorm over rows of channels (channels-last activations, [N, C]: inner
 * 1, a group per channel) takes norm_columns.comp for its STATS and its data
 * gradient's sums too: lanes across the channels and down the rows, where
 * the group-wise kernels would read each channel strided. Through an
 * activation's mask (grad_mask), BACKWARD_SUMS and BACKWARD_FROM_SUMS take
 * variants of their shaders that recompute the activation's input
 * (norm_columns_masked.comp, norm_backward_pointwise_masked.comp), so the
 * plain ones keep their registers.
 * Splits finish in their last workgroup (vk_split_work.c) in a fixed order:
 * results depend on the sizes alone. */
#include "backends/norm_layout.h"
#include "base/error.h"
#include "vk_backend.h"

typedef VK_PUSH(NORM) norm_block;

#define PIECE 2048           /* norm_common.glsl: entries a workgroup reads per step */
#define SPLIT_TARGET 1024    /* workgroups to aim for: several per multiprocessor of a large GPU */
#define COLUMNS_TARGET 528   /* norm_columns.comp's: about four workgroups per multiprocessor of a large GPU */
#define COLUMNS_MIN_ROWS 16  /* rows per invocation at least: below, a chunk's merge costs more than its reads */
#define MIN_CHUNK (4 * PIECE) /* below this a chunk's fixed costs (its tree, its partials) dominate */
#define THREADS 256

static nn_status norm_push(nn_kernel kernel, const nn_norm_params *p, norm_block *push) {
    NN_TRY(nn_norm_check("vulkan", kernel, p));
    NN_TRY(vk_fits32(kernel, "elements", nn_norm_elements(p)));
    *push = (norm_block){.outer = (uint32_t)p->outer, .inner = (uint32_t)p->inner,
                         .channel_inner = (uint32_t)p->channel_inner, .groups = (uint32_t)p->groups,
                         .channels = (uint32_t)p->channels, .eps = p->eps, .batch_stats = p->batch_stats,
                         .accumulate = p->accumulate, .sums_unweighted = p->sums_unweighted,
                         .epilogue_on = p->epilogue.on, .epilogue_op = p->epilogue.op,
                         .epilogue_alpha = p->epilogue.alpha, .epilogue_beta = p->epilogue.beta, .chunks = 1,
                         .grad_mask = p->grad_mask};
    return NN_OK;
}

/* A group per channel, a channel per element of a row: the channels are
 * columns of [rows, channels] (BatchNorm over channels-last tensors or [N, C]). */
static bool columnar(const nn_norm_params *p) {
    return p->inner == 1 && p->channel_inner == 1 && p->groups == p->channels;
}

/* Invocations per group of n <= PIECE elements, where a workgroup takes
 * THREADS / row_threads(n) groups: norm_common.glsl's row_threads. */
static int64_t row_threads(int64_t n) {
    int64_t t = 32;
    while (t < THREADS && t * (PIECE / THREADS) < n) t <<= 1;
    return t;
}

/* Workgroups for `groups` groups of n <= PIECE elements, several a workgroup. */
static int64_t row_workgroups(int64_t groups, int64_t n) {
    const int64_t rows = THREADS / row_threads(n);
    return (groups + rows - 1) / rows;
}

static uint32_t capped(int64_t workgroups) {
    return workgroups > (int64_t)VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)(workgroups > 0 ? workgroups : 1);
}

/* A split of `tiles` reductions of `count` entries each into chunks (a
 * multiple of `step` entries, at least `min_chunk`), enough for about
 * SPLIT_TARGET workgroups; one chunk where the work area cannot hold
 * `floats_per_chunk` partials per chunk. */
typedef struct norm_split {
    int64_t chunks, chunk;
} norm_split;

static norm_split split_of(int64_t tiles, int64_t count, int64_t step, int64_t min_chunk, int64_t floats_per_chunk,
                           int64_t target) {
    norm_split s = {1, count > 0 ? count : 1};
    int64_t chunks = (target + tiles - 1) / tiles;
    const int64_t most = count / min_chunk;
    if (chunks > most) chunks = most;
    if (chunks > (int64_t)VK_MAX_GROUPS) chunks = VK_MAX_GROUPS;
    if (chunks <= 1 || tiles > (int64_t)VK_MAX_GROUPS) return s;
    int64_t chunk = (count + chunks - 1) / chunks;
    chunk = (chunk + step - 1) / step * step;
    chunks = (count + chunk - 1) / chunk;
    if (chunks <= 1 || !vk_split_work_fits((uint64_t)tiles, (uint64_t)(tiles * chunks * floats_per_chunk))) return s;
    return (norm_split){chunks, chunk};
}

/* Record `pipe` over `tiles` x split.chunks workgroups; with several
 * chunks, args[slot] is the work area of the split (its counters in push). */
static nn_status record_split(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, nn_buffer_ref *args, int nargs,
                              int slot, unsigned written, norm_block *push, norm_split split, int64_t tiles,
                              int64_t floats_per_chunk) {
    push->chunks = (uint32_t)split.chunks;
    push->chunk = (uint32_t)split.chunk;
    if (split.chunks == 1)
        return vk_record_ex(vk, kernel, pipe, 0, args, nargs, written, VK_PUSH_REF(*push), 1, capped(tiles), 1);
    vk_split_work work;
    NN_TRY(vk_split_work_take(vk, (uint64_t)tiles, (uint64_t)(tiles * split.chunks * floats_per_chunk), &work));
    push->counters = work.counters;
    args[slot] = work.partials;
    return vk_record_split(vk, kernel, pipe, 0, args, nargs, written | (1u << slot), &work, VK_PUSH_REF(*push),
                           (uint32_t)split.chunks, capped(tiles), 1);
}

/* norm_columns.comp's modes. */
enum { COLUMNS_STATS, COLUMNS_SUMS, COLUMNS_AFFINE };


/* norm_columns.comp in `mode` over args (x, mean, var, weight, dy, out_a,
 * out_b; the work area goes in slot 7): its tiles of channels (as the
 * shader makes them: four channels an invocation where it reads vec4s)
 * split into chunks of rows. */
static nn_status record_columns(vk_backend *vk, nn_kernel kernel, const nn_norm_params *p, uint32_t mode,
                                const nn_buffer_ref *in, unsigned written, norm_block *push) {
    push->mode = mode;
    const bool wide = p->channels % 4 == 0 && vk_ref_aligned16(in[0]) &&
                      (mode == COLUMNS_STATS || vk_ref_aligned16(in[4]));
    const int64_t width = wide ? 4 : 1, rows = nn_norm_elements(p) / p->channels;
    int64_t columns = (p->channels + width - 1) / width;
    if (columns > 16) columns = 16; /* norm_columns.comp's COLUMN_LANES */
    const int64_t lanes = THREADS / columns, per_tile = columns * width;
    const int64_t tiles = (p->channels + per_tile - 1) / per_tile;
    nn_buffer_ref args[8];
    for (int i = 0; i < 7; i++) args[i] = in[i];
    args[7] = (nn_buffer_ref){NULL, 0, 0};
    /* Fewer, longer chunks than the group-wise kernels', so the last
     * workgroup's merge of a tile's chunks stays short (bench/README.md,
     * bench_norm_layers: the targets measured). */
    const vk_pipeline_id pipe = p->grad_mask ? VK_PIPE_NORM_COLUMNS_MASKED : VK_PIPE_NORM_COLUMNS;
    return record_split(vk, kernel, pipe, args, 8, 7, written, push,
                        split_of(tiles, rows, lanes, COLUMNS_MIN_ROWS * lanes, 2 * per_tile, COLUMNS_TARGET), tiles,
                        2 * per_tile);
}

nn_status vk_run_norm_stats(vk_backend *vk, const nn_norm_params *p, const nn_buffer_ref *a) {
    norm_block push;
    NN_TRY(norm_push(NN_KERNEL_NORM_STATS, p, &push));
    if (columnar(p)) {
        const nn_buffer_ref none = {NULL, 0, 0};
        const nn_buffer_ref args[7] = {a[0], none, none, none, none, a[1], a[2]};
        return record_columns(vk, NN_KERNEL_NORM_STATS, p, COLUMNS_STATS, args, NN_ARG(5) | NN_ARG(6), &push);
    }
    const int64_t n = p->outer * p->inner;
    nn_buffer_ref args[4] = {a[0], a[1], a[2], {NULL, 0, 0}};
    if (n <= PIECE) /* several groups a workgroup, one chunk each (norm_stats.comp's row_groups) */
        return record_split(vk, NN_KERNEL_NORM_STATS, VK_PIPE_NORM_STATS, args, 4, 3, NN_ARG(1) | NN_ARG(2), &push,
                            (norm_split){1, n}, row_workgroups(p->groups, n), 2);
    return record_split(vk, NN_KERNEL_NORM_STATS, VK_PIPE_NORM_STATS, args, 4, 3, NN_ARG(1) | NN_ARG(2), &push,
                        split_of(p->groups, n, PIECE, MIN_CHUNK, 2, SPLIT_TARGET), p->groups, 2);
}

/* Workgroups for a pointwise pass: four elements per invocation where
 * norm_quads may allow it (the shader decides by alignment), else one. */
static uint32_t pointwise_groups(const nn_norm_params *p) {
    const int64_t n = nn_norm_elements(p);
    const bool quads = (p->inner % 4 == 0 && p->channel_inner % 4 == 0) || (columnar(p) && p->channels % 4 == 0);
    return vk_groups_for((uint64_t)(quads ? n / 4 : n));
}

nn_status vk_run_norm_apply(vk_backend *vk, const nn_norm_params *p, const nn_buffer_ref *a) {
    norm_block push;
    NN_TRY(norm_push(NN_KERNEL_NORM_APPLY, p, &push));
    if (nn_norm_elements(p) == 0) return NN_OK;
    push.has_weight = a[3].buffer != NULL;
    push.has_bias = a[4].buffer != NULL;
    push.has_residual = a[6].buffer != NULL;
    return vk_record(vk, NN_KERNEL_NORM_APPLY, VK_PIPE_NORM_APPLY, 0, a, 7, VK_PUSH_REF(push), pointwise_groups(p),
                     1, 1);
}

/* The data gradient's first pass: the sums of w dy and w dy xhat per group
 * (two floats each, into args[5]), split over workgroups; args: x, mean,
 * var, weight, dy, sums, the work area's slot, grad_mask's bias. */
static nn_status record_backward_sums(vk_backend *vk, nn_kernel kernel, const nn_norm_params *p,
                                      nn_buffer_ref *args, norm_block *push) {
    push->has_bias = args[7].buffer != NULL;
    if (columnar(p)) { /* the same slots: x, mean, var, weight, dy, sums, (out_b) the bias */
        const nn_buffer_ref columns[7] = {args[0], args[1], args[2], args[3], args[4], args[5], args[7]};
        return record_columns(vk, kernel, p, COLUMNS_SUMS, columns, NN_ARG(5), push);
    }
    return record_split(vk, kernel, VK_PIPE_NORM_BACKWARD_SUMS, args, 8, 6, NN_ARG(5), push,
                        split_of(p->groups, p->outer * p->inner, PIECE, MIN_CHUNK, 2, SPLIT_TARGET), p->groups, 2);
}

/* Its pointwise pass: dx (args[5]) from dy, the statistics and, with batch
 * statistics, the sums (args[6]); BACKWARD_FROM_SUMS' affine gradients
 * (args[7], args[8]) where given. */
static nn_status record_backward_pointwise(vk_backend *vk, nn_kernel kernel, const nn_norm_params *p,
                                           const nn_buffer_ref *args, int nargs, norm_block *push) {
    const vk_pipeline_id pipe = p->grad_mask ? VK_PIPE_NORM_BACKWARD_POINTWISE_MASKED : VK_PIPE_NORM_BACKWARD_POINTWISE;
    return vk_record_ex(vk, kernel, pipe, 0, args, nargs,
                        NN_ARG(5) | NN_ARG(7) | NN_ARG(8), VK_PUSH_REF(*push), pointwise_groups(p), 1, 1);
}

/* Groups of many elements: the split sums into a scratch of two floats per
 * group, then the pointwise pass reading them. */
static nn_status backward_data_split(vk_backend *vk, const nn_norm_params *p, const nn_buffer_ref *a,
                                     norm_block *push) {
    const nn_kernel kernel = NN_KERNEL_NORM_BACKWARD_DATA;
    nn_buffer *sums = vk_scratch_alloc(vk, (size_t)p->groups * 2 * sizeof(float));
    if (!sums) return nn_last_status();
    const nn_buffer_ref sums_ref = {sums, 0, (size_t)p->groups * 2 * sizeof(float)};
    nn_buffer_ref args[8] = {a[0], a[1], a[2], a[3], a[4], sums_ref, {NULL, 0, 0}, {NULL, 0, 0}};
    nn_status st = record_backward_sums(vk, kernel, p, args, push);
    if (st == NN_OK) {
        const nn_buffer_ref pointwise[7] = {a[0], a[1], a[2], a[3], a[4], a[5], sums_ref};
        st = record_backward_pointwise(vk, kernel, p, pointwise, 7, push);
    }
    vk_scratch_done(vk, sums); /* freed at once (vk_stream.c orders reuse), or kept by a plan */
    return st;
}

nn_status vk_run_norm_backward_data(vk_backend *vk, const nn_norm_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_NORM_BACKWARD_DATA;
    norm_block push;
    NN_TRY(norm_push(kernel, p, &push));
    if (nn_norm_elements(p) == 0) return NN_OK;
    push.has_weight = a[3].buffer != NULL;
    if (!p->batch_stats) { /* constant statistics: dx = rstd w dy, pointwise */
        const nn_buffer_ref args[7] = {a[0], a[1], a[2], a[3], a[4], a[5], {NULL, 0, 0}};
        return record_backward_pointwise(vk, kernel, p, args, 7, &push);
    }
    const int64_t n = p->outer * p->inner;
    if (n <= PIECE)
        return vk_record(vk, kernel, VK_PIPE_NORM_BACKWARD_DATA, 0, a, 6, VK_PUSH_REF(push),
                         capped(row_workgroups(p->groups, n)), 1, 1);
    return backward_data_split(vk, p, a, &push);
}

nn_status vk_run_norm_backward_affine(vk_backend *vk, const nn_norm_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_NORM_BACKWARD_AFFINE;
    norm_block push;
    NN_TRY(norm_push(kernel, p, &push));
    if (!a[4].buffer && !a[5].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan norm_backward_affine: dweight and dbias are both absent");
    push.has_weight = a[4].buffer != NULL;
    push.has_bias = a[5].buffer != NULL;
    const int64_t per_channel = nn_norm_elements(p) / p->channels;
    nn_buffer_ref args[7] = {a[0], a[1], a[2], a[3], a[4], a[5], {NULL, 0, 0}};
    const unsigned written = NN_ARG(4) | NN_ARG(5);
    if (p->channel_inner == 1) { /* rows of channels: x, mean, var, (no weight), dy, dweight, dbias */
        const nn_buffer_ref columns[7] = {a[0], a[1], a[2], {NULL, 0, 0}, a[3], a[4], a[5]};
        return record_columns(vk, kernel, p, COLUMNS_AFFINE, columns, written, &push);
    }
    return record_split(vk, kernel, VK_PIPE_NORM_BACKWARD_AFFINE, args, 7, 6, written, &push,
                        split_of(p->channels, per_channel, PIECE, MIN_CHUNK, 2, SPLIT_TARGET), p->channels, 2);
}

nn_status vk_run_norm_running_update(vk_backend *vk, const nn_norm_running_params *p, const nn_buffer_ref *a) {
    NN_TRY(nn_norm_running_check("vulkan", p, a[4].buffer != NULL));
    VK_PUSH(NORM_RUNNING) push = {.channels = (uint32_t)p->channels, .momentum = p->momentum,
                                  .unbias = (float)((double)p->count / (double)(p->count - 1))};
    return vk_record(vk, NN_KERNEL_NORM_RUNNING_UPDATE, VK_PIPE_NORM_RUNNING_UPDATE, 0, a, 5, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)p->channels), 1, 1);
}

/* NORM_BACKWARD_DATA's two passes as kernels of their own (SyncBatchNorm
 * reduces the sums over processes in between): the same pipelines. */
nn_status vk_run_norm_backward_sums(vk_backend *vk, const nn_norm_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_NORM_BACKWARD_SUMS;
    norm_block push;
    NN_TRY(norm_push(kernel, p, &push));
    push.has_weight = a[3].buffer != NULL;
    nn_buffer_ref args[8] = {a[0], a[1], a[2], a[3], a[4], a[5], {NULL, 0, 0}, a[6]};
    return record_backward_sums(vk, kernel, p, args, &push);
}

nn_status vk_run_norm_backward_from_sums(vk_backend *vk, const nn_norm_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_NORM_BACKWARD_FROM_SUMS;
    norm_block push;
    NN_TRY(norm_push(kernel, p, &push));
    const bool dweight = a[7].buffer != NULL, dbias = a[8].buffer != NULL;
    NN_TRY(nn_norm_affine_from_sums_check("vulkan", p, dweight || dbias));
    if (nn_norm_elements(p) == 0 && !dweight && !dbias) return NN_OK;
    push.has_weight = a[3].buffer != NULL;
    push.has_bias = a[9].buffer != NULL;
    push.batch_stats = 1; /* the pointwise pass subtracts the sums' terms */
    push.affine = (dweight ? 1 : 0) | (dbias ? 2 : 0) | (p->affine_accumulate & 3) << 2;
    return record_backward_pointwise(vk, kernel, p, a, 10, &push);
}
