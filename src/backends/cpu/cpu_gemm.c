/* The CPU GEMM. Two layers:
 *
 * 1. One product, C = alpha op(A) op(B) + beta C, by the library chosen at
 *    build time: cblas_sgemm with -DNN_USE_OPENBLAS, otherwise the built-in
 *    blocked GEMM below (the Goto/BLIS scheme: pack panels of A and B, then a
 *    register-blocked micro-kernel over them).
 * 2. Threading, shared by both: the batch and the rows or columns of C are
 *    cut into pieces that the pool's workers run as independent products.
 *    OpenBLAS's own threads are switched off so the two never fight over
 *    the cores.
 *
 * Determinism: every piece of C is computed by exactly one worker in a fixed
 * order, and the pool hands out static ranges, so a given pool size always
 * gives the same bits. The summed batch (stride_c == 0) gives each worker a
 * private partial C; the partials are added in worker order. */
#include "cpu_gemm.h"
#include "cpu_precision.h"
#include "platform/aligned_memory.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef NN_USE_OPENBLAS
#include <cblas.h>
#endif

/* A worker is used only when it gets at least this many flops (~3 us at
 * 80 GFLOP/s), about what handing it a range costs now that the pool's
 * workers spin between jobs: of the thresholds tried, the smallest made a
 * small model's training step fastest (bench/README.md). Tests define it
 * smaller to exercise the threaded paths. */
#ifndef MIN_FLOPS_PER_THREAD
#define MIN_FLOPS_PER_THREAD (256.0 * 1024)
#endif

static int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }
static int64_t round_up(int64_t x, int64_t unit) { return ceil_div(x, unit) * unit; }

/* One product on plain pointers and 64-bit sizes: what layer 1 runs. */
typedef struct gemm_call {
    int64_t m, n, k;
    int trans_a, trans_b;
    const float *a;
    int64_t lda;
    const float *b;
    int64_t ldb;
    float *c;
    int64_t ldc;
    float alpha, beta; /* beta == 0: C is written without being read */
} gemm_call;

/* C = beta * C for an m x n block (beta == 0 writes zeros, so NaN garbage
 * in C does not survive). Used for k == 0 and alpha == 0. */
static void scale_block(float *c, int64_t m, int64_t n, int64_t ldc, float beta) {
    if (beta == 1.0f) return;
    for (int64_t i = 0; i < m; i++) {
        float *row = c + i * ldc;
        if (beta == 0.0f)
            memset(row, 0, (size_t)n * sizeof *row);
        else
            for (int64_t j = 0; j < n; j++) row[j] *= beta;
    }
}

/* ------------------------------------------------------------------------ */
#ifdef NN_USE_OPENBLAS
/* Layer 1 with OpenBLAS. */

/* OpenBLAS's work is split by our pool, never by OpenBLAS's own threads. */
#define ROW_UNIT 16
#define COL_UNIT 16

static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
static char g_library[96] = "OpenBLAS";

static void gemm_init(void) {
    openblas_set_num_threads(1);
    /* openblas_get_config() reads "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...":
     * keep the name and version, and add the kernel set picked for this CPU. */
    const char *config = openblas_get_config();
    const char *core = openblas_get_corename();
    char name[48] = "OpenBLAS", version[32] = "";
    if (config) sscanf(config, "%47s %31s", name, version);
    snprintf(g_library, sizeof g_library, "%s%s%s%s%s%s", name, version[0] ? " " : "", version,
             core && core[0] ? " (" : "", core && core[0] ? core : "", core && core[0] ? ")" : "");
}

static size_t scratch_a_floats(int64_t m, int64_t k) { return 0; }
static size_t scratch_b_floats(int64_t n, int64_t k) { return 0; }

static void gemm_one(const gemm_call *g, float *pack_a, float *pack_b) {
    /* cblas_sgemm with beta == 0 sets C to zero without reading it (BLAS
     * semantics), which is what the contract asks for. The sizes fit: all
     * come from int32_t fields. */
    cblas_sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
                g->trans_b ? CblasTrans : CblasNoTrans, (blasint)g->m, (blasint)g->n,
                (blasint)g->k, g->alpha, g->a, (blasint)g->lda, g->b, (blasint)g->ldb, g->beta,
                g->c, (blasint)g->ldc);
}

