/* Custom kernels and functions (include/nn_custom.h) on the CPU and on
 * Vulkan: a SiLU-gated product y = scale * silu(a) * b as a custom kernel
 * (GLSL and a C function) against double loops; its custom function's
 * gradients (a second kernel, its two gradients packed in one output)
 * against double-precision finite differences; a gather reading int32
 * indices; an in-place launch (sign-SGD's update); a captured step that
 * replays to the eager values on new data; out-of-range indices, compile
 * errors and the refusals, each named. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

/* ---- the kernels: GLSL and C side by side ---- */

static const char kGateGlsl[] =
    "void main() {\n"
    "    uint i = NN_INDEX.x;\n"
    "    if (i >= NN_GRID.x) return;\n"
    "    float a = NN_LOAD(0, i), b = NN_LOAD(1, i);\n"
    "    NN_STORE(2, i, NN_PARAM_FLOAT(0) * a / (1.0 + exp(-a)) * b);\n"
    "}\n";

static int gate_cpu(nn_custom_cpu_call *c) {
    const float *a = c->buffers[0], *b = c->buffers[1];
    float *y = c->buffers[2], scale;
    memcpy(&scale, c->params, sizeof scale);
    for (uint32_t i = 0; i < c->grid[0]; i++) y[i] = scale * a[i] / (1.0f + expf(-a[i])) * b[i];
    return 0;
}

/* a, b, dy -> [2, n]: d/da at i, d/db at n + i */
static const char kGateGradGlsl[] =
    "void main() {\n"
    "    uint i = NN_INDEX.x, n = NN_GRID.x;\n"
    "    if (i >= n) return;\n"
    "    float a = NN_LOAD(0, i), b = NN_LOAD(1, i), dy = NN_LOAD(2, i) * NN_PARAM_FLOAT(0);\n"
    "    float s = 1.0 / (1.0 + exp(-a));\n"
    "    NN_STORE(3, i, dy * s * (1.0 + a * (1.0 - s)) * b);\n"
    "    NN_STORE(3, n + i, dy * a * s);\n"
    "}\n";

static int gate_grad_cpu(nn_custom_cpu_call *c) {
    const float *a = c->buffers[0], *b = c->buffers[1], *dy = c->buffers[2];
    float *g = c->buffers[3], scale;
    memcpy(&scale, c->params, sizeof scale);
    const uint32_t n = c->grid[0];
    for (uint32_t i = 0; i < n; i++) {
        const float s = 1.0f / (1.0f + expf(-a[i])), d = dy[i] * scale;
        g[i] = d * s * (1.0f + a[i] * (1.0f - s)) * b[i];
        g[n + i] = d * a[i] * s;
    }
    return 0;
}

/* table [rows, width], indices (int32) [n] -> out [n, width] */
static const char kGatherGlsl[] =
    "void main() {\n"
    "    uvec3 at = NN_INDEX;\n"
    "    if (at.x >= NN_GRID.x || at.y >= NN_GRID.y) return;\n"
    "    uint width = NN_GRID.x;\n"
    "    int row = NN_LOAD_INT(1, at.y);\n"
    "    NN_STORE(2, at.y * width + at.x, NN_LOAD(0, uint(row) * width + at.x));\n"
    "}\n";

static int gather_cpu(nn_custom_cpu_call *c) {
    const float *table = c->buffers[0];
    const int32_t *rows = c->buffers[1];
    float *out = c->buffers[2];
    const uint32_t width = c->grid[0];
    for (uint32_t r = 0; r < c->grid[1]; r++) {
        if (rows[r] < 0 || (int64_t)(rows[r] + 1) * width > c->counts[0]) {
            snprintf(c->error, sizeof c->error, "index %d at %u is outside the table", rows[r], r);
            return 1;
        }
        memcpy(out + (size_t)r * width, table + (size_t)rows[r] * width, width * sizeof *out);
    }
    return 0;
}

/* param -= lr * sign(grad), in place (buffer 0 written) */
static const char kSignSgdGlsl[] =
    "void main() {\n"
    "    uint i = NN_INDEX.x;\n"
    "    if (i >= NN_GRID.x) return;\n"
    "    NN_STORE(0, i, NN_LOAD(0, i) - NN_PARAM_FLOAT(0) * sign(NN_LOAD(1, i)));\n"
    "}\n";

