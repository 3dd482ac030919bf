/* nn_matmul_batched (torch.matmul's rules), nn_linear on inputs of any
 * rank, nn_embedding and nn_scaled_dot_product_attention on the CPU (one
 * and two threads) and on Vulkan: values against double-precision loops
 * written here, gradients against central differences of them (the
 * harness of ops_backward.h), at awkward sizes, broadcast batches
 * (missing, of size 1, partial), 1-D operands and batch 1. */
#include <stdlib.h>
#include <string.h>

#include "ops_backward.h"
#include "vulkan_harness.h"

typedef struct shape {
    int ndim;
    int64_t d[NN_MAX_DIMS];
} shape;

static arg_spec arg_of(const shape *s, fill_kind fill, bool grad) {
    arg_spec a = {.ndim = s->ndim, .fill = fill, .grad = grad};
    memcpy(a.shape, s->d, sizeof a.shape);
    return a;
}

static void run_everywhere(bwd_case *c) {
    char base[sizeof c->what];
    memcpy(base, c->what, sizeof base);
    base[100] = '\0';
    for (int device = 0; device < 3; device++) {
        c->threads = device == 1 ? 2 : 1;
        c->vulkan = device == 2;
        snprintf(c->what, sizeof c->what, "%.100s on %s", base, device == 2 ? "vulkan" : device ? "cpu/2" : "cpu/1");
        bwd_run_case(c);
    }
}

/* ---- matmul ---- */

typedef struct matmul_p {
    shape a, b, out;
} matmul_p;

static nn_tensor *run_matmul(nn_tensor *const *x, const void *p) {
    (void)p;
    return nn_matmul_batched(x[0], x[1]);
}

/* The offset of batch entry `i` of the broadcast batch `batch` (ndim dims)
 * in an operand whose batch dims are `own` (own_ndim, aligned at the end). */
static int64_t batch_offset(int64_t i, int ndim, const int64_t *batch, int own_ndim, const int64_t *own) {
    int64_t offset = 0, step = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        const int64_t coord = i % batch[d];
        i /= batch[d];
        const int od = own_ndim - ndim + d;
        if (od < 0) continue;
        if (own[od] != 1) offset += coord * step;
        step *= own[od];
    }
    return offset;
}

/* out[b, i, j] = sum_k a[b', i, k] b[b'', k, j], with torch.matmul's 1-D rules. */
static void ref_matmul_batched(double *const *x, double *y, const void *p) {
    const matmul_p *q = p;
    const bool row = q->a.ndim == 1, column = q->b.ndim == 1;
    const int64_t m = row ? 1 : q->a.d[q->a.ndim - 2], k = q->a.d[q->a.ndim - 1];
    const int64_t n = column ? 1 : q->b.d[q->b.ndim - 1];
    const int an = row ? 0 : q->a.ndim - 2, bn = column ? 0 : q->b.ndim - 2;
    const int ndim = an > bn ? an : bn;
    int64_t batch[NN_MAX_DIMS], count = 1;
    for (int d = 0; d < ndim; d++) {
        const int da = an - ndim + d, db = bn - ndim + d;
        const int64_t sa = da >= 0 ? q->a.d[da] : 1, sb = db >= 0 ? q->b.d[db] : 1;
        batch[d] = sa > sb ? sa : sb;
        count *= batch[d];
    }
    for (int64_t e = 0; e < count; e++) {
        const double *a = x[0] + batch_offset(e, ndim, batch, an, q->a.d) * m * k;
        const double *b = x[1] + batch_offset(e, ndim, batch, bn, q->b.d) * k * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t l = 0; l < k; l++) s += a[i * k + l] * b[l * n + j];
                y[(e * m + i) * n + j] = s;
            }
    }
}

