/* The Vulkan test harness (vulkan_harness.h). */
#include "vulkan_harness.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry.h"
#include "test.h"

static nn_backend *g_cpu;

bool vkt_skipped(void) {
    const char *v = getenv("NN_ENGINE_TEST_VULKAN");
    static bool said;
    bool skip = v && strcmp(v, "0") == 0;
    if (skip && !said) {
        printf("    NN_ENGINE_TEST_VULKAN=0: Vulkan tests skipped on purpose\n");
        said = true;
    }
    return skip;
}

nn_backend *vkt_cpu(void) {
    if (!g_cpu) g_cpu = nn_cpu_backend_new(2);
    return g_cpu;
}

/* Each backend opened once by name through the registry, or why not. */
#define MAX_OPENED 8
static struct {
    char name[16];
    nn_backend *backend;
    char why[512];
} g_opened[MAX_OPENED];
static int g_opened_count;

nn_backend *vkt_backend(const char *name, const char **why) {
    int i = 0;
    while (i < g_opened_count && strcmp(g_opened[i].name, name) != 0) i++;
    if (i == g_opened_count && i < MAX_OPENED) {
        snprintf(g_opened[i].name, sizeof g_opened[i].name, "%s", name);
        g_opened[i].backend = nn_backend_open("tests", name, 2);
        if (!g_opened[i].backend) snprintf(g_opened[i].why, sizeof g_opened[i].why, "%s", nn_last_error());
        g_opened_count++;
    }
    if (i == MAX_OPENED) {
        if (why) *why = "more backends than the harness keeps";
        return NULL;
    }
    if (why) *why = g_opened[i].why;
    return g_opened[i].backend;
}

nn_backend *vkt_vulkan(void) {
    const char *why;
    nn_backend *gpu = vkt_backend("vulkan", &why);
    if (!gpu)
        CHECK_MSG(0, "NO VULKAN DEVICE: %s. Install mesa-vulkan-drivers (lavapipe) or a GPU driver; "
                     "to skip the Vulkan tests on purpose, set NN_ENGINE_TEST_VULKAN=0", why);
    return gpu;
}

vkt_pair vkt_pair_new(const void *data, size_t count, size_t offset) {
    vkt_pair p = {NULL, NULL, offset, count};
    size_t bytes = offset + count * 4;
    p.cpu = vkt_cpu()->alloc(vkt_cpu(), bytes);
    p.gpu = vkt_vulkan()->alloc(vkt_vulkan(), bytes);
    if (!p.cpu || !p.gpu) {
        CHECK_MSG(0, "allocating %zu bytes failed: %s", bytes, nn_last_error());
        return p;
    }
    /* The bytes before the view hold garbage that must not leak in. */
    float junk[64];
    for (int i = 0; i < 64; i++) junk[i] = NAN;
    if (offset) {
        vkt_cpu()->write(vkt_cpu(), (nn_buffer_ref){p.cpu, 0, 0}, junk, offset);
        vkt_vulkan()->write(vkt_vulkan(), (nn_buffer_ref){p.gpu, 0, 0}, junk, offset);
    }
    if (data && count) {
        CHECK(vkt_cpu()->write(vkt_cpu(), (nn_buffer_ref){p.cpu, offset, 0}, data, count * 4) == NN_OK);
        CHECK(vkt_vulkan()->write(vkt_vulkan(), (nn_buffer_ref){p.gpu, offset, 0}, data, count * 4) == NN_OK);
    }
    return p;
}

vkt_pair vkt_pair_none(void) { return (vkt_pair){NULL, NULL, 0, 0}; }

void vkt_pair_free(vkt_pair *p) {
    if (p->cpu) vkt_cpu()->free(vkt_cpu(), p->cpu);
    if (p->gpu) vkt_vulkan()->free(vkt_vulkan(), p->gpu);
    p->cpu = p->gpu = NULL;
}

