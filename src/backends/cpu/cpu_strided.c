/* The strided kernels on the CPU (kernels.h): BROADCAST, COMPARE,
 * STRIDED_COPY, REDUCE_DIMS and REDUCE_DIMS_SCATTER. Each walks its index
 * space in row-major order with an odometer of per-operand offsets; a range
 * of indices starts from its first index's coordinates. Float arithmetic is
 * in double, rounded once; integer sums wrap modulo 2^32. */
#include <math.h>
#include <string.h>

#include "base/error.h"
#include "cpu_backend.h"
#include "nn_ops.h"

/* An index space of up to NN_STRIDED_DIMS dimensions and the element
 * offsets of up to four operands at the current index. */
typedef struct odometer {
    int ndim, operands;
    const int32_t *shape;
    const int32_t *stride[4];
    int64_t coord[NN_STRIDED_DIMS];
    int64_t offset[4];
} odometer;

static void odometer_start(odometer *o, int64_t index) {
    for (int k = 0; k < o->operands; k++) o->offset[k] = 0;
    for (int d = o->ndim - 1; d >= 0; d--) {
        o->coord[d] = index % o->shape[d];
        index /= o->shape[d];
        for (int k = 0; k < o->operands; k++) o->offset[k] += o->coord[d] * o->stride[k][d];
    }
}

static void odometer_next(odometer *o) {
    for (int d = o->ndim - 1; d >= 0; d--) {
        for (int k = 0; k < o->operands; k++) o->offset[k] += o->stride[k][d];
        if (++o->coord[d] < o->shape[d]) return;
        for (int k = 0; k < o->operands; k++) o->offset[k] -= o->coord[d] * o->stride[k][d];
        o->coord[d] = 0;
    }
}

static int64_t space_size(const char *kernel, int ndim, const int32_t *shape, nn_status *status) {
    *status = NN_OK;
    if (ndim < 0 || ndim > NN_STRIDED_DIMS) {
        *status = nn_set_error(NN_ERR_ARGUMENT, "cpu %s: %d dimensions (at most %d)", kernel, ndim, NN_STRIDED_DIMS);
        return 0;
    }
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            *status = nn_set_error(NN_ERR_ARGUMENT, "cpu %s: dimension %d has size %d", kernel, d, shape[d]);
            return 0;
        }
        n *= shape[d];
    }
    return n;
}

/* ---- BROADCAST ---- */

static const int kOperands[NN_BROADCAST_COUNT] = {
#define OPERANDS_ROW(ID, operands, f) operands,
    NN_BROADCAST_OPS(OPERANDS_ROW)
#undef OPERANDS_ROW
};

typedef struct broadcast_job {
    const nn_broadcast_params *p;
    const float *in[3];
    float *out;
} broadcast_job;

static void broadcast_range(void *arg, int64_t begin, int64_t end, int worker) {
    const broadcast_job *job = arg;
    const nn_broadcast_params *p = job->p;
    odometer o = {.ndim = p->ndim, .operands = 3, .shape = p->shape,
                  .stride = {p->stride[0], p->stride[1], p->stride[2]}};
    odometer_start(&o, begin);
    const float *A = job->in[0], *B = job->in[1], *C = job->in[2];
    const double alpha = p->alpha;
    for (int64_t i = begin; i < end; i++, odometer_next(&o)) {
        const double a = A[o.offset[0]], b = B ? B[o.offset[1]] : 0.0, c = C ? C[o.offset[2]] : 0.0;
        double v = 0.0;
        switch ((nn_broadcast_op)p->op) {
#define VALUE_ROW(ID, operands, f) \
    case NN_BROADCAST_##ID: v = (f); break;
            NN_BROADCAST_OPS(VALUE_ROW)
#undef VALUE_ROW
        case NN_BROADCAST_COUNT: break;
        }
        (void)b, (void)c;
        const float value = (float)(alpha * v);
        job->out[i] = p->accumulate ? job->out[i] + value : value;
    }
}

nn_status nn_cpu_broadcast(nn_thread_pool *pool, const nn_broadcast_params *p, const float *a, const float *b,
                           const float *c, float *out) {
    nn_status st;
    const int64_t n = space_size("broadcast", p->ndim, p->shape, &st);
    NN_TRY(st);
    if (p->op < 0 || p->op >= NN_BROADCAST_COUNT)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu broadcast: unknown op %d (broadcast_ops.h has %d)", p->op,
                            (int)NN_BROADCAST_COUNT);
    if ((kOperands[p->op] > 1 && !b) || (kOperands[p->op] > 2 && !c))
        return nn_set_error(NN_ERR_ARGUMENT, "cpu broadcast: op %d reads %d operands", p->op, kOperands[p->op]);
    broadcast_job job = {.p = p, .in = {a, kOperands[p->op] > 1 ? b : NULL, kOperands[p->op] > 2 ? c : NULL},
                         .out = out};
    nn_parallel_for(pool, n, NN_CPU_MIN_CHUNK, broadcast_range, &job);
    return NN_OK;
}