TEST(batched_matmul_values_and_gradients) {
    static const matmul_p kShapes[] = {
        {{4, {2, 3, 4, 5}}, {2, {5, 6}}, {4, {2, 3, 4, 6}}},        /* a's batch, b shared: one tall GEMM */
        {{4, {3, 1, 4, 5}}, {3, {2, 5, 7}}, {4, {3, 2, 4, 7}}},     /* both partial: expanded, summed back */
        {{1, {5}}, {3, {3, 5, 7}}, {2, {3, 7}}},                    /* 1-D a: a row shared by the batch */
        {{3, {3, 4, 5}}, {1, {5}}, {2, {3, 4}}},                    /* 1-D b */
        {{3, {1, 3, 5}}, {3, {1, 5, 2}}, {3, {1, 3, 2}}},           /* batch 1 */
        {{2, {7, 5}}, {4, {2, 3, 5, 3}}, {4, {2, 3, 7, 3}}},        /* a shared across b's batch: summed dA */
        {{3, {3, 4, 5}}, {3, {3, 5, 2}}, {3, {3, 4, 2}}},           /* same batch */
        {{1, {6}}, {1, {6}}, {1, {1}}},                             /* dot product */
        {{2, {1, 6}}, {2, {6, 1}}, {2, {1, 1}}},                    /* 2-D */
        {{5, {2, 1, 2, 3, 4}}, {4, {3, 1, 4, 3}}, {5, {2, 3, 2, 3, 3}}}, /* 5-D, partial both ways */
    };
    for (int i = 0; i < (int)(sizeof kShapes / sizeof kShapes[0]); i++) {
        const matmul_p *q = &kShapes[i];
        bwd_case c = {.nargs = 2, .run = run_matmul, .ref = ref_matmul_batched, .p = q, .seed = 7100 + i};
        snprintf(c.what, sizeof c.what, "matmul_batched shapes %d", i);
        c.arg[0] = arg_of(&q->a, FILL_UNIFORM, true);
        c.arg[1] = arg_of(&q->b, FILL_UNIFORM, i != 3); /* one case whose b wants no gradient */
        c.out_ndim = q->out.ndim;
        memcpy(c.out_shape, q->out.d, sizeof c.out_shape);
        run_everywhere(&c);
    }
}

TEST(batched_matmul_refuses_bad_shapes) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    nn_tensor *a = nn_tensor_new(ctx, NN_F32, 3, (int64_t[]){2, 4, 5});
    nn_tensor *b = nn_tensor_new(ctx, NN_F32, 3, (int64_t[]){3, 5, 6});
    nn_tensor *c = nn_tensor_new(ctx, NN_F32, 2, (int64_t[]){4, 6});
    nn_tensor *labels = nn_tensor_new(ctx, NN_I32, 2, (int64_t[]){5, 6});
    CHECK(nn_matmul_batched(a, b) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "nn_matmul_batched") && strstr(nn_last_error(), "[2, 4, 5]") &&
                  strstr(nn_last_error(), "[3, 5, 6]"),
              "message: %s", nn_last_error());
    CHECK(nn_matmul_batched(a, c) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "5 columns") && strstr(nn_last_error(), "4 rows"), "message: %s",
              nn_last_error());
    CHECK(nn_matmul_batched(NULL, c) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "nn_matmul_batched") && strstr(nn_last_error(), "a"), "message: %s",
              nn_last_error());
    CHECK(nn_matmul_batched(a, labels) == NULL);
    CHECK(nn_linear(a, c, NULL) == NULL); /* weight [4, 6] expects 6 features, x has 5 */
    CHECK_MSG(strstr(nn_last_error(), "nn_linear") && strstr(nn_last_error(), "[4, 6]"), "message: %s",
              nn_last_error());
    nn_tensor_free(a);
    nn_tensor_free(b);
    nn_tensor_free(c);
    nn_tensor_free(labels);
    nn_ctx_free(ctx);
}

/* ---- linear on inputs of any rank ---- */

typedef struct linear_p {
    shape x;
    int64_t out;
    bool bias;
} linear_p;

static nn_tensor *run_linear(nn_tensor *const *x, const void *p) {
    return nn_linear(x[0], x[1], ((const linear_p *)p)->bias ? x[2] : NULL);
}

static void ref_linear_nd(double *const *x, double *y, const void *p) {
    const linear_p *q = p;
    const int64_t in = q->x.d[q->x.ndim - 1], rows = ref_numel(q->x.ndim, q->x.d) / in;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < q->out; o++) {
            double s = q->bias ? x[2][o] : 0.0;
            for (int64_t i = 0; i < in; i++) s += x[0][r * in + i] * x[1][o * in + i];
            y[r * q->out + o] = s;
        }
}