/* ------------------------------------------------------------------------ */
#else
/* Layer 1, built in. C += A B is computed in blocks sized for the caches:
 *
 *   for each NC-wide column block of B (jc)         B block ~ L3
 *     for each KC-deep slice of k (pc)              pack B[pc, jc] into panels of NR columns
 *       for each MC-tall row block of A (ic)        pack A[ic, pc] into panels of MR rows (~ L2)
 *         for each NR-wide B panel (jr)             one B panel (KC x NR) stays in L1
 *           for each MR-tall A panel (ir)
 *             micro-kernel: an MR x NR tile of C, kept in registers over KC steps
 *
 * Packing copies op(A) and op(B) into the exact order the micro-kernel reads
 * them, so transposes cost nothing in the hot loop and every load there is
 * unit stride. Panels are zero-padded at the edges: the micro-kernel always
 * computes a whole tile, and only the write-back handles partial tiles.
 *
 * Two shapes where packing costs more than it saves take shortcuts: with
 * few rows in A, a row-major B is read in place (gemm_one); and C = A B^T
 * with a small side (conv weight gradients, small-batch linear layers) uses
 * a dot-product kernel on the unpacked rows (gemm_dot). */

/* The kernels are written with GCC/clang vector extensions: a vf8 is 8
 * floats, which the compiler maps to one AVX register, or two SSE registers
 * in the baseline build, or scalars elsewhere. Plain loops left to the
 * auto-vectorizer were tried first and proved fragile: the same source ran at
 * 75 GFLOP/s with -O2 and at 25-38 with -O3, and a loop order one compiler
 * liked, the other left scalar. Explicit vectors give the same code at any
 * optimization level and with both compilers. Compilers without the
 * extension get a scalar vf8 emulation (slow but correct). */
#if defined(__GNUC__)
#define NN_ALWAYS_INLINE inline __attribute__((always_inline))
/* Unrolling the rows of a tile lets its accumulators live in registers. */
#define NN_UNROLL _Pragma("GCC unroll 8")
#else
#define NN_ALWAYS_INLINE inline
#define NN_UNROLL
#endif
#if defined(__GNUC__) && !defined(NN_GEMM_SCALAR) /* -DNN_GEMM_SCALAR tests the fallback */
typedef float vf8 __attribute__((vector_size(32)));
#define VF8_SPLAT(x) ((vf8){(x), (x), (x), (x), (x), (x), (x), (x)})
#define VF8_FMA(acc, a, b) ((acc) + (a) * (b)) /* fused: see NN_GEMM_TARGET_AVX2 */
#define VF8_SCALE(v, s) ((v) * (s))
#else
typedef struct vf8 {
    float f[8];
} vf8;
static inline vf8 vf8_splat(float x) {
    vf8 v;
    for (int i = 0; i < 8; i++) v.f[i] = x;
    return v;
}
static inline vf8 vf8_fma(vf8 acc, vf8 a, vf8 b) {
    for (int i = 0; i < 8; i++) acc.f[i] += a.f[i] * b.f[i];
    return acc;
}
static inline vf8 vf8_scale(vf8 v, float s) {
    for (int i = 0; i < 8; i++) v.f[i] *= s;
    return v;
}
#define VF8_SPLAT(x) vf8_splat(x)
#define VF8_FMA(acc, a, b) vf8_fma(acc, a, b)
#define VF8_SCALE(v, s) vf8_scale(v, s)
#endif
/* Unaligned loads and stores; memcpy of 32 bytes compiles to one move. */
#define VF8_LOAD(v, p) memcpy(&(v), (p), sizeof(vf8))
#define VF8_STORE(p, v) memcpy((p), &(v), sizeof(vf8))

/* Tile shape: 6 x 16 floats = 12 vector accumulators, plus 2 for a row of B
 * and 1 for a broadcast value of A: 15 of the 16 AVX2 registers. */
#define MR 6
#define NR 16
#define KC 256        /* a KC x NR panel of B is 16 KiB: stays in L1 */
#define MC (MR * 24)  /* an MC x KC block of A is 144 KiB: stays in L2 */
#define NC (NR * 192) /* a KC x NC block of B is 3 MiB: stays in L3 */
#define ROW_UNIT MR
#define COL_UNIT NR
#ifndef DIRECT_B_MAX_M
#define DIRECT_B_MAX_M 16 /* see gemm_one */
#endif