static int sign_sgd_cpu(nn_custom_cpu_call *c) {
    float *p = c->buffers[0], lr;
    const float *g = c->buffers[1];
    memcpy(&lr, c->params, sizeof lr);
    for (uint32_t i = 0; i < c->grid[0]; i++) p[i] -= lr * (float)((g[i] > 0) - (g[i] < 0));
    return 0;
}

typedef struct kernels {
    nn_custom_kernel *gate, *gate_grad, *gather, *sign_sgd;
} kernels;

/* The shader where GLSL compiles here (not the Windows build without
 * libshaderc, whose tests run the CPU alone). */
static const char *glsl(const char *source) { return nn_custom_glsl_available() ? source : NULL; }

static kernels make_kernels(void) {
    kernels k = {
        nn_custom_kernel_new(&(nn_custom_kernel_desc){.name = "silu_gate", .cpu = gate_cpu, .glsl = glsl(kGateGlsl)}),
        nn_custom_kernel_new(&(nn_custom_kernel_desc){
            .name = "silu_gate_grad", .cpu = gate_grad_cpu, .glsl = glsl(kGateGradGlsl)}),
        nn_custom_kernel_new(&(nn_custom_kernel_desc){
            .name = "gather_rows", .cpu = gather_cpu, .glsl = glsl(kGatherGlsl), .local_size = {16, 4, 1}}),
        nn_custom_kernel_new(
            &(nn_custom_kernel_desc){.name = "sign_sgd", .cpu = sign_sgd_cpu, .glsl = glsl(kSignSgdGlsl)}),
    };
    CHECK_MSG(k.gate && k.gate_grad && k.gather && k.sign_sgd, "%s", nn_last_error());
    return k;
}

static void free_kernels(kernels *k) {
    nn_custom_kernel_free(k->gate);
    nn_custom_kernel_free(k->gate_grad);
    nn_custom_kernel_free(k->gather);
    nn_custom_kernel_free(k->sign_sgd);
}

static double gate_ref(double a, double b, double scale) { return scale * a / (1.0 + exp(-a)) * b; }

/* ---- the custom function ---- */

typedef struct gate_state {
    nn_custom_kernel *grad;
    float scale;
} gate_state;

static nn_status gate_backward(nn_function_call *call) {
    const gate_state *s = call->user;
    nn_tensor *a = call->inputs[0], *b = call->inputs[1];
    const int ndim = nn_tensor_ndim(a);
    int64_t shape[NN_MAX_DIMS + 1] = {2};
    for (int d = 0; d < ndim; d++) shape[d + 1] = nn_tensor_dim(a, d);
    nn_tensor *in[3] = {a, b, call->grad_output};
    const uint32_t grid[3] = {(uint32_t)nn_tensor_numel(a), 1, 1};
    nn_tensor *packed = nn_custom_call(s->grad, in, 3, &(nn_custom_output){NN_F32, ndim + 1, shape}, &s->scale,
                                       sizeof s->scale, grid);
    if (!packed) return nn_last_status();
    if (call->needs_grad[0] && !(call->grad_inputs[0] = nn_select(packed, 0, 0))) return nn_last_status();
    if (call->needs_grad[1] && !(call->grad_inputs[1] = nn_select(packed, 0, 1))) return nn_last_status();
    return NN_OK;
}

static const nn_function_def kGate = {.name = "silu_gate", .backward = gate_backward};

/* The same with its composition for an export: scale * silu(a) * b. */
static nn_tensor *gate_compose(nn_tensor *const *in, int count, void *user) {
    const gate_state *s = user;
    return nn_scale(nn_mul(nn_silu(in[0]), in[1]), s->scale);
}

static const nn_function_def kGateComposed = {.name = "silu_gate", .backward = gate_backward, .compose = gate_compose};

static nn_tensor *gate_as(const nn_function_def *def, const kernels *k, gate_state *state, nn_tensor *a,
                          nn_tensor *b);

static nn_tensor *gate(const kernels *k, gate_state *state, nn_tensor *a, nn_tensor *b) {
    return gate_as(&kGate, k, state, a, b);
}