TEST(linear_any_rank_values_and_gradients) {
    static const linear_p kCases[] = {
        {{3, {2, 3, 5}}, 7, true},
        {{4, {2, 1, 3, 4}}, 3, false},
        {{1, {5}}, 3, true},
        {{3, {1, 1, 7}}, 2, true},
        {{6, {1, 2, 1, 2, 1, 3}}, 5, true},
    };
    for (int i = 0; i < (int)(sizeof kCases / sizeof kCases[0]); i++) {
        const linear_p *q = &kCases[i];
        const int64_t in = q->x.d[q->x.ndim - 1];
        bwd_case c = {.nargs = q->bias ? 3 : 2, .run = run_linear, .ref = ref_linear_nd, .p = q, .seed = 7300 + i};
        snprintf(c.what, sizeof c.what, "linear rank %d case %d", q->x.ndim, i);
        c.arg[0] = arg_of(&q->x, FILL_UNIFORM, true);
        c.arg[1] = spec(FILL_UNIFORM, true, 2, q->out, in, 0, 0);
        if (q->bias) c.arg[2] = spec(FILL_UNIFORM, true, 1, q->out, 0, 0, 0);
        c.out_ndim = q->x.ndim;
        memcpy(c.out_shape, q->x.d, sizeof c.out_shape);
        c.out_shape[q->x.ndim - 1] = q->out;
        run_everywhere(&c);
    }
}

/* ---- embedding ---- */

typedef struct embedding_p {
    shape indices;
    int64_t num, dim;
    int padding_idx;
} embedding_p;

static nn_tensor *run_embedding(nn_tensor *const *x, const void *p) {
    return nn_embedding(x[0], x[1], ((const embedding_p *)p)->padding_idx);
}

static void ref_embedding(double *const *x, double *y, const void *p) {
    const embedding_p *q = p;
    for (int64_t i = 0; i < ref_numel(q->indices.ndim, q->indices.d); i++)
        for (int64_t f = 0; f < q->dim; f++) y[i * q->dim + f] = x[1][(int64_t)x[0][i] * q->dim + f];
}

/* The padding row's gradient is 0 although its values reach the output. */
static void grad_embedding(double *const *x, const double *w, double *const *grads, const void *p) {
    const embedding_p *q = p;
    memset(grads[1], 0, sizeof(double) * (size_t)(q->num * q->dim));
    for (int64_t i = 0; i < ref_numel(q->indices.ndim, q->indices.d); i++) {
        const int64_t row = (int64_t)x[0][i];
        if (row == q->padding_idx) continue;
        for (int64_t f = 0; f < q->dim; f++) grads[1][row * q->dim + f] += w[i * q->dim + f];
    }
}

TEST(embedding_values_and_gradients) {
    static const embedding_p kCases[] = {
        {{2, {3, 5}}, 7, 4, -1},    /* repeated indices (15 of 7 rows) */
        {{1, {1}}, 1, 3, -1},       /* one index, one row */
        {{3, {2, 3, 4}}, 5, 3, 2},  /* a padding row among repeated indices */
        {{1, {11}}, 13, 1, 0},
        {{5, {1, 2, 1, 3, 2}}, 4, 2, 3},
    };
    for (int i = 0; i < (int)(sizeof kCases / sizeof kCases[0]); i++) {
        const embedding_p *q = &kCases[i];
        bwd_case c = {.nargs = 2, .run = run_embedding, .ref = ref_embedding, .p = q, .seed = 7500 + i};
        if (q->padding_idx >= 0) c.ref_grad = grad_embedding; /* differences would see the padding row */
        snprintf(c.what, sizeof c.what, "embedding case %d", i);
        c.arg[0] = arg_of(&q->indices, FILL_LABELS, false);
        c.arg[0].classes = (int)q->num;
        c.arg[1] = spec(FILL_UNIFORM, true, 2, q->num, q->dim, 0, 0);
        c.out_ndim = q->indices.ndim + 1;
        memcpy(c.out_shape, q->indices.d, sizeof c.out_shape);
        c.out_shape[q->indices.ndim] = q->dim;
        run_everywhere(&c);
    }
}

