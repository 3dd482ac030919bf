/* Comparisons, casts and integer sums (PyTorch's (out.argmax(1) == y).sum(),
 * .float(), .int()): values against references written here in double and
 * 64-bit integers, on the CPU and on Vulkan, over awkward and broadcast
 * shapes with NaN, ties, negative and extreme integers; cast edge cases;
 * integer sums past 2^24 (where float would round) and past 2^31 (they
 * wrap); results requiring no grad while backward through the float parts
 * still works; refusals. ONNX export: test_onnx_export.c. */
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

/* A shape of up to six dimensions. */
typedef struct shape {
    int ndim;
    int64_t d[NN_MAX_DIMS];
} shape;

static int64_t numel_of(const shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) n *= s->d[i];
    return n;
}

/* The element of an operand of shape `in` (aligned at the last dimension)
 * that index i of the broadcast shape `out` reads. */
static int64_t source_of(int64_t i, const shape *out, const shape *in) {
    int64_t offset = 0, step = 1;
    for (int d = out->ndim - 1; d >= 0; d--) {
        const int64_t coord = i % out->d[d];
        i /= out->d[d];
        const int k = in->ndim - out->ndim + d;
        if (k < 0) continue;
        if (in->d[k] != 1) offset += coord * step;
        step *= in->d[k];
    }
    return offset;
}

static uint64_t g_state = 0x2545F4914F6CDD1DULL;
static uint32_t next_word(void) {
    g_state ^= g_state << 13, g_state ^= g_state >> 7, g_state ^= g_state << 17;
    return (uint32_t)(g_state >> 16);
}

/* ---- comparisons ---- */

typedef struct compare_pair {
    shape a, b, out;
} compare_pair;

static const compare_pair kPairs[] = {
    {{1, {37}}, {1, {37}}, {1, {37}}},
    {{2, {5, 7}}, {1, {7}}, {2, {5, 7}}},
    {{1, {1}}, {2, {5, 7}}, {2, {5, 7}}},
    {{3, {3, 1, 9}}, {2, {4, 1}}, {3, {3, 4, 9}}},
    {{6, {2, 3, 1, 4, 1, 3}}, {5, {1, 5, 4, 1, 3}}, {6, {2, 3, 5, 4, 1, 3}}},
    {{2, {301, 67}}, {2, {301, 67}}, {2, {301, 67}}},
};

/* The op on two doubles as IEEE orders them: NaN unordered. */
static int holds_double(nn_compare_op op, double a, double b) {
    switch (op) {
    case NN_COMPARE_EQ: return a == b;
    case NN_COMPARE_NE: return a != b;
    case NN_COMPARE_LT: return a < b;
    case NN_COMPARE_LE: return a <= b;
    case NN_COMPARE_GT: return a > b;
    case NN_COMPARE_GE: return a >= b;
    }
    return -1;
}

/* Float operands: steps of 0.5 in [-2, 2] (many ties, -0 and 0), every
 * 11th a NaN, some infinities. Int operands: [-4, 4] with the extremes. */
static void fill_operand(void *data, int64_t n, bool integer) {
    for (int64_t i = 0; i < n; i++) {
        const uint32_t r = next_word();
        if (integer) {
            int32_t v = (int32_t)(r % 9) - 4;
            if (r % 23 == 0) v = INT32_MIN;
            if (r % 29 == 0) v = INT32_MAX;
            ((int32_t *)data)[i] = v;
        } else {
            float v = ((float)(r % 9) - 4.0f) * 0.5f;
            if (v == 0.0f && (r & 1024)) v = -0.0f;
            if (r % 11 == 0) v = NAN;
            if (r % 31 == 0) v = (r & 2048) ? INFINITY : -INFINITY;
            ((float *)data)[i] = v;
        }
    }
}

