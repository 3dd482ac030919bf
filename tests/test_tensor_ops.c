/* The tensor operations of any rank (up to 6 dimensions) on the CPU and on
 * Vulkan: broadcasting add, sub, mul, div, maximum and minimum; sum, mean,
 * max, min and var over given dimensions; permute, transpose, slice,
 * select, cat, stack, expand, squeeze and unsqueeze. Values against
 * double-precision loops written here, gradients against central
 * differences of them (the harness of ops_backward.h), at awkward sizes,
 * broadcast shapes and batch 1; argmax and argmin against the loops. */
#include <stdlib.h>
#include <string.h>

#include "ops_backward.h"
#include "vulkan_harness.h"

/* A shape of up to six dimensions. */
typedef struct shape {
    int ndim;
    int64_t d[NN_MAX_DIMS];
} shape;

static int64_t numel_of(const shape *s) { return ref_numel(s->ndim, s->d); }

static arg_spec arg_of(const shape *s, fill_kind fill, bool grad) {
    arg_spec a = {.ndim = s->ndim, .fill = fill, .grad = grad};
    memcpy(a.shape, s->d, sizeof a.shape);
    return a;
}

static void out_of(bwd_case *c, const shape *s) {
    c->out_ndim = s->ndim;
    memcpy(c->out_shape, s->d, sizeof c->out_shape);
}

/* The element of an operand of shape `in` (aligned at the last dimension)
 * that index i of the broadcast shape `out` reads. */
static int64_t broadcast_source(int64_t i, const shape *out, const shape *in) {
    int64_t offset = 0, step = 1;
    for (int d = out->ndim - 1; d >= 0; d--) {
        const int64_t coord = i % out->d[d];
        i /= out->d[d];
        const int id = in->ndim - out->ndim + d;
        if (id < 0) continue;
        if (in->d[id] != 1) offset += coord * step;
        step *= in->d[id];
    }
    return offset;
}

/* Run every case on the CPU (one and two threads) and on Vulkan. */
static void run_everywhere(bwd_case *c) {
    char base[sizeof c->what];
    memcpy(base, c->what, sizeof base);
    base[100] = '\0'; /* room for the device's name */
    for (int device = 0; device < 3; device++) {
        c->threads = device == 1 ? 2 : 1;
        c->vulkan = device == 2;
        snprintf(c->what, sizeof c->what, "%.100s on %s", base, device == 2 ? "vulkan" : device ? "cpu/2" : "cpu/1");
        bwd_run_case(c);
    }
}

/* ---- broadcasting binary operations ---- */

typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAXIMUM, OP_MINIMUM } binary_kind;
static const char *const kBinaryNames[] = {"add", "sub", "mul", "div", "maximum", "minimum"};

typedef struct binary_p {
    binary_kind kind;
    shape a, b, out;
} binary_p;

static nn_tensor *run_binary(nn_tensor *const *x, const void *p) {
    switch (((const binary_p *)p)->kind) {
    case OP_ADD: return nn_add(x[0], x[1]);
    case OP_SUB: return nn_sub(x[0], x[1]);
    case OP_MUL: return nn_mul(x[0], x[1]);
    case OP_DIV: return nn_div(x[0], x[1]);
    case OP_MAXIMUM: return nn_maximum(x[0], x[1]);
    case OP_MINIMUM: return nn_minimum(x[0], x[1]);
    }
    return NULL;
}

static void ref_binary(double *const *x, double *y, const void *p) {
    const binary_p *q = p;
    for (int64_t i = 0; i < numel_of(&q->out); i++) {
        const double a = x[0][broadcast_source(i, &q->out, &q->a)], b = x[1][broadcast_source(i, &q->out, &q->b)];
        switch (q->kind) {
        case OP_ADD: y[i] = a + b; break;
        case OP_SUB: y[i] = a - b; break;
        case OP_MUL: y[i] = a * b; break;
        case OP_DIV: y[i] = a / b; break;
        case OP_MAXIMUM: y[i] = a > b ? a : b; break;
        case OP_MINIMUM: y[i] = a < b ? a : b; break;
        }
    }
}