/* An index outside [0, num) is an error at the read, on every device, and
 * the context works afterwards; bad arguments are refused at the call. */
TEST(embedding_reports_bad_indices) {
    for (int device = 0; device < 2; device++) {
        if (device == 1 && vkt_skipped()) continue;
        nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device ? "vulkan" : "cpu", .threads = 1});
        CHECK(ctx != NULL);
        if (!ctx) continue;
        nn_tensor *weight = nn_tensor_new(ctx, NN_F32, 2, (int64_t[]){4, 3});
        nn_init_uniform(weight, -1, 1);
        nn_tensor *bad = nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){3}, (int32_t[]){1, 4, 0});
        nn_tensor *negative = nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){2}, (int32_t[]){-1, 2});
        nn_tensor *good = nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){2}, (int32_t[]){3, 3});
        float out[9];
        nn_tensor *y = nn_embedding(bad, weight, -1);
        CHECK(y != NULL);
        CHECK(nn_tensor_read(y, out, sizeof(float) * 9) != NN_OK);
        CHECK_MSG(strstr(nn_last_error(), "embedding") && strstr(nn_last_error(), "index 4 at position 1") &&
                      strstr(nn_last_error(), "[0, 4)"),
                  "%s: message: %s", device ? "vulkan" : "cpu", nn_last_error());
        nn_ctx_step_end(ctx);
        y = nn_embedding(negative, weight, -1);
        CHECK(y && nn_tensor_read(y, out, sizeof(float) * 6) != NN_OK);
        CHECK_MSG(strstr(nn_last_error(), "index -1 at position 0"), "message: %s", nn_last_error());
        nn_ctx_step_end(ctx);
        y = nn_embedding(good, weight, -1);
        CHECK(y && nn_tensor_read(y, out, sizeof(float) * 6) == NN_OK); /* nothing left over */
        nn_ctx_step_end(ctx);
        CHECK(nn_embedding(good, weight, 4) == NULL);
        CHECK_MSG(strstr(nn_last_error(), "padding_idx 4"), "message: %s", nn_last_error());
        CHECK(nn_embedding(weight, weight, -1) == NULL); /* float indices */
        CHECK_MSG(strstr(nn_last_error(), "nn_embedding") && strstr(nn_last_error(), "indices"), "message: %s",
                  nn_last_error());
        CHECK(nn_embedding(good, good, -1) == NULL);
        nn_tensor_free(weight);
        nn_tensor_free(bad);
        nn_tensor_free(negative);
        nn_tensor_free(good);
        nn_ctx_free(ctx);
    }
}

/* ---- scaled dot-product attention ---- */

typedef struct attention_p {
    shape q, k, v, mask, out;
    bool masked, causal;
    float scale;
} attention_p;

static nn_tensor *run_attention(nn_tensor *const *x, const void *p) {
    const attention_p *q = p;
    return nn_scaled_dot_product_attention(x[0], x[1], x[2], q->masked ? x[3] : NULL, q->causal, q->scale);
}

/* Batch entries of q, k, v, mask over the output's batch, then per query a
 * softmax over the keys in double. */