static nn_tensor *gate_as(const nn_function_def *def, const kernels *k, gate_state *state, nn_tensor *a,
                          nn_tensor *b) {
    nn_ctx *ctx = nn_tensor_ctx(a);
    const bool was = nn_ctx_set_grad_enabled(ctx, false);
    const int ndim = nn_tensor_ndim(a);
    int64_t shape[NN_MAX_DIMS];
    for (int d = 0; d < ndim; d++) shape[d] = nn_tensor_dim(a, d);
    nn_tensor *in[2] = {a, b};
    const uint32_t grid[3] = {(uint32_t)nn_tensor_numel(a), 1, 1};
    nn_tensor *y = nn_custom_call(k->gate, in, 2, &(nn_custom_output){NN_F32, ndim, shape}, &state->scale,
                                  sizeof state->scale, grid);
    nn_ctx_set_grad_enabled(ctx, was);
    return y ? nn_function_apply(def, in, 2, y, NULL, 0, state) : NULL;
}

/* ---- tests ---- */

/* The context, or NULL where the device is absent or (Vulkan) GLSL cannot
 * be compiled here, said once. */
static nn_ctx *open_device(const char *device) {
    if (strcmp(device, "vulkan") == 0 && !nn_custom_glsl_available()) {
        fprintf(stderr, "    skipped on vulkan: GLSL cannot be compiled here (no libshaderc)\n");
        return NULL;
    }
    return vkt_open_device(device);
}

static const struct {
    int ndim;
    int64_t d[3];
} kShapes[] = {{1, {1}}, {1, {1031}}, {3, {3, 7, 5}}};

static int64_t numel_of(int ndim, const int64_t *d) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= d[i];
    return n;
}

static void check_gate(const char *device) {
    nn_ctx *ctx = open_device(device);
    if (!ctx) return;
    kernels k = make_kernels();
    gate_state state = {k.gate_grad, 1.75f};
    for (size_t s = 0; s < sizeof kShapes / sizeof kShapes[0] && k.gate; s++) {
        const int ndim = kShapes[s].ndim;
        const int64_t *d = kShapes[s].d, n = numel_of(ndim, d);
        float *ha = vkt_randoms((size_t)n, -3, 3, 11), *hb = vkt_randoms((size_t)n, -2, 2, 12),
              *hw = vkt_randoms((size_t)n, -1, 1, 13), *got = malloc((size_t)n * 4), *ga = malloc((size_t)n * 4),
              *gb = malloc((size_t)n * 4);
        nn_tensor *a = nn_tensor_from_data(ctx, NN_F32, ndim, d, ha), *b = nn_tensor_from_data(ctx, NN_F32, ndim, d, hb),
                  *w = nn_tensor_from_data(ctx, NN_F32, ndim, d, hw);
        nn_tensor_set_requires_grad(a, true);
        nn_tensor_set_requires_grad(b, true);
        nn_tensor *y = gate(&k, &state, a, b);
        CHECK_MSG(y && nn_tensor_requires_grad(y), "%s: %s", device, nn_last_error());
        nn_tensor *loss = y ? nn_sum(nn_mul(y, w)) : NULL;
        CHECK_MSG(loss && nn_backward(loss) == NN_OK, "%s: %s", device, nn_last_error());
        if (loss && nn_tensor_read(y, got, (size_t)n * 4) == NN_OK &&
            nn_tensor_read(nn_tensor_grad(a), ga, (size_t)n * 4) == NN_OK &&
            nn_tensor_read(nn_tensor_grad(b), gb, (size_t)n * 4) == NN_OK) {
            int bad = 0;
            for (int64_t i = 0; i < n && bad < 3; i++) {
                const double av = ha[i], bv = hb[i], wv = hw[i], h = 1e-4;
                const double want_da = wv * (gate_ref(av + h, bv, state.scale) - gate_ref(av - h, bv, state.scale)) / (2 * h);
                const double want_db = wv * (gate_ref(av, bv + h, state.scale) - gate_ref(av, bv - h, state.scale)) / (2 * h);
                const double want_y = gate_ref(av, bv, state.scale);
                if (fabs(got[i] - want_y) > 1e-5 * fmax(1, fabs(want_y)) ||
                    fabs(ga[i] - want_da) > 1e-4 * fmax(1, fabs(want_da)) ||
                    fabs(gb[i] - want_db) > 1e-4 * fmax(1, fabs(want_db))) {
                    bad++;
                    CHECK_MSG(0, "%s n %lld [%lld]: y %g want %g, da %g want %g, db %g want %g", device, (long long)n,
                              (long long)i, got[i], want_y, ga[i], want_da, gb[i], want_db);
                }
            }
        } else CHECK_MSG(0, "%s: %s", device, nn_last_error());
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
        nn_tensor_free(a);
        nn_tensor_free(b);
        nn_tensor_free(w);
        free(ha), free(hb), free(hw), free(got), free(ga), free(gb);
    }
    free_kernels(&k);
    nn_ctx_free(ctx);
}