static void check_compare(const char *device) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    for (size_t k = 0; k < sizeof kPairs / sizeof kPairs[0]; k++)
        for (int integer = 0; integer < 2; integer++) {
            const compare_pair *c = &kPairs[k];
            const int64_t na = numel_of(&c->a), nb = numel_of(&c->b), n = numel_of(&c->out);
            void *ha = malloc((size_t)na * 4), *hb = malloc((size_t)nb * 4);
            int32_t *got = malloc((size_t)n * 4);
            fill_operand(ha, na, integer);
            fill_operand(hb, nb, integer);
            const nn_dtype dtype = integer ? NN_I32 : NN_F32;
            nn_tensor *a = nn_tensor_from_data(ctx, dtype, c->a.ndim, c->a.d, ha);
            nn_tensor *b = nn_tensor_from_data(ctx, dtype, c->b.ndim, c->b.d, hb);
            if (!integer) nn_tensor_set_requires_grad(a, true); /* fine: the result still has no gradient */
            for (int op = NN_COMPARE_EQ; op <= NN_COMPARE_GE; op++) {
                nn_tensor *r = nn_compare(a, b, (nn_compare_op)op);
                CHECK_MSG(r, "%s pair %zu: %s", device, k, nn_last_error());
                if (!r) continue;
                CHECK(nn_tensor_dtype(r) == NN_I32 && !nn_tensor_requires_grad(r));
                CHECK(nn_tensor_ndim(r) == c->out.ndim && nn_tensor_numel(r) == n);
                for (int d = 0; d < c->out.ndim; d++) CHECK(nn_tensor_dim(r, d) == c->out.d[d]);
                CHECK_MSG(nn_tensor_read(r, got, (size_t)n * 4) == NN_OK, "%s", nn_last_error());
                int bad = 0;
                for (int64_t i = 0; i < n && bad < 3; i++) {
                    const int64_t ia = source_of(i, &c->out, &c->a), ib = source_of(i, &c->out, &c->b);
                    const double va = integer ? (double)((int32_t *)ha)[ia] : (double)((float *)ha)[ia];
                    const double vb = integer ? (double)((int32_t *)hb)[ib] : (double)((float *)hb)[ib];
                    const int want = holds_double((nn_compare_op)op, va, vb);
                    if (got[i] != want) {
                        bad++;
                        CHECK_MSG(0, "%s %s pair %zu op %d [%lld]: %g vs %g gives %d, want %d", device,
                                  integer ? "int32" : "float32", k, op, (long long)i, va, vb, got[i], want);
                    }
                }
            }
            CHECK(nn_ctx_step_end(ctx) == NN_OK);
            nn_tensor_free(a);
            nn_tensor_free(b);
            free(ha);
            free(hb);
            free(got);
        }
    nn_ctx_free(ctx);
}

TEST(compare_against_reference_cpu) { check_compare("cpu"); }
TEST(compare_against_reference_vulkan) { check_compare("vulkan"); }

/* ---- casts ---- */

/* PyTorch's .int() as nn_cast defines it, in double. */
static int32_t float_to_int_reference(float v) {
    if (v != v) return 0;
    const double t = trunc((double)v);
    if (t >= 2147483647.0) return INT32_MAX;
    if (t <= -2147483648.0) return INT32_MIN;
    return (int32_t)t;
}

/* The float nearest to i, ties to even, in 64-bit integer arithmetic:
 * keep 24 significant bits of the magnitude, rounding the rest. */
static float int_to_float_reference(int32_t i) {
    const uint64_t m = i < 0 ? (uint64_t)(-(int64_t)i) : (uint64_t)i;
    int bits = 0;
    while (bits < 64 && (m >> bits) != 0) bits++;
    const int drop = bits > 24 ? bits - 24 : 0;
    uint64_t kept = m >> drop;
    if (drop > 0) {
        const uint64_t rest = m & ((1ull << drop) - 1), halfway = 1ull << (drop - 1);
        if (rest > halfway || (rest == halfway && (kept & 1))) kept++;
    }
    const double v = ldexp((double)kept, drop);
    return (float)(i < 0 ? -v : v); /* exact: at most 24 significant bits */
}

