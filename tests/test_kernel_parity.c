/* The kernel parity test: every kernel of the registry (nn_kernel in
 * backends/kernels.h, ids 0 to NN_KERNEL_COUNT - 1) runs on the CPU backend,
 * the reference, and on every other backend this build and machine offer,
 * with the same inputs, and every buffer argument the kernel writes
 * (nn_kernel_written_args) must match the CPU's. The other kernel tests
 * take one family at a time; this one is where a new kernel or a new
 * backend cannot go unchecked: a kernel id without a case in kCases fails
 * kernel_parity_every_kernel_has_a_case, and a backend listed by
 * other_backends() runs every case.
 *
 * Each case runs its kernel at awkward sizes (odd, not multiples of a tile
 * or of 4, batch 1 and more), accumulate on and off, optional arguments
 * given and absent, each argument a view at a byte offset into a larger
 * buffer. Outputs start as random values, not zeros, so an output element
 * one backend leaves unwritten differs from the CPU's. Guard words surround
 * every view, and the arguments a kernel only reads must come back
 * unchanged: a kernel writing outside its views, or writing an argument the
 * registry does not list as written, fails on whichever backend does it.
 *
 * Tolerances, |other - cpu| <= tol * max(1, |cpu|): float sums of n terms
 * 1e-5 * sqrt(n) (sums_tol); one or two roundings per element 1e-6
 * (ROUNDING: a fused multiply-add or not); copies and selections exactly,
 * and integer outputs (argmax, winners, counters, gathered words, dropout
 * masks) bit for bit. Inputs that decide a selection (the fused
 * convolutions' winners) are small multiples of powers of two, so every
 * backend computes them exactly whatever the order of its sums.
 *
 * Tests may use src/ internals; the backends are driven through
 * nn_backend's functions only. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "conv_pool_reference.h"
#include "test.h"
#include "vulkan_harness.h"

/* ---- the backends compared with the CPU ---- */

#define MAX_BACKENDS 4

/* The backends besides the CPU that every case runs on: every one the
 * registry has (backends/registry.h). Vulkan is left out when
 * NN_ENGINE_TEST_VULKAN=0 says to skip it; a backend that does not open is
 * a failure naming it. */
static int other_backends(nn_backend *out[MAX_BACKENDS]) {
    int count, n = 0;
    const nn_backend_provider *const *providers = nn_backend_providers(&count);
    for (int i = 1; i < count && n < MAX_BACKENDS; i++) { /* providers[0] is the CPU, the reference */
        if (strcmp(providers[i]->name, "vulkan") == 0 && vkt_skipped()) continue;
        const char *why;
        nn_backend *b = vkt_backend(providers[i]->name, &why);
        CHECK_MSG(b != NULL, "backend %s does not open: %s", providers[i]->name, why);
        if (b) out[n++] = b;
    }
    return n;
}

/* ---- host arrays: a case allocates freely, all are freed after it ---- */

static struct {
    void **at;
    int count, capacity;
} g_arrays;
static unsigned g_seed = 1; /* each array of random values its own seed */

static void *own(void *p) {
    if (g_arrays.count == g_arrays.capacity) {
        g_arrays.capacity = g_arrays.capacity ? 2 * g_arrays.capacity : 256;
        g_arrays.at = realloc(g_arrays.at, (size_t)g_arrays.capacity * sizeof *g_arrays.at);
    }
    if (!p || !g_arrays.at) {
        fprintf(stderr, "test_kernel_parity: out of host memory\n");
        exit(2);
    }
    g_arrays.at[g_arrays.count++] = p;
    return p;
}

static void arrays_free(void) {
    for (int i = 0; i < g_arrays.count; i++) free(g_arrays.at[i]);
    free(g_arrays.at);
    g_arrays.at = NULL;
    g_arrays.count = g_arrays.capacity = 0;
}

/* Zeroed bytes, freed after the case. */
static void *array(size_t bytes) { return own(calloc(bytes ? bytes : 1, 1)); }

static float *randoms(size_t n, float lo, float hi) {
    float *x = array(n * sizeof *x);
    vkt_fill(x, n, lo, hi, g_seed++);
    return x;
}

/* Whole numbers in [-3, 3] over `denominator`: convolutions of them are
 * exact in float, whatever the order of the sums (conv_pool_reference.h). */
static float *steps(size_t n, float denominator) { return own(conv_pool_steps(n, denominator, g_seed++)); }

/* Valid labels in [0, classes). */
static int32_t *labels_of(size_t rows, int classes) {
    const float *u = randoms(rows, 0.0f, 1.0f);
    int32_t *labels = array(rows * sizeof *labels);
    for (size_t r = 0; r < rows; r++) {
        int32_t l = (int32_t)(u[r] * (float)classes);
        labels[r] = l < classes ? l : classes - 1;
    }
    return labels;
}

static float relu_of(float v) { return v > 0.0f ? v : 0.0f; }

/* ---- tolerances ---- */

/* Float sums of `terms` terms, added in whatever order each backend takes. */
static double sums_tol(double terms) { return 1e-5 * sqrt(terms > 1.0 ? terms : 1.0); }
#define ROUNDING 1e-6 /* one or two roundings per element */

/* ---- one run of a kernel on the CPU and on another backend ----
 * (not vulkan_harness.h's pairs, which hold a CPU and a Vulkan buffer:
 * these runs take whichever backend other_backends() lists) */

typedef enum arg_kind {
    ARG_READ,  /* only read: must come back unchanged */
    ARG_EXACT, /* written: bit for bit the CPU's */
    ARG_NEAR   /* written: floats within tol of the CPU's (NaN equals NaN) */
} arg_kind;

/* One buffer argument of a run: count 4-byte words, its contents before
 * the run (NULL: the argument is absent), at `offset` bytes into its buffer. */
typedef struct parity_arg {
    const void *data;
    size_t count, offset;
    arg_kind kind;
    double tol;
    void *cpu_after; /* when set, receives the CPU's words after the run */
} parity_arg;

static parity_arg arg_in(const void *data, size_t count, size_t offset) {
    return (parity_arg){.data = data, .count = count, .offset = offset, .kind = ARG_READ};
}
static parity_arg arg_near(const void *data, size_t count, size_t offset, double tol) {
    return (parity_arg){.data = data, .count = count, .offset = offset, .kind = ARG_NEAR, .tol = tol};
}
static parity_arg arg_exact(const void *data, size_t count, size_t offset) {
    return (parity_arg){.data = data, .count = count, .offset = offset, .kind = ARG_EXACT};
}
static parity_arg arg_none(void) { return (parity_arg){.data = NULL}; }
static parity_arg given(bool present, parity_arg a) { return present ? a : arg_none(); }
static parity_arg with_cpu_after(parity_arg a, void *cpu_after) {
    a.cpu_after = cpu_after;
    return a;
}

#define GUARD_WORDS 3
static const uint32_t kGuard = 0x7fa11a5eu; /* a NaN no kernel computes */

static size_t words_of(const parity_arg *a) { return a->offset / 4 + a->count + GUARD_WORDS; }

/* The argument's whole buffer before the run: its data between guards. */
static uint32_t *image_of(const parity_arg *a) {
    uint32_t *image = array(words_of(a) * 4);
    for (size_t i = 0; i < words_of(a); i++) image[i] = kGuard;
    memcpy(image + a->offset / 4, a->data, a->count * 4);
    return image;
}

/* One backend's side of a run: its buffers, and their words after it. */
typedef struct run_side {
    nn_buffer *buffers[NN_COMMAND_MAX_ARGS];
    uint32_t *after[NN_COMMAND_MAX_ARGS];
} run_side;

/* Runs the kernel on b over fresh buffers holding the arguments and reads
 * them back whole; false (with a failure naming the kernel) if it cannot. */
static bool run_on(nn_backend *b, nn_kernel kernel, const parity_arg *args, int nargs, const void *params,
                   const char *what, run_side *s) {
    nn_buffer_ref refs[NN_COMMAND_MAX_ARGS] = {{NULL, 0, 0}};
    bool ok = true;
    for (int i = 0; i < nargs && ok; i++) {
        if (!args[i].data) continue;
        const size_t bytes = words_of(&args[i]) * 4;
        s->buffers[i] = b->alloc(b, bytes);
        ok = s->buffers[i] && b->write(b, (nn_buffer_ref){s->buffers[i], 0, 0}, image_of(&args[i]), bytes) == NN_OK;
        CHECK_MSG(ok, "%s on %s (%s): argument %d: %s", nn_kernel_name(kernel), b->name, what, i, nn_last_error());
        refs[i] = (nn_buffer_ref){s->buffers[i], args[i].offset, 0};
    }
    if (ok) {
        ok = b->run(b, kernel, refs, nargs, params) == NN_OK;
        CHECK_MSG(ok, "%s on %s (%s): %s", nn_kernel_name(kernel), b->name, what, nn_last_error());
    }
    for (int i = 0; i < nargs && ok; i++) {
        if (!s->buffers[i]) continue;
        const size_t bytes = words_of(&args[i]) * 4;
        s->after[i] = array(bytes);
        ok = b->read(b, (nn_buffer_ref){s->buffers[i], 0, 0}, s->after[i], bytes) == NN_OK;
        CHECK_MSG(ok, "%s on %s (%s): reading argument %d: %s", nn_kernel_name(kernel), b->name, what, i,
                  nn_last_error());
    }
    return ok;
}

static void side_free(nn_backend *b, run_side *s) {
    for (int i = 0; i < NN_COMMAND_MAX_ARGS; i++)
        if (s->buffers[i]) b->free(b, s->buffers[i]);
}

static float as_float(uint32_t w) {
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}

/* The first i in [from, to) where a and b differ, or `to`. */
static size_t first_difference(const uint32_t *a, const uint32_t *b, size_t from, size_t to) {
    for (size_t i = from; i < to; i++)
        if (a[i] != b[i]) return i;
    return to;
}

