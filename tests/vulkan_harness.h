/* Shared by the Vulkan tests: opening the device once, and running one
 * kernel on the CPU backend (the reference) and on Vulkan with the same
 * inputs. The tests need a Vulkan device: without one they fail loudly,
 * unless NN_ENGINE_TEST_VULKAN=0 says to skip them (machines without
 * Vulkan; CI has lavapipe and must not set it). */
#ifndef NN_TESTS_VULKAN_HARNESS_H
#define NN_TESTS_VULKAN_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

#include "backends/backend.h"
#include "nn_context.h"

/* True when the Vulkan tests are switched off by NN_ENGINE_TEST_VULKAN=0
 * (prints that once). */
bool vkt_skipped(void);
/* The Vulkan backend (opened on first use), or NULL after recording a test
 * failure that says why. */
nn_backend *vkt_vulkan(void);
nn_backend *vkt_cpu(void);
/* The backend the registry opens by `name` (opened once, then kept), or
 * NULL with *why (may be NULL) saying why not. */
nn_backend *vkt_backend(const char *name, const char **why);

/* A buffer on both backends holding the same data, at byte offset `offset`
 * into a slightly larger buffer (so kernels are tested on views too). */
typedef struct vkt_pair {
    nn_buffer *cpu, *gpu;
    size_t offset, count; /* count of 4-byte elements */
} vkt_pair;

vkt_pair vkt_pair_new(const void *data, size_t count, size_t offset);
/* An absent (NULL) argument. */
vkt_pair vkt_pair_none(void);
void vkt_pair_free(vkt_pair *p);

/* Run the kernel on both; checks both return NN_OK. */
bool vkt_run(nn_kernel kernel, vkt_pair *args, int nargs, const void *params);
/* Compare a float buffer (|gpu - cpu| <= tol * max(1, |cpu|), NaN equals
 * NaN) or an int32 buffer (exactly); `what` names it in a failure. */
void vkt_compare_f32(const vkt_pair *p, double tol, const char *what);
void vkt_compare_i32(const vkt_pair *p, const char *what);

/* Runs a softmax cross-entropy kernel (args logits, labels, out, loss[1];
 * forward or fused) on Vulkan with labels 10 and -1 among 10 classes: the
 * next read must fail naming row 3 and label 10, the loss be NaN as the
 * CPU's, and the next sync succeed (reported once). */
void vkt_check_bad_label_reported(nn_kernel kernel);

/* A context on "cpu" or "vulkan" (2 threads, seed 7); NULL when Vulkan is
 * skipped (NN_ENGINE_TEST_VULKAN=0) or absent, a failure otherwise. */
nn_ctx *vkt_open_device(const char *device);
/* The next double in [lo, hi) of a small generator whose state the test keeps. */
double vkt_uniform(unsigned *state, double lo, double hi);

/* Uniform floats in [lo, hi) from a seeded generator. */
void vkt_fill(float *x, size_t n, float lo, float hi, unsigned seed);
/* A new array (malloc'ed, at least one element) of n such floats. */
float *vkt_randoms(size_t n, float lo, float hi, unsigned seed);
/* im2col on the host in kernels.h's layout (cols [batch, k, positions]):
 * what a convolution that keeps its column matrix holds. */
void vkt_host_im2col(const nn_conv_geometry *g, const float *x, float *cols);

/* A CPU-backend buffer of count 4-byte elements holding data (left as it is
 * when data is NULL), as a view 8 bytes into a slightly larger buffer (so
 * kernels are tested on views); free it with vkt_cpu()->free(vkt_cpu(),
 * ref.buffer). */
nn_buffer_ref vkt_cpu_buffer(const void *data, size_t count);
/* Its first count 4-byte elements, into out. */
void vkt_cpu_read(nn_buffer_ref ref, void *out, size_t count);

/* Records a test failure at the first i where |got[i] - want[i]| > tol *
 * max(1, |want[i]|) (a NaN fails), named by the printf-style what. */
void vkt_check_near(const float *got, const double *want, size_t n, double tol, const char *what, ...);
void vkt_check_near_f32(const float *got, const float *want, size_t n, double tol, const char *what, ...);
/* vkt_check_near on the first n floats of a CPU backend buffer. */
void vkt_check_cpu_near(nn_buffer_ref got, const double *want, size_t n, double tol, const char *what, ...);

#endif
