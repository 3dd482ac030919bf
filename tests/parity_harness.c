/* The kernel parity test's harness (parity_harness.h): the backends every
 * case runs on besides the CPU, the host arrays the cases allocate, and
 * parity_check, which runs one kernel on the CPU and on another backend over
 * guarded views and compares every argument; also the convolution helpers
 * the dense and fused cases share. The test and its kCases table are in
 * test_kernel_parity.c, the cases in parity_cases_dense.c and
 * parity_cases_fused.c.
 *
 * Tests may use src/ internals; the backends are driven through
 * nn_backend's functions only. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry.h"
#include "conv_pool_reference.h"
#include "parity_harness.h"
#include "test.h"
#include "vulkan_harness.h"

/* ---- the backends compared with the CPU ---- */

int parity_other_backends(nn_backend *out[PARITY_MAX_BACKENDS]) {
    int count, n = 0;
    const nn_backend_provider *const *providers = nn_backend_providers(&count);
    for (int i = 1; i < count && n < PARITY_MAX_BACKENDS; i++) { /* providers[0] is the CPU, the reference */
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

void parity_arrays_free(void) {
    for (int i = 0; i < g_arrays.count; i++) free(g_arrays.at[i]);
    free(g_arrays.at);
    g_arrays.at = NULL;
    g_arrays.count = g_arrays.capacity = 0;
}

void *parity_array(size_t bytes) { return own(calloc(bytes ? bytes : 1, 1)); }

float *parity_randoms(size_t n, float lo, float hi) {
    float *x = parity_array(n * sizeof *x);
    vkt_fill(x, n, lo, hi, g_seed++);
    return x;
}

float *parity_steps(size_t n, float denominator) { return own(conv_pool_steps(n, denominator, g_seed++)); }

int32_t *parity_ints(size_t n, int32_t lo, int32_t hi) {
    int32_t *x = parity_array(n * sizeof *x);
    uint64_t s = 0x9E3779B97F4A7C15ULL * g_seed++;
    const uint64_t span = (uint64_t)((int64_t)hi - lo) + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = (int32_t)((int64_t)lo + (int64_t)((s >> 11) % span));
        if (i % 17 == 5) x[i] = INT32_MIN; /* the extremes among them */
        if (i % 17 == 11) x[i] = INT32_MAX;
    }
    return x;
}

int32_t *parity_labels_of(size_t rows, int classes) {
    const float *u = parity_randoms(rows, 0.0f, 1.0f);
    int32_t *labels = parity_array(rows * sizeof *labels);
    for (size_t r = 0; r < rows; r++) {
        int32_t l = (int32_t)(u[r] * (float)classes);
        labels[r] = l < classes ? l : classes - 1;
    }
    return labels;
}

/* ---- one run of a kernel on the CPU and on another backend ----
 * (not vulkan_harness.h's pairs, which hold a CPU and a Vulkan buffer:
 * these runs take whichever backend parity_other_backends() lists) */

#define GUARD_WORDS 3
static const uint32_t kGuard = 0x7fa11a5eu; /* a NaN no kernel computes */

static size_t words_of(const parity_arg *a) { return a->offset / 4 + a->count + GUARD_WORDS; }

/* The argument's whole buffer before the run: its data between guards. */
static uint32_t *image_of(const parity_arg *a) {
    uint32_t *image = parity_array(words_of(a) * 4);
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
        s->after[i] = parity_array(bytes);
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

int parity_runs;

/* NN_TESTS_PARITY_SAMPLE=N runs each kernel's first variant and every Nth
 * after it (the sanitizer build: the full set runs in the others, and the
 * devices compute the same there; the host code is what it checks). A run
 * whose CPU results feed a later one always runs. */
int parity_sample_every(void) {
    const char *env = getenv("NN_TESTS_PARITY_SAMPLE");
    return env && atoi(env) > 1 ? atoi(env) : 1;
}

static bool sampled_out(nn_kernel kernel, const parity_arg *args, int nargs) {
    static int every = -1;
    static int last_kernel = -1;
    static unsigned calls;
    if (every < 0) every = parity_sample_every();
    if ((int)kernel != last_kernel) last_kernel = (int)kernel, calls = 0;
    for (int i = 0; i < nargs; i++)
        if (args[i].data && args[i].cpu_after) return false;
    return calls++ % (unsigned)every != 0;
}

/* Runs the kernel with these arguments on the CPU and on `other` and
 * compares them (compare_arg); `what` (printf-style) names the run in
 * failures. The arguments the case declares written must be the ones
 * nn_kernel_written_args lists (among those given), so every written
 * argument is compared. */
void parity_check(nn_backend *other, nn_kernel kernel, parity_arg *args, int nargs, const void *params,
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
    const unsigned written = nn_kernel_launch_written_args(kernel, params);
    for (int i = 0; i < nargs; i++) {
        if (!args[i].data) continue;
        const bool declared = args[i].kind != ARG_READ, listed = (written >> i) & 1u;
        if (declared != listed) {
            CHECK_MSG(0, "%s (%s): the case %s argument %d, nn_kernel_written_args %s", name, what,
                      declared ? "compares" : "only gives", i, listed ? "lists it as written" : "does not list it");
            return;
        }
    }
    if (sampled_out(kernel, args, nargs)) return;
    nn_backend *cpu_backend = vkt_cpu();
    run_side cpu = {{NULL}, {NULL}}, oth = {{NULL}, {NULL}};
    const bool ran = run_on(cpu_backend, kernel, args, nargs, params, what, &cpu) &&
                     run_on(other, kernel, args, nargs, params, what, &oth);
    if (ran) {
        parity_runs++;
        for (int i = 0; i < nargs; i++) {
            if (!args[i].data) continue;
            compare_arg(other, kernel, i, &args[i], &cpu, &oth, what);
            if (args[i].cpu_after) memcpy(args[i].cpu_after, cpu.after[i] + args[i].offset / 4, args[i].count * 4);
        }
    }
    side_free(cpu_backend, &cpu);
    side_free(other, &oth);
}

void parity_check_skips(nn_backend *other, nn_kernel kernel, parity_arg *args, int nargs, const void *params,
                        const char *fmt, ...) {
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    static const float flags[2] = {0.0f, 1.0f};
    static const char *const names[3] = {"absent", "clear", "set"};
    parity_arg given_args[NN_COMMAND_MAX_ARGS];
    if (nargs < 1 || nargs > NN_COMMAND_MAX_ARGS) {
        CHECK_MSG(0, "%s (%s): %d arguments", nn_kernel_name(kernel), what, nargs);
        return;
    }
    for (int variant = 0; variant < 3; variant++) {
        memcpy(given_args, args, sizeof(parity_arg) * (size_t)nargs);
        given_args[nargs - 1] = variant ? arg_in(&flags[variant - 1], 1, 4) : arg_none();
        if (variant == 2) /* skipped: every written argument exactly as it came, on the CPU too */
            for (int i = 0; i < nargs - 1; i++)
                if (given_args[i].data && given_args[i].kind != ARG_READ) {
                    given_args[i].kind = ARG_EXACT;
                    given_args[i].cpu_after = parity_array(given_args[i].count * 4);
                }
        parity_check(other, kernel, given_args, nargs, params, "%s, skip %s", what, names[variant]);
        for (int i = 0; variant == 2 && i < nargs - 1; i++)
            if (given_args[i].cpu_after)
                CHECK_MSG(memcmp(given_args[i].cpu_after, given_args[i].data, given_args[i].count * 4) == 0,
                          "%s (%s): skipped, the CPU still wrote argument %d", nn_kernel_name(kernel), what, i);
    }
}

/* The kernel on the CPU alone, for a later case's inputs (cpu_after). */
void parity_cpu_outputs(nn_kernel kernel, parity_arg *args, int nargs, const void *params, const char *what) {
    run_side cpu = {{NULL}, {NULL}};
    if (run_on(vkt_cpu(), kernel, args, nargs, params, what, &cpu))
        for (int i = 0; i < nargs; i++)
            if (args[i].data && args[i].cpu_after)
                memcpy(args[i].cpu_after, cpu.after[i] + args[i].offset / 4, args[i].count * 4);
    side_free(vkt_cpu(), &cpu);
}

/* ---- convolution helpers the dense and fused cases share ---- */

nn_conv_params parity_conv_params_of(const parity_conv_shape *c) {
    nn_conv_geometry g = {.batch = c->batch, .channels = c->channels, .height = c->height, .width = c->width,
                          .kernel_h = c->kernel_h, .kernel_w = c->kernel_w, .stride_h = c->stride_h,
                          .stride_w = c->stride_w, .pad_h = c->pad_h, .pad_w = c->pad_w,
                          .dilation_h = c->dilation_h, .dilation_w = c->dilation_w};
    g.out_h = (g.height + 2 * g.pad_h - c->dilation_h * (g.kernel_h - 1) - 1) / g.stride_h + 1;
    g.out_w = (g.width + 2 * g.pad_w - c->dilation_w * (g.kernel_w - 1) - 1) / g.stride_w + 1;
    return (nn_conv_params){.g = g, .filters = c->filters, .groups = c->groups};
}

parity_conv_sizes parity_conv_sizes_of(const nn_conv_params *p) {
    const nn_conv_geometry *g = &p->g;
    parity_conv_sizes s;
    s.k = (size_t)g->channels * g->kernel_h * g->kernel_w;
    s.positions = (size_t)g->out_h * g->out_w;
    s.x = (size_t)g->batch * g->channels * g->height * g->width;
    s.w = (size_t)p->filters * (s.k / (size_t)nn_conv_groups(p)); /* [filters, channels / groups, kh, kw] */
    s.y = (size_t)g->batch * p->filters * s.positions;
    s.cols = (size_t)g->batch * s.k * s.positions;
    return s;
}

bool parity_keeps_columns(nn_backend *other, const nn_conv_params *p) {
    nn_backend *cpu = vkt_cpu();
    return cpu->conv_keeps_columns && cpu->conv_keeps_columns(cpu, p) && other->conv_keeps_columns &&
           other->conv_keeps_columns(other, p);
}

float *parity_host_im2col(const nn_conv_geometry *g, const float *x) {
    const int64_t k = (int64_t)g->channels * g->kernel_h * g->kernel_w, positions = (int64_t)g->out_h * g->out_w;
    float *cols = parity_array((size_t)(g->batch * k * positions) * sizeof *cols);
    vkt_host_im2col(g, x, cols);
    return cols;
}