static void ref_attention(double *const *x, double *y, const void *p) {
    const attention_p *q = p;
    const int bn = q->out.ndim - 2;
    const int64_t L = q->q.d[q->q.ndim - 2], E = q->q.d[q->q.ndim - 1], S = q->k.d[q->k.ndim - 2];
    const int64_t Ev = q->v.d[q->v.ndim - 1];
    const double scale = q->scale > 0 ? q->scale : 1.0 / sqrt((double)E);
    int64_t batch = 1;
    for (int d = 0; d < bn; d++) batch *= q->out.d[d];
    double *s = ref_alloc_d(S);
    for (int64_t e = 0; e < batch; e++) {
        const double *qe = x[0] + batch_offset(e, bn, q->out.d, q->q.ndim - 2, q->q.d) * L * E;
        const double *ke = x[1] + batch_offset(e, bn, q->out.d, q->k.ndim - 2, q->k.d) * S * E;
        const double *ve = x[2] + batch_offset(e, bn, q->out.d, q->v.ndim - 2, q->v.d) * S * Ev;
        for (int64_t i = 0; i < L; i++) {
            double top = -INFINITY, sum = 0;
            for (int64_t j = 0; j < S; j++) {
                double d = 0;
                for (int64_t l = 0; l < E; l++) d += qe[i * E + l] * ke[j * E + l];
                d *= scale;
                if (q->masked) { /* the mask's element for (e, i, j), broadcast */
                    shape full = q->out;
                    full.d[full.ndim - 1] = S;
                    int64_t flat = (e * L + i) * S + j, offset = 0, step = 1;
                    for (int dd = full.ndim - 1; dd >= 0; dd--) {
                        const int64_t coord = flat % full.d[dd];
                        flat /= full.d[dd];
                        const int md = q->mask.ndim - full.ndim + dd;
                        if (md < 0) continue;
                        if (q->mask.d[md] != 1) offset += coord * step;
                        step *= q->mask.d[md];
                    }
                    d += x[3][offset];
                }
                if (q->causal && j > i) d = -INFINITY;
                s[j] = d;
                if (d > top) top = d;
            }
            for (int64_t j = 0; j < S; j++) sum += (s[j] = exp(s[j] - top));
            for (int64_t c = 0; c < Ev; c++) {
                double o = 0;
                for (int64_t j = 0; j < S; j++) o += s[j] / sum * ve[j * Ev + c];
                y[(e * L + i) * Ev + c] = o;
            }
        }
    }
    free(s);
}

TEST(attention_values_and_gradients) {
    static const attention_p kCases[] = {
        {{3, {2, 3, 4}}, {3, {2, 5, 4}}, {3, {2, 5, 3}}, {0}, {3, {2, 3, 3}}, false, false, 0.0f},
        {{4, {2, 2, 5, 3}}, {4, {2, 2, 5, 3}}, {4, {2, 2, 5, 2}}, {0}, {4, {2, 2, 5, 2}}, false, true, 0.0f},
        {{3, {1, 4, 3}}, {3, {1, 6, 3}}, {3, {1, 6, 5}}, {0}, {3, {1, 4, 5}}, false, true, 0.7f}, /* L < S */
        {{4, {2, 1, 3, 4}}, {3, {2, 5, 4}}, {2, {5, 3}}, {2, {3, 5}}, {4, {2, 2, 3, 3}}, true, false, 0.0f},
        {{3, {1, 3, 2}}, {3, {1, 3, 2}}, {3, {1, 3, 2}}, {3, {1, 1, 3}}, {3, {1, 3, 2}}, true, false, 1.5f},
        /* past one tile of 32 queries and keys, a head of two 64-column chunks */
        {{3, {1, 35, 66}}, {3, {1, 34, 66}}, {3, {1, 34, 5}}, {0}, {3, {1, 35, 5}}, false, false, 0.0f},
        {{3, {2, 36, 6}}, {3, {2, 36, 6}}, {3, {2, 36, 4}}, {0}, {3, {2, 36, 4}}, false, true, 0.0f},
        /* k and v repeated along a middle batch dimension: composed */
        {{5, {2, 3, 2, 3, 4}}, {5, {2, 1, 2, 5, 4}}, {5, {2, 1, 2, 5, 3}}, {0}, {5, {2, 3, 2, 3, 3}}, false, false,
         0.0f},
    };
    for (int i = 0; i < (int)(sizeof kCases / sizeof kCases[0]); i++) {
        const attention_p *q = &kCases[i];
        bwd_case c = {.nargs = q->masked ? 4 : 3, .run = run_attention, .ref = ref_attention, .p = q,
                      .seed = 7700 + i};
        snprintf(c.what, sizeof c.what, "attention case %d%s", i, q->causal ? " causal" : "");
        c.arg[0] = arg_of(&q->q, FILL_UNIFORM, true);
        c.arg[1] = arg_of(&q->k, FILL_UNIFORM, true);
        c.arg[2] = arg_of(&q->v, FILL_UNIFORM, true);
        if (q->masked) c.arg[3] = arg_of(&q->mask, FILL_UNIFORM, true);
        c.out_ndim = q->out.ndim;
        memcpy(c.out_shape, q->out.d, sizeof c.out_shape);
        run_everywhere(&c);
    }
}