/* On every backend: guards and read-only arguments unchanged; then the
 * other backend's written words against the CPU's. */
static void compare_arg(nn_backend *other, nn_kernel kernel, int i, const parity_arg *a, const run_side *cpu,
                        const run_side *oth, const char *what) {
    const char *name = nn_kernel_name(kernel);
    const size_t words = words_of(a), from = a->offset / 4, to = from + a->count;
    const uint32_t *image = image_of(a);
    nn_backend *backends[2] = {vkt_cpu(), other};
    const uint32_t *after[2] = {cpu->after[i], oth->after[i]};
    for (int s = 0; s < 2; s++) {
        size_t j = first_difference(after[s], image, 0, from);
        if (j == from) j = first_difference(after[s], image, to, words);
        CHECK_MSG(j == words, "%s on %s (%s): argument %d: a word outside its view changed (%td from its start)",
                  name, backends[s]->name, what, i, (ptrdiff_t)j - (ptrdiff_t)from);
        if (a->kind != ARG_READ) continue;
        j = first_difference(after[s], image, from, to);
        CHECK_MSG(j == to, "%s on %s (%s): argument %d changed at [%zu], but nn_kernel_written_args says the "
                           "kernel only reads it",
                  name, backends[s]->name, what, i, j - from);
    }
    if (a->kind == ARG_READ) return;
    const uint32_t *want = cpu->after[i], *got = oth->after[i];
    size_t bad = 0, first = to;
    double worst = 0.0;
    for (size_t j = from; j < to; j++) {
        bool ok = want[j] == got[j];
        if (!ok && a->kind == ARG_NEAR) {
            const double w = as_float(want[j]), g = as_float(got[j]), scale = fabs(w) > 1.0 ? fabs(w) : 1.0;
            ok = (isnan(w) && isnan(g)) || fabs(g - w) <= a->tol * scale;
            if (!isnan(w) && !isnan(g) && fabs(g - w) / scale > worst) worst = fabs(g - w) / scale;
        }
        if (!ok && !bad++) first = j;
    }
    if (a->kind == ARG_EXACT)
        CHECK_MSG(bad == 0,
                  "%s on %s (%s): argument %d: %zu of %zu words differ (first [%zu]: %s 0x%08x, cpu 0x%08x)", name,
                  other->name, what, i, bad, a->count, first - from, other->name, bad ? got[first] : 0u,
                  bad ? want[first] : 0u);
    else if (a->kind == ARG_NEAR)
        CHECK_MSG(bad == 0,
                  "%s on %s (%s): argument %d: %zu of %zu differ (first [%zu]: %s %.9g, cpu %.9g; worst %.3g, tol %g)",
                  name, other->name, what, i, bad, a->count, first - from, other->name,
                  bad ? as_float(got[first]) : 0.0, bad ? as_float(want[first]) : 0.0, worst, a->tol);
}

static int g_runs; /* runs compared, for the summary */

/* Runs the kernel with these arguments on the CPU and on `other` and
 * compares them (compare_arg); `what` (printf-style) names the run in
 * failures. The arguments the case declares written must be the ones
 * nn_kernel_written_args lists (among those given), so every written
 * argument is compared. */
__attribute__((format(printf, 6, 7))) static void parity_check(nn_backend *other, nn_kernel kernel,
                                                                parity_arg *args, int nargs, const void *params,
                                                                const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *name = nn_kernel_name(kernel);
    if (nargs != nn_kernel_arg_count(kernel) || nargs > NN_COMMAND_MAX_ARGS) {
        CHECK_MSG(0, "%s (%s): the case passes %d arguments, the kernel takes %d", name, what, nargs,
                  nn_kernel_arg_count(kernel));
        return;
    }
    const unsigned written = nn_kernel_written_args(kernel);
    for (int i = 0; i < nargs; i++) {
        if (!args[i].data) continue;
        const bool declared = args[i].kind != ARG_READ, listed = (written >> i) & 1u;
        if (declared != listed) {
            CHECK_MSG(0, "%s (%s): the case %s argument %d, nn_kernel_written_args %s", name, what,
                      declared ? "compares" : "only gives", i, listed ? "lists it as written" : "does not list it");
            return;
        }
    }
    nn_backend *cpu_backend = vkt_cpu();
    run_side cpu = {{NULL}, {NULL}}, oth = {{NULL}, {NULL}};
    const bool ran = run_on(cpu_backend, kernel, args, nargs, params, what, &cpu) &&
                     run_on(other, kernel, args, nargs, params, what, &oth);
    if (ran) {
        g_runs++;
        for (int i = 0; i < nargs; i++) {
            if (!args[i].data) continue;
            compare_arg(other, kernel, i, &args[i], &cpu, &oth, what);
            if (args[i].cpu_after) memcpy(args[i].cpu_after, cpu.after[i] + args[i].offset / 4, args[i].count * 4);
        }
    }
    side_free(cpu_backend, &cpu);
    side_free(other, &oth);
}

/* The kernel on the CPU alone, for a later case's inputs (cpu_after). */
static void cpu_outputs(nn_kernel kernel, parity_arg *args, int nargs, const void *params, const char *what) {
    run_side cpu = {{NULL}, {NULL}};
    if (run_on(vkt_cpu(), kernel, args, nargs, params, what, &cpu))
        for (int i = 0; i < nargs; i++)
            if (args[i].data && args[i].cpu_after)
                memcpy(args[i].cpu_after, cpu.after[i] + args[i].offset / 4, args[i].count * 4);
    side_free(vkt_cpu(), &cpu);
}

/* ---- GEMM and GEMM with an epilogue ---- */

/* C = alpha op(A) op(B) (+ epilogue) + beta C over `batch` products (summed
 * into one C, as convolution's dW, when `summed`), leading dimensions
 * `pad` past the matrices' widths. */
static void gemm_run(nn_backend *o, nn_kernel kernel, int m, int n, int k, int ta, int tb, int batch, bool summed,
                     int pad, float alpha, float beta, int epilogue) {
    const int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    const int64_t sa = (int64_t)(ta ? k : m) * lda, sb = (int64_t)(tb ? n : k) * ldb, sc = (int64_t)m * ldc;
    const size_t na = (size_t)(sa * batch), nb = (size_t)(sb * batch), nc = (size_t)(sc * (summed ? 1 : batch));
    const size_t naux = (epilogue & NN_EPI_MASK)        ? nc
                        : (epilogue & NN_EPI_BIAS_ROWS) ? (size_t)m
                        : (epilogue & NN_EPI_BIAS_COLS) ? (size_t)n
                                                        : 0;
    const nn_gemm_epilogue_params p = {
        .gemm = {.m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb, .lda = lda, .ldb = ldb, .ldc = ldc,
                 .batch = batch, .stride_a = sa, .stride_b = sb, .stride_c = summed ? 0 : sc, .alpha = alpha,
                 .beta = beta},
        .epilogue = epilogue};
    const double terms = (double)k * (summed ? batch : 1) + 1.0;
    /* views on 16-byte boundaries (without padding) and off them */
    parity_arg a[4] = {arg_in(randoms(na, -1, 1), na, pad ? 4 : 16), arg_in(randoms(nb, -1, 1), nb, pad ? 8 : 16),
                       arg_near(randoms(nc, -1, 1), nc, 12, sums_tol(terms)),
                       given(naux > 0, arg_in(randoms(naux, -1, 1), naux, 4))};
    const bool plain = kernel == NN_KERNEL_GEMM;
    parity_check(o, kernel, a, plain ? 3 : 4, plain ? (const void *)&p.gemm : (const void *)&p,
                 "m=%d n=%d k=%d ta=%d tb=%d batch=%d%s pad=%d alpha=%g beta=%g epilogue=%#x", m, n, k, ta, tb, batch,
                 summed ? " summed" : "", pad, alpha, beta, epilogue);
}

static void gemm_case(nn_backend *o) {
    /* the last in multiples of 4, whose views may be read four floats at a time */
    static const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {67, 130, 29}, {64, 36, 20}};
    for (int s = 0; s < 5; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                gemm_run(o, NN_KERNEL_GEMM, shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, s == 2 ? 3 : 1, false,
                         s % 2, s == 2 ? 0.5f : 1.0f, s == 1 ? 0.5f : s == 2 ? -1.5f : 0.0f, 0);
    gemm_run(o, NN_KERNEL_GEMM, 6, 25, 37, 0, 1, 5, true, 0, 1.0f, 1.0f, 0);  /* a summed batch added into C */
    gemm_run(o, NN_KERNEL_GEMM, 5, 9, 3001, 1, 0, 1, false, 2, 1.0f, 0.0f, 0); /* long k: split over k */
    /* a product large enough for a backend's tiled route */
    gemm_run(o, NN_KERNEL_GEMM, 257, 263, 1025, 0, 1, 1, false, 0, 1.0f, 0.25f, 0);
}

static void gemm_epilogue_case(nn_backend *o) {
    const nn_kernel e = NN_KERNEL_GEMM_EPILOGUE;
    gemm_run(o, e, 1, 7, 5, 0, 1, 1, false, 0, 1, 0, NN_EPI_BIAS_COLS | NN_EPI_RELU); /* a Linear on one row */
    gemm_run(o, e, 13, 9, 21, 0, 1, 1, false, 1, 1, 0, NN_EPI_BIAS_COLS);
    gemm_run(o, e, 6, 37, 25, 0, 0, 3, false, 0, 1, 0, NN_EPI_BIAS_ROWS | NN_EPI_RELU); /* a convolution per image */
    gemm_run(o, e, 7, 11, 13, 0, 0, 1, false, 2, 1, 1, NN_EPI_MASK);                    /* added into C */
    gemm_run(o, e, 3, 5, 4, 1, 1, 2, false, 0, 0.5f, -1.5f, NN_EPI_MASK);
    gemm_run(o, e, 9, 4, 30, 1, 0, 4, true, 0, 1, 1, NN_EPI_RELU); /* no aux; the ReLU after the summed batch */
    gemm_run(o, e, 5, 3, 3000, 0, 1, 1, false, 0, 1, 0, NN_EPI_BIAS_COLS | NN_EPI_RELU); /* split over k */
    gemm_run(o, e, 64, 120, 257, 0, 0, 1, false, 3, 1, 1, NN_EPI_MASK);
    gemm_run(o, e, 8, 8, 8, 0, 0, 1, false, 0, 1, 0, 0); /* no epilogue, no aux */
    gemm_run(o, e, 257, 263, 1025, 0, 1, 1, false, 0, 1, 0, NN_EPI_BIAS_ROWS | NN_EPI_RELU);
}

