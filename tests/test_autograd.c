/* Autograd semantics through the public API: gradient accumulation (one leaf
 * used twice, shared intermediates, repeated backward calls until zero_grad),
 * errors (backward twice, backward on a non-scalar, mixed contexts), which
 * tensors get gradients, grad mode, step ownership and views. The operations'
 * numerical gradients are tested in test_ops_backward.c; here the values are
 * simple enough to state exactly. */
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "vulkan_harness.h"

#define N_X 12
static const int64_t shape_x[2] = {3, 4};

/* A [3, 4] leaf holding the values of `data`. */
static nn_tensor *leaf(nn_ctx *ctx, const float *data, bool requires_grad) {
    nn_tensor *t = ref_tensor_f32(ctx, 2, shape_x, data);
    if (t && requires_grad) CHECK(nn_tensor_set_requires_grad(t, true) == NN_OK);
    return t;
}

/* t's values equal want[i] (times `factor`) within float rounding. */
static void expect_values(const char *what, const nn_tensor *t, const float *want, double factor,
                          int64_t n) {
    double *got = ref_alloc_d(n), *w = ref_alloc_d(n);
    for (int64_t i = 0; i < n; i++) w[i] = factor * want[i];
    if (ref_read_tensor(t, got, n, what)) CHECK_ALL_CLOSE(what, got, w, n, 1e-6, 1e-7);
    free(got);
    free(w);
}

/* loss = sum(x * c): d loss / dx = c. */
static nn_tensor *dot_loss(nn_tensor *x, nn_tensor *c) { return nn_sum(nn_mul(x, c)); }

static nn_status backward_or_fail(nn_tensor *loss, const char *what) {
    nn_status st = loss ? nn_backward(loss) : NN_ERR_STATE;
    CHECK_MSG(st == NN_OK, "%s: backward failed: %s", what, nn_last_error());
    return st;
}

/* Random [3, 4] values in x and c. */
typedef struct fixture {
    nn_ctx *ctx;
    float xv[N_X], cv[N_X];
    nn_tensor *x, *c;
} fixture;

static bool fixture_open(fixture *f, int threads, uint64_t seed, bool c_requires_grad) {
    memset(f, 0, sizeof *f);
    ref_rng r = ref_rng_new(seed);
    ref_fill_away_from_zero(&r, f->xv, N_X, 0.05f, 1);
    ref_fill_uniform(&r, f->cv, N_X, -1, 1);
    f->ctx = ref_ctx(threads);
    if (!f->ctx) return false;
    f->x = leaf(f->ctx, f->xv, true);
    f->c = leaf(f->ctx, f->cv, c_requires_grad);
    return f->x && f->c;
}

static void fixture_close(fixture *f) {
    if (f->ctx) CHECK(nn_ctx_step_end(f->ctx) == NN_OK);
    nn_tensor_free(f->x);
    nn_tensor_free(f->c);
    nn_ctx_free(f->ctx);
}

TEST(autograd_leaf_used_by_two_ops_gets_the_sum) {
    fixture f;
    if (fixture_open(&f, 1, 3000, false)) {
        /* loss = sum(2x + x*c): dx = 2 + c */
        nn_tensor *loss = nn_sum(nn_add(nn_scale(f.x, 2.0f), nn_mul(f.x, f.c)));
        if (backward_or_fail(loss, "two uses") == NN_OK) {
            float want[N_X];
            for (int i = 0; i < N_X; i++) want[i] = 2.0f + f.cv[i];
            expect_values("grad x", nn_tensor_grad(f.x), want, 1, N_X);
        }
    }
    fixture_close(&f);
}