/* ---- COMPARE ---- */

typedef struct compare_job {
    const nn_compare_params *p;
    const void *a, *b;
    int32_t *out;
} compare_job;

/* Whether the op holds for operands ordered as `order` says (-1: a < b, 0:
 * equal, 1: a > b); NaN's unordered case is decided before. */
static bool order_holds(nn_compare_op op, int order) {
    switch (op) {
    case NN_COMPARE_EQ: return order == 0;
    case NN_COMPARE_NE: return order != 0;
    case NN_COMPARE_LT: return order < 0;
    case NN_COMPARE_LE: return order <= 0;
    case NN_COMPARE_GT: return order > 0;
    case NN_COMPARE_GE: return order >= 0;
    }
    return false;
}

static void compare_range(void *arg, int64_t begin, int64_t end, int worker) {
    const compare_job *job = arg;
    const nn_compare_params *p = job->p;
    const nn_compare_op op = (nn_compare_op)p->op;
    odometer o = {.ndim = p->ndim, .operands = 2, .shape = p->shape, .stride = {p->stride[0], p->stride[1]}};
    odometer_start(&o, begin);
    const int32_t *ia = job->a, *ib = job->b;
    const float *fa = job->a, *fb = job->b;
    for (int64_t i = begin; i < end; i++, odometer_next(&o)) {
        bool holds;
        if (p->integer) {
            const int32_t a = ia[o.offset[0]], b = ib[o.offset[1]];
            holds = order_holds(op, (a > b) - (a < b));
        } else {
            const float a = fa[o.offset[0]], b = fb[o.offset[1]];
            holds = isnan(a) || isnan(b) ? op == NN_COMPARE_NE : order_holds(op, (a > b) - (a < b));
        }
        job->out[i] = holds;
    }
}

nn_status nn_cpu_compare(nn_thread_pool *pool, const nn_compare_params *p, const void *a, const void *b,
                         int32_t *out) {
    nn_status st;
    const int64_t n = space_size("compare", p->ndim, p->shape, &st);
    NN_TRY(st);
    if (p->op < NN_COMPARE_EQ || p->op > NN_COMPARE_GE)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu compare: unknown op %d (nn_compare_op)", p->op);
    compare_job job = {.p = p, .a = a, .b = b, .out = out};
    nn_parallel_for(pool, n, NN_CPU_MIN_CHUNK, compare_range, &job);
    return NN_OK;
}

/* ---- STRIDED_COPY ---- */

/* 32-bit words, moved as they are (int32 tensors too); accumulate adds floats. */
typedef struct copy_job {
    const nn_strided_copy_params *p;
    const uint32_t *src;
    uint32_t *dst;
} copy_job;

static void copy_range(void *arg, int64_t begin, int64_t end, int worker) {
    const copy_job *job = arg;
    const nn_strided_copy_params *p = job->p;
    odometer o = {.ndim = p->ndim, .operands = 2, .shape = p->shape, .stride = {p->src_stride, p->dst_stride}};
    odometer_start(&o, begin);
    for (int64_t i = begin; i < end; i++, odometer_next(&o)) {
        const uint32_t v = job->src[o.offset[0]];
        uint32_t *d = &job->dst[o.offset[1]];
        if (p->accumulate) {
            float sum, add;
            memcpy(&sum, d, sizeof sum);
            memcpy(&add, &v, sizeof add);
            sum += add;
            memcpy(d, &sum, sizeof sum);
        } else {
            *d = v;
        }
    }
}

nn_status nn_cpu_strided_copy(nn_thread_pool *pool, const nn_strided_copy_params *p, const float *src, float *dst) {
    nn_status st;
    const int64_t n = space_size("strided_copy", p->ndim, p->shape, &st);
    NN_TRY(st);
    copy_job job = {.p = p, .src = (const uint32_t *)src, .dst = (uint32_t *)dst};
    nn_parallel_for(pool, n, NN_CPU_MIN_CHUNK, copy_range, &job);
    return NN_OK;
}

/* ---- REDUCE_DIMS and REDUCE_DIMS_SCATTER ---- */

typedef struct reduce_job {
    const nn_reduce_dims_params *p;
    const float *x;
    float *out;
    int32_t *winners;
    int64_t count; /* elements per output */
} reduce_job;

/* Does v beat the best so far? A NaN beats any number; among equals the
 * first stays. */
static bool beats(nn_reduce_op op, double v, double best) {
    if (isnan(best)) return false;
    if (isnan(v)) return true;
    return op == NN_REDUCE_MAX ? v > best : v < best;
}