/* ---- convolution ---- */

typedef struct conv_shape {
    int batch, channels, height, width, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, filters;
} conv_shape;

static const conv_shape kConvShapes[] = {
    {1, 1, 5, 5, 3, 3, 1, 1, 0, 0, 3},   /* one image, one channel */
    {2, 3, 7, 6, 3, 2, 2, 1, 1, 0, 5},   /* a non-square window; strides and padding differ by axis */
    {3, 2, 11, 13, 5, 5, 1, 1, 2, 2, 7}, /* padding that keeps an odd image's size */
    {2, 2, 8, 7, 2, 2, 3, 3, 0, 1, 4},   /* a stride past the window: pixels no window reads */
    {5, 1, 27, 29, 5, 5, 1, 1, 0, 0, 6}, /* LeNet-5's first layer on an odd image */
};
#define CONV_SHAPES (sizeof kConvShapes / sizeof kConvShapes[0])
/* Enough multiply-adds that a backend takes the column route and keeps the
 * column matrix (nn_backend.conv_keeps_columns). */
static const conv_shape kLargeConv = {2, 16, 61, 59, 5, 5, 1, 1, 2, 2, 24};

static nn_conv_params conv_params_of(const conv_shape *c) {
    nn_conv_geometry g = {c->batch, c->channels, c->height, c->width, c->kernel_h, c->kernel_w,
                          c->stride_h, c->stride_w, c->pad_h, c->pad_w, 0, 0, 0};
    g.out_h = (g.height + 2 * g.pad_h - g.kernel_h) / g.stride_h + 1;
    g.out_w = (g.width + 2 * g.pad_w - g.kernel_w) / g.stride_w + 1;
    return (nn_conv_params){.g = g, .filters = c->filters};
}

/* Element counts of x, the weight, y and the columns. */
typedef struct conv_sizes {
    size_t x, w, y, cols, k, positions;
} conv_sizes;

static conv_sizes conv_sizes_of(const nn_conv_params *p) {
    const nn_conv_geometry *g = &p->g;
    conv_sizes s;
    s.k = (size_t)g->channels * g->kernel_h * g->kernel_w;
    s.positions = (size_t)g->out_h * g->out_w;
    s.x = (size_t)g->batch * g->channels * g->height * g->width;
    s.w = (size_t)p->filters * s.k;
    s.y = (size_t)g->batch * p->filters * s.positions;
    s.cols = (size_t)g->batch * s.k * s.positions;
    return s;
}

/* Whether both the CPU and `other` keep the column matrix for this layer:
 * the only layers the op passes one to. */
static bool keeps_columns(nn_backend *other, const nn_conv_params *p) {
    nn_backend *cpu = vkt_cpu();
    return cpu->conv_keeps_columns && cpu->conv_keeps_columns(cpu, p) && other->conv_keeps_columns &&
           other->conv_keeps_columns(other, p);
}

/* im2col on the host (kernels.h's layout): the kept columns a weight
 * gradient reads. */
static float *host_im2col(const nn_conv_geometry *g, const float *x) {
    const int64_t k = (int64_t)g->channels * g->kernel_h * g->kernel_w, positions = (int64_t)g->out_h * g->out_w;
    float *cols = array((size_t)(g->batch * k * positions) * sizeof *cols);
    for (int n = 0; n < g->batch; n++)
        for (int c = 0; c < g->channels; c++)
            for (int ki = 0; ki < g->kernel_h; ki++)
                for (int kj = 0; kj < g->kernel_w; kj++)
                    for (int oh = 0; oh < g->out_h; oh++)
                        for (int ow = 0; ow < g->out_w; ow++) {
                            const int ih = oh * g->stride_h - g->pad_h + ki, iw = ow * g->stride_w - g->pad_w + kj;
                            const int64_t row = ((int64_t)c * g->kernel_h + ki) * g->kernel_w + kj;
                            const bool inside = ih >= 0 && iw >= 0 && ih < g->height && iw < g->width;
                            cols[(n * k + row) * positions + (int64_t)oh * g->out_w + ow] =
                                inside ? x[(((int64_t)n * g->channels + c) * g->height + ih) * g->width + iw] : 0.0f;
                        }
    return cols;
}

#define SHAPE_FMT "%dx%dx%dx%d f%d k%dx%d s%d,%d p%d,%d"
#define SHAPE_ARGS(c) \
    (c)->batch, (c)->channels, (c)->height, (c)->width, (c)->filters, (c)->kernel_h, (c)->kernel_w, (c)->stride_h, \
        (c)->stride_w, (c)->pad_h, (c)->pad_w

static void im2col_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_SHAPES; i++) {
        nn_conv_params p = conv_params_of(&kConvShapes[i]);
        const conv_sizes s = conv_sizes_of(&p);
        parity_arg a[2] = {arg_in(randoms(s.x, -1, 1), s.x, 4), arg_exact(randoms(s.cols, -1, 1), s.cols, 8)};
        parity_check(o, NN_KERNEL_IM2COL, a, 2, &p.g, SHAPE_FMT, SHAPE_ARGS(&kConvShapes[i]));
    }
}

static void col2im_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_SHAPES; i++)
        for (int acc = 0; acc < 2; acc++) {
            nn_conv_params p = conv_params_of(&kConvShapes[i]);
            p.g.accumulate = acc;
            const conv_sizes s = conv_sizes_of(&p);
            /* a pixel adds at most kernel_h * kernel_w column entries */
            parity_arg a[2] = {arg_in(randoms(s.cols, -1, 1), s.cols, 12),
                               arg_near(randoms(s.x, -1, 1), s.x, 4, sums_tol(s.k + 1.0))};
            parity_check(o, NN_KERNEL_COL2IM, a, 2, &p.g, SHAPE_FMT " accumulate %d", SHAPE_ARGS(&kConvShapes[i]),
                         acc);
        }
}

static void conv_forward_run(nn_backend *o, const conv_shape *c, int epilogue, bool columns) {
    nn_conv_params p = conv_params_of(c);
    p.epilogue = epilogue;
    const conv_sizes s = conv_sizes_of(&p);
    const size_t f = (size_t)c->filters;
    parity_arg a[5] = {arg_in(randoms(s.x, -1, 1), s.x, 4), arg_in(randoms(s.w, -1, 1), s.w, 0),
                       arg_near(randoms(s.y, -1, 1), s.y, 8, sums_tol(s.k + 1.0)),
                       given(epilogue & NN_EPI_BIAS_ROWS, arg_in(randoms(f, -1, 1), f, 12)),
                       given(columns, arg_exact(columns ? randoms(s.cols, -1, 1) : NULL, s.cols, 4))};
    parity_check(o, NN_KERNEL_CONV2D_FORWARD, a, 5, &p, SHAPE_FMT " epilogue %#x%s", SHAPE_ARGS(c), epilogue,
                 columns ? ", columns kept" : "");
}

static void conv_forward_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_SHAPES; i++)
        for (int epi = 0; epi < 4; epi++) {
            const nn_conv_params p = conv_params_of(&kConvShapes[i]);
            conv_forward_run(o, &kConvShapes[i], (epi & 1 ? NN_EPI_BIAS_ROWS : 0) | (epi & 2 ? NN_EPI_RELU : 0),
                             keeps_columns(o, &p));
        }
    const nn_conv_params large = conv_params_of(&kLargeConv);
    conv_forward_run(o, &kLargeConv, NN_EPI_BIAS_ROWS | NN_EPI_RELU, keeps_columns(o, &large));
    conv_forward_run(o, &kLargeConv, 0, false);
}

static void conv_data_run(nn_backend *o, const conv_shape *c, int acc) {
    nn_conv_params p = conv_params_of(c);
    p.g.accumulate = acc;
    const conv_sizes s = conv_sizes_of(&p);
    const double terms = (double)c->filters * c->kernel_h * c->kernel_w + acc;
    parity_arg a[3] = {arg_in(randoms(s.y, -1, 1), s.y, 0), arg_in(randoms(s.w, -1, 1), s.w, 4),
                       arg_near(randoms(s.x, -1, 1), s.x, 8, sums_tol(terms))};
    parity_check(o, NN_KERNEL_CONV2D_BACKWARD_DATA, a, 3, &p, SHAPE_FMT " accumulate %d", SHAPE_ARGS(c), acc);
}

static void conv_data_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_SHAPES; i++)
        for (int acc = 0; acc < 2; acc++) conv_data_run(o, &kConvShapes[i], acc);
    conv_data_run(o, &kLargeConv, 1);
}

static void conv_weight_run(nn_backend *o, const conv_shape *c, int acc, bool columns) {
    nn_conv_params p = conv_params_of(c);
    p.g.accumulate = acc;
    const conv_sizes s = conv_sizes_of(&p);
    const float *x = randoms(s.x, -1, 1);
    const double terms = (double)c->batch * s.positions + acc;
    parity_arg a[4] = {arg_in(randoms(s.y, -1, 1), s.y, 4), arg_in(x, s.x, 0),
                       arg_near(randoms(s.w, -1, 1), s.w, 12, sums_tol(terms)),
                       given(columns, arg_in(columns ? host_im2col(&p.g, x) : NULL, s.cols, 8))};
    parity_check(o, NN_KERNEL_CONV2D_BACKWARD_WEIGHT, a, 4, &p, SHAPE_FMT " accumulate %d%s", SHAPE_ARGS(c), acc,
                 columns ? ", columns kept" : "");
}