TEST(tensor_ops_broadcast_binary) {
    static const struct {
        shape a, b, out;
    } kShapes[] = {
        {{3, {3, 1, 5}}, {2, {4, 1}}, {3, {3, 4, 5}}},
        {{4, {2, 3, 4, 5}}, {1, {5}}, {4, {2, 3, 4, 5}}},
        {{1, {1}}, {2, {7, 3}}, {2, {7, 3}}},
        {{2, {1, 3}}, {2, {1, 3}}, {2, {1, 3}}},
        {{1, {13}}, {1, {13}}, {1, {13}}},
        {{6, {2, 1, 2, 1, 3, 1}}, {6, {1, 3, 1, 2, 1, 2}}, {6, {2, 3, 2, 2, 3, 2}}},
        {{3, {5, 1, 3}}, {3, {5, 7, 3}}, {3, {5, 7, 3}}},
    };
    for (int kind = OP_ADD; kind <= OP_MINIMUM; kind++)
        for (int i = 0; i < (int)(sizeof kShapes / sizeof kShapes[0]); i++) {
            binary_p q = {(binary_kind)kind, kShapes[i].a, kShapes[i].b, kShapes[i].out};
            bwd_case c = {.nargs = 2, .run = run_binary, .ref = ref_binary, .p = &q, .seed = 4100 + 10 * kind + i};
            snprintf(c.what, sizeof c.what, "%s shapes %d", kBinaryNames[kind], i);
            /* distinct values: no ties within a finite difference; divisors away from 0 */
            const fill_kind fa = kind >= OP_MAXIMUM ? FILL_DISTINCT : FILL_UNIFORM;
            const fill_kind fb = kind == OP_DIV ? FILL_AWAY_ZERO : fa;
            c.arg[0] = arg_of(&q.a, fa, true);
            c.arg[1] = arg_of(&q.b, fb, i != 2); /* one case with an operand that wants no gradient */
            out_of(&c, &q.out);
            run_everywhere(&c);
        }
}

/* mul(x, x) and a broadcast operand used twice accumulate into one gradient. */
static nn_tensor *run_self_broadcast(nn_tensor *const *x, const void *p) {
    (void)p;
    return nn_div(nn_mul(x[0], x[1]), nn_add(x[1], nn_maximum(x[1], x[1])));
}
static void ref_self_broadcast(double *const *x, double *y, const void *p) {
    (void)p;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) y[i * 3 + j] = x[0][i * 3 + j] * x[1][j] / (2.0 * x[1][j]);
}

TEST(tensor_ops_broadcast_operand_used_twice) {
    bwd_case c = {.nargs = 2, .run = run_self_broadcast, .ref = ref_self_broadcast, .seed = 4190};
    snprintf(c.what, sizeof c.what, "x * b / (b + max(b, b))");
    c.arg[0] = spec(FILL_UNIFORM, true, 2, 4, 3, 0, 0);
    c.arg[1] = spec(FILL_AWAY_ZERO, true, 1, 3, 0, 0, 0);
    set_out(&c, 2, 4, 3, 0, 0);
    run_everywhere(&c);
}

/* ---- reductions over dimensions ---- */

typedef enum { RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_VAR, RED_VAR0 } reduce_kind;
static const char *const kReduceNames[] = {"sum", "mean", "max", "min", "var", "var(correction 0)"};

typedef struct reduce_p {
    reduce_kind kind;
    shape x;
    int dims[NN_MAX_DIMS], count;
    bool keepdim;
} reduce_p;

static nn_tensor *run_reduce(nn_tensor *const *x, const void *p) {
    const reduce_p *q = p;
    switch (q->kind) {
    case RED_SUM: return nn_sum_dims(x[0], q->dims, q->count, q->keepdim);
    case RED_MEAN: return nn_mean_dims(x[0], q->dims, q->count, q->keepdim);
    case RED_MAX: return nn_max_dims(x[0], q->dims, q->count, q->keepdim);
    case RED_MIN: return nn_min_dims(x[0], q->dims, q->count, q->keepdim);
    case RED_VAR: return nn_var_dims(x[0], q->dims, q->count, 1.0, q->keepdim);
    case RED_VAR0: return nn_var_dims(x[0], q->dims, q->count, 0.0, q->keepdim);
    }
    return NULL;
}