TEST(autograd_shared_intermediate_accumulates) {
    fixture f;
    if (fixture_open(&f, 2, 3010, false)) {
        /* h = relu(x); loss = sum(h*c + 3h): dx = (c + 3) [x > 0] */
        nn_tensor *h = nn_relu(f.x);
        nn_tensor *loss = nn_sum(nn_add(nn_mul(h, f.c), nn_scale(h, 3.0f)));
        if (backward_or_fail(loss, "shared intermediate") == NN_OK) {
            float want[N_X];
            for (int i = 0; i < N_X; i++) want[i] = f.xv[i] > 0 ? f.cv[i] + 3.0f : 0.0f;
            expect_values("grad x", nn_tensor_grad(f.x), want, 1, N_X);
        }
    }
    fixture_close(&f);
}

TEST(autograd_paths_of_different_depths) {
    fixture f;
    if (fixture_open(&f, 1, 3020, true)) {
        /* h = 2x; g = 3h; loss = sum((h + g) * c): dx = 8c, dc = 8x */
        nn_tensor *h = nn_scale(f.x, 2.0f);
        nn_tensor *loss = dot_loss(nn_add(h, nn_scale(h, 3.0f)), f.c);
        if (backward_or_fail(loss, "diamond") == NN_OK) {
            expect_values("grad x", nn_tensor_grad(f.x), f.cv, 8, N_X);
            expect_values("grad c", nn_tensor_grad(f.c), f.xv, 8, N_X);
        }
    }
    fixture_close(&f);
}

TEST(autograd_leaf_grads_accumulate_until_zeroed) {
    fixture f;
    if (fixture_open(&f, 2, 3030, false)) {
        CHECK(nn_tensor_grad(f.x) == NULL);
        CHECK(nn_tensor_zero_grad(f.x) == NN_OK); /* no grad yet: a no-op */
        CHECK(nn_tensor_grad(f.x) == NULL);
        /* Two graphs in the same step, then one more after step_end. */
        backward_or_fail(dot_loss(f.x, f.c), "first");
        expect_values("after one backward", nn_tensor_grad(f.x), f.cv, 1, N_X);
        backward_or_fail(dot_loss(f.x, f.c), "second");
        expect_values("after two backwards", nn_tensor_grad(f.x), f.cv, 2, N_X);
        CHECK(nn_ctx_step_end(f.ctx) == NN_OK);
        expect_values("grad survives step_end", nn_tensor_grad(f.x), f.cv, 2, N_X);
        backward_or_fail(dot_loss(f.x, f.c), "third");
        expect_values("after three backwards", nn_tensor_grad(f.x), f.cv, 3, N_X);

        CHECK(nn_tensor_zero_grad(f.x) == NN_OK);
        expect_values("after zero_grad", nn_tensor_grad(f.x), f.cv, 0, N_X);
        backward_or_fail(dot_loss(f.x, f.c), "after zero_grad");
        expect_values("backward after zero_grad", nn_tensor_grad(f.x), f.cv, 1, N_X);
    }
    fixture_close(&f);
}

TEST(autograd_second_backward_on_consumed_graph_is_an_error) {
    fixture f;
    if (fixture_open(&f, 1, 3040, false)) {
        nn_tensor *loss = dot_loss(f.x, f.c);
        if (backward_or_fail(loss, "first") == NN_OK) {
            nn_clear_error();
            nn_status st = nn_backward(loss);
            CHECK_MSG(st == NN_ERR_STATE, "second backward returned %d (%s), want NN_ERR_STATE",
                      (int)st, nn_status_name(st));
            CHECK(strlen(nn_last_error()) > 0);
            /* A failed call leaves the gradient as it was. */
            expect_values("grad after failed backward", nn_tensor_grad(f.x), f.cv, 1, N_X);
        }
    }
    fixture_close(&f);
}

TEST(autograd_backward_on_non_scalar_is_a_shape_error) {
    fixture f;
    if (fixture_open(&f, 2, 3050, false)) {
        nn_tensor *y = nn_mul(f.x, f.c);
        CHECK(y != NULL);
        nn_clear_error();
        nn_status st = y ? nn_backward(y) : NN_ERR_STATE;
        CHECK_MSG(st == NN_ERR_SHAPE, "backward on [3, 4] returned %s, want shape error",
                  nn_status_name(st));
        CHECK(strlen(nn_last_error()) > 0);
        CHECK(nn_tensor_grad(f.x) == NULL);
        /* The refused call consumed nothing: the graph still works. */
        if (y && backward_or_fail(nn_sum(y), "sum after refusal") == NN_OK)
            expect_values("grad x", nn_tensor_grad(f.x), f.cv, 1, N_X);
    }
    fixture_close(&f);
}