/* x86-64 with gcc/clang: each kernel is compiled twice, for AVX2+FMA and for
 * the baseline (SSE2), and the right one is picked at run time, so one binary
 * is fast on current CPUs and still runs on old ones. (A manual dispatch, not
 * target_clones: target_clones("avx2,fma") makes one clone per feature, not
 * one with both.) gcc in ISO C mode (-std=c11) does not fuse a * b + c into an
 * FMA unless asked, hence fp-contract=fast on these functions; clang fuses
 * within an expression by default. Build with -DNN_GEMM_NO_DISPATCH to force
 * the baseline kernels, e.g. to test them on an AVX2 machine. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(NN_GEMM_NO_DISPATCH)
#define NN_GEMM_DISPATCH 1
#if defined(__clang__)
#define NN_GEMM_TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define NN_GEMM_TARGET_AVX2 __attribute__((target("avx2,fma"), optimize("fp-contract=fast")))
#endif
#else
#define NN_GEMM_DISPATCH 0
#endif

typedef void (*micro_kernel_fn)(int64_t kc, const float *ap, const float *bp, int64_t ldbp,
                                float *c, int64_t ldc, float alpha, float beta);

/* The MR x NR tile C = alpha * (A panel x B panel) + beta * C (beta == 0:
 * C is not read). The A panel holds MR values per k step; the B panel NR
 * adjacent values per k step, ldbp apart (NR when packed, ldb when B is read
 * in place). Each k step is an outer product: one row of B times each value
 * of A, broadcast. */
static NN_ALWAYS_INLINE void micro_kernel_body(int64_t kc, const float *restrict ap,
                                               const float *restrict bp, int64_t ldbp,
                                               float *restrict c, int64_t ldc, float alpha,
                                               float beta) {
    vf8 acc[MR][2];
    NN_UNROLL
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = VF8_SPLAT(0.0f);
    for (int64_t p = 0; p < kc; p++) {
        vf8 b0, b1;
        VF8_LOAD(b0, bp + p * ldbp);
        VF8_LOAD(b1, bp + p * ldbp + 8);
        NN_UNROLL
        for (int i = 0; i < MR; i++) {
            vf8 a = VF8_SPLAT(ap[p * MR + i]);
            acc[i][0] = VF8_FMA(acc[i][0], a, b0);
            acc[i][1] = VF8_FMA(acc[i][1], a, b1);
        }
    }
    NN_UNROLL
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < 2; v++) {
            float *row = c + i * ldc + 8 * v;
            vf8 out = VF8_SCALE(acc[i][v], alpha);
            if (beta != 0.0f) {
                vf8 old;
                VF8_LOAD(old, row);
                out = VF8_FMA(out, old, VF8_SPLAT(beta));
            }
            VF8_STORE(row, out);
        }
}

static void micro_kernel_generic(int64_t kc, const float *ap, const float *bp, int64_t ldbp,
                                 float *c, int64_t ldc, float alpha, float beta) {
    micro_kernel_body(kc, ap, bp, ldbp, c, ldc, alpha, beta);
}

#if NN_GEMM_DISPATCH
NN_GEMM_TARGET_AVX2 static void micro_kernel_avx2(int64_t kc, const float *ap, const float *bp,
                                                  int64_t ldbp, float *c, int64_t ldc,
                                                  float alpha, float beta) {
    micro_kernel_body(kc, ap, bp, ldbp, c, ldc, alpha, beta);
}
#endif

/* NT products (C = A B^T, both stored with k contiguous) with a small side:
 * a convolution's weight gradient per image (dy_n cols_n^T, OC x C*KH*KW)
 * and a linear layer with a small batch (x W^T). Packing B there is a
 * transpose that costs more than the multiply, so this kernel reads the rows
 * of A and B in place and vectorizes along k instead: each of the DR x DC
 * entries of a tile of C keeps 8 partial sums, added up at the end in a
 * fixed order. */
#define DR 3
#define DC 4
#define DOT_MIN_K 128   /* below this the final sums cost too much */
#define DOT_MAX_SIDE 32 /* min(m, n) up to this: A or B is reused too little to pack */

typedef void (*dot_tile_fn)(int64_t k, const float *const *ar, const float *const *br,
                            float *out);