static uint32_t reduced_mask(const reduce_p *q) {
    uint32_t mask = q->count ? 0 : (1u << q->x.ndim) - 1;
    for (int i = 0; i < q->count; i++) mask |= 1u << (q->dims[i] < 0 ? q->dims[i] + q->x.ndim : q->dims[i]);
    return mask;
}

/* The output's shape, and for each element of x the output it belongs to. */
static shape reduce_out(const reduce_p *q) {
    const uint32_t mask = reduced_mask(q);
    shape out = {0};
    for (int d = 0; d < q->x.ndim; d++)
        if (!(mask & (1u << d))) out.d[out.ndim++] = q->x.d[d];
        else if (q->keepdim) out.d[out.ndim++] = 1;
    if (out.ndim == 0) out.d[out.ndim++] = 1;
    return out;
}

static int64_t owner_of(const reduce_p *q, int64_t i) {
    const uint32_t mask = reduced_mask(q);
    int64_t owner = 0, step = 1;
    for (int d = q->x.ndim - 1; d >= 0; d--) {
        const int64_t coord = i % q->x.d[d];
        i /= q->x.d[d];
        if (mask & (1u << d)) continue;
        owner += coord * step;
        step *= q->x.d[d];
    }
    return owner;
}

static void ref_reduce(double *const *x, double *y, const void *p) {
    const reduce_p *q = p;
    const shape out = reduce_out(q);
    const int64_t n = numel_of(&q->x), m = numel_of(&out), per = n / m;
    double *mean = calloc((size_t)m, sizeof *mean);
    for (int64_t j = 0; j < m; j++) y[j] = q->kind == RED_MAX ? -INFINITY : q->kind == RED_MIN ? INFINITY : 0.0;
    for (int64_t i = 0; i < n; i++) mean[owner_of(q, i)] += x[0][i] / (double)per;
    for (int64_t i = 0; i < n; i++) {
        double *o = &y[owner_of(q, i)];
        const double v = x[0][i], centred = v - mean[owner_of(q, i)];
        switch (q->kind) {
        case RED_SUM: *o += v; break;
        case RED_MEAN: *o += v / (double)per; break;
        case RED_MAX: *o = v > *o ? v : *o; break;
        case RED_MIN: *o = v < *o ? v : *o; break;
        case RED_VAR: *o += centred * centred / (double)(per - 1); break;
        case RED_VAR0: *o += centred * centred / (double)per; break;
        }
    }
    free(mean);
}

TEST(tensor_ops_reductions_over_dimensions) {
    static const struct {
        shape x;
        int dims[NN_MAX_DIMS], count;
    } kCasesShapes[] = {
        {{3, {3, 5, 4}}, {1}, 1},
        {{4, {2, 3, 4, 5}}, {1, -1}, 2},
        {{1, {7}}, {0}, 0},
        {{2, {1, 9}}, {0}, 1},
        {{6, {2, 1, 3, 2, 2, 3}}, {0, 2, 5}, 3},
        {{2, {37, 3}}, {0}, 1},
        {{3, {2, 300, 3}}, {1}, 1},
    };
    for (int kind = RED_SUM; kind <= RED_VAR0; kind++)
        for (int i = 0; i < (int)(sizeof kCasesShapes / sizeof kCasesShapes[0]); i++)
            for (int keep = 0; keep < 2; keep++) {
                reduce_p q = {(reduce_kind)kind, kCasesShapes[i].x, {0}, kCasesShapes[i].count, keep};
                memcpy(q.dims, kCasesShapes[i].dims, sizeof q.dims);
                if (kind >= RED_VAR && i == 3) continue; /* one element per output: var is NaN */
                bwd_case c = {.nargs = 1, .run = run_reduce, .ref = ref_reduce, .p = &q,
                              .seed = 4300 + 20 * kind + 2 * i + keep};
                snprintf(c.what, sizeof c.what, "%s case %d keepdim %d", kReduceNames[kind], i, keep);
                c.arg[0] = arg_of(&q.x, kind == RED_MAX || kind == RED_MIN ? FILL_DISTINCT : FILL_UNIFORM, true);
                const shape out = reduce_out(&q);
                out_of(&c, &out);
                run_everywhere(&c);
            }
}