TEST(autograd_only_tensors_requiring_grad_get_one) {
    fixture f;
    if (fixture_open(&f, 1, 3060, false)) {
        CHECK(nn_tensor_requires_grad(f.x));
        CHECK(!nn_tensor_requires_grad(f.c));
        nn_tensor *y = nn_mul(f.x, f.c);
        CHECK(y && nn_tensor_requires_grad(y));
        nn_tensor *k = nn_scale(f.c, 2.0f); /* depends on no grad-requiring tensor */
        CHECK(k && !nn_tensor_requires_grad(k));
        backward_or_fail(nn_sum(nn_add(y, k)), "mixed");
        CHECK(nn_tensor_grad(f.c) == NULL);
        expect_values("grad x", nn_tensor_grad(f.x), f.cv, 1, N_X);

        /* Labels (int32) cannot require grad. */
        int32_t labels[3] = {0, 1, 2};
        int64_t n3[1] = {3};
        nn_tensor *l = ref_tensor_i32(f.ctx, 1, n3, labels);
        nn_clear_error();
        CHECK(l && nn_tensor_set_requires_grad(l, true) != NN_OK);
        CHECK(l && !nn_tensor_requires_grad(l));
        CHECK(strlen(nn_last_error()) > 0);
        nn_tensor_free(l);
    }
    fixture_close(&f);
}

TEST(autograd_grad_mode_off_records_nothing) {
    fixture f;
    if (fixture_open(&f, 2, 3070, false)) {
        CHECK(nn_ctx_grad_enabled(f.ctx));
        CHECK(nn_ctx_set_grad_enabled(f.ctx, false) == true);
        CHECK(!nn_ctx_grad_enabled(f.ctx));
        nn_tensor *loss = dot_loss(f.x, f.c);
        CHECK(loss && !nn_tensor_requires_grad(loss));
        double want = 0, got = 0;
        for (int i = 0; i < N_X; i++) want += (double)f.xv[i] * f.cv[i];
        if (ref_read_tensor(loss, &got, 1, "no-grad loss")) CHECK_CLOSE(got, want, 1e-5);
        if (loss) (void)nn_backward(loss); /* an error or nothing at all */
        CHECK(nn_tensor_grad(f.x) == NULL);

        CHECK(nn_ctx_set_grad_enabled(f.ctx, true) == false);
        nn_tensor *loss2 = dot_loss(f.x, f.c);
        CHECK(loss2 && nn_tensor_requires_grad(loss2));
        if (backward_or_fail(loss2, "grad mode back on") == NN_OK)
            expect_values("grad x", nn_tensor_grad(f.x), f.cv, 1, N_X);
    }
    fixture_close(&f);
}

TEST(autograd_step_end_frees_results_but_not_persisted) {
    fixture f;
    if (fixture_open(&f, 1, 3080, false)) {
        CHECK(nn_ctx_step_tensor_count(f.ctx) == 0); /* leaves belong to the caller */
        nn_tensor *y = nn_mul(f.x, f.c);
        nn_tensor *z = nn_scale(y, -2.0f);
        nn_tensor *loss = nn_sum(z);
        int64_t count = nn_ctx_step_tensor_count(f.ctx);
        CHECK_MSG(count >= 3, "step owns %lld tensors after 3 ops", (long long)count);
        CHECK(z && nn_tensor_persist(z) == NN_OK);
        CHECK(nn_ctx_step_tensor_count(f.ctx) == count - 1);
        backward_or_fail(loss, "before step_end");
        CHECK(nn_ctx_step_end(f.ctx) == NN_OK);
        CHECK(nn_ctx_step_tensor_count(f.ctx) == 0);

        float want[N_X];
        for (int i = 0; i < N_X; i++) want[i] = f.xv[i] * f.cv[i];
        expect_values("persisted result", z, want, -2, N_X);
        expect_values("leaf", f.x, f.xv, 1, N_X);
        expect_values("leaf grad", nn_tensor_grad(f.x), f.cv, -2, N_X);
        /* A second step works as the first did. */
        nn_tensor *y2 = nn_mul(f.x, f.c);
        CHECK(nn_ctx_step_tensor_count(f.ctx) >= 1);
        expect_values("second step", y2, want, 1, N_X);
        CHECK(nn_ctx_step_end(f.ctx) == NN_OK);
        CHECK(nn_ctx_step_tensor_count(f.ctx) == 0);
        nn_tensor_free(z);
    }
    fixture_close(&f);
}