TEST(attention_refuses_bad_arguments) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    nn_tensor *q = nn_tensor_new(ctx, NN_F32, 3, (int64_t[]){2, 3, 4});
    nn_tensor *k = nn_tensor_new(ctx, NN_F32, 3, (int64_t[]){2, 5, 4});
    nn_tensor *v = nn_tensor_new(ctx, NN_F32, 3, (int64_t[]){2, 6, 4});
    nn_tensor *mask = nn_tensor_new(ctx, NN_F32, 2, (int64_t[]){3, 4});
    CHECK(nn_scaled_dot_product_attention(q, k, v, NULL, false, 0.0f) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "key [2, 5, 4] and value [2, 6, 4]"), "message: %s", nn_last_error());
    CHECK(nn_scaled_dot_product_attention(q, k, k, mask, false, 0.0f) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "mask [3, 4]") && strstr(nn_last_error(), "[2, 3, 5]"), "message: %s",
              nn_last_error());
    CHECK(nn_scaled_dot_product_attention(q, k, k, mask, true, 0.0f) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "is_causal"), "message: %s", nn_last_error());
    CHECK(nn_scaled_dot_product_attention(q, k, k, NULL, false, -1.0f) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "scale -1"), "message: %s", nn_last_error());
    CHECK(nn_scaled_dot_product_attention(q, v, k, NULL, false, 0.0f) == NULL);
    nn_tensor_free(q);
    nn_tensor_free(k);
    nn_tensor_free(v);
    nn_tensor_free(mask);
    nn_ctx_free(ctx);
}

/* ---- the Embedding module ---- */

TEST(embedding_layer_module) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 5});
    nn_module *m = nn_embedding_layer(ctx, 300, 7, 2);
    CHECK(m != NULL);
    if (!m) return;
    CHECK(nn_module_state_count(m) == 1 && strcmp(nn_module_state_name(m, 0), "weight") == 0);
    nn_tensor *w = nn_module_get_parameter(m, "weight");
    float *values = malloc(sizeof(float) * 2100);
    CHECK(nn_tensor_read(w, values, sizeof(float) * 2100) == NN_OK);
    double mean = 0, square = 0;
    for (int i = 0; i < 2100; i++) mean += values[i] / 2100.0, square += (double)values[i] * values[i] / 2100.0;
    CHECK_MSG(fabs(mean) < 0.1 && fabs(square - 1.0) < 0.15, "N(0, 1) weights: mean %g, mean square %g", mean, square);
    for (int f = 0; f < 7; f++) CHECK(values[2 * 7 + f] == 0.0f); /* the padding row */
    nn_tensor *idx = nn_tensor_from_data(ctx, NN_I32, 2, (int64_t[]){2, 2}, (int32_t[]){2, 5, 5, 299});
    nn_tensor *y = nn_module_forward(m, idx);
    CHECK(y && nn_tensor_dim(y, 0) == 2 && nn_tensor_dim(y, 2) == 7);
    CHECK(nn_backward(nn_sum(y)) == NN_OK);
    float grad[2100];
    CHECK(nn_tensor_read(nn_tensor_grad(w), grad, sizeof grad) == NN_OK);
    CHECK(grad[2 * 7] == 0.0f && grad[5 * 7 + 3] == 2.0f && grad[299 * 7 + 6] == 1.0f && grad[0] == 0.0f);
    nn_ctx_step_end(ctx);
    CHECK(nn_embedding_layer(ctx, 3, 4, 3) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "nn_embedding_layer") && strstr(nn_last_error(), "padding_idx 3"), "message: %s",
              nn_last_error());
    CHECK(nn_embedding_layer(ctx, 0, 4, -1) == NULL);
    free(values);
    nn_tensor_free(idx);
    nn_module_free(m);
    nn_ctx_free(ctx);
}