/* out[i * DC + j] = sum over p < k of ar[i][p] * br[j][p]. */
static NN_ALWAYS_INLINE void dot_tile_body(int64_t k, const float *const *ar,
                                           const float *const *br, float *out) {
    vf8 acc[DR][DC];
    NN_UNROLL
    for (int i = 0; i < DR; i++)
        for (int j = 0; j < DC; j++) acc[i][j] = VF8_SPLAT(0.0f);
    int64_t p = 0;
    for (; p + 8 <= k; p += 8) {
        vf8 a[DR];
        NN_UNROLL
        for (int i = 0; i < DR; i++) VF8_LOAD(a[i], ar[i] + p);
        NN_UNROLL
        for (int j = 0; j < DC; j++) {
            vf8 b;
            VF8_LOAD(b, br[j] + p);
            NN_UNROLL
            for (int i = 0; i < DR; i++) acc[i][j] = VF8_FMA(acc[i][j], a[i], b);
        }
    }
    /* Spill the accumulators in a fully unrolled loop, so that acc is only
     * ever indexed by constants and stays in registers in the loop above. */
    float part[DR][DC][8];
    NN_UNROLL
    for (int i = 0; i < DR; i++) {
        NN_UNROLL
        for (int j = 0; j < DC; j++) {
            vf8 total = acc[i][j];
            VF8_STORE(part[i][j], total);
        }
    }
    for (int i = 0; i < DR; i++)
        for (int j = 0; j < DC; j++) {
            float sum = 0.0f;
            for (int v = 0; v < 8; v++) sum += part[i][j][v];
            for (int64_t q = p; q < k; q++) sum += ar[i][q] * br[j][q];
            out[i * DC + j] = sum;
        }
}

static void dot_tile_generic(int64_t k, const float *const *ar, const float *const *br,
                             float *out) {
    dot_tile_body(k, ar, br, out);
}

#if NN_GEMM_DISPATCH
NN_GEMM_TARGET_AVX2 static void dot_tile_avx2(int64_t k, const float *const *ar,
                                              const float *const *br, float *out) {
    dot_tile_body(k, ar, br, out);
}
#endif

static int use_dot(const gemm_call *g) {
    return !g->trans_a && g->trans_b && g->k >= DOT_MIN_K &&
           (g->m <= DOT_MAX_SIDE || g->n <= DOT_MAX_SIDE);
}

static dot_tile_fn g_dot_tile = dot_tile_generic;

/* Tiles at the edges repeat the last row of A or B (always valid memory)
 * and drop those results. B's rows are the outer loop: DC of them stay in
 * cache while every row of A passes by. */
static void gemm_dot(const gemm_call *g) {
    dot_tile_fn tile_fn = g_dot_tile;
    for (int64_t j0 = 0; j0 < g->n; j0 += DC) {
        const float *br[DC];
        for (int j = 0; j < DC; j++) br[j] = g->b + min64(j0 + j, g->n - 1) * g->ldb;
        for (int64_t i0 = 0; i0 < g->m; i0 += DR) {
            const float *ar[DR];
            float out[DR * DC];
            for (int i = 0; i < DR; i++) ar[i] = g->a + min64(i0 + i, g->m - 1) * g->lda;
            tile_fn(g->k, ar, br, out);
            for (int64_t i = 0; i < min64(DR, g->m - i0); i++) {
                float *c = g->c + (i0 + i) * g->ldc + j0;
                for (int64_t j = 0; j < min64(DC, g->n - j0); j++) {
                    float v = g->alpha * out[i * DC + j];
                    c[j] = g->beta == 0.0f ? v : g->beta * c[j] + v;
                }
            }
        }
    }
}

static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
static micro_kernel_fn g_kernel = micro_kernel_generic;
static const char *g_library = "built-in blocked GEMM";

static void gemm_init(void) {
#if NN_GEMM_DISPATCH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        g_kernel = micro_kernel_avx2;
        g_dot_tile = dot_tile_avx2;
        g_library = "built-in blocked GEMM (AVX2+FMA)";
    }
#endif
}

/* Scratch for one worker's packed blocks of an m x n x k product. */
static size_t scratch_a_floats(int64_t m, int64_t k) {
    return (size_t)round_up(round_up(min64(m, MC), MR) * min64(k, KC), 16);
}
static size_t scratch_b_floats(int64_t n, int64_t k) {
    return (size_t)round_up(min64(k, KC) * round_up(min64(n, NC), NR), 16);
}

/* op(A)[i][p] for the mc x kc block at a: row panels of MR, zero-padded.
 * Whole panels take loops of constant length, which the compiler unrolls or
 * vectorizes; only the last, partial panel takes the general loop. */