TEST(autograd_inputs_freed_before_backward) {
    /* "Freeing a tensor early is always allowed; the tape keeps what it needs." */
    fixture f;
    if (fixture_open(&f, 2, 3090, false)) {
        nn_tensor *loss = dot_loss(f.x, f.c);
        nn_tensor_free(f.c);
        f.c = NULL;
        if (backward_or_fail(loss, "after freeing c") == NN_OK)
            expect_values("grad x", nn_tensor_grad(f.x), f.cv, 1, N_X);
    }
    fixture_close(&f);
}

TEST(autograd_views_show_their_source) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    ref_rng r = ref_rng_new(3100);
    float v[24], v2[24];
    ref_fill_uniform(&r, v, 24, -1, 1);
    ref_fill_uniform(&r, v2, 24, -1, 1);
    int64_t s4[4] = {2, 3, 2, 2}, s_flat[2] = {2, 12}, ask[2] = {-1, 6}, s_re[2] = {4, 6};
    nn_tensor *x = ref_tensor_f32(ctx, 4, s4, v);
    if (x) {
        nn_tensor *flat = nn_flatten(x), *re = nn_reshape(x, 2, ask);
        ref_check_shape(flat, 2, s_flat, "flatten view");
        ref_check_shape(re, 2, s_re, "reshape view");
        expect_values("flatten view", flat, v, 1, 24);
        expect_values("reshape view", re, v, 1, 24);
        /* Views share storage: a write to the source shows through. */
        CHECK(nn_tensor_write(x, v2, sizeof v2) == NN_OK);
        expect_values("flatten view after write", flat, v2, 1, 24);
        expect_values("reshape view after write", re, v2, 1, 24);
        /* A view of an op's result, and a view of a view. */
        nn_tensor *y = nn_scale(x, 0.5f);
        nn_tensor *yv = nn_reshape(nn_flatten(y), 2, ask);
        ref_check_shape(yv, 2, s_re, "view of a view");
        expect_values("view of a result", yv, v2, 0.5, 24);
    }
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    CHECK(nn_ctx_step_tensor_count(ctx) == 0);
    expect_values("source after step_end", x, v2, 1, 24);
    nn_tensor_free(x);
    nn_ctx_free(ctx);
}

/* A view's backward hands its gradient to a computed source that has none
 * yet (no copy): the source's gradient must still collect every other use,
 * before or after the view's, and the leaf's be exact. */