static void check_cast(const char *device) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    /* edge cases first, then random values of every magnitude */
    const float edges[] = {-2.7f, 2.7f, NAN, 3e9f, -3e9f, INFINITY, -INFINITY, -0.0f, 0.5f, -0.5f,
                           2147483520.0f, 2147483648.0f, -2147483648.0f, -2147483904.0f, 16777217.0f, 1e-40f};
    const int32_t edge_ints[] = {16777217, 16777219, -16777217, INT32_MAX, INT32_MIN, 2147483583, 2147483584,
                                 -2147483585, 0, -1, 1, 33554435};
    enum { EDGES = sizeof edges / sizeof edges[0], EDGE_INTS = sizeof edge_ints / sizeof edge_ints[0] };
    const int64_t n = 100003;
    float *xf = malloc(n * 4), *gotf = malloc(n * 4);
    int32_t *xi = malloc(n * 4), *goti = malloc(n * 4);
    for (int64_t i = 0; i < n; i++) {
        const uint32_t r = next_word();
        xf[i] = i < EDGES ? edges[i] : (float)(((double)next_word() / 4294967296.0 - 0.5) * ldexp(1.0, (int)(r % 36)));
        xi[i] = i < EDGE_INTS ? edge_ints[i] : (int32_t)(next_word() >> (r % 32));
        if (i >= EDGE_INTS && (r & 1)) xi[i] = -xi[i];
    }
    nn_tensor *f = nn_tensor_from_data(ctx, NN_F32, 1, &n, xf), *g = nn_tensor_from_data(ctx, NN_I32, 1, &n, xi);
    nn_tensor *to_int = nn_cast(f, NN_I32), *to_float = nn_cast(g, NN_F32);
    nn_tensor *float_copy = nn_cast(f, NN_F32), *int_copy = nn_cast(g, NN_I32);
    CHECK_MSG(to_int && to_float && float_copy && int_copy, "%s: %s", device, nn_last_error());
    if (to_int && to_float && float_copy && int_copy) {
        CHECK(nn_tensor_dtype(to_int) == NN_I32 && nn_tensor_dtype(to_float) == NN_F32);
        CHECK(nn_tensor_read(to_int, goti, n * 4) == NN_OK);
        int bad = 0;
        for (int64_t i = 0; i < n && bad < 4; i++)
            if (goti[i] != float_to_int_reference(xf[i])) {
                bad++;
                CHECK_MSG(0, "%s: (int)%.9g gives %d, want %d", device, xf[i], goti[i], float_to_int_reference(xf[i]));
            }
        CHECK(goti[0] == -2 && goti[1] == 2 && goti[2] == 0 && goti[3] == INT32_MAX && goti[4] == INT32_MIN);
        CHECK(nn_tensor_read(to_float, gotf, n * 4) == NN_OK);
        bad = 0;
        for (int64_t i = 0; i < n && bad < 4; i++)
            if (memcmp(&gotf[i], &(float){int_to_float_reference(xi[i])}, 4) != 0) {
                bad++;
                CHECK_MSG(0, "%s: (float)%d gives %.9g, want %.9g", device, xi[i], gotf[i],
                          int_to_float_reference(xi[i]));
            }
        CHECK(gotf[0] == 16777216.0f && gotf[1] == 16777220.0f && gotf[3] == 2147483648.0f);
        /* copies: every bit, NaN's included */
        CHECK(nn_tensor_read(float_copy, gotf, n * 4) == NN_OK && memcmp(gotf, xf, n * 4) == 0);
        CHECK(nn_tensor_read(int_copy, goti, n * 4) == NN_OK && memcmp(goti, xi, n * 4) == 0);
    }
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    /* int32 words that are NaN or subnormal bit patterns as floats stay exact */
    const int32_t words[5] = {0x7f800001, 0x7fc00000, 1, -1, (int32_t)0x80000001u};
    const int64_t five = 5;
    nn_tensor *w = nn_tensor_from_data(ctx, NN_I32, 1, &five, words);
    int32_t back[5];
    nn_tensor *same = nn_cast(w, NN_I32);
    CHECK(same && nn_tensor_read(same, back, sizeof back) == NN_OK && memcmp(back, words, sizeof back) == 0);
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    nn_tensor_free(w);
    nn_tensor_free(f);
    nn_tensor_free(g);
    free(xf), free(gotf), free(xi), free(goti);
    nn_ctx_free(ctx);
}

TEST(cast_against_reference_cpu) { check_cast("cpu"); }
TEST(cast_against_reference_vulkan) { check_cast("vulkan"); }