TEST(custom_function_gradients_match_finite_differences_cpu) { check_gate("cpu"); }
TEST(custom_function_gradients_match_finite_differences_vulkan) { check_gate("vulkan"); }

static void check_gather_and_launch(const char *device) {
    nn_ctx *ctx = open_device(device);
    if (!ctx) return;
    kernels k = make_kernels();
    enum { ROWS = 13, WIDTH = 37, PICKS = 9, N = 1031 };
    float *table = vkt_randoms(ROWS * WIDTH, -1, 1, 21), out[PICKS * WIDTH];
    const int32_t rows[PICKS] = {12, 0, 5, 5, 7, 1, 11, 3, 0};
    nn_tensor *t = nn_tensor_from_data(ctx, NN_F32, 2, (int64_t[]){ROWS, WIDTH}, table);
    nn_tensor *idx = nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){PICKS}, rows);
    nn_tensor *in[2] = {t, idx};
    nn_tensor *g = nn_custom_call(k.gather, in, 2, &(nn_custom_output){NN_F32, 2, (int64_t[]){PICKS, WIDTH}}, NULL, 0,
                                  (uint32_t[3]){WIDTH, PICKS, 1});
    CHECK_MSG(g && nn_tensor_read(g, out, sizeof out) == NN_OK, "%s: %s", device, nn_last_error());
    for (int r = 0; r < PICKS && g; r++)
        for (int c = 0; c < WIDTH; c++)
            CHECK_MSG(out[r * WIDTH + c] == table[rows[r] * WIDTH + c], "%s gather [%d, %d]", device, r, c);

    /* sign-SGD in place: written bit 0 only; the gradient is left as it was */
    float *p0 = vkt_randoms(N, -1, 1, 22), *gr = vkt_randoms(N, -1, 1, 23), after[N], grad_after[N];
    gr[3] = 0.0f;
    nn_tensor *p = nn_tensor_from_data(ctx, NN_F32, 1, (int64_t[]){N}, p0);
    nn_tensor *grad = nn_tensor_from_data(ctx, NN_F32, 1, (int64_t[]){N}, gr);
    const float lr = 0.125f;
    nn_tensor *pg[2] = {p, grad};
    CHECK_MSG(nn_custom_launch(k.sign_sgd, pg, 2, 1u, &lr, sizeof lr, (uint32_t[3]){N, 1, 1}) == NN_OK, "%s: %s",
              device, nn_last_error());
    CHECK(nn_tensor_read(p, after, sizeof after) == NN_OK && nn_tensor_read(grad, grad_after, sizeof grad_after) == NN_OK);
    for (int i = 0; i < N; i++) {
        const float want = p0[i] - lr * (float)((gr[i] > 0) - (gr[i] < 0));
        CHECK_MSG(after[i] == want && grad_after[i] == gr[i], "%s sign-SGD [%d]: %g want %g", device, i, after[i], want);
        if (after[i] != want) break;
    }
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    nn_tensor_free(t), nn_tensor_free(idx), nn_tensor_free(p), nn_tensor_free(grad);
    free(table), free(p0), free(gr);
    free_kernels(&k);
    nn_ctx_free(ctx);
}

TEST(custom_kernel_gathers_int_indices_and_updates_in_place_cpu) { check_gather_and_launch("cpu"); }
TEST(custom_kernel_gathers_int_indices_and_updates_in_place_vulkan) { check_gather_and_launch("vulkan"); }