TEST(autograd_view_gradient_taken_over_by_its_source) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    ref_rng r = ref_rng_new(3200);
    float v[24], wa[24], wb[24], wy[24], want[24];
    ref_fill_uniform(&r, v, 24, -1, 1);
    ref_fill_uniform(&r, wa, 24, -1, 1);
    ref_fill_uniform(&r, wb, 24, -1, 1);
    ref_fill_uniform(&r, wy, 24, -1, 1);
    int64_t s4[4] = {2, 3, 2, 2}, s_flat[2] = {2, 12}, s_re[2] = {4, 6};
    for (int order = 0; order < 2; order++) {
        nn_tensor *x = ref_tensor_f32(ctx, 4, s4, v);
        nn_tensor *ta = ref_tensor_f32(ctx, 2, s_flat, wa), *tb = ref_tensor_f32(ctx, 2, s_re, wb),
                  *ty = ref_tensor_f32(ctx, 4, s4, wy);
        if (!x || !ta || !tb || !ty) break;
        CHECK(nn_tensor_set_requires_grad(x, true) == NN_OK);
        nn_tensor *y = nn_scale(x, 0.5f); /* computed: its gradient starts unwritten */
        /* order 0: the views are used last (their backward runs first); order 1: y's direct use last. */
        nn_tensor *direct = NULL, *va, *vb;
        if (order == 1) direct = nn_sum(nn_mul(y, ty));
        va = nn_sum(nn_mul(nn_flatten(y), ta));
        vb = nn_sum(nn_mul(nn_reshape(y, 2, s_re), tb));
        if (order == 0) direct = nn_sum(nn_mul(y, ty));
        nn_tensor *loss = nn_add(nn_add(va, vb), direct);
        CHECK(loss && nn_backward(loss) == NN_OK);
        for (int i = 0; i < 24; i++) want[i] = 0.5f * (wa[i] + wb[i] + wy[i]);
        expect_values(order ? "grad x (direct use last)" : "grad x (views used last)", nn_tensor_grad(x), want, 1,
                      24);
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
        nn_tensor_free(x), nn_tensor_free(ta), nn_tensor_free(tb), nn_tensor_free(ty);
    }
    nn_ctx_free(ctx);
}

TEST(autograd_mixed_contexts_are_rejected) {
    nn_ctx *a = ref_ctx(1), *b = ref_ctx(1);
    float v[N_X] = {0};
    nn_tensor *ta = a ? leaf(a, v, true) : NULL, *tb = b ? leaf(b, v, false) : NULL;
    if (ta && tb) {
        nn_clear_error();
        CHECK(nn_add(ta, tb) == NULL);
        CHECK_MSG(nn_last_status() == NN_ERR_STATE, "mixed contexts: %s, want state error",
                  nn_status_name(nn_last_status()));
        CHECK(nn_mul(ta, tb) == NULL);
        CHECK(strlen(nn_last_error()) > 0);
    }
    nn_tensor_free(ta);
    nn_tensor_free(tb);
    nn_ctx_free(a);
    nn_ctx_free(b);
}

TEST(autograd_step_tensor_freed_early) {
    /* An op's result may be freed before backward and before step_end. */
    fixture f;
    if (fixture_open(&f, 1, 3110, false)) {
        nn_tensor *y = nn_mul(f.x, f.c);
        nn_tensor *loss = nn_sum(nn_scale(y, 3.0f));
        nn_tensor_free(y);
        if (backward_or_fail(loss, "after freeing an intermediate") == NN_OK)
            expect_values("grad x", nn_tensor_grad(f.x), f.cv, 3, N_X);
        nn_tensor_free(loss);
    }
    fixture_close(&f); /* use-after-free and double free: AddressSanitizer's to catch */
}

TEST(autograd_backward_after_step_end_is_an_error) {
    fixture f;
    if (fixture_open(&f, 2, 3120, false)) {
        nn_tensor *loss = dot_loss(f.x, f.c);
        CHECK(loss && nn_tensor_persist(loss) == NN_OK);
        CHECK(nn_ctx_step_end(f.ctx) == NN_OK); /* drops the tape */
        nn_clear_error();
        nn_status st = loss ? nn_backward(loss) : NN_OK;
        CHECK_MSG(st == NN_ERR_STATE, "backward after step_end returned %s", nn_status_name(st));
        CHECK(strlen(nn_last_error()) > 0);
        CHECK(nn_tensor_grad(f.x) == NULL);
        nn_tensor_free(loss);
    }
    fixture_close(&f);
}