static void reduce_range(void *arg, int64_t begin, int64_t end, int worker) {
    const reduce_job *job = arg;
    const nn_reduce_dims_params *p = job->p;
    odometer kept = {.ndim = p->kept, .operands = 1, .shape = p->shape, .stride = {p->stride}};
    odometer_start(&kept, begin);
    for (int64_t j = begin; j < end; j++, odometer_next(&kept)) {
        odometer r = {.ndim = p->reduced, .operands = 1, .shape = p->shape + p->kept,
                      .stride = {p->stride + p->kept}};
        odometer_start(&r, 0);
        const float *x = job->x + kept.offset[0];
        double total = 0.0, best = x[0];
        int64_t winner = 0;
        for (int64_t k = 0; k < job->count; k++, odometer_next(&r)) {
            const double v = x[r.offset[0]];
            if (p->op == NN_REDUCE_SUM) total += v;
            else if (beats((nn_reduce_op)p->op, v, best)) best = v, winner = k;
        }
        const float value = (float)(p->alpha * (p->op == NN_REDUCE_SUM ? total : best));
        job->out[j] = p->accumulate ? job->out[j] + value : value;
        if (job->winners) job->winners[j] = (int32_t)winner;
    }
}

/* Integer sums in unsigned arithmetic, whose wrap modulo 2^32 C defines. */
static void integer_sum_range(void *arg, int64_t begin, int64_t end, int worker) {
    const reduce_job *job = arg;
    const nn_reduce_dims_params *p = job->p;
    const int32_t *x = (const int32_t *)(const void *)job->x;
    int32_t *out = (int32_t *)(void *)job->out;
    odometer kept = {.ndim = p->kept, .operands = 1, .shape = p->shape, .stride = {p->stride}};
    odometer_start(&kept, begin);
    for (int64_t j = begin; j < end; j++, odometer_next(&kept)) {
        odometer r = {.ndim = p->reduced, .operands = 1, .shape = p->shape + p->kept,
                      .stride = {p->stride + p->kept}};
        odometer_start(&r, 0);
        uint32_t total = p->accumulate ? (uint32_t)out[j] : 0u;
        for (int64_t k = 0; k < job->count; k++, odometer_next(&r)) total += (uint32_t)x[kept.offset[0] + r.offset[0]];
        out[j] = (int32_t)total;
    }
}

static nn_status reduce_sizes(const char *kernel, const nn_reduce_dims_params *p, int64_t *outputs,
                              int64_t *count) {
    nn_status st;
    if (p->kept < 0 || p->reduced < 0 || p->kept + p->reduced > NN_STRIDED_DIMS)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu %s: %d kept and %d reduced dimensions (at most %d in all)", kernel,
                            p->kept, p->reduced, NN_STRIDED_DIMS);
    *outputs = space_size(kernel, p->kept, p->shape, &st);
    NN_TRY(st);
    *count = space_size(kernel, p->reduced, p->shape + p->kept, &st);
    NN_TRY(st);
    if (p->op < 0 || p->op >= NN_REDUCE_OP_COUNT)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu %s: unknown op %d", kernel, p->op);
    return NN_OK;
}

nn_status nn_cpu_reduce_dims(nn_thread_pool *pool, const nn_reduce_dims_params *p, const float *x, float *out,
                             int32_t *winners) {
    int64_t outputs = 0, count = 0;
    NN_TRY(reduce_sizes("reduce_dims", p, &outputs, &count));
    if (count == 0 && p->op != NN_REDUCE_SUM)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu reduce_dims: the max or min of no elements");
    if (p->integer && p->op != NN_REDUCE_SUM)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu reduce_dims: integer reductions are sums only (op %d)", p->op);
    reduce_job job = {.p = p, .x = x, .out = out, .winners = p->op == NN_REDUCE_SUM ? NULL : winners,
                      .count = count};
    nn_parallel_for(pool, outputs, count > 0 ? NN_CPU_MIN_CHUNK / count + 1 : outputs,
                    p->integer ? integer_sum_range : reduce_range, &job);
    return NN_OK;
}

nn_status nn_cpu_reduce_dims_scatter(nn_thread_pool *pool, const nn_reduce_dims_params *p, const float *dy,
                                     const int32_t *winners, float *dx) {
    int64_t outputs = 0, count = 0;
    NN_TRY(reduce_sizes("reduce_dims_scatter", p, &outputs, &count));
    (void)pool;
    odometer kept = {.ndim = p->kept, .operands = 1, .shape = p->shape, .stride = {p->stride}};
    odometer_start(&kept, 0);
    for (int64_t j = 0; j < outputs; j++, odometer_next(&kept)) {
        if (winners[j] < 0 || winners[j] >= count)
            return nn_set_error(NN_ERR_ARGUMENT, "cpu reduce_dims_scatter: winner %d of output %lld is outside [0, %lld)",
                                winners[j], (long long)j, (long long)count);
        odometer r = {.ndim = p->reduced, .operands = 1, .shape = p->shape + p->kept,
                      .stride = {p->stride + p->kept}};
        odometer_start(&r, winners[j]);
        dx[kept.offset[0] + r.offset[0]] += dy[j];
    }
    return NN_OK;
}
