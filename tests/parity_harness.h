/* The harness of the kernel parity test (test_kernel_parity.c): which
 * backends are compared with the CPU, the host arrays a case allocates
 * (freed after each case), the tolerances, the arguments of a run
 * (parity_arg: read, written exactly or written within a tolerance, each a
 * view at a byte offset between guard words) and parity_check, which runs a
 * kernel on the CPU and on another backend and compares every argument. Also
 * the convolution helpers both case files use (parity_cases_dense.c,
 * parity_cases_fused.c). Implemented in parity_harness.c. */
#ifndef NN_TESTS_PARITY_HARNESS_H
#define NN_TESTS_PARITY_HARNESS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "base/error.h"

/* ---- the backends compared with the CPU ---- */

#define PARITY_MAX_BACKENDS 4

/* The backends besides the CPU that every case runs on: every one the
 * registry has (backends/registry.h). Vulkan is left out when
 * NN_ENGINE_TEST_VULKAN=0 says to skip it; a backend that does not open is
 * a failure naming it. */
int parity_other_backends(nn_backend *out[PARITY_MAX_BACKENDS]);

/* ---- host arrays: a case allocates freely, all are freed after it ---- */

/* Zeroed bytes, freed after the case. */
void *parity_array(size_t bytes);
/* Uniform floats in [lo, hi), each array of them its own seed. */
float *parity_randoms(size_t n, float lo, float hi);
/* Whole numbers in [-3, 3] over `denominator`: convolutions of them are
 * exact in float, whatever the order of the sums (conv_pool_reference.h). */
float *parity_steps(size_t n, float denominator);
/* Whole numbers uniform in [lo, hi], with INT32_MIN and INT32_MAX among them. */
int32_t *parity_ints(size_t n, int32_t lo, int32_t hi);
/* Valid labels in [0, classes). */
int32_t *parity_labels_of(size_t rows, int classes);
/* Frees every array allocated since the last call (after each case). */
void parity_arrays_free(void);

static inline float relu_of(float v) { return v > 0.0f ? v : 0.0f; }

/* ---- tolerances ---- */

/* Float sums of `terms` terms, added in whatever order each backend takes. */
static inline double sums_tol(double terms) { return 1e-5 * sqrt(terms > 1.0 ? terms : 1.0); }
#define ROUNDING 1e-6 /* one or two roundings per element */

/* ---- one run of a kernel on the CPU and on another backend ----
 * (not vulkan_harness.h's pairs, which hold a CPU and a Vulkan buffer:
 * these runs take whichever backend parity_other_backends() lists) */

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

static inline parity_arg arg_in(const void *data, size_t count, size_t offset) {
    return (parity_arg){.data = data, .count = count, .offset = offset, .kind = ARG_READ};
}
static inline parity_arg arg_near(const void *data, size_t count, size_t offset, double tol) {
    return (parity_arg){.data = data, .count = count, .offset = offset, .kind = ARG_NEAR, .tol = tol};
}
static inline parity_arg arg_exact(const void *data, size_t count, size_t offset) {
    return (parity_arg){.data = data, .count = count, .offset = offset, .kind = ARG_EXACT};
}
static inline parity_arg arg_none(void) { return (parity_arg){.data = NULL}; }
static inline parity_arg given(bool present, parity_arg a) { return present ? a : arg_none(); }
static inline parity_arg with_cpu_after(parity_arg a, void *cpu_after) {
    a.cpu_after = cpu_after;
    return a;
}

/* Runs compared by parity_check, for the summary. */
extern int parity_runs;

/* Runs the kernel with these arguments on the CPU and on `other` and
 * compares them: on both, the words around every view and the arguments
 * only read must come back unchanged; the other's written arguments must
 * match the CPU's, bit for bit (ARG_EXACT) or within their tol (ARG_NEAR).
 * `what` (printf-style) names the run in failures. The arguments the case
 * declares written must be the ones nn_kernel_written_args lists (among
 * those given), so every written argument is compared. */
NN_PRINTF_FORMAT(6, 7) void parity_check(nn_backend *other, nn_kernel kernel, parity_arg *args,
                                                         int nargs, const void *params, const char *fmt, ...);

/* A kernel with the optional skip argument last (kernels.h: skipped
 * updates; whatever args[nargs - 1] holds is not used) compared three
 * ways: skip absent, given and clear, given and set. Set, every written
 * argument must come back as it was, bit for bit, on both backends. */
NN_PRINTF_FORMAT(6, 7) void parity_check_skips(nn_backend *other, nn_kernel kernel, parity_arg *args, int nargs,
                                               const void *params, const char *fmt, ...);

/* NN_TESTS_PARITY_SAMPLE's N (1 when unset): parity_check runs each
 * kernel's first variant and every Nth after it. */
int parity_sample_every(void);

/* The kernel on the CPU alone, for a later case's inputs (cpu_after). */
void parity_cpu_outputs(nn_kernel kernel, parity_arg *args, int nargs, const void *params, const char *what);

/* ---- convolution helpers the dense and fused cases share ---- */

/* A convolution layer's shape, as the grouped, depthwise and route cases
 * list them, and its kernels' parameters (output size from the rest). */
typedef struct parity_conv_shape {
    int batch, channels, height, width, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h,
        dilation_w, filters, groups;
} parity_conv_shape;
nn_conv_params parity_conv_params_of(const parity_conv_shape *c);
#define PARITY_CONV_FMT "%dx%dx%dx%d f%d k%dx%d s%d,%d p%d,%d d%d,%d groups %d"
#define PARITY_CONV_ARGS(c)                                                                                       \
    (c)->batch, (c)->channels, (c)->height, (c)->width, (c)->filters, (c)->kernel_h, (c)->kernel_w, (c)->stride_h, \
        (c)->stride_w, (c)->pad_h, (c)->pad_w, (c)->dilation_h, (c)->dilation_w, (c)->groups

/* Element counts of x, the weight, y and the columns. */
typedef struct parity_conv_sizes {
    size_t x, w, y, cols, k, positions;
} parity_conv_sizes;

parity_conv_sizes parity_conv_sizes_of(const nn_conv_params *p);

/* Whether both the CPU and `other` keep the column matrix for this layer:
 * the only layers the op passes one to. */
bool parity_keeps_columns(nn_backend *other, const nn_conv_params *p);

/* im2col on the host (kernels.h's layout): the kept columns a weight
 * gradient reads. */
float *parity_host_im2col(const nn_conv_geometry *g, const float *x);

#endif
