/* The CPU backend's GEMM (NN_KERNEL_GEMM): OpenBLAS when the build defines
 * NN_USE_OPENBLAS, a built-in blocked GEMM in plain C otherwise. Either way
 * the work is split over the backend's thread pool, and results are
 * identical from run to run for a given pool size. */
#ifndef NN_CPU_GEMM_H
#define NN_CPU_GEMM_H

#include "nn_error.h"
#include "../kernels.h"
#include "thread_pool.h"

/* Runs the whole nn_gemm_params contract (kernels.h): transposes, alpha,
 * beta (beta == 0 overwrites C without reading it), batches with strides
 * (a stride of 0 shares a matrix across the batch) and, when stride_c == 0
 * and batch > 1, the sum of the batch's products into one C.
 *
 * a, b and c point at the first element of the first matrix. Matrices are
 * row-major; lda, ldb and ldc are the row strides of the matrices as stored:
 * A is m x k (lda >= k) when trans_a == 0 and k x m (lda >= m) when
 * trans_a == 1; likewise B is k x n or n x k. pool may be NULL (one thread).
 *
 * Returns NN_OK, NN_ERR_ARGUMENT for negative sizes, strides shorter than a
 * row or NULL pointers where data is needed, or NN_ERR_MEMORY when scratch
 * space cannot be allocated. It sets no error message: the caller does. */
nn_status nn_cpu_gemm(nn_thread_pool *pool, const nn_gemm_params *p, const float *a,
                      const float *b, float *c);

/* The GEMM in use, for the device description: e.g. "OpenBLAS 0.3.21 (Zen)"
 * or "built-in blocked GEMM (AVX2+FMA)". A constant string. */
const char *nn_cpu_gemm_library(void);

#endif