TEST(autograd_two_losses_built_then_backward_each) {
    /* As in PyTorch: two graphs sharing only a leaf are independent; the
     * first backward must not consume the second. */
    fixture f;
    if (fixture_open(&f, 1, 3130, false)) {
        nn_tensor *loss1 = dot_loss(f.x, f.c);
        nn_tensor *loss2 = nn_sum(nn_scale(f.x, 2.0f));
        backward_or_fail(loss1, "first loss");
        backward_or_fail(loss2, "second loss");
        float want[N_X];
        for (int i = 0; i < N_X; i++) want[i] = f.cv[i] + 2.0f;
        expect_values("grad x", nn_tensor_grad(f.x), want, 1, N_X);
    }
    fixture_close(&f);
}

TEST(autograd_reusing_a_consumed_result_is_an_error_or_correct) {
    /* h = 2x; backward(sum(h)) consumes scale's node. A new graph on h then
     * goes "through the same operations": nn_backward must refuse it, or
     * (as PyTorch does for ops that saved nothing) still reach x. Returning
     * OK while silently dropping x's share is wrong either way. */
    fixture f;
    if (fixture_open(&f, 2, 3140, false)) {
        nn_tensor *h = nn_scale(f.x, 2.0f);
        backward_or_fail(nn_sum(h), "first");
        nn_tensor *loss2 = h ? dot_loss(h, f.c) : NULL;
        nn_status st = loss2 ? nn_backward(loss2) : NN_ERR_STATE;
        if (st == NN_OK) {
            float want[N_X];
            for (int i = 0; i < N_X; i++) want[i] = 2.0f + 2.0f * f.cv[i];
            expect_values("grad x after backward through a consumed op", nn_tensor_grad(f.x),
                          want, 1, N_X);
        } else {
            CHECK(strlen(nn_last_error()) > 0);
        }
    }
    fixture_close(&f);
}

TEST(autograd_backward_from_a_leaf_scalar) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    float v = 0.25f;
    int64_t one[1] = {1};
    nn_tensor *x = ref_tensor_f32(ctx, 1, one, &v);
    if (x && nn_tensor_set_requires_grad(x, true) == NN_OK &&
        backward_or_fail(x, "leaf loss") == NN_OK) {
        float want = 1.0f;
        expect_values("d x / d x", nn_tensor_grad(x), &want, 1, 1);
    }
    nn_tensor_free(x);
    nn_ctx_free(ctx);
}

TEST(autograd_result_grads_are_freed_unless_retained) {
    fixture f;
    if (fixture_open(&f, 1, 3090, false)) {
        /* h = relu(x), g = h * c, loss = sum(3g): dh = 3c, dx = 3c [x > 0] */
        nn_tensor *h = nn_relu(f.x);
        nn_tensor *g = nn_mul(h, f.c);
        CHECK(nn_tensor_retain_grad(h) == NN_OK);
        CHECK(nn_tensor_retain_grad(NULL) == NN_ERR_ARGUMENT);
        nn_tensor *loss = nn_sum(nn_scale(g, 3.0f));
        if (backward_or_fail(loss, "retained") == NN_OK) {
            float dh[N_X], dx[N_X];
            for (int i = 0; i < N_X; i++) dh[i] = 3.0f * f.cv[i], dx[i] = f.xv[i] > 0 ? dh[i] : 0.0f;
            expect_values("retained grad h", nn_tensor_grad(h), dh, 1, N_X);
            expect_values("grad x", nn_tensor_grad(f.x), dx, 1, N_X);
            CHECK_MSG(nn_tensor_grad(g) == NULL, "a result's gradient outlived the backward pass");
            CHECK(nn_tensor_grad(loss) == NULL);
        }
    }
    fixture_close(&f);
}

/* A chain of 16 operations on 1M floats: after backward the context holds
 * the activations and the leaf's gradient, not 16 result gradients, and
 * at its peak no more than a few gradients at once. */