static void pack_a(int64_t mc, int64_t kc, const float *restrict a, int64_t lda, int trans,
                   float *restrict dst) {
    for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * kc) {
        int64_t rows = min64(MR, mc - i0);
        if (rows == MR && trans) { /* stored k x m: MR adjacent values per k step */
            for (int64_t p = 0; p < kc; p++)
                for (int i = 0; i < MR; i++) dst[p * MR + i] = a[p * lda + i0 + i];
        } else if (rows == MR) { /* stored m x k: gather one value from each of MR rows */
            for (int64_t p = 0; p < kc; p++)
                for (int i = 0; i < MR; i++) dst[p * MR + i] = a[(i0 + i) * lda + p];
        } else {
            for (int64_t p = 0; p < kc; p++)
                for (int64_t i = 0; i < MR; i++)
                    dst[p * MR + i] = i >= rows ? 0.0f
                                      : trans   ? a[p * lda + i0 + i]
                                                : a[(i0 + i) * lda + p];
        }
    }
}

/* op(B)[p][j] for the kc x nc block at b: column panels of NR, zero-padded. */
static void pack_b(int64_t kc, int64_t nc, const float *restrict b, int64_t ldb, int trans,
                   float *restrict dst) {
    for (int64_t j0 = 0; j0 < nc; j0 += NR, dst += NR * kc) {
        int64_t cols = min64(NR, nc - j0);
        if (cols == NR && !trans) { /* stored k x n: NR adjacent values per k step */
            for (int64_t p = 0; p < kc; p++)
                for (int j = 0; j < NR; j++) dst[p * NR + j] = b[p * ldb + j0 + j];
        } else if (cols == NR) { /* stored n x k: walk each stored row once */
            for (int j = 0; j < NR; j++)
                for (int64_t p = 0; p < kc; p++) dst[p * NR + j] = b[(j0 + j) * ldb + p];
        } else {
            for (int64_t p = 0; p < kc; p++)
                for (int64_t j = 0; j < NR; j++)
                    dst[p * NR + j] = j >= cols ? 0.0f
                                      : trans   ? b[(j0 + j) * ldb + p]
                                                : b[p * ldb + j0 + j];
        }
    }
}

/* A partial tile (at the right or bottom edge of C): the micro-kernel wrote
 * the whole MR x NR product into tile; merge the part inside C. */
static void edge_update(float *c, int64_t ldc, const float *tile, int64_t mr, int64_t nr,
                        float alpha, float beta) {
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) {
            float v = alpha * tile[i * NR + j];
            c[i * ldc + j] = beta == 0.0f ? v : beta * c[i * ldc + j] + v;
        }
}

static void gemm_one(const gemm_call *g, float *pack_a_buf, float *pack_b_buf) {
    if (use_dot(g)) {
        gemm_dot(g);
        return;
    }
    micro_kernel_fn kernel = g_kernel;
    /* With few rows in A, a packed B panel would serve only one or two A
     * panels, and packing would cost as much as it saves. A row-major B
     * already holds the NR values of a k step side by side, so whole panels
     * are then read in place; only a partial last panel is packed (padded).
     * Unless B's rows are a multiple of 4 KiB apart and there are more than
     * a few of them: a panel's rows then all fall in the same few cache sets
     * and evict each other, so packing them is faster (bench/README.md). */
    int direct_b = !g->trans_b && g->m <= DIRECT_B_MAX_M && (g->ldb % 1024 != 0 || g->k <= 32);
    for (int64_t jc = 0; jc < g->n; jc += NC) {
        int64_t nc = min64(NC, g->n - jc);
        for (int64_t pc = 0; pc < g->k; pc += KC) {
            int64_t kc = min64(KC, g->k - pc);
            /* beta applies once; later k slices add to what is there. */
            float beta = pc == 0 ? g->beta : 1.0f;
            const float *b = g->trans_b ? g->b + jc * g->ldb + pc : g->b + pc * g->ldb + jc;
            if (!direct_b) pack_b(kc, nc, b, g->ldb, g->trans_b, pack_b_buf);
            for (int64_t ic = 0; ic < g->m; ic += MC) {
                int64_t mc = min64(MC, g->m - ic);
                const float *a = g->trans_a ? g->a + pc * g->lda + ic : g->a + ic * g->lda + pc;
                pack_a(mc, kc, a, g->lda, g->trans_a, pack_a_buf);
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    int64_t nr = min64(NR, nc - jr);
                    const float *bp = pack_b_buf + jr * kc;
                    int64_t ldbp = NR;
                    if (direct_b && nr == NR) {
                        bp = b + jr;
                        ldbp = g->ldb;
                    } else if (direct_b) {
                        pack_b(kc, nr, b + jr, g->ldb, 0, pack_b_buf);
                        bp = pack_b_buf;
                    }
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        int64_t mr = min64(MR, mc - ir);
                        const float *ap = pack_a_buf + ir * kc;
                        float *c = g->c + (ic + ir) * g->ldc + jc + jr;
                        if (mr == MR && nr == NR) {
                            kernel(kc, ap, bp, ldbp, c, g->ldc, g->alpha, beta);
                        } else {
                            float tile[MR * NR];
                            kernel(kc, ap, bp, ldbp, tile, NR, 1.0f, 0.0f);
                            edge_update(c, g->ldc, tile, mr, nr, g->alpha, beta);
                        }
                    }
                }
            }
        }
    }
}
#endif /* built-in */