static void conv_weight_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_SHAPES; i++)
        for (int acc = 0; acc < 2; acc++) {
            const nn_conv_params p = conv_params_of(&kConvShapes[i]);
            conv_weight_run(o, &kConvShapes[i], acc, keeps_columns(o, &p));
        }
    const nn_conv_params large = conv_params_of(&kLargeConv);
    conv_weight_run(o, &kLargeConv, 0, keeps_columns(o, &large));
    conv_weight_run(o, &kLargeConv, 1, false);
}

/* ---- max pooling ---- */

static nn_pool_params pool_params(int batch, int channels, int height, int width, int kernel, int stride, int pad) {
    return (nn_pool_params){.batch = batch, .channels = channels, .height = height, .width = width, .kernel = kernel,
                            .stride = stride, .pad = pad, .out_h = (height + 2 * pad - kernel) / stride + 1,
                            .out_w = (width + 2 * pad - kernel) / stride + 1};
}

static const int kPools[][7] = {
    /* batch, channels, height, width, kernel, stride, pad */
    {1, 1, 5, 5, 2, 2, 0},    /* a row and a column dropped */
    {2, 3, 7, 9, 3, 2, 1},    /* overlapping windows, padding */
    {1, 2, 6, 6, 3, 1, 1},    /* stride 1: a pixel in up to nine windows */
    {2, 1, 5, 5, 2, 3, 0},    /* a stride past the window */
    {3, 6, 27, 29, 2, 2, 0},  /* LeNet-5's pooling on an odd plane */
    {1, 1, 1, 1, 1, 1, 0},    /* one pixel */
};
#define POOLS (sizeof kPools / sizeof kPools[0])

static nn_pool_params pool_of(size_t i) {
    const int *c = kPools[i];
    return pool_params(c[0], c[1], c[2], c[3], c[4], c[5], c[6]);
}

static size_t pool_in(const nn_pool_params *p) { return (size_t)p->batch * p->channels * p->height * p->width; }
static size_t pool_out(const nn_pool_params *p) { return (size_t)p->batch * p->channels * p->out_h * p->out_w; }

/* x with ties (whole numbers) and a NaN, which must win its windows; as a
 * ReLU's output when `relu`. */
static float *pool_input(const nn_pool_params *p, bool relu) {
    const size_t n = pool_in(p);
    float *x = randoms(n, -4, 4);
    for (size_t j = 0; j < n; j++) x[j] = relu ? relu_of(roundf(x[j])) : roundf(x[j]);
    if (n > 7 && !relu) x[7] = NAN;
    return x;
}

#define POOL_FMT "%dx%dx%dx%d window %d stride %d pad %d"
#define POOL_ARGS(p) (p)->batch, (p)->channels, (p)->height, (p)->width, (p)->kernel, (p)->stride, (p)->pad

static void maxpool_forward_case(nn_backend *o) {
    for (size_t i = 0; i < POOLS; i++) {
        const nn_pool_params p = pool_of(i);
        const size_t in = pool_in(&p), out = pool_out(&p);
        parity_arg a[3] = {arg_in(pool_input(&p, false), in, 12), arg_near(randoms(out, -1, 1), out, 0, 0.0),
                           arg_exact(randoms(out, -1, 1), out, 4)};
        parity_check(o, NN_KERNEL_MAXPOOL_FORWARD, a, 3, &p, POOL_FMT, POOL_ARGS(&p));
    }
}

/* The pool's output and argmax as the CPU computes them. */
static void pool_forward_on_cpu(const nn_pool_params *p, const float *x, float *y, int32_t *argmax) {
    const size_t in = pool_in(p), out = pool_out(p);
    parity_arg a[3] = {arg_in(x, in, 0), with_cpu_after(arg_exact(y, out, 0), y),
                       with_cpu_after(arg_exact(argmax, out, 0), argmax)};
    cpu_outputs(NN_KERNEL_MAXPOOL_FORWARD, a, 3, p, "the forward a backward case reads");
}

/* Plain (NN_KERNEL_MAXPOOL_BACKWARD) or masked by the pool output (x a
 * ReLU's output: windows of zeros pass no gradient). */
static void maxpool_backward_run(nn_backend *o, bool masked) {
    for (size_t i = 0; i < POOLS; i++)
        for (int acc = 0; acc < 2; acc++) {
            nn_pool_params p = pool_of(i);
            const size_t in = pool_in(&p), out = pool_out(&p);
            float *y = array(out * 4);
            int32_t *argmax = array(out * 4);
            pool_forward_on_cpu(&p, pool_input(&p, masked), y, argmax);
            p.accumulate = acc;
            /* a pixel takes the gradient of every window that chose it, in the same order */
            parity_arg dx = arg_near(randoms(in, -1, 1), in, 4, ROUNDING);
            parity_arg a[4] = {arg_in(randoms(out, -1, 1), out, 0), arg_in(argmax, out, 8),
                               masked ? arg_in(y, out, 12) : dx, dx};
            parity_check(o, masked ? NN_KERNEL_MAXPOOL_BACKWARD_MASKED : NN_KERNEL_MAXPOOL_BACKWARD, a,
                         masked ? 4 : 3, &p, POOL_FMT " accumulate %d", POOL_ARGS(&p), acc);
        }
}

static void maxpool_backward_case(nn_backend *o) { maxpool_backward_run(o, false); }
static void maxpool_backward_masked_case(nn_backend *o) { maxpool_backward_run(o, true); }

/* ---- bias ---- */

static const int64_t kBiasShapes[][3] = {
    /* outer, channels, inner */
    {1, 1, 1}, {3, 5, 7}, {64, 120, 1}, {1, 300, 3}, {300, 7, 13},
    {64, 6, 575}, /* a channel's sum over several workgroups */
};

static void bias_add_case(nn_backend *o) {
    for (size_t i = 0; i < sizeof kBiasShapes / sizeof kBiasShapes[0]; i++) {
        const nn_bias_params p = {.outer = kBiasShapes[i][0], .channels = (int32_t)kBiasShapes[i][1],
                                  .inner = kBiasShapes[i][2]};
        const size_t n = (size_t)(p.outer * p.channels * p.inner), c = (size_t)p.channels;
        parity_arg a[2] = {arg_near(randoms(n, -1, 1), n, 8, 0.0), arg_in(randoms(c, -1, 1), c, 4)};
        parity_check(o, NN_KERNEL_BIAS_ADD, a, 2, &p, "outer %lld channels %d inner %lld", (long long)p.outer,
                     p.channels, (long long)p.inner);
    }
}

static void bias_grad_case(nn_backend *o) {
    for (size_t i = 0; i < sizeof kBiasShapes / sizeof kBiasShapes[0]; i++)
        for (int acc = 0; acc < 2; acc++) {
            const nn_bias_params p = {.outer = kBiasShapes[i][0], .channels = (int32_t)kBiasShapes[i][1],
                                      .inner = kBiasShapes[i][2], .accumulate = acc};
            const size_t n = (size_t)(p.outer * p.channels * p.inner), c = (size_t)p.channels;
            parity_arg a[2] = {arg_in(randoms(n, -1, 1), n, 0),
                               arg_near(randoms(c, -1, 1), c, 12, sums_tol((double)(p.outer * p.inner) + acc))};
            parity_check(o, NN_KERNEL_BIAS_GRAD, a, 2, &p, "outer %lld channels %d inner %lld accumulate %d",
                         (long long)p.outer, p.channels, (long long)p.inner, acc);
        }
}

/* ---- pointwise ---- */

static const size_t kSizes[] = {1, 5, 1000, 70001};
#define SIZES (sizeof kSizes / sizeof kSizes[0])

/* Values in [-2, 2) with a NaN, which passes through. */
static float *pointwise_input(size_t n) {
    float *x = randoms(n, -2, 2);
    if (n > 3) x[3] = NAN;
    return x;
}

static void relu_forward_case(nn_backend *o) {
    for (size_t s = 0; s < SIZES; s++) {
        const size_t n = kSizes[s];
        const nn_pointwise_params p = {.n = (int64_t)n};
        parity_arg a[2] = {arg_in(pointwise_input(n), n, 4), arg_near(randoms(n, -1, 1), n, 0, 0.0)};
        parity_check(o, NN_KERNEL_RELU_FORWARD, a, 2, &p, "n=%zu", n);
    }
}

static void relu_backward_case(nn_backend *o) {
    for (size_t s = 0; s < SIZES; s++)
        for (int acc = 0; acc < 2; acc++) {
            const size_t n = kSizes[s];
            const nn_pointwise_params p = {.n = (int64_t)n, .accumulate = acc};
            float *y = randoms(n, -1, 1);
            for (size_t j = 0; j < n; j++) y[j] = relu_of(y[j]);
            parity_arg a[3] = {arg_in(y, n, 8), arg_in(randoms(n, -1, 1), n, 0),
                               arg_near(randoms(n, -1, 1), n, 4, 0.0)};
            parity_check(o, NN_KERNEL_RELU_BACKWARD, a, 3, &p, "n=%zu accumulate %d", n, acc);
        }
}

static void elementwise_case(nn_backend *o) {
    for (size_t s = 0; s < SIZES; s++)
        for (int acc = 0; acc < 2; acc++)
            for (int op = 0; op < 4; op++) { /* ADD, MUL, SCALE without b, SCALE with b (unused) */
                const size_t n = kSizes[s];
                const int ew = op < 3 ? op : NN_EW_SCALE;
                const nn_pointwise_params p = {.n = (int64_t)n, .op = ew, .accumulate = acc, .alpha = -0.75f};
                parity_arg a[3] = {arg_in(pointwise_input(n), n, 0),
                                   given(op != NN_EW_SCALE, arg_in(randoms(n, -2, 2), n, 4)),
                                   arg_near(randoms(n, -2, 2), n, 12, ROUNDING)};
                parity_check(o, NN_KERNEL_ELEMENTWISE, a, 3, &p, "op %d%s n=%zu accumulate %d", ew,
                             op == 2 ? " (b absent)" : "", n, acc);
            }
}