TEST(autograd_backward_holds_few_result_grads_at_once) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    const int64_t shape[1] = {1 << 20};
    const uint64_t tensor = (uint64_t)sizeof(float) << 20;
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 1, shape);
    CHECK(x && nn_tensor_fill(x, 0.5f) == NN_OK && nn_tensor_set_requires_grad(x, true) == NN_OK);
    uint64_t before, peak_before;
    CHECK(nn_ctx_memory_stats(ctx, &before, &peak_before, NULL) == NN_OK);
    nn_tensor *h = x;
    for (int i = 0; i < 16; i++) h = i % 2 ? nn_scale(h, 1.01f) : nn_relu(h);
    nn_tensor *loss = nn_sum(h);
    float value = 0;
    CHECK(loss && nn_tensor_read(loss, &value, sizeof value) == NN_OK); /* the forward pass runs */
    uint64_t forward, after, peak;
    CHECK(nn_ctx_memory_stats(ctx, &forward, NULL, NULL) == NN_OK);
    if (backward_or_fail(loss, "chain") == NN_OK) {
        CHECK(nn_ctx_memory_stats(ctx, &after, &peak, NULL) == NN_OK);
        /* the leaf's gradient joins the activations; the rest went */
        CHECK_MSG(after <= forward + tensor + 4096, "%llu bytes after backward, %llu after the forward pass",
                  (unsigned long long)after, (unsigned long long)forward);
        CHECK_MSG(peak <= forward + 4 * tensor, "backward's peak %llu bytes over the forward's %llu",
                  (unsigned long long)peak, (unsigned long long)forward);
        float *g = calloc((size_t)shape[0], sizeof *g);
        CHECK_MSG(g && nn_tensor_read(nn_tensor_grad(x), g, tensor) == NN_OK, "grad x: %s", nn_last_error());
        if (g) CHECK_MSG(g[12345] > 1.08f && g[12345] < 1.09f, "grad x = %g, want 1.01^8", g[12345]); /* 1.0829 */
        free(g);
    }
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    nn_tensor_free(x);
    nn_ctx_free(ctx);
}

/* A write to a tensor between the forward pass that read it and the
 * backward pass (issue 40, item 3: the gradient mixed old and new values,
 * 6 instead of 2 for (w * w).sum() at w = 1 then 3): refused by name on
 * every backend, as PyTorch's version counters; writes before the forward,
 * and the usual forward / backward / step loop, go on as before. */
static void check_writes_before_backward(const char *device) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .seed = 1});
    CHECK_MSG(ctx, "%s: %s", device, nn_last_error());
    if (!ctx) return;
    const float one[3] = {1, 1, 1}, three[3] = {3, 3, 3};
    nn_tensor *w = nn_tensor_from_data(ctx, NN_F32, 1, (int64_t[]){3}, one);
    nn_tensor_set_requires_grad(w, true);
    /* nn_tensor_write, nn_tensor_fill and nn_tensor_copy into w, and into a view of it. */
    for (int how = 0; how < 4; how++) {
        nn_tensor *loss = nn_sum(nn_mul(w, w));
        nn_tensor *other = nn_tensor_from_data(ctx, NN_F32, 1, (int64_t[]){3}, three);
        nn_status wrote = how == 0   ? nn_tensor_write(w, three, sizeof three)
                          : how == 1 ? nn_tensor_fill(w, 3.0f)
                          : how == 2 ? nn_tensor_copy(w, other)
                                     : nn_tensor_write(nn_reshape(w, 2, (int64_t[]){1, 3}), three, sizeof three);
        CHECK_MSG(wrote == NN_OK, "%s write %d: %s", device, how, nn_last_error());
        nn_status st = nn_backward(loss);
        CHECK_MSG(st == NN_ERR_STATE && strstr(nn_last_error(), "was written after the forward pass"),
                  "%s write %d: backward gave %s (%s), want the write refused", device, how, nn_status_name(st),
                  nn_last_error());
        nn_clear_error();
        nn_tensor_free(other);
        nn_ctx_step_end(ctx);
        nn_tensor_write(w, one, sizeof one);
    }
    /* An optimizer step between the forward and the backward pass. */
    nn_sgd_options o = {.lr = 0.1f};
    nn_optimizer *opt = nn_sgd_new(&w, 1, &o);
    CHECK(opt != NULL);
    nn_tensor *first = nn_sum(nn_mul(w, w));
    CHECK(nn_backward(first) == NN_OK);
    nn_tensor *second = nn_sum(nn_mul(w, w));
    CHECK(opt && nn_optimizer_step(opt) == NN_OK);
    CHECK_MSG(nn_backward(second) == NN_ERR_STATE, "%s: backward after a step: %s", device, nn_last_error());
    nn_clear_error();
    nn_ctx_step_end(ctx);
    /* The usual loop: write, forward, backward, step; the gradient is the new value's. */
    float grad[3];
    for (int step = 0; step < 3; step++) {
        CHECK(nn_tensor_write(w, three, sizeof three) == NN_OK && nn_optimizer_zero_grad(opt) == NN_OK);
        CHECK_MSG(nn_backward(nn_sum(nn_mul(w, w))) == NN_OK, "%s loop: %s", device, nn_last_error());
        CHECK(nn_tensor_read(nn_tensor_grad(w), grad, sizeof grad) == NN_OK && grad[0] == 6.0f && grad[2] == 6.0f);
        CHECK(nn_optimizer_step(opt) == NN_OK);
        nn_ctx_step_end(ctx);
    }
    nn_optimizer_free(opt);
    nn_tensor_free(w);
    nn_ctx_free(ctx);
}