/* ---- integer sums ---- */

typedef struct int_sum_case {
    shape x;
    int dims[NN_MAX_DIMS], count; /* count 0: nn_sum over everything */
    bool keepdim;
    int32_t big;   /* every element's magnitude up to this */
    bool positive; /* no negative elements */
} int_sum_case;

static const int_sum_case kSums[] = {
    {{1, {37}}, {0}, 0, false, 1000, false},
    {{1, {3}}, {0}, 0, false, 0, true},             /* 3 x 16777217, which float would round */
    {{1, {70001}}, {0}, 0, false, 1 << 24, true},   /* past 2^31: wraps */
    {{2, {5, 7}}, {1}, 1, false, 1 << 30, false},
    {{3, {3, 1, 9}}, {0, 2}, 2, true, 16777217, false},
    {{6, {2, 3, 1, 4, 2, 3}}, {1, -1, 4}, 3, false, INT32_MAX, false},
    {{2, {2, 70001}}, {1}, 1, true, 100000, false}, /* few outputs of many neighbours */
    {{2, {5000, 3}}, {0}, 1, false, 3, false},
};

static void check_int_sums(const char *device) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    for (size_t k = 0; k < sizeof kSums / sizeof kSums[0]; k++) {
        const int_sum_case *c = &kSums[k];
        const int64_t n = numel_of(&c->x);
        int32_t *x = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) {
            const uint32_t r = next_word();
            x[i] = c->big ? (int32_t)(r % ((uint32_t)c->big + 1u)) : 16777217;
            if (!c->positive && (r & 0x80000000u)) x[i] = -x[i];
        }
        nn_tensor *t = nn_tensor_from_data(ctx, NN_I32, c->x.ndim, c->x.d, x);
        nn_tensor *s = c->count ? nn_sum_dims(t, c->dims, c->count, c->keepdim) : nn_sum(t);
        CHECK_MSG(s, "%s sum %zu: %s", device, k, nn_last_error());
        if (!s) continue;
        CHECK(nn_tensor_dtype(s) == NN_I32 && !nn_tensor_requires_grad(s));
        uint32_t reduced = 0;
        for (int i = 0; i < c->count; i++) reduced |= 1u << (c->dims[i] < 0 ? c->dims[i] + c->x.ndim : c->dims[i]);
        if (!c->count) reduced = (1u << c->x.ndim) - 1;
        const int64_t outputs = nn_tensor_numel(s);
        int64_t *want = calloc((size_t)outputs, sizeof *want);
        for (int64_t i = 0; i < n; i++) { /* the output of element i: its kept coordinates, row-major */
            int64_t rest = i, j = 0, step = 1;
            for (int d = c->x.ndim - 1; d >= 0; d--) {
                const int64_t coord = rest % c->x.d[d];
                rest /= c->x.d[d];
                if (!(reduced & (1u << d))) j += coord * step, step *= c->x.d[d];
            }
            want[j] += x[i];
        }
        int32_t *got = malloc((size_t)outputs * 4);
        CHECK_MSG(nn_tensor_read(s, got, (size_t)outputs * 4) == NN_OK, "%s", nn_last_error());
        for (int64_t j = 0, bad = 0; j < outputs && bad < 3; j++) {
            const int32_t wrapped = (int32_t)(uint32_t)(uint64_t)want[j]; /* modulo 2^32 */
            if (got[j] != wrapped) {
                bad++;
                CHECK_MSG(0, "%s sum %zu [%lld]: %d, want %d (%lld before wrapping)", device, k, (long long)j, got[j],
                          wrapped, (long long)want[j]);
            }
        }
        if (!c->big) CHECK(got[0] == 50331651); /* in float, 16777217 is 16777216 and the sum 50331648 */
        if (c->big && c->positive) CHECK(want[0] > INT32_MAX); /* the case wraps */
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
        nn_tensor_free(t);
        free(x), free(want), free(got);
    }
    nn_ctx_free(ctx);
}

TEST(int_sum_against_reference_cpu) { check_int_sums("cpu"); }
TEST(int_sum_against_reference_vulkan) { check_int_sums("vulkan"); }