static void broadcast_scalar_case(nn_backend *o) {
    for (size_t s = 0; s < SIZES; s++)
        for (int acc = 0; acc < 2; acc++) {
            const size_t n = kSizes[s];
            const nn_pointwise_params p = {.n = (int64_t)n, .accumulate = acc, .alpha = -1.25f};
            parity_arg a[2] = {arg_in(randoms(1, -2, 2), 1, 4), arg_near(randoms(n, -1, 1), n, 0, ROUNDING)};
            parity_check(o, NN_KERNEL_BROADCAST_SCALAR, a, 2, &p, "n=%zu accumulate %d", n, acc);
        }
}

/* REDUCE_SUM or SUM_SQUARES into out[1], over sizes that take one
 * workgroup and several. */
static void reduction_run(nn_backend *o, nn_kernel kernel) {
    static const size_t sizes[] = {1, 255, 4097, 70001};
    for (size_t s = 0; s < 4; s++)
        for (int acc = 0; acc < 2; acc++) {
            const size_t n = sizes[s];
            const nn_pointwise_params p = {.n = (int64_t)n, .accumulate = acc, .alpha = acc ? 0.5f : -1.25f};
            parity_arg a[2] = {arg_in(randoms(n, -1, 3), n, 4), arg_near(randoms(1, -1, 1), 1, 8, sums_tol(n + 1.0))};
            parity_check(o, kernel, a, 2, &p, "n=%zu accumulate %d alpha %g", n, acc, p.alpha);
        }
}

static void reduce_sum_case(nn_backend *o) { reduction_run(o, NN_KERNEL_REDUCE_SUM); }
static void sum_squares_case(nn_backend *o) { reduction_run(o, NN_KERNEL_SUM_SQUARES); }

/* ---- softmax and cross-entropy ---- */

static const int kSoftmaxShapes[][2] = {{1, 1}, {1, 10}, {7, 13}, {300, 7}, {5, 1000}};
#define SOFTMAX_SHAPES (sizeof kSoftmaxShapes / sizeof kSoftmaxShapes[0])

/* Logits in [-8, 8), one of them large (it must not overflow). */
static float *logits_of(size_t n) {
    float *x = randoms(n, -8, 8);
    x[0] += 1000.0f;
    return x;
}

static void softmax_forward_case(nn_backend *o) {
    for (size_t s = 0; s < SOFTMAX_SHAPES; s++) {
        const nn_softmax_params p = {.rows = kSoftmaxShapes[s][0], .cols = kSoftmaxShapes[s][1]};
        const size_t n = (size_t)p.rows * p.cols;
        parity_arg a[2] = {arg_in(logits_of(n), n, 4), arg_near(randoms(n, -1, 1), n, 0, sums_tol(p.cols))};
        parity_check(o, NN_KERNEL_SOFTMAX_FORWARD, a, 2, &p, "%dx%d", p.rows, p.cols);
    }
}

/* Softmax of random logits, as the CPU computes it. */
static float *probabilities(const nn_softmax_params *p) {
    const size_t n = (size_t)p->rows * p->cols;
    float *y = array(n * 4);
    parity_arg a[2] = {arg_in(randoms(n, -6, 6), n, 0), with_cpu_after(arg_near(y, n, 0, 0.0), y)};
    cpu_outputs(NN_KERNEL_SOFTMAX_FORWARD, a, 2, p, "the probabilities a backward case reads");
    return y;
}

static void softmax_backward_case(nn_backend *o) {
    for (size_t s = 0; s < SOFTMAX_SHAPES; s++)
        for (int acc = 0; acc < 2; acc++) {
            const nn_softmax_params p = {.rows = kSoftmaxShapes[s][0], .cols = kSoftmaxShapes[s][1], .accumulate = acc};
            const size_t n = (size_t)p.rows * p.cols;
            parity_arg a[3] = {arg_in(probabilities(&p), n, 8), arg_in(randoms(n, -1, 1), n, 0),
                               arg_near(randoms(n, -1, 1), n, 4, sums_tol(p.cols + 1.0))};
            parity_check(o, NN_KERNEL_SOFTMAX_BACKWARD, a, 3, &p, "%dx%d accumulate %d", p.rows, p.cols, acc);
        }
}

static const int kCrossEntropyShapes[][2] = {{1, 1}, {1, 10}, {7, 3}, {64, 10}, {300, 17}, {3, 1000}};
#define CE_SHAPES (sizeof kCrossEntropyShapes / sizeof kCrossEntropyShapes[0])

/* SOFTMAX_CE_FORWARD (probs, loss) or SOFTMAX_CE_FUSED (dlogits, loss; its
 * accumulate is not used, so both values must give the same). */
static void cross_entropy_run(nn_backend *o, nn_kernel kernel) {
    for (size_t s = 0; s < CE_SHAPES; s++)
        for (int acc = 0; acc < (kernel == NN_KERNEL_SOFTMAX_CE_FUSED ? 2 : 1); acc++) {
            const nn_softmax_params p = {.rows = kCrossEntropyShapes[s][0], .cols = kCrossEntropyShapes[s][1],
                                         .accumulate = acc};
            const size_t n = (size_t)p.rows * p.cols, rows = (size_t)p.rows;
            parity_arg a[4] = {arg_in(logits_of(n), n, 4), arg_in(labels_of(rows, p.cols), rows, 8),
                               arg_near(randoms(n, -1, 1), n, 0, sums_tol(p.cols + 1.0)),
                               arg_near(randoms(1, -1, 1), 1, 12, sums_tol((double)p.rows + p.cols))};
            parity_check(o, kernel, a, 4, &p, "%dx%d accumulate %d", p.rows, p.cols, acc);
        }
}

static void softmax_ce_forward_case(nn_backend *o) { cross_entropy_run(o, NN_KERNEL_SOFTMAX_CE_FORWARD); }
static void softmax_ce_fused_case(nn_backend *o) { cross_entropy_run(o, NN_KERNEL_SOFTMAX_CE_FUSED); }

static void softmax_ce_backward_case(nn_backend *o) {
    for (size_t s = 0; s < CE_SHAPES; s++)
        for (int acc = 0; acc < 2; acc++) {
            const nn_softmax_params p = {.rows = kCrossEntropyShapes[s][0], .cols = kCrossEntropyShapes[s][1],
                                         .accumulate = acc};
            const size_t n = (size_t)p.rows * p.cols, rows = (size_t)p.rows;
            const float dloss = 0.7f;
            parity_arg a[4] = {arg_in(probabilities(&p), n, 0), arg_in(labels_of(rows, p.cols), rows, 4),
                               arg_in(&dloss, 1, 8), arg_near(randoms(n, -1, 1), n, 12, ROUNDING)};
            parity_check(o, NN_KERNEL_SOFTMAX_CE_BACKWARD, a, 4, &p, "%dx%d accumulate %d", p.rows, p.cols, acc);
        }
}

/* ---- SGD ---- */

static void sgd_update_case(nn_backend *o) {
    static const struct {
        float momentum, weight_decay, clip, max_norm;
        int nesterov, velocity, norm;
    } cases[] = {
        {0, 0, 0, 0, 0, 0, 0},             /* plain: no velocity, no norm */
        {0, 0, 0, 0, 0, 1, 0},             /* a velocity given without momentum: untouched */
        {0.9f, 0, 0, 0, 0, 1, 0},          /* momentum */
        {0.9f, 1e-3f, 0, 0, 1, 1, 0},      /* Nesterov, weight decay */
        {0, 5e-4f, 0.05f, 0, 0, 0, 0},     /* clipped per element */
        {0.5f, 0, 0, 1.5f, 0, 1, 1},       /* clipped by the global norm: scaled */
        {0, 0, 0, 1e6f, 0, 0, 1},          /* a norm under the limit: not scaled */
        {0, 0, 0, 0, 0, 0, 1},             /* a norm given, max_grad_norm off: not read */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int s = 0; s < 2; s++) {
            const size_t n = s ? 1001 : 1;
            const float norm_sq = 9.0f;
            const nn_sgd_params p = {.n = (int64_t)n, .lr = 0.05f, .momentum = cases[c].momentum,
                                     .weight_decay = cases[c].weight_decay, .clip_value = cases[c].clip,
                                     .max_grad_norm = cases[c].max_norm, .nesterov = cases[c].nesterov};
            parity_arg a[4] = {arg_near(randoms(n, -1, 1), n, 4, ROUNDING), arg_in(randoms(n, -0.2f, 0.2f), n, 0),
                               given(cases[c].velocity, arg_near(randoms(n, -0.1f, 0.1f), n, 8, ROUNDING)),
                               given(cases[c].norm, arg_in(&norm_sq, 1, 12))};
            parity_check(o, NN_KERNEL_SGD_UPDATE, a, 4, &p, "case %zu n=%zu", c, n);
        }
}

static void sgd_update_device_lr_case(nn_backend *o) {
    for (int variant = 0; variant < 4; variant++) /* bit 0: momentum and a velocity; bit 1: a norm limit */
        for (int s = 0; s < 2; s++) {
            const size_t n = s ? 777 : 1;
            const float scalars[2] = {0.037f, 9.5f}; /* the rate, the squared norm */
            const nn_sgd_params p = {.n = (int64_t)n, .lr = 123.0f /* not read */,
                                     .momentum = variant & 1 ? 0.9f : 0.0f, .weight_decay = 0.01f,
                                     .max_grad_norm = variant & 2 ? 2.0f : 0.0f, .nesterov = variant == 3};
            parity_arg a[4] = {arg_near(randoms(n, -1, 1), n, 4, ROUNDING), arg_in(randoms(n, -2, 2), n, 0),
                               given(variant & 1, arg_near(randoms(n, -1, 1), n, 8, ROUNDING)),
                               arg_in(scalars, 2, 4)};
            parity_check(o, NN_KERNEL_SGD_UPDATE_DEVICE_LR, a, 4, &p, "variant %d n=%zu", variant, n);
        }
}