TEST(autograd_write_between_forward_and_backward_is_refused_cpu) { check_writes_before_backward("cpu"); }

TEST(autograd_write_between_forward_and_backward_is_refused_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    check_writes_before_backward("vulkan");
}

/* A retained gradient is the tensor's own: a ReLU's output read by a max
 * pooling alone keeps its unmasked gradient when retained (the pooling's
 * backward would otherwise write it masked for the ReLU: nn_relu_mask_claim),
 * here where a window of negatives pools a zero. (A BatchNorm's retained
 * output gradient: test_normalization.c's mask test.) */
static void retained_gradients_are_their_own(const char *device) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    const int64_t xs[4] = {1, 2, 2, 4}, ps[4] = {1, 2, 1, 2};
    const float xv[16] = {-1, -2, 3, 1, -3, -4, 2, 5, 0.5f, 1, -1, -2, 2, 0.25f, -3, -1};
    const float cv[4] = {2, 3, 5, 7};
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, xs, xv), *c = nn_tensor_from_data(ctx, NN_F32, 4, ps, cv);
    nn_tensor_set_requires_grad(x, true);
    nn_tensor *h = nn_relu(x);
    CHECK(nn_tensor_retain_grad(h) == NN_OK);
    nn_tensor *loss = nn_sum(nn_mul(nn_maxpool2d(h, 2, 2), c));
    CHECK_MSG(loss && nn_backward(loss) == NN_OK, "%s: %s", device, nn_last_error());
    /* each 2x2 window's first maximum of h takes c; a window of negatives pools h = 0 at its first pixel */
    const float dh[16] = {2, 0, 0, 0, 0, 0, 0, 3, 0, 0, 7, 0, 5, 0, 0, 0};
    float got[16] = {0}, dx[16] = {0};
    CHECK(nn_tensor_read(nn_tensor_grad(h), got, sizeof got) == NN_OK);
    CHECK(nn_tensor_read(nn_tensor_grad(x), dx, sizeof dx) == NN_OK);
    for (int i = 0; i < 16; i++) {
        CHECK_MSG(got[i] == dh[i], "%s: retained grad h[%d] = %g, want %g", device, i, got[i], dh[i]);
        CHECK_MSG(dx[i] == (xv[i] > 0 ? dh[i] : 0.0f), "%s: grad x[%d] = %g", device, i, dx[i]);
    }
    nn_ctx_free(ctx);
}

TEST(autograd_retained_gradients_are_the_tensors_own) {
    retained_gradients_are_their_own("cpu");
    if (!vkt_skipped() && vkt_vulkan()) retained_gradients_are_their_own("vulkan");
}