/* ---- autograd: the int32 parts carry no gradient, the float parts do ---- */

static void check_gradients(const char *device) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    const int64_t xs[2] = {4, 5}, ys[1] = {4};
    float hx[20];
    for (int i = 0; i < 20; i++) hx[i] = (float)((i * 7) % 11) * 0.75f - 3.6f;
    const int32_t labels[4] = {0, 3, 2, 4};
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 2, xs, hx), *y = nn_tensor_from_data(ctx, NN_I32, 1, ys, labels);
    nn_tensor_set_requires_grad(x, true);
    const int dim1 = 1;
    /* accuracy as PyTorch counts it: (out.argmax(1) == y).sum() */
    nn_tensor *correct = nn_sum(nn_compare(nn_argmax_dims(x, &dim1, 1, false), y, NN_COMPARE_EQ));
    nn_tensor *truncated = nn_cast(x, NN_I32), *as_float = nn_cast(truncated, NN_F32);
    nn_tensor *positive = nn_compare(x, nn_scale(x, 0.0f), NN_COMPARE_GT);
    nn_tensor *identity = nn_cast(x, NN_F32);
    CHECK_MSG(correct && truncated && as_float && positive && identity, "%s: %s", device, nn_last_error());
    if (correct && truncated && as_float && positive && identity) {
        CHECK(!nn_tensor_requires_grad(correct) && !nn_tensor_requires_grad(truncated));
        CHECK(!nn_tensor_requires_grad(as_float) && !nn_tensor_requires_grad(positive));
        CHECK(nn_tensor_requires_grad(identity));
        /* loss = sum(cast(x) * trunc(x) + x * positive): d/dx = trunc(x) + (x > 0) */
        nn_tensor *loss = nn_sum(nn_add(nn_mul(identity, as_float), nn_mul(x, nn_cast(positive, NN_F32))));
        CHECK(nn_backward(correct) == NN_ERR_DTYPE); /* an int32 result is no loss */
        CHECK_MSG(loss && nn_backward(loss) == NN_OK, "%s: %s", device, nn_last_error());
        float grad[20];
        CHECK(nn_tensor_read(nn_tensor_grad(x), grad, sizeof grad) == NN_OK);
        for (int i = 0; i < 20; i++)
            CHECK_MSG(grad[i] == truncf(hx[i]) + (hx[i] > 0.0f ? 1.0f : 0.0f), "%s: dx[%d] = %g for x = %g", device,
                      i, grad[i], hx[i]);
        int32_t count;
        CHECK(nn_tensor_read(correct, &count, 4) == NN_OK);
        int want = 0;
        for (int r = 0; r < 4; r++) {
            int best = 0;
            for (int k = 1; k < 5; k++)
                if (hx[r * 5 + k] > hx[r * 5 + best]) best = k;
            want += best == labels[r];
        }
        CHECK_MSG(count == want, "%s: %d correct, want %d", device, count, want);
    }
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    nn_tensor_free(x);
    nn_tensor_free(y);
    nn_ctx_free(ctx);
}

TEST(compare_cast_gradients_cpu) { check_gradients("cpu"); }
TEST(compare_cast_gradients_vulkan) { check_gradients("vulkan"); }

/* Channels-last operands (a convolution's output) compare and cast in their
 * storage order; reads see the logical order. */
static void check_channels_last(const char *device) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    nn_ctx_set_memory_format(ctx, NN_MEMORY_FORMAT_CHANNELS_LAST);
    const int64_t xs[4] = {2, 3, 6, 5}, ws[4] = {4, 3, 3, 3};
    float hx[180], hw[108];
    for (int i = 0; i < 180; i++) hx[i] = (float)((i * 13) % 7) - 3.0f;
    for (int i = 0; i < 108; i++) hw[i] = (float)((i * 5) % 3) - 1.0f;
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, xs, hx), *w = nn_tensor_from_data(ctx, NN_F32, 4, ws, hw);
    nn_tensor *y = nn_conv2d(x, w, NULL, 1, 1), *z = nn_conv2d(x, nn_scale(w, -1.0f), NULL, 1, 1);
    nn_tensor *gt = nn_compare(y, z, NN_COMPARE_GT), *as_int = nn_cast(y, NN_I32);
    CHECK_MSG(gt && as_int, "%s: %s", device, nn_last_error());
    float hy[240];
    int32_t hgt[240], hint[240];
    if (gt && as_int && nn_tensor_read(y, hy, sizeof hy) == NN_OK && nn_tensor_read(gt, hgt, sizeof hgt) == NN_OK &&
        nn_tensor_read(as_int, hint, sizeof hint) == NN_OK)
        for (int i = 0; i < 240; i++)
            CHECK_MSG(hgt[i] == (hy[i] > -hy[i]) && hint[i] == (int32_t)hy[i], "%s [%d]: %g gives %d and %d", device,
                      i, hy[i], hgt[i], hint[i]);
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    nn_tensor_free(x);
    nn_tensor_free(w);
    nn_ctx_free(ctx);
}