/* ---- the device loop: gather, counter, fill, metrics ---- */

/* Rows of an 11-row table picked by a device-side position: the order
 * given or not, the counter given or not (1, then 2: positions past the
 * epoch's 14), an order entry past the table and one negative (rows of
 * zeros). GATHER_SAMPLES reads uint8 values packed four to a word, rows
 * not on word boundaries, and scales them per channel of `plane` values. */
static void gather_run(nn_backend *o, nn_kernel kernel, int row_elems, int plane) {
    const int table_rows = 11, positions = 14, rows = 5;
    int32_t *order = array((size_t)positions * 4);
    for (int i = 0; i < table_rows; i++) order[i] = (i * 7 + 3) % table_rows;
    order[11] = table_rows, order[12] = -1, order[13] = 4;
    const bool samples = kernel == NN_KERNEL_GATHER_SAMPLES;
    const size_t elems = (size_t)table_rows * row_elems, words = samples ? (elems + 3) / 4 : elems;
    uint32_t *table = array(words * 4);
    const float *u = randoms(words, 0.0f, 1.0f);
    for (size_t i = 0; i < words; i++) table[i] = (uint32_t)(u[i] * 4294967040.0f) ^ (uint32_t)(i * 2654435761u);
    const nn_gather_params p = {.rows = rows, .row_elems = row_elems, .first = 2, .stride = 5,
                                .positions = positions, .table_rows = table_rows, .plane = plane,
                                .scale = {1.0f / 255.0f, 0.5f, -2.0f, 0.125f}, .shift = {-0.5f, 1.0f, 0.25f, 3.0f}};
    const size_t out = (size_t)rows * row_elems;
    for (int with_order = 0; with_order < 2; with_order++)
        for (int32_t counter = 0; counter <= 2; counter++) { /* 0: no counter */
            parity_arg a[4] = {arg_in(table, words, 4), given(with_order, arg_in(order, (size_t)positions, 8)),
                               given(counter > 0, arg_in(&counter, 1, 12)),
                               samples ? arg_near(randoms(out, -1, 1), out, 0, ROUNDING)
                                       : arg_exact(randoms(out, -1, 1), out, 0)};
            parity_check(o, kernel, a, 4, &p, "row elements %d plane %d order %s counter %d", row_elems, plane,
                         with_order ? "given" : "absent", counter);
        }
}

static void gather_samples_case(nn_backend *o) {
    gather_run(o, NN_KERNEL_GATHER_SAMPLES, 27, 9); /* three channels of 3x3 */
    gather_run(o, NN_KERNEL_GATHER_SAMPLES, 10, 3); /* four channels, the last of one value */
}

static void gather_rows_case(nn_backend *o) {
    gather_run(o, NN_KERNEL_GATHER_ROWS, 1, 1); /* labels */
    gather_run(o, NN_KERNEL_GATHER_ROWS, 3, 3);
}

static void counter_add_case(nn_backend *o) {
    static const int32_t starts[] = {0, 5, -7, 1000000};
    static const int32_t deltas[] = {1, 3, -2, -1000001};
    for (int i = 0; i < 4; i++) {
        const nn_counter_params p = {.delta = deltas[i]};
        parity_arg a[1] = {arg_exact(&starts[i], 1, (size_t)(4 * i))};
        parity_check(o, NN_KERNEL_COUNTER_ADD, a, 1, &p, "counter %d delta %d", starts[i], deltas[i]);
    }
}

/* A NaN with a payload, a negative zero, one past 1.0; an odd count, and
 * words in the view past it that must stay. */
static void fill_case(nn_backend *o) {
    static const uint32_t patterns[] = {0x7fc01234u, 0x80000000u, 0x3f800001u};
    static const int64_t counts[] = {1, 1031, 70001};
    for (int k = 0; k < 3; k++)
        for (int c = 0; c < 3; c++) {
            const nn_fill_params p = {.count = counts[c], .bits = patterns[k]};
            const size_t n = (size_t)counts[c] + 7;
            parity_arg a[1] = {arg_exact(randoms(n, -1, 1), n, 12)};
            parity_check(o, NN_KERNEL_FILL, a, 1, &p, "count %lld bits %#x", (long long)p.count, p.bits);
        }
}

/* Logits with ties (whole numbers; the first of equals wins), labels right
 * on every other row, and sums that already hold values. */
static void metrics_accumulate_case(nn_backend *o) {
    static const int shapes[][2] = {{1, 1}, {7, 3}, {300, 10}};
    for (int s = 0; s < 3; s++) {
        const nn_metrics_params p = {.rows = shapes[s][0], .cols = shapes[s][1]};
        const size_t n = (size_t)p.rows * p.cols;
        float *logits = randoms(n, -3, 3);
        for (size_t j = 0; j < n; j++) logits[j] = roundf(logits[j]);
        int32_t *labels = labels_of((size_t)p.rows, p.cols);
        for (int r = 0; r < p.rows; r += 2) {
            int best = 0;
            for (int c = 1; c < p.cols; c++)
                if (logits[(size_t)r * p.cols + c] > logits[(size_t)r * p.cols + best]) best = c;
            labels[r] = best;
        }
        const float loss = 0.731f, sums[2] = {12.5f, 3.0f};
        parity_arg a[4] = {arg_in(logits, n, 4), arg_in(labels, (size_t)p.rows, 0), arg_in(&loss, 1, 8),
                           arg_near(sums, 2, 12, ROUNDING)};
        parity_check(o, NN_KERNEL_METRICS_ACCUMULATE, a, 4, &p, "%dx%d", p.rows, p.cols);
    }
}

/* ---- dropout ---- */

/* The mask from the same hash on every backend: y and mask bit for bit,
 * at draws 0, 7 and the last 32-bit draw. */
static void dropout_forward_case(nn_backend *o) {
    static const struct {
        uint32_t threshold;
        float scale;
    } rates[] = {{0x80000000u, 2.0f}, {429496729u, 1.0f / 0.9f}, {0u, 1.0f}}; /* p = 0.5, 0.1, 0 */
    static const uint32_t draws[] = {0u, 7u, 0xffffffffu};
    static const size_t sizes[] = {1, 1027, 70001};
    for (int r = 0; r < 3; r++)
        for (int d = 0; d < 3; d++) {
            const size_t n = sizes[(r + d) % 3];
            const nn_dropout_params p = {.n = (int64_t)n, .threshold = rates[r].threshold, .scale = rates[r].scale,
                                         .seed_lo = 99u + (uint32_t)r, .seed_hi = 5u * (uint32_t)d};
            parity_arg a[4] = {arg_in(randoms(n, -2, 2), n, 8), arg_exact(randoms(n, -1, 1), n, 0),
                               arg_exact(randoms(n, -1, 1), n, 4), arg_in(&draws[d], 1, 12)};
            parity_check(o, NN_KERNEL_DROPOUT_FORWARD, a, 4, &p, "n=%zu threshold %#x draw %u", n, p.threshold,
                         draws[d]);
        }
}

/* ---- Conv2d -> ReLU -> MaxPool2d fused ---- */

static const conv_pool_case kConvPools[] = {
    /* batch, channels, height, width, filters, kernel_h, kernel_w, stride, pad, pool */
    {3, 1, 27, 29, 6, 5, 5, 1, 0, 2},  /* LeNet-5's first layer on an odd image: a row and a column dropped */
    {2, 6, 11, 13, 16, 5, 5, 1, 0, 2}, /* its second */
    {1, 2, 13, 11, 5, 3, 3, 2, 1, 3},  /* stride 2, padding, 3x3 windows */
    /* enough outputs for two filters per invocation (an odd count of
     * filters), and a weight gradient over many images */
    {41, 2, 29, 31, 5, 3, 3, 1, 1, 2},
};
#define CONV_POOLS (sizeof kConvPools / sizeof kConvPools[0])

#define CP_FMT "%dx%dx%dx%d f%d k%dx%d s%d p%d pool %d"
#define CP_ARGS(c) \
    (c)->batch, (c)->channels, (c)->height, (c)->width, (c)->filters, (c)->kernel_h, (c)->kernel_w, (c)->stride, \
        (c)->pad, (c)->pool

/* The layer's winners (and pooled output, when y is given) as its forward
 * picks them: exact for inputs of steps(). */
static int32_t *winners_of(const nn_conv_pool_params *p, const float *x, const float *w, const float *b, float *y) {
    const conv_pool_sizes s = conv_pool_sizes_of(p);
    conv_pool_reference r = conv_pool_reference_of(p, x, w, b, NULL);
    int32_t *winners = array(s.y * 4);
    memcpy(winners, r.winners, s.y * 4);
    if (y)
        for (size_t j = 0; j < s.y; j++) y[j] = (float)r.y[j];
    conv_pool_reference_free(&r);
    return winners;
}

static void conv_pool_forward_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_POOLS; i++)
        for (int bias = 0; bias < 2; bias++) {
            const nn_conv_pool_params p = conv_pool_params_of(&kConvPools[i], bias);
            const conv_pool_sizes s = conv_pool_sizes_of(&p);
            const size_t f = (size_t)p.conv.filters, cols = conv_sizes_of(&p.conv).cols;
            parity_arg a[6] = {arg_in(steps(s.x, 4), s.x, 12), arg_in(steps(s.w, 8), s.w, 4),
                               given(bias, arg_in(steps(f, 16), f, 8)), arg_near(randoms(s.y, -1, 1), s.y, 16, 0.0),
                               arg_exact(randoms(s.y, -1, 1), s.y, 4),
                               given(keeps_columns(o, &p.conv), arg_exact(randoms(cols, -1, 1), cols, 0))};
            parity_check(o, NN_KERNEL_CONV2D_POOL_FORWARD, a, 6, &p, CP_FMT " bias %d", CP_ARGS(&kConvPools[i]),
                         bias);
        }
}