/* argmax and argmin: the first extreme position, against the loops, with ties. */
static void check_arg(const char *device) {
    if (strcmp(device, "vulkan") == 0 && vkt_skipped()) return;
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device});
    CHECK_MSG(ctx, "%s: %s", device, nn_last_error());
    if (!ctx) return;
    const int64_t xs[3] = {4, 6, 5};
    float x[120];
    for (int i = 0; i < 120; i++) x[i] = (float)((i * 37) % 11) - 5.0f; /* values repeat: ties */
    nn_tensor *t = nn_tensor_from_data(ctx, NN_F32, 3, xs, x);
    const int dim1[1] = {1}, dims02[2] = {0, 2};
    for (int kind = 0; kind < 2; kind++) {
        nn_tensor *(*fn)(nn_tensor *, const int *, int, bool) = kind ? nn_argmin_dims : nn_argmax_dims;
        int32_t got[120];
        nn_tensor *a = fn(t, dim1, 1, false);
        CHECK(a && nn_tensor_ndim(a) == 2 && nn_tensor_dim(a, 0) == 4 && nn_tensor_dim(a, 1) == 5);
        if (a && nn_tensor_read(a, got, 20 * 4) == NN_OK)
            for (int i = 0; i < 4; i++)
                for (int k = 0; k < 5; k++) {
                    int best = 0;
                    for (int j = 1; j < 6; j++) {
                        const float v = x[(i * 6 + j) * 5 + k], b = x[(i * 6 + best) * 5 + k];
                        if (kind ? v < b : v > b) best = j;
                    }
                    CHECK_MSG(got[i * 5 + k] == best, "%s arg%s dim 1 [%d, %d]: %d, want %d", device,
                              kind ? "min" : "max", i, k, got[i * 5 + k], best);
                }
        nn_tensor *b = fn(t, dims02, 2, true);
        CHECK(b && nn_tensor_ndim(b) == 3 && nn_tensor_dim(b, 1) == 6 && nn_tensor_dim(b, 0) == 1);
        if (b && nn_tensor_read(b, got, 6 * 4) == NN_OK)
            for (int j = 0; j < 6; j++) {
                int best = 0; /* row-major position over (dim 0, dim 2) */
                for (int r = 1; r < 20; r++) {
                    const float v = x[((r / 5) * 6 + j) * 5 + r % 5], w = x[((best / 5) * 6 + j) * 5 + best % 5];
                    if (kind ? v < w : v > w) best = r;
                }
                CHECK_MSG(got[j] == best, "%s arg%s dims (0, 2) [%d]: %d, want %d", device, kind ? "min" : "max", j,
                          got[j], best);
            }
        nn_tensor *all = fn(t, NULL, 0, false);
        CHECK(all && nn_tensor_numel(all) == 1);
        if (all && nn_tensor_read(all, got, 4) == NN_OK) {
            int best = 0;
            for (int i = 1; i < 120; i++)
                if (kind ? x[i] < x[best] : x[i] > x[best]) best = i;
            CHECK_MSG(got[0] == best, "%s arg%s of all: %d, want %d", device, kind ? "min" : "max", got[0], best);
        }
    }
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    nn_tensor_free(t);
    nn_ctx_free(ctx);
}

TEST(tensor_ops_argmax_argmin) {
    check_arg("cpu");
    check_arg("vulkan");
}

/* ---- rearrangements ---- */