/* One step (forward through the custom function, backward, sign-SGD on a
 * and b through launches) recorded, then replayed on new data: the same
 * values as the same step run eagerly on that data. */
static void capture_step(const kernels *k, gate_state *st, nn_tensor *a, nn_tensor *b, nn_tensor *w, nn_tensor **y_out) {
    nn_tensor_zero_grad(a);
    nn_tensor_zero_grad(b);
    nn_tensor *y = gate(k, st, a, b);
    nn_tensor *loss = nn_sum(nn_mul(y, w));
    CHECK_MSG(loss && nn_backward(loss) == NN_OK, "%s", nn_last_error());
    const float lr = 0.01f;
    const uint32_t grid[3] = {(uint32_t)nn_tensor_numel(a), 1, 1};
    nn_tensor *pa[2] = {a, nn_tensor_grad(a)}, *pb[2] = {b, nn_tensor_grad(b)};
    CHECK_MSG(nn_custom_launch(k->sign_sgd, pa, 2, 1u, &lr, sizeof lr, grid) == NN_OK, "%s", nn_last_error());
    CHECK_MSG(nn_custom_launch(k->sign_sgd, pb, 2, 1u, &lr, sizeof lr, grid) == NN_OK, "%s", nn_last_error());
    if (y_out) {
        nn_tensor_persist(y);
        *y_out = y;
    }
}

static void check_capture(const char *device) {
    nn_ctx *ctx = open_device(device);
    if (!ctx) return;
    kernels k = make_kernels();
    gate_state st = {k.gate_grad, 0.5f};
    enum { N = 257 };
    const int64_t d[1] = {N};
    float *h0a = vkt_randoms(N, -2, 2, 31), *h0b = vkt_randoms(N, -2, 2, 32), *hw = vkt_randoms(N, -1, 1, 33);
    float *h1a = vkt_randoms(N, -2, 2, 34), *h1b = vkt_randoms(N, -2, 2, 35);
    nn_tensor *a = nn_tensor_from_data(ctx, NN_F32, 1, d, h0a), *b = nn_tensor_from_data(ctx, NN_F32, 1, d, h0b),
              *w = nn_tensor_from_data(ctx, NN_F32, 1, d, hw), *y = NULL;
    nn_tensor_set_requires_grad(a, true);
    nn_tensor_set_requires_grad(b, true);
    capture_step(&k, &st, a, b, w, NULL); /* eager first: the gradients exist */
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    CHECK(nn_capture_begin(ctx) == NN_OK);
    capture_step(&k, &st, a, b, w, &y);
    nn_capture *cap = nn_capture_end(ctx);
    CHECK_MSG(cap, "%s: %s", device, nn_last_error());
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    float replay_y[N], replay_a[N], eager_y[N], eager_a[N];
    CHECK(nn_tensor_write(a, h1a, sizeof replay_a) == NN_OK && nn_tensor_write(b, h1b, sizeof replay_a) == NN_OK);
    CHECK_MSG(cap && nn_replay(cap, 1) == NN_OK, "%s: %s", device, nn_last_error());
    CHECK(nn_tensor_read(y, replay_y, sizeof replay_y) == NN_OK && nn_tensor_read(a, replay_a, sizeof replay_a) == NN_OK);
    CHECK(nn_tensor_write(a, h1a, sizeof replay_a) == NN_OK && nn_tensor_write(b, h1b, sizeof replay_a) == NN_OK);
    nn_tensor *y2 = NULL;
    capture_step(&k, &st, a, b, w, &y2);
    CHECK(y2 && nn_tensor_read(y2, eager_y, sizeof eager_y) == NN_OK && nn_tensor_read(a, eager_a, sizeof eager_a) == NN_OK);
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    CHECK_MSG(memcmp(replay_y, eager_y, sizeof eager_y) == 0, "%s: the replayed output differs from eager", device);
    CHECK_MSG(memcmp(replay_a, eager_a, sizeof eager_a) == 0, "%s: the replayed update differs from eager", device);
    for (int i = 0; i < N; i++) CHECK_CLOSE(replay_y[i], gate_ref(h1a[i], h1b[i], st.scale), 1e-5);
    nn_capture_free(cap);
    nn_tensor_free(y), nn_tensor_free(y2), nn_tensor_free(a), nn_tensor_free(b), nn_tensor_free(w);
    free(h0a), free(h0b), free(hw), free(h1a), free(h1b);
    free_kernels(&k);
    nn_ctx_free(ctx);
}