static void conv_pool_weight_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_POOLS; i++)
        for (int variant = 0; variant < 3; variant++) /* 0: both gradients; 1: the weight's; 2: the bias's */
            for (int acc = 0; acc < 2; acc++) {
                nn_conv_pool_params p = conv_pool_params_of(&kConvPools[i], true);
                const conv_pool_sizes s = conv_pool_sizes_of(&p);
                const size_t f = (size_t)p.conv.filters, cols = conv_sizes_of(&p.conv).cols;
                const float *x = steps(s.x, 4);
                const int32_t *winners = winners_of(&p, x, steps(s.w, 8), steps(f, 16), NULL);
                p.conv.g.accumulate = acc;
                p.bias_accumulate = 1 - acc; /* the two flags apart */
                const bool columns = keeps_columns(o, &p.conv);
                /* each sum takes one term per pooled output of the batch */
                const double tol = sums_tol((double)p.conv.g.batch * p.pooled_h * p.pooled_w + 1.0);
                parity_arg a[6] = {arg_in(randoms(s.y, -1, 1), s.y, 4), arg_in(winners, s.y, 8), arg_in(x, s.x, 0),
                                   given(variant != 2, arg_near(randoms(s.w, -1, 1), s.w, 12, tol)),
                                   given(variant != 1, arg_near(randoms(f, -1, 1), f, 4, tol)),
                                   given(columns, arg_in(columns ? host_im2col(&p.conv.g, x) : NULL, cols, 8))};
                parity_check(o, NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, a, 6, &p, CP_FMT " variant %d accumulate %d",
                             CP_ARGS(&kConvPools[i]), variant, acc);
            }
}

static void conv_pool_data_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_POOLS; i++)
        for (int acc = 0; acc < 2; acc++) {
            nn_conv_pool_params p = conv_pool_params_of(&kConvPools[i], true);
            const conv_pool_sizes s = conv_pool_sizes_of(&p);
            const float *w = steps(s.w, 8);
            const int32_t *winners = winners_of(&p, steps(s.x, 4), w, steps((size_t)p.conv.filters, 16), NULL);
            p.conv.g.accumulate = acc;
            const double terms = (double)p.conv.filters * p.conv.g.kernel_h * p.conv.g.kernel_w + acc;
            parity_arg a[4] = {arg_in(randoms(s.y, -1, 1), s.y, 0), arg_in(winners, s.y, 4), arg_in(w, s.w, 8),
                               arg_near(randoms(s.x, -1, 1), s.x, 12, sums_tol(terms))};
            parity_check(o, NN_KERNEL_CONV2D_POOL_BACKWARD_DATA, a, 4, &p, CP_FMT " accumulate %d",
                         CP_ARGS(&kConvPools[i]), acc);
        }
}

/* Two such layers, the first's pooled output the second's input. */
typedef struct chain_case {
    conv_pool_case first;
    int filters, kernel, stride, pad, pool; /* the second layer */
} chain_case;

static const chain_case kChains[] = {
    {{3, 1, 27, 29, 6, 5, 5, 1, 0, 2}, 16, 5, 1, 0, 2}, /* LeNet-5's two layers on an odd image */
    {{1, 2, 13, 11, 5, 3, 3, 1, 1, 2}, 7, 3, 1, 1, 2},  /* one image, padding in both layers */
    {{67, 1, 27, 29, 6, 5, 5, 1, 0, 2}, 16, 5, 1, 0, 2}, /* final sums in two levels, the last block short */
};

static void conv_pool_chain_case(nn_backend *o) {
    for (size_t i = 0; i < sizeof kChains / sizeof kChains[0]; i++)
        for (int variant = 0; variant < 3; variant++) /* 0: both gradients; 1: the weight's; 2: the bias's */
            for (int acc = 0; acc < 2; acc++) {
                const chain_case *c = &kChains[i];
                nn_conv_pool_chain_params p = {.first = conv_pool_params_of(&c->first, true)};
                const conv_pool_case second = {c->first.batch, c->first.filters, p.first.pooled_h, p.first.pooled_w,
                                               c->filters, c->kernel, c->kernel, c->stride, c->pad, c->pool};
                p.second = conv_pool_params_of(&second, true);
                const conv_pool_sizes s1 = conv_pool_sizes_of(&p.first), s2 = conv_pool_sizes_of(&p.second);
                const size_t f1 = (size_t)c->first.filters;
                const float *x = steps(s1.x, 4), *w2 = steps(s2.w, 8);
                float *y1 = array(s1.y * 4);
                const int32_t *winners1 = winners_of(&p.first, x, steps(s1.w, 8), steps(f1, 16), y1);
                const int32_t *winners2 = winners_of(&p.second, y1, w2, steps((size_t)c->filters, 16), NULL);
                p.first.conv.g.accumulate = acc;
                p.first.bias_accumulate = 1 - acc;
                /* the gradient between the layers sums the second's filters' windows, the first's its pooled outputs */
                const double tol = sums_tol((double)c->filters * c->kernel * c->kernel +
                                            (double)c->first.batch * p.first.pooled_h * p.first.pooled_w + 1.0);
                parity_arg a[7] = {arg_in(randoms(s2.y, -1, 1), s2.y, 4), arg_in(winners2, s2.y, 12),
                                   arg_in(w2, s2.w, 8), arg_in(winners1, s1.y, 4), arg_in(x, s1.x, 12),
                                   given(variant != 2, arg_near(randoms(s1.w, -1, 1), s1.w, 8, tol)),
                                   given(variant != 1, arg_near(randoms(f1, -1, 1), f1, 4, tol))};
                parity_check(o, NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT, a, 7, &p,
                             CP_FMT " then f%d k%d s%d p%d pool %d; variant %d accumulate %d", CP_ARGS(&c->first),
                             c->filters, c->kernel, c->stride, c->pad, c->pool, variant, acc);
            }
}

/* ... and with a Linear on its flattened output. */
typedef struct linear_layer_case {
    conv_pool_case conv;
    int out_features;
} linear_layer_case;

static const linear_layer_case kConvPoolLinears[] = {
    {{5, 6, 13, 15, 16, 5, 5, 1, 0, 2}, 37}, /* LeNet-5's second layer on an odd image: several workgroups per image */
    {{2, 6, 11, 13, 16, 5, 5, 1, 0, 2}, 13}, /* 192 features */
    {{1, 1, 9, 11, 3, 3, 3, 2, 0, 2}, 1},    /* one image, 12 features, one output */
    {{63, 3, 8, 8, 40, 5, 5, 1, 2, 2}, 7},   /* two filters per invocation, several workgroups per image */
};

static void conv_pool_linear_case(nn_backend *o) {
    for (size_t i = 0; i < sizeof kConvPoolLinears / sizeof kConvPoolLinears[0]; i++)
        for (int variant = 0; variant < 3; variant++) { /* 0: biases and the ReLU; 1: neither bias; 2: no ReLU */
            const linear_layer_case *c = &kConvPoolLinears[i];
            const bool bias = variant != 1;
            const nn_conv_pool_linear_params p = {.conv_pool = conv_pool_params_of(&c->conv, bias),
                                                  .out_features = c->out_features,
                                                  .epilogue = (bias ? NN_EPI_BIAS_COLS : 0) |
                                                              (variant != 2 ? NN_EPI_RELU : 0)};
            const conv_pool_sizes s = conv_pool_sizes_of(&p.conv_pool);
            const size_t f = (size_t)c->conv.filters, outs = (size_t)c->out_features;
            const size_t in = f * (size_t)p.conv_pool.pooled_h * p.conv_pool.pooled_w, h = (size_t)c->conv.batch * outs;
            const float bound = 1.0f / sqrtf((float)in); /* as Linear initialises it */
            /* the Linear's weights on a 16-byte boundary in variant 0, off it in the others */
            parity_arg a[8] = {arg_in(steps(s.x, 4), s.x, 12), arg_in(steps(s.w, 8), s.w, 4),
                               given(bias, arg_in(steps(f, 16), f, 8)), arg_near(randoms(s.y, -1, 1), s.y, 16, 0.0),
                               arg_exact(randoms(s.y, -1, 1), s.y, 4),
                               arg_in(randoms(in * outs, -bound, bound), in * outs, variant == 0 ? 16 : 4),
                               given(bias, arg_in(randoms(outs, -bound, bound), outs, 12)),
                               arg_near(randoms(h, -1, 1), h, 8, sums_tol(in + 1.0))};
            parity_check(o, NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD, a, 8, &p, CP_FMT " out %d variant %d",
                         CP_ARGS(&c->conv), c->out_features, variant);
        }
}

/* ---- Linear -> ReLU -> Linear fused ---- */

typedef struct head_shape {
    int rows, in, hidden, out;
} head_shape;

static const head_shape kHeads[] = {
    {1, 1, 1, 1},      /* single features */
    {7, 13, 9, 5},     /* odd counts */
    {37, 120, 84, 10}, /* LeNet-5's last two layers at an odd batch */
};
#define HEADS (sizeof kHeads / sizeof kHeads[0])

static nn_linear_head_params head_params(const head_shape *c) {
    return (nn_linear_head_params){.rows = c->rows, .in = c->in, .hidden = c->hidden, .out = c->out};
}

static void linear_head_forward_case(nn_backend *o) {
    for (size_t i = 0; i < HEADS; i++)
        for (int variant = 0; variant < 3; variant++) { /* 0: both biases; 1: neither; 2: the first's only */
            const head_shape *c = &kHeads[i];
            const nn_linear_head_params p = head_params(c);
            const size_t nx = (size_t)c->rows * c->in, nh = (size_t)c->rows * c->hidden, ny = (size_t)c->rows * c->out;
            const size_t wa = (size_t)c->hidden * c->in, wb = (size_t)c->out * c->hidden;
            parity_arg a[7] = {arg_in(randoms(nx, -1, 1), nx, 12), arg_in(randoms(wa, -1, 1), wa, 4),
                               given(variant != 1, arg_in(randoms((size_t)c->hidden, -1, 1), (size_t)c->hidden, 8)),
                               arg_in(randoms(wb, -1, 1), wb, 16),
                               given(variant == 0, arg_in(randoms((size_t)c->out, -1, 1), (size_t)c->out, 4)),
                               arg_near(randoms(nh, -1, 1), nh, 8, sums_tol(c->in + 1.0)),
                               arg_near(randoms(ny, -1, 1), ny, 4, sums_tol((double)c->in + c->hidden + 1.0))};
            parity_check(o, NN_KERNEL_LINEAR_HEAD_FORWARD, a, 7, &p, "rows %d in %d hidden %d out %d variant %d",
                         c->rows, c->in, c->hidden, c->out, variant);
        }
}