TEST(compare_cast_channels_last_cpu) { check_channels_last("cpu"); }
TEST(compare_cast_channels_last_vulkan) { check_channels_last("vulkan"); }

TEST(compare_cast_refusals) {
    nn_ctx *ctx = vkt_open_device("cpu"), *other = vkt_open_device("cpu");
    if (!ctx || !other) return;
    const int64_t s57[2] = {5, 7}, s6[1] = {6}, s7[1] = {7};
    nn_tensor *a = nn_tensor_new(ctx, NN_F32, 2, s57), *b = nn_tensor_new(ctx, NN_F32, 1, s6);
    nn_tensor *ints = nn_tensor_new(ctx, NN_I32, 1, s7), *elsewhere = nn_tensor_new(other, NN_F32, 1, s7);
    CHECK(!nn_compare(a, ints, NN_COMPARE_EQ) && nn_last_status() == NN_ERR_DTYPE);
    CHECK_MSG(strstr(nn_last_error(), "nn_compare: a is float32 and b is int32"), "%s", nn_last_error());
    CHECK(!nn_compare(a, a, (nn_compare_op)6) && nn_last_status() == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "nn_compare: op 6 is not an nn_compare_op"), "%s", nn_last_error());
    CHECK(!nn_compare(a, b, NN_COMPARE_LT) && nn_last_status() == NN_ERR_SHAPE);
    CHECK_MSG(strstr(nn_last_error(), "nn_compare: shapes [5, 7] and [6] do not broadcast"), "%s", nn_last_error());
    CHECK(!nn_compare(NULL, a, NN_COMPARE_EQ) && nn_last_status() == NN_ERR_ARGUMENT);
    CHECK(!nn_compare(a, elsewhere, NN_COMPARE_EQ) && nn_last_status() == NN_ERR_STATE);
    CHECK_MSG(strstr(nn_last_error(), "nn_compare"), "%s", nn_last_error());
    CHECK(!nn_cast(a, (nn_dtype)5) && nn_last_status() == NN_ERR_DTYPE);
    CHECK_MSG(strstr(nn_last_error(), "nn_cast: dtype 5 is neither"), "%s", nn_last_error());
    CHECK(!nn_cast(NULL, NN_F32) && nn_last_status() == NN_ERR_ARGUMENT);
    /* int32 sums only: the mean and the other reductions of int32 are refused */
    const int dim0 = 0;
    CHECK(!nn_mean(ints) && nn_last_status() == NN_ERR_DTYPE);
    CHECK_MSG(strstr(nn_last_error(), "nn_mean: x must be float32, got int32"), "%s", nn_last_error());
    CHECK(!nn_mean_dims(ints, &dim0, 1, false) && nn_last_status() == NN_ERR_DTYPE);
    CHECK(!nn_max_dims(ints, &dim0, 1, false) && nn_last_status() == NN_ERR_DTYPE);
    CHECK(!nn_sum_dims(ints, (int[]){1}, 1, false) && nn_last_status() == NN_ERR_SHAPE);
    CHECK(nn_tensor_set_requires_grad(ints, true) == NN_ERR_DTYPE);
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    nn_tensor_free(a), nn_tensor_free(b), nn_tensor_free(ints), nn_tensor_free(elsewhere);
    nn_ctx_free(ctx);
    nn_ctx_free(other);
}