TEST(custom_ops_in_a_captured_step_replay_as_eager_cpu) { check_capture("cpu"); }
TEST(custom_ops_in_a_captured_step_replay_as_eager_vulkan) { check_capture("vulkan"); }

/* An index past a buffer: reported at the next read naming the kernel and
 * the buffer, once; the CPU function's own message likewise. */
static void check_out_of_range(const char *device) {
    nn_ctx *ctx = open_device(device);
    if (!ctx) return;
    static const char kPastEnd[] =
        "void main() { uint i = NN_INDEX.x; if (i >= NN_GRID.x) return; NN_STORE(1, i + 1u, NN_LOAD(0, i)); }";
    nn_custom_kernel *past =
        nn_custom_kernel_new(&(nn_custom_kernel_desc){.name = "past_end", .cpu = NULL, .glsl = glsl(kPastEnd)});
    if (!past) { /* no GLSL here: the kernel has no code at all */
        CHECK(!nn_custom_glsl_available());
        nn_ctx_free(ctx);
        return;
    }
    kernels k = make_kernels();
    float data[10] = {0}, out[10];
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 1, (int64_t[]){10}, data);
    const bool vulkan = strcmp(device, "vulkan") == 0;
    if (vulkan) {
        nn_tensor *y = nn_custom_call(past, &x, 1, &(nn_custom_output){NN_F32, 1, (int64_t[]){10}}, NULL, 0,
                                      (uint32_t[3]){10, 1, 1});
        CHECK(y && nn_tensor_read(y, out, sizeof out) != NN_OK);
        CHECK_MSG(strstr(nn_last_error(), "custom kernel past_end: index 10 is outside buffer 1 of 10 elements"),
                  "%s", nn_last_error());
        CHECK_MSG(nn_ctx_sync(ctx) == NN_OK, "reported once: %s", nn_last_error());
        CHECK(nn_tensor_read(y, out, sizeof out) == NN_OK && out[9] == 0.0f); /* the store past the end was skipped */
    } else {
        nn_tensor *y = nn_custom_call(past, &x, 1, &(nn_custom_output){NN_F32, 1, (int64_t[]){10}}, NULL, 0,
                                      (uint32_t[3]){10, 1, 1});
        CHECK(y && nn_tensor_read(y, out, sizeof out) != NN_OK);
        CHECK_MSG(strstr(nn_last_error(), "custom kernel past_end has no CPU function"), "%s", nn_last_error());
    }
    const int32_t bad_rows[2] = {1, 40};
    nn_tensor *idx = nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){2}, bad_rows);
    nn_tensor *in[2] = {x, idx};
    nn_tensor *g = nn_custom_call(k.gather, in, 2, &(nn_custom_output){NN_F32, 2, (int64_t[]){2, 2}}, NULL, 0,
                                  (uint32_t[3]){2, 2, 1});
    CHECK(g && nn_tensor_read(g, out, 4 * 4) != NN_OK);
    CHECK_MSG(strstr(nn_last_error(), vulkan ? "custom kernel gather_rows: index 80 is outside buffer 0 of 10"
                                             : "custom kernel gather_rows failed on the CPU: index 40 at 1 is outside"),
              "%s", nn_last_error());
    nn_ctx_step_end(ctx);
    nn_tensor_free(x), nn_tensor_free(idx);
    nn_custom_kernel_free(past);
    free_kernels(&k);
    nn_ctx_free(ctx);
}

TEST(custom_kernel_out_of_range_is_reported_cpu) { check_out_of_range("cpu"); }
TEST(custom_kernel_out_of_range_is_reported_vulkan) { check_out_of_range("vulkan"); }

static nn_status no_backward(nn_function_call *call) { return NN_OK; }