typedef enum { LAY_PERMUTE, LAY_TRANSPOSE, LAY_SLICE, LAY_SELECT, LAY_CAT, LAY_STACK, LAY_EXPAND, LAY_SQUEEZE } layout_kind;

typedef struct layout_p {
    layout_kind kind;
    shape x;
    int perm[NN_MAX_DIMS];
    int dim, inputs;
    int64_t start, end, step;
    shape out;
} layout_p;

static nn_tensor *run_layout(nn_tensor *const *x, const void *p) {
    const layout_p *q = p;
    switch (q->kind) {
    case LAY_PERMUTE: return nn_permute(x[0], q->perm, q->x.ndim);
    case LAY_TRANSPOSE: return nn_transpose(x[0], q->perm[0], q->perm[1]);
    case LAY_SLICE: return nn_slice(x[0], q->dim, q->start, q->end, q->step);
    case LAY_SELECT: return nn_select(x[0], q->dim, q->start);
    case LAY_CAT: return nn_cat(x, q->inputs, q->dim);
    case LAY_STACK: return nn_stack(x, q->inputs, q->dim);
    case LAY_EXPAND: return nn_expand(x[0], q->out.ndim, q->out.d);
    case LAY_SQUEEZE: return nn_squeeze(nn_unsqueeze(nn_scale(x[0], 2.0f), q->dim), q->dim);
    }
    return NULL;
}

/* Coordinates of index i in a shape, and back. */
static void coords_of(int64_t i, const shape *s, int64_t *c) {
    for (int d = s->ndim - 1; d >= 0; d--) c[d] = i % s->d[d], i /= s->d[d];
}
static int64_t index_of(const int64_t *c, const shape *s) {
    int64_t i = 0;
    for (int d = 0; d < s->ndim; d++) i = i * s->d[d] + c[d];
    return i;
}

static void ref_layout(double *const *x, double *y, const void *p) {
    const layout_p *q = p;
    const int64_t n = numel_of(&q->out);
    for (int64_t i = 0; i < n; i++) {
        int64_t c[NN_MAX_DIMS], src[NN_MAX_DIMS];
        coords_of(i, &q->out, c);
        switch (q->kind) {
        case LAY_PERMUTE:
            for (int d = 0; d < q->x.ndim; d++) src[q->perm[d]] = c[d];
            y[i] = x[0][index_of(src, &q->x)];
            break;
        case LAY_TRANSPOSE: {
            memcpy(src, c, sizeof src);
            const int a = (q->perm[0] + q->x.ndim) % q->x.ndim, b = (q->perm[1] + q->x.ndim) % q->x.ndim;
            src[a] = c[b], src[b] = c[a];
            y[i] = x[0][index_of(src, &q->x)];
            break;
        }
        case LAY_SLICE:
            memcpy(src, c, sizeof src);
            src[q->dim] = q->start + c[q->dim] * q->step;
            y[i] = x[0][index_of(src, &q->x)];
            break;
        case LAY_SELECT:
            for (int d = 0, k = 0; d < q->x.ndim; d++) src[d] = d == q->dim ? q->start : c[k++];
            y[i] = x[0][index_of(src, &q->x)];
            break;
        case LAY_CAT: { /* every input has q->x's shape */
            memcpy(src, c, sizeof src);
            const int64_t part = c[q->dim] / q->x.d[q->dim];
            src[q->dim] = c[q->dim] % q->x.d[q->dim];
            y[i] = x[part][index_of(src, &q->x)];
            break;
        }
        case LAY_STACK:
            for (int d = 0, k = 0; d < q->out.ndim; d++)
                if (d != q->dim) src[k++] = c[d];
            y[i] = x[c[q->dim]][index_of(src, &q->x)];
            break;
        case LAY_EXPAND: y[i] = x[0][broadcast_source(i, &q->out, &q->x)]; break;
        case LAY_SQUEEZE: y[i] = 2.0 * x[0][i]; break;
        }
    }
}