static void linear_head_data_case(nn_backend *o) {
    static const struct {
        int mask_input, accumulate, x, dx;
    } variants[] = {
        {0, 0, 0, 1}, /* no x: dx unmasked */
        {1, 1, 1, 1}, /* dx masked by x > 0, added */
        {0, 1, 1, 1}, /* x given but not read */
        {0, 0, 0, 0}, /* no dx: dh only */
    };
    for (size_t i = 0; i < HEADS; i++)
        for (int v = 0; v < 4; v++) {
            const head_shape *c = &kHeads[i];
            nn_linear_head_params p = head_params(c);
            p.mask_input = variants[v].mask_input;
            p.accumulate = variants[v].accumulate;
            const size_t nx = (size_t)c->rows * c->in, nh = (size_t)c->rows * c->hidden, ny = (size_t)c->rows * c->out;
            const size_t wa = (size_t)c->hidden * c->in, wb = (size_t)c->out * c->hidden;
            float *h = randoms(nh, -1, 1), *x = randoms(nx, -1, 1);
            for (size_t j = 0; j < nh; j++) h[j] = relu_of(h[j]); /* a ReLU's output: zeros where it passes nothing */
            for (size_t j = 0; j < nx; j++) x[j] = relu_of(x[j]);
            parity_arg a[7] = {arg_in(randoms(ny, -1, 1), ny, 4), arg_in(randoms(wb, -1, 1), wb, 8), arg_in(h, nh, 0),
                               arg_in(randoms(wa, -1, 1), wa, 12), given(variants[v].x, arg_in(x, nx, 4)),
                               arg_near(randoms(nh, -1, 1), nh, 8, sums_tol(c->out + 1.0)),
                               given(variants[v].dx, arg_near(randoms(nx, -1, 1), nx, 16,
                                                              sums_tol((double)c->out + c->hidden + 1.0)))};
            parity_check(o, NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA, a, 7, &p,
                         "rows %d in %d hidden %d out %d mask_input %d accumulate %d x %s dx %s", c->rows, c->in,
                         c->hidden, c->out, p.mask_input, p.accumulate, variants[v].x ? "given" : "absent",
                         variants[v].dx ? "given" : "absent");
        }
}

static void linear_head_cross_entropy_case(nn_backend *o) {
    for (size_t i = 0; i < HEADS; i++)
        for (int variant = 0; variant < 4; variant++) { /* 1: no biases, x masked; 2: no dx; 3: neither dh nor dx */
            const head_shape *c = &kHeads[i];
            nn_linear_head_params p = head_params(c);
            p.mask_input = variant == 1;
            const size_t nx = (size_t)c->rows * c->in, nh = (size_t)c->rows * c->hidden, ny = (size_t)c->rows * c->out;
            const size_t wa = (size_t)c->hidden * c->in, wb = (size_t)c->out * c->hidden, rows = (size_t)c->rows;
            const double forward = sums_tol((double)c->in + c->hidden + 1.0);
            const double backward = sums_tol((double)c->in + 2.0 * c->hidden + c->out + 1.0);
            parity_arg a[12] = {
                arg_in(randoms(nx, -1, 1), nx, 12),
                arg_in(randoms(wa, -1, 1), wa, 4),
                given(variant != 1, arg_in(randoms((size_t)c->hidden, -1, 1), (size_t)c->hidden, 8)),
                arg_in(randoms(wb, -1, 1), wb, 16),
                given(variant != 1, arg_in(randoms((size_t)c->out, -1, 1), (size_t)c->out, 4)),
                arg_in(labels_of(rows, c->out), rows, 8),
                arg_near(randoms(nh, -1, 1), nh, 8, sums_tol(c->in + 1.0)), /* h */
                arg_near(randoms(ny, -1, 1), ny, 4, forward),               /* logits */
                arg_near(randoms(rows, -1, 1), rows, 12, forward),          /* row loss */
                arg_near(randoms(ny, -1, 1), ny, 0, forward),               /* dlogits */
                given(variant < 3, arg_near(randoms(nh, -1, 1), nh, 4, backward)),
                given(variant < 2, arg_near(randoms(nx, -1, 1), nx, 8, backward))};
            parity_check(o, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, a, 12, &p, "rows %d in %d hidden %d out %d variant %d",
                         c->rows, c->in, c->hidden, c->out, variant);
        }
}

/* ---- the registry's cases, and the tests ---- */

/* A case runs its kernel on the CPU and on `other` (parity_check). */
typedef struct parity_case {
    void (*run)(nn_backend *other);
} parity_case;

static const parity_case kCases[NN_KERNEL_COUNT] = {
    [NN_KERNEL_GEMM] = {gemm_case},
    [NN_KERNEL_IM2COL] = {im2col_case},
    [NN_KERNEL_COL2IM] = {col2im_case},
    [NN_KERNEL_MAXPOOL_FORWARD] = {maxpool_forward_case},
    [NN_KERNEL_MAXPOOL_BACKWARD] = {maxpool_backward_case},
    [NN_KERNEL_BIAS_ADD] = {bias_add_case},
    [NN_KERNEL_BIAS_GRAD] = {bias_grad_case},
    [NN_KERNEL_RELU_FORWARD] = {relu_forward_case},
    [NN_KERNEL_RELU_BACKWARD] = {relu_backward_case},
    [NN_KERNEL_ELEMENTWISE] = {elementwise_case},
    [NN_KERNEL_SOFTMAX_FORWARD] = {softmax_forward_case},
    [NN_KERNEL_SOFTMAX_BACKWARD] = {softmax_backward_case},
    [NN_KERNEL_SOFTMAX_CE_FORWARD] = {softmax_ce_forward_case},
    [NN_KERNEL_SOFTMAX_CE_BACKWARD] = {softmax_ce_backward_case},
    [NN_KERNEL_REDUCE_SUM] = {reduce_sum_case},
    [NN_KERNEL_BROADCAST_SCALAR] = {broadcast_scalar_case},
    [NN_KERNEL_SUM_SQUARES] = {sum_squares_case},
    [NN_KERNEL_SGD_UPDATE] = {sgd_update_case},
    [NN_KERNEL_GATHER_SAMPLES] = {gather_samples_case},
    [NN_KERNEL_GATHER_ROWS] = {gather_rows_case},
    [NN_KERNEL_COUNTER_ADD] = {counter_add_case},
    [NN_KERNEL_FILL] = {fill_case},
    [NN_KERNEL_METRICS_ACCUMULATE] = {metrics_accumulate_case},
    [NN_KERNEL_GEMM_EPILOGUE] = {gemm_epilogue_case},
    [NN_KERNEL_MAXPOOL_BACKWARD_MASKED] = {maxpool_backward_masked_case},
    [NN_KERNEL_SOFTMAX_CE_FUSED] = {softmax_ce_fused_case},
    [NN_KERNEL_SGD_UPDATE_DEVICE_LR] = {sgd_update_device_lr_case},
    [NN_KERNEL_DROPOUT_FORWARD] = {dropout_forward_case},
    [NN_KERNEL_CONV2D_FORWARD] = {conv_forward_case},
    [NN_KERNEL_CONV2D_BACKWARD_DATA] = {conv_data_case},
    [NN_KERNEL_CONV2D_BACKWARD_WEIGHT] = {conv_weight_case},
    [NN_KERNEL_CONV2D_POOL_FORWARD] = {conv_pool_forward_case},
    [NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT] = {conv_pool_weight_case},
    [NN_KERNEL_CONV2D_POOL_BACKWARD_DATA] = {conv_pool_data_case},
    [NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT] = {conv_pool_chain_case},
    [NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD] = {conv_pool_linear_case},
    [NN_KERNEL_LINEAR_HEAD_FORWARD] = {linear_head_forward_case},
    [NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA] = {linear_head_data_case},
    [NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY] = {linear_head_cross_entropy_case},
};

/* A kernel added to nn_kernel needs a case here before the suite passes;
 * this runs with or without another backend. */
TEST(kernel_parity_every_kernel_has_a_case) {
    for (int k = 0; k < NN_KERNEL_COUNT; k++)
        CHECK_MSG(kCases[k].run != NULL, "kernel %s (id %d) has no parity case: add one to kCases in %s",
                  nn_kernel_name((nn_kernel)k), k, __FILE__);
}

TEST(kernel_parity_every_kernel_on_every_backend) {
    nn_backend *others[MAX_BACKENDS];
    const int count = other_backends(others);
    for (int b = 0; b < count; b++) {
        g_runs = 0;
        int kernels = 0, failed = 0;
        for (int k = 0; k < NN_KERNEL_COUNT; k++) {
            if (!kCases[k].run) continue; /* kernel_parity_every_kernel_has_a_case names it */
            kernels++;
            const int before = nn_test_failures();
            kCases[k].run(others[b]);
            arrays_free();
            /* every kernel that failed, past the runner's first few messages */
            if (nn_test_failures() > before) {
                printf("    %s on %s: %d failed checks\n", nn_kernel_name((nn_kernel)k), others[b]->name,
                       nn_test_failures() - before);
                failed++;
            }
        }
        printf("    %s: %d runs of %d kernels against the cpu, %d kernels differ\n", others[b]->name, g_runs,
               kernels, failed);
    }
}