/* ------------------------------------------------------------------------ */
/* Layer 2: splitting the work over the pool. */

typedef struct gemm_job {
    const nn_gemm_params *p;
    const float *a, *b;
    float *c;
    /* Each product is cut into `chunks` pieces of `chunk` rows (split_rows)
     * or columns of C. */
    int split_rows;
    int64_t chunk, chunks;
    /* Per worker (indexed by the pool's worker number): packing space and,
     * for a summed batch, a private partial C (m x n, dense). */
    float *scratch;
    size_t scratch_a, scratch_b; /* floats per worker */
    float *partials;
    int *partial_used;
    int workers; /* the pool's size: how many partial_used flags there are */
} gemm_job;

/* The product of batch entry `item`, restricted to rows [r0, r1) and
 * columns [c0, c1) of C: offsetting A's rows and B's columns is all it takes. */
static gemm_call piece(const gemm_job *job, int64_t item, int64_t r0, int64_t r1, int64_t c0,
                       int64_t c1) {
    const nn_gemm_params *p = job->p;
    const float *a = job->a + item * p->stride_a;
    const float *b = job->b + item * p->stride_b;
    gemm_call g = {
        .m = r1 - r0, .n = c1 - c0, .k = p->k,
        .trans_a = p->trans_a != 0, .trans_b = p->trans_b != 0,
        .a = p->trans_a ? a + r0 : a + r0 * p->lda, .lda = p->lda,
        .b = p->trans_b ? b + c0 * p->ldb : b + c0, .ldb = p->ldb,
        .c = job->c + item * p->stride_c + r0 * p->ldc + c0, .ldc = p->ldc,
        .alpha = p->alpha, .beta = p->beta,
    };
    return g;
}

static void chunk_bounds(const gemm_job *job, int64_t ch, int64_t *r0, int64_t *r1, int64_t *c0,
                         int64_t *c1) {
    const nn_gemm_params *p = job->p;
    int64_t lo = ch * job->chunk, dim = job->split_rows ? p->m : p->n;
    int64_t hi = min64(lo + job->chunk, dim);
    *r0 = 0, *r1 = p->m, *c0 = 0, *c1 = p->n;
    if (job->split_rows)
        *r0 = lo, *r1 = hi;
    else
        *c0 = lo, *c1 = hi;
}

static float *worker_pack_a(const gemm_job *job, int worker) {
    return job->scratch ? job->scratch + (size_t)worker * (job->scratch_a + job->scratch_b) : NULL;
}
static float *worker_pack_b(const gemm_job *job, int worker) {
    return job->scratch ? worker_pack_a(job, worker) + job->scratch_a : NULL;
}

/* Independent products: item = batch entry * chunks + chunk. */
static void run_pieces(void *arg, int64_t begin, int64_t end, int worker) {
    const gemm_job *job = arg;
    for (int64_t it = begin; it < end; it++) {
        int64_t r0, r1, c0, c1;
        chunk_bounds(job, it % job->chunks, &r0, &r1, &c0, &c1);
        gemm_call g = piece(job, it / job->chunks, r0, r1, c0, c1);
        gemm_one(&g, worker_pack_a(job, worker), worker_pack_b(job, worker));
    }
}

/* A summed batch cut along C: each chunk of C runs through the whole batch,
 * the first product applying beta and the others adding. */