TEST(tensor_ops_rearrangements) {
    const layout_p kLayouts[] = {
        {LAY_PERMUTE, {4, {2, 3, 4, 5}}, {0, 2, 3, 1}, .out = {4, {2, 4, 5, 3}}},
        {LAY_PERMUTE, {6, {2, 1, 3, 2, 1, 3}}, {5, 3, 1, 0, 2, 4}, .out = {6, {3, 2, 1, 2, 3, 1}}},
        {LAY_TRANSPOSE, {3, {3, 7, 5}}, {-1, 0}, .out = {3, {5, 7, 3}}},
        {LAY_TRANSPOSE, {2, {1, 9}}, {0, 1}, .out = {2, {9, 1}}},
        {LAY_SLICE, {3, {4, 9, 3}}, .dim = 1, .start = 2, .end = 9, .step = 3, .out = {3, {4, 3, 3}}},
        {LAY_SLICE, {2, {7, 5}}, .dim = 0, .start = 1, .end = 6, .step = 1, .out = {2, {5, 5}}},
        {LAY_SLICE, {1, {11}}, .dim = 0, .start = 0, .end = 11, .step = 2, .out = {1, {6}}},
        {LAY_SELECT, {3, {4, 6, 5}}, .dim = 1, .start = 4, .out = {2, {4, 5}}},
        {LAY_SELECT, {2, {3, 7}}, .dim = 0, .start = 2, .out = {1, {7}}},
        {LAY_CAT, {3, {2, 3, 4}}, .dim = 1, .inputs = 3, .out = {3, {2, 9, 4}}},
        {LAY_CAT, {2, {1, 5}}, .dim = 0, .inputs = 6, .out = {2, {6, 5}}},
        {LAY_CAT, {2, {3, 2}}, .dim = 1, .inputs = 2, .out = {2, {3, 4}}},
        {LAY_STACK, {2, {3, 5}}, .dim = 1, .inputs = 4, .out = {3, {3, 4, 5}}},
        {LAY_STACK, {1, {7}}, .dim = 0, .inputs = 2, .out = {2, {2, 7}}},
        {LAY_EXPAND, {3, {3, 1, 5}}, .out = {4, {2, 3, 4, 5}}},
        {LAY_EXPAND, {2, {1, 1}}, .out = {2, {6, 7}}},
        {LAY_SQUEEZE, {3, {3, 4, 5}}, .dim = 2, .out = {3, {3, 4, 5}}},
    };
    for (int i = 0; i < (int)(sizeof kLayouts / sizeof kLayouts[0]); i++) {
        const layout_p *q = &kLayouts[i];
        const int inputs = q->kind == LAY_CAT || q->kind == LAY_STACK ? q->inputs : 1;
        bwd_case c = {.nargs = inputs, .run = run_layout, .ref = ref_layout, .p = q, .seed = 4500 + i};
        snprintf(c.what, sizeof c.what, "rearrangement %d (kind %d)", i, q->kind);
        for (int k = 0; k < inputs; k++) c.arg[k] = arg_of(&q->x, FILL_UNIFORM, k != 1);
        out_of(&c, &q->out);
        run_everywhere(&c);
    }
}

/* int32 slices and selections (labels[i:j], x[k] of an index tensor) are
 * the source's words, bit for bit: small values are float denormals and
 * some patterns float NaNs, which a copy through float arithmetic could
 * flush or quiet. */