TEST(custom_kernels_refuse_bad_arguments_naming_them) {
    nn_custom_kernel *k;
    k = nn_custom_kernel_new(&(nn_custom_kernel_desc){.name = "bad name", .cpu = gate_cpu});
    CHECK(!k && strstr(nn_last_error(), "name 'bad name' has ' '"));
    k = nn_custom_kernel_new(&(nn_custom_kernel_desc){.name = "nothing"});
    CHECK(!k && strstr(nn_last_error(), "nothing: no code"));
    k = nn_custom_kernel_new(&(nn_custom_kernel_desc){.name = "broken", .glsl = "void main() {\n  oops;\n}\n"});
    if (nn_custom_glsl_available())
        CHECK_MSG(!k && strstr(nn_last_error(), "custom kernel broken: the GLSL does not compile") &&
                      strstr(nn_last_error(), "broken:2:"), "%s", nn_last_error());
    else
        CHECK_MSG(!k && strstr(nn_last_error(), "custom kernel broken: compiling GLSL needs libshaderc"), "%s",
                  nn_last_error());
    k = nn_custom_kernel_new(&(nn_custom_kernel_desc){.name = "notspirv", .spirv = (const uint32_t[6]){1, 2, 3, 4, 5, 6},
                                                      .spirv_bytes = 24});
    CHECK(!k && strstr(nn_last_error(), "notspirv: spirv is not a SPIR-V module"));
    if (nn_custom_glsl_available()) { /* shaders outside the shared layout, refused before a device sees them */
        static const struct {
            const char *glsl, *message;
        } bad[] = {
            {"layout(std430, binding = 12) buffer X { float x[]; };\nvoid main() { x[0] = 1.0; }",
             "binds a buffer at set 0, binding 12"},
            {"layout(std430, set = 1, binding = 0) buffer X { float x[]; };\nvoid main() { x[0] = 1.0; }",
             "binds a buffer at set 1, binding 0"},
            {"layout(binding = 3) uniform U { float u; };\nvoid main() { NN_STORE(0, 0, u); }",
             "a resource that is not a storage buffer"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            k = nn_custom_kernel_new(&(nn_custom_kernel_desc){.name = "layout", .glsl = bad[i].glsl});
            CHECK_MSG(!k && strstr(nn_last_error(), "custom kernel layout: the shader") &&
                          strstr(nn_last_error(), bad[i].message), "case %zu: %s", i, nn_last_error());
        }
    }
    k = nn_custom_kernel_new(&(nn_custom_kernel_desc){.name = "huge", .cpu = gate_cpu, .local_size = {64, 64, 1}});
    CHECK(!k && strstr(nn_last_error(), "huge: local_size 64 x 64 x 1"));

    nn_ctx *ctx = vkt_open_device("cpu");
    kernels ks = make_kernels();
    float data[4] = {1, 2, 3, 4};
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 1, (int64_t[]){4}, data);
    const nn_custom_output out = {NN_F32, 1, (int64_t[]){4}};
    nn_tensor *in[2] = {x, x};
    char params[64] = {0};
    CHECK(!nn_custom_call(ks.gate, in, 2, &out, params, sizeof params, (uint32_t[3]){4, 1, 1}) &&
          strstr(nn_last_error(), "silu_gate: 64 bytes of parameters; at most 48"));
    CHECK(!nn_custom_call(ks.gate, in, 2, &out, NULL, 0, (uint32_t[3]){4, 0, 1}) &&
          strstr(nn_last_error(), "grid must be three counts >= 1"));
    CHECK(!nn_custom_call(ks.gate, in, 2, &(nn_custom_output){NN_F32, 1, (int64_t[]){0}}, NULL, 0,
                          (uint32_t[3]){4, 1, 1}) &&
          strstr(nn_last_error(), "output size 0 in dimension 0"));
    nn_tensor_set_requires_grad(x, true);
    CHECK(!nn_custom_call(ks.gate, in, 2, &out, NULL, 0, (uint32_t[3]){4, 1, 1}) &&
          strstr(nn_last_error(), "silu_gate: input 0 requires grad"));
    const bool was = nn_ctx_set_grad_enabled(ctx, false);
    nn_tensor *y = nn_custom_call(ks.gate, in, 2, &out, NULL, 0, (uint32_t[3]){4, 1, 1});
    CHECK_MSG(y, "grad mode off: %s", nn_last_error());
    nn_ctx_set_grad_enabled(ctx, was);
    CHECK(!nn_custom_launch(ks.sign_sgd, in, 2, 4u, NULL, 0, (uint32_t[3]){4, 1, 1}) == NN_OK &&
          strstr(nn_last_error(), "written 0x4 names a tensor past the 2 given"));
    nn_tensor *ry = nn_tensor_from_data(ctx, NN_F32, 1, (int64_t[]){4}, data);
    nn_tensor_set_requires_grad(ry, true);
    static const nn_function_def kNone = {.name = "none", .backward = no_backward};
    CHECK(!nn_function_apply(&kNone, &x, 1, ry, NULL, 0, NULL) && strstr(nn_last_error(), "none: the result requires grad"));

    nn_custom_kernel *host = nn_custom_kernel_new(
        &(nn_custom_kernel_desc){.name = "reads_host", .cpu = gate_cpu, .not_capturable = true});
    CHECK(nn_capture_begin(ctx) == NN_OK);
    nn_ctx_set_grad_enabled(ctx, false);
    nn_tensor *h = nn_custom_call(host, in, 2, &out, NULL, 0, (uint32_t[3]){4, 1, 1});
    CHECK(h != NULL); /* its launch, at the capture's end, is refused */
    nn_capture *cap = nn_capture_end(ctx);
    CHECK_MSG(!cap && strstr(nn_last_error(), "reads_host is not capturable"), "%s", nn_last_error());
    nn_ctx_set_grad_enabled(ctx, was);
    nn_ctx_step_end(ctx);

    nn_custom_kernel_free(host);
    nn_custom_kernel *gone = nn_custom_kernel_new(&(nn_custom_kernel_desc){.name = "gone", .cpu = gate_cpu});
    nn_ctx_set_grad_enabled(ctx, false);
    nn_tensor *late = nn_custom_call(gone, in, 2, &out, NULL, 0, (uint32_t[3]){4, 1, 1});
    nn_custom_kernel_free(gone);
    CHECK(late && nn_tensor_read(late, data, sizeof data) != NN_OK && strstr(nn_last_error(), "the kernel was freed"));
    nn_ctx_set_grad_enabled(ctx, was);
    nn_ctx_step_end(ctx);
    nn_tensor_free(x), nn_tensor_free(ry);
    free_kernels(&ks);
    nn_ctx_free(ctx);
}