static void run_summed_chunks(void *arg, int64_t begin, int64_t end, int worker) {
    const gemm_job *job = arg;
    for (int64_t ch = begin; ch < end; ch++) {
        int64_t r0, r1, c0, c1;
        chunk_bounds(job, ch, &r0, &r1, &c0, &c1);
        for (int64_t item = 0; item < job->p->batch; item++) {
            gemm_call g = piece(job, item, r0, r1, c0, c1);
            if (item > 0) g.beta = 1.0f;
            gemm_one(&g, worker_pack_a(job, worker), worker_pack_b(job, worker));
        }
    }
}

/* A summed batch cut along the batch: the worker holding the first entries
 * writes C itself (applying beta); every other worker sums its entries into
 * its private partial, added to C afterwards in worker order. */
static void run_summed_batch(void *arg, int64_t begin, int64_t end, int worker) {
    const gemm_job *job = arg;
    const nn_gemm_params *p = job->p;
    float *partial = job->partials + (size_t)worker * (size_t)p->m * (size_t)p->n;
    for (int64_t item = begin; item < end; item++) {
        gemm_call g = piece(job, item, 0, p->m, 0, p->n);
        if (begin > 0) {
            g.c = partial;
            g.ldc = p->n;
            g.beta = item == begin ? 0.0f : 1.0f;
        } else if (item > begin) {
            g.beta = 1.0f;
        }
        gemm_one(&g, worker_pack_a(job, worker), worker_pack_b(job, worker));
    }
    if (begin > 0) job->partial_used[worker] = 1;
}

/* C += the used partials, in worker order, for rows [begin, end). The order
 * of additions per element does not depend on how the rows are split. */
static void add_partials(void *arg, int64_t begin, int64_t end, int worker) {
    const gemm_job *job = arg;
    const nn_gemm_params *p = job->p;
    for (int w = 0; w < job->workers; w++) {
        if (!job->partial_used[w]) continue;
        const float *part = job->partials + (size_t)w * (size_t)p->m * (size_t)p->n;
        for (int64_t i = begin; i < end; i++) {
            float *c = job->c + i * p->ldc;
            const float *s = part + i * p->n;
            for (int64_t j = 0; j < p->n; j++) c[j] += s[j];
        }
    }
}

/* Cut one product into about `want` chunks along its longer side (in tiles),
 * whole tiles per chunk so that no worker computes padding it need not. */
static void choose_split(gemm_job *job, int64_t want) {
    const nn_gemm_params *p = job->p;
    int64_t tiles_m = ceil_div(p->m, ROW_UNIT), tiles_n = ceil_div(p->n, COL_UNIT);
    job->split_rows = tiles_m > tiles_n;
    int64_t tiles = job->split_rows ? tiles_m : tiles_n;
    int64_t unit = job->split_rows ? ROW_UNIT : COL_UNIT;
    int64_t dim = job->split_rows ? p->m : p->n;
    job->chunk = min64(ceil_div(tiles, want) * unit, dim);
    job->chunks = ceil_div(dim, job->chunk);
}

static nn_status check_params(const nn_gemm_params *p, const float *a, const float *b,
                              const float *c) {
    if (!p || p->m < 0 || p->n < 0 || p->k < 0 || p->batch < 0) return NN_ERR_ARGUMENT;
    if (p->precision < NN_PRECISION_FP32 || p->precision > NN_PRECISION_BF16) return NN_ERR_ARGUMENT;
    if (p->stride_a < 0 || p->stride_b < 0 || p->stride_c < 0) return NN_ERR_ARGUMENT;
    if (p->lda < (p->trans_a ? p->m : p->k) || p->ldb < (p->trans_b ? p->k : p->n) ||
        p->ldc < p->n)
        return NN_ERR_ARGUMENT;
    if (p->m == 0 || p->n == 0 || p->batch == 0) return NN_OK;
    if (!c) return NN_ERR_ARGUMENT;
    if (p->k > 0 && p->alpha != 0.0f && (!a || !b)) return NN_ERR_ARGUMENT;
    /* Distinct outputs of a batch must not overlap: they are written in parallel. */
    if (p->batch > 1 && p->stride_c != 0 && p->stride_c < (int64_t)(p->m - 1) * p->ldc + p->n)
        return NN_ERR_ARGUMENT;
    return NN_OK;
}