bool vkt_run(nn_kernel kernel, vkt_pair *args, int nargs, const void *params) {
    nn_buffer_ref cpu[NN_COMMAND_MAX_ARGS], gpu[NN_COMMAND_MAX_ARGS];
    CHECK_MSG(nargs <= NN_COMMAND_MAX_ARGS, "%s: %d arguments", nn_kernel_name(kernel), nargs);
    if (nargs > NN_COMMAND_MAX_ARGS) return false;
    for (int i = 0; i < nargs; i++) {
        cpu[i] = (nn_buffer_ref){args[i].cpu, args[i].offset, 0};
        gpu[i] = (nn_buffer_ref){args[i].gpu, args[i].offset, 0};
    }
    nn_status a = vkt_cpu()->run(vkt_cpu(), kernel, cpu, nargs, params);
    CHECK_MSG(a == NN_OK, "cpu %s: %s", nn_kernel_name(kernel), nn_last_error());
    nn_status b = vkt_vulkan()->run(vkt_vulkan(), kernel, gpu, nargs, params);
    CHECK_MSG(b == NN_OK, "vulkan %s: %s", nn_kernel_name(kernel), nn_last_error());
    return a == NN_OK && b == NN_OK;
}

static bool read_both(const vkt_pair *p, void *cpu, void *gpu) {
    nn_status a = vkt_cpu()->read(vkt_cpu(), (nn_buffer_ref){p->cpu, p->offset, 0}, cpu, p->count * 4);
    nn_status b = vkt_vulkan()->read(vkt_vulkan(), (nn_buffer_ref){p->gpu, p->offset, 0}, gpu, p->count * 4);
    CHECK_MSG(a == NN_OK && b == NN_OK, "read failed: %s", nn_last_error());
    return a == NN_OK && b == NN_OK;
}

void vkt_compare_f32(const vkt_pair *p, double tol, const char *what) {
    float *want = malloc(p->count * 4 + 4), *got = malloc(p->count * 4 + 4);
    if (want && got && read_both(p, want, got)) {
        size_t bad = 0, first = 0;
        double worst = 0.0;
        for (size_t i = 0; i < p->count; i++) {
            double w = want[i], g = got[i];
            bool ok = (isnan(w) && isnan(g)) || (isinf(w) && w == g) ||
                      fabs(g - w) <= tol * (fabs(w) > 1.0 ? fabs(w) : 1.0);
            if (!ok) {
                if (!bad) first = i;
                bad++;
            }
            double scale = fabs(w) > 1.0 ? fabs(w) : 1.0;
            if (!isnan(w) && !isnan(g) && fabs(g - w) / scale > worst) worst = fabs(g - w) / scale;
        }
        CHECK_MSG(bad == 0, "%s: %zu of %zu differ (first [%zu]: vulkan %.9g, cpu %.9g; worst %.3g, tol %g)", what,
                  bad, p->count, first, got[first], want[first], worst, tol);
    }
    free(want);
    free(got);
}

void vkt_compare_i32(const vkt_pair *p, const char *what) {
    int32_t *want = malloc(p->count * 4 + 4), *got = malloc(p->count * 4 + 4);
    if (want && got && read_both(p, want, got)) {
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < p->count; i++)
            if (want[i] != got[i] && !bad++) first = i;
        CHECK_MSG(bad == 0, "%s: %zu of %zu differ (first [%zu]: vulkan %d, cpu %d)", what, bad, p->count, first,
                  got[first], want[first]);
    }
    free(want);
    free(got);
}

nn_ctx *vkt_open_device(const char *device) {
    if (strcmp(device, "vulkan") == 0 && (vkt_skipped() || !vkt_vulkan())) return NULL;
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 7});
    CHECK_MSG(ctx, "%s: %s", device, nn_last_error());
    return ctx;
}

double vkt_uniform(unsigned *state, double lo, double hi) {
    *state = *state * 1103515245u + 12345u;
    return lo + (hi - lo) * ((*state >> 8) & 0xffffff) / 16777216.0;
}

void vkt_fill(float *x, size_t n, float lo, float hi, unsigned seed) {
    uint64_t s = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)seed * 0xBF58476D1CE4E5B9ULL);
    for (size_t i = 0; i < n; i++) {
        s += 0x9E3779B97F4A7C15ULL;
        uint64_t z = s;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        x[i] = lo + (hi - lo) * (float)((z >> 40) / 16777216.0);
    }
}

float *vkt_randoms(size_t n, float lo, float hi, unsigned seed) {
    float *x = malloc((n ? n : 1) * sizeof *x);
    vkt_fill(x, n, lo, hi, seed);
    return x;
}

nn_buffer_ref vkt_cpu_buffer(const void *data, size_t count) {
    nn_backend *cpu = vkt_cpu();
    nn_buffer *b = cpu->alloc(cpu, count * 4 + 8);
    nn_buffer_ref ref = {b, 8, 0};
    if (data && count) cpu->write(cpu, ref, data, count * 4);
    return ref;
}