/* A module whose forward is the custom function of (x, x / 2). */
typedef struct gate_module {
    const nn_function_def *def;
    kernels k;
    gate_state state;
} gate_module;

static nn_tensor *gate_module_forward(nn_module *self, nn_tensor *x) {
    gate_module *g = nn_module_data(self);
    return gate_as(g->def, &g->k, &g->state, x, nn_scale(x, 0.5f));
}

/* An export writes the composition where the function has one (the
 * onnxruntime run is tests/python/test_custom_ops.py's), and refuses the
 * function by name where it has none. */
TEST(custom_function_exports_its_composition_or_is_refused) {
    nn_ctx *ctx = vkt_open_device("cpu");
    kernels k = make_kernels();
    const char *path = "/tmp/nn_custom_function.onnx";
    const nn_function_def *defs[2] = {&kGateComposed, &kGate};
    for (int i = 0; i < 2; i++) {
        gate_module g = {defs[i], k, {k.gate_grad, 1.5f}};
        nn_module *m = nn_module_new(ctx, "Gate", gate_module_forward, &g, NULL);
        remove(path);
        const nn_status st = nn_onnx_export_module(path, m, (int64_t[]){2, 7}, 2);
        FILE *f = fopen(path, "rb");
        if (i == 0) CHECK_MSG(st == NN_OK && f, "%s", nn_last_error());
        else CHECK_MSG(st != NN_OK && !f && strstr(nn_last_error(), "custom function silu_gate has no ONNX form"), "%s",
                       nn_last_error());
        if (f) fclose(f);
        nn_module_free(m);
    }
    remove(path);
    free_kernels(&k);
    nn_ctx_free(ctx);
}