/* The checked product (nn_cpu_gemm) of operands taken as they are. */
static nn_status gemm_fp32(nn_thread_pool *pool, const nn_gemm_params *p, const float *a,
                           const float *b, float *c) {
    pthread_once(&g_init_once, gemm_init);

    int summed = p->stride_c == 0 && p->batch > 1;
    int64_t outputs = summed ? 1 : p->batch;
    if (p->k == 0 || p->alpha == 0.0f) { /* nothing to multiply: C = beta C */
        for (int64_t i = 0; i < outputs; i++)
            scale_block(c + i * p->stride_c, p->m, p->n, p->ldc, p->beta);
        return NN_OK;
    }

    int pool_size = nn_thread_pool_size(pool);
    double flops = 2.0 * p->m * p->n * p->k * p->batch;
    int64_t threads = (int64_t)(flops / MIN_FLOPS_PER_THREAD);
    if (threads > pool_size) threads = pool_size;
    if (threads < 1) threads = 1;

    gemm_job job = {.p = p, .a = a, .b = b, .c = c, .chunk = p->n, .chunks = 1,
                    .workers = pool_size};
    enum { PIECES, SUMMED_CHUNKS, SUMMED_BATCH } plan = summed ? SUMMED_CHUNKS : PIECES;
    if (summed && threads > 1 && p->batch >= threads) {
        plan = SUMMED_BATCH;
    } else if (threads > 1 && (summed || p->batch < threads ||
                               (p->batch % threads != 0 && p->batch < 4 * threads))) {
        /* Too few batch entries to share out evenly: cut each product too. */
        choose_split(&job, threads);
    }

    /* One allocation for everything the workers need, indexed by worker
     * number (any of the pool's), made here so failure is reported before
     * any work starts. */
    int64_t rows = job.split_rows ? job.chunk : p->m, cols = job.split_rows ? p->n : job.chunk;
    job.scratch_a = scratch_a_floats(rows, p->k);
    job.scratch_b = scratch_b_floats(cols, p->k);
    size_t per_worker = job.scratch_a + job.scratch_b;
    size_t partial_floats = plan == SUMMED_BATCH ? (size_t)p->m * (size_t)p->n : 0;
    size_t floats = (size_t)pool_size * (per_worker + partial_floats);
    size_t bytes = floats * sizeof(float) + (size_t)pool_size * sizeof(int);
    void *mem = NULL;
    if (floats > 0 || plan == SUMMED_BATCH) {
        mem = nn_aligned_alloc(64, (size_t)round_up((int64_t)bytes, 64));
        if (!mem) return NN_ERR_MEMORY;
        job.scratch = per_worker ? mem : NULL;
        job.partials = (float *)mem + (size_t)pool_size * per_worker;
        job.partial_used = (int *)((float *)mem + floats);
        memset(job.partial_used, 0, (size_t)pool_size * sizeof(int));
    }

    switch (plan) {
    case PIECES: {
        int64_t items = p->batch * job.chunks;
        nn_parallel_for(pool, items, ceil_div(items, threads), run_pieces, &job);
        break;
    }
    case SUMMED_CHUNKS:
        nn_parallel_for(pool, job.chunks, ceil_div(job.chunks, threads), run_summed_chunks, &job);
        break;
    case SUMMED_BATCH: {
        nn_parallel_for(pool, p->batch, ceil_div(p->batch, threads), run_summed_batch, &job);
        int64_t adds = (int64_t)p->m * p->n * (threads - 1);
        int64_t min_rows = adds >= (1 << 20) ? ceil_div(p->m, threads) : p->m;
        nn_parallel_for(pool, p->m, min_rows, add_partials, &job);
        break;
    }
    }
    nn_aligned_free(mem);
    return NN_OK;
}

const char *nn_cpu_gemm_library(void) {
    pthread_once(&g_init_once, gemm_init);
    return g_library;
}

nn_status nn_cpu_gemm(nn_thread_pool *pool, const nn_gemm_params *p, const float *a, const float *b, float *c) {
    nn_status st = check_params(p, a, b, c);
    if (st != NN_OK || p->m == 0 || p->n == 0 || p->batch == 0) return st;
    if (p->precision == NN_PRECISION_FP32 || p->k == 0 || p->alpha == 0.0f) return gemm_fp32(pool, p, a, b, c);
    float *rounded;
    st = nn_cpu_round_operands(p, &a, &b, &rounded);
    if (st == NN_OK) st = gemm_fp32(pool, p, a, b, c);
    free(rounded);
    return st;
}