static void check_int_slices(const char *device) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    enum { ROWS = 7, COLS = 5 };
    int32_t x[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) x[i] = (i * 2654435761u) % 2001 - 1000; /* small: denormal as floats */
    x[3] = INT32_MIN, x[8] = INT32_MAX, x[13] = 0x7fc00001, x[21] = (int32_t)0xff800001u; /* a NaN, -NaN */
    nn_tensor *t = nn_tensor_from_data(ctx, NN_I32, 2, (int64_t[]){ROWS, COLS}, x);
    nn_tensor *rows = nn_slice(t, 0, 1, 7, 2), *col = nn_select(t, 1, 3);
    CHECK_MSG(rows && col, "%s: %s", device, nn_last_error());
    if (rows && col) {
        CHECK(nn_tensor_dtype(rows) == NN_I32 && nn_tensor_dtype(col) == NN_I32);
        int32_t got_rows[3 * COLS], got_col[ROWS];
        CHECK(nn_tensor_read(rows, got_rows, sizeof got_rows) == NN_OK);
        CHECK(nn_tensor_read(col, got_col, sizeof got_col) == NN_OK);
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < COLS; c++)
                CHECK_MSG(got_rows[r * COLS + c] == x[(1 + 2 * r) * COLS + c], "%s row %d col %d: %d, want %d", device,
                          r, c, got_rows[r * COLS + c], x[(1 + 2 * r) * COLS + c]);
        for (int r = 0; r < ROWS; r++)
            CHECK_MSG(got_col[r] == x[r * COLS + 3], "%s select row %d: %d, want %d", device, r, got_col[r],
                      x[r * COLS + 3]);
    }
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    nn_tensor_free(t);
    nn_ctx_free(ctx);
}

TEST(tensor_ops_int32_slices_are_bit_exact) {
    check_int_slices("cpu");
    check_int_slices("vulkan");
}

/* ---- errors name the function, the argument and the values ---- */

TEST(tensor_ops_errors) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu"});
    const int64_t s34[2] = {3, 4}, s5[1] = {5}, s234[3] = {2, 3, 4};
    nn_tensor *a = nn_tensor_new(ctx, NN_F32, 2, s34), *b = nn_tensor_new(ctx, NN_F32, 1, s5);
    nn_tensor *c = nn_tensor_new(ctx, NN_F32, 3, s234);
    CHECK(nn_add(a, b) == NULL && strstr(nn_last_error(), "nn_add") && strstr(nn_last_error(), "[3, 4]") &&
          strstr(nn_last_error(), "[5]"));
    CHECK(nn_maximum(a, NULL) == NULL && strstr(nn_last_error(), "nn_maximum"));
    const int bad[1] = {2}, twice[2] = {0, -2};
    CHECK(nn_sum_dims(a, bad, 1, false) == NULL && strstr(nn_last_error(), "dimension 2 is out of range"));
    CHECK(nn_mean_dims(a, twice, 2, false) == NULL && strstr(nn_last_error(), "listed twice"));
    CHECK(nn_var_dims(a, NULL, 0, -1.0, false) == NULL && strstr(nn_last_error(), "correction"));
    const int perm_bad[2] = {0, 0};
    CHECK(nn_permute(a, perm_bad, 2) == NULL && strstr(nn_last_error(), "appears twice"));
    CHECK(nn_permute(a, perm_bad, 1) == NULL && strstr(nn_last_error(), "all 2 dimensions"));
    CHECK(nn_transpose(a, 0, 2) == NULL && strstr(nn_last_error(), "dim1 2 is out of range"));
    CHECK(nn_slice(a, 1, 3, 3, 1) == NULL && strstr(nn_last_error(), "empty"));
    CHECK(nn_slice(a, 1, 0, 3, 0) == NULL && strstr(nn_last_error(), "step must be >= 1"));
    CHECK(nn_select(a, 0, 3) == NULL && strstr(nn_last_error(), "index 3 is out of range"));
    nn_tensor *pair[2] = {a, c};
    CHECK(nn_cat(pair, 2, 0) == NULL && strstr(nn_last_error(), "tensors[1] [2, 3, 4]"));
    CHECK(nn_stack(pair, 0, 0) == NULL && strstr(nn_last_error(), "at least one"));
    const int64_t to[2] = {6, 4};
    CHECK(nn_expand(a, 2, to) == NULL && strstr(nn_last_error(), "cannot expand x [3, 4] to [6, 4]"));
    CHECK(nn_unsqueeze(a, 3) == NULL && strstr(nn_last_error(), "dim 3 is out of range"));
    nn_tensor_free(a);
    nn_tensor_free(b);
    nn_tensor_free(c);
    nn_ctx_free(ctx);
}
