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