void vkt_cpu_read(nn_buffer_ref ref, void *out, size_t count) { vkt_cpu()->read(vkt_cpu(), ref, out, count * 4); }

/* The first i where got[i] is not within tol of want_at(i), or n. */
static size_t first_far(const float *got, const float *want_f, const double *want_d, size_t n, double tol) {
    for (size_t i = 0; i < n; i++) {
        double want = want_d ? want_d[i] : want_f[i];
        if (!(fabs(got[i] - want) <= tol * fmax(1.0, fabs(want)))) return i;
    }
    return n;
}

static void report_far(const float *got, const float *want_f, const double *want_d, size_t n, double tol,
                       const char *what, va_list ap) {
    size_t i = first_far(got, want_f, want_d, n, tol);
    if (i == n) return;
    char name[256];
    vsnprintf(name, sizeof name, what, ap);
    CHECK_MSG(0, "%s[%zu] = %.9g, want %.9g (tol %g)", name, i, got[i], want_d ? want_d[i] : want_f[i], tol);
}

void vkt_check_near(const float *got, const double *want, size_t n, double tol, const char *what, ...) {
    va_list ap;
    va_start(ap, what);
    report_far(got, NULL, want, n, tol, what, ap);
    va_end(ap);
}

void vkt_check_near_f32(const float *got, const float *want, size_t n, double tol, const char *what, ...) {
    va_list ap;
    va_start(ap, what);
    report_far(got, want, NULL, n, tol, what, ap);
    va_end(ap);
}

void vkt_check_cpu_near(nn_buffer_ref got_ref, const double *want, size_t n, double tol, const char *what, ...) {
    float *got = malloc(n * 4 + 4);
    vkt_cpu()->read(vkt_cpu(), got_ref, got, n * 4);
    va_list ap;
    va_start(ap, what);
    report_far(got, NULL, want, n, tol, what, ap);
    va_end(ap);
    free(got);
}

/* rows x cols logits whose labels are good but at `bad` (label cols) and
 * bad + 2 (label -1): the first is reported. Narrow rows in one workgroup,
 * or wide ones a workgroup each (softmax_ce_rows.glsl). */
static void check_bad_label(nn_kernel kernel, int rows, int cols, int bad) {
    nn_softmax_params p = {.rows = rows, .cols = cols};
    const size_t n = (size_t)rows * cols;
    float *x = malloc(n * sizeof *x);
    int32_t *labels = malloc((size_t)rows * sizeof *labels);
    vkt_fill(x, n, -1, 1, 3);
    for (int r = 0; r < rows; r++) labels[r] = (r * 7) % cols;
    labels[bad] = cols, labels[bad + 2] = -1;
    vkt_pair a[4] = {vkt_pair_new(x, n, 0), vkt_pair_new(labels, (size_t)rows, 0), vkt_pair_new(NULL, n, 0),
                     vkt_pair_new(NULL, 1, 0)};
    nn_backend *gpu = vkt_vulkan();
    nn_buffer_ref g[4] = {{a[0].gpu, 0, 0}, {a[1].gpu, 0, 0}, {a[2].gpu, 0, 0}, {a[3].gpu, 0, 0}};
    CHECK(gpu->run(gpu, kernel, g, 4, &p) == NN_OK);
    float loss = 0.0f;
    CHECK(gpu->read(gpu, g[3], &loss, 4) == NN_ERR_ARGUMENT);
    char expected[96];
    snprintf(expected, sizeof expected, "label %d at row %d is outside [0, %d)", cols, bad, cols);
    CHECK_MSG(strstr(nn_last_error(), expected), "%dx%d: message: %s", rows, cols, nn_last_error());
    CHECK(isnan(loss)); /* as the CPU's loss */
    CHECK(gpu->sync(gpu) == NN_OK); /* reported once */
    for (int j = 0; j < 4; j++) vkt_pair_free(&a[j]);
    free(x), free(labels);
}

void vkt_check_bad_label_reported(nn_kernel kernel) {
    check_bad_label(kernel, 5, 10, 2);
    check_bad_label(kernel, 300, 100, 211); /* 300 workgroups: the last to arrive reports the first bad row */
}

void vkt_host_im2col(const nn_conv_geometry *g, const float *x, float *cols) {
    const int64_t k = (int64_t)g->channels * g->kernel_h * g->kernel_w, positions = (int64_t)g->out_h * g->out_w;
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
}
