/* Operands rounded to fp16 or bf16 (cpu_precision.h). */
#include "cpu_precision.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

float nn_round_fp16(float x) {
    const float a = fabsf(x);
    if (isnan(x) || isinf(x) || a == 0.0f) return x;
    if (a >= 65520.0f) return copysignf(INFINITY, x); /* past the largest, 65504, by half a step or more */
    int e;
    frexpf(a, &e); /* a = f * 2^e, f in [0.5, 1): fp16 keeps 11 bits, no step below 2^-24 */
    const float step = ldexpf(1.0f, e - 11 > -24 ? e - 11 : -24);
    return copysignf(nearbyintf(a / step) * step, x); /* the default rounding mode: ties to even */
}

float nn_round_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u) return x;
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The elements of a batch of matrices that the strides reach: from the
 * first to the last, as one span. */
static int64_t span(int64_t batch, int64_t stride, int64_t ld, int64_t rows, int64_t cols) {
    if (rows == 0 || cols == 0 || batch == 0) return 0;
    return (batch - 1) * stride + (rows - 1) * ld + cols;
}

static void round_into(float *dst, const float *src, int64_t count, int32_t precision) {
    if (precision == NN_PRECISION_BF16)
        for (int64_t i = 0; i < count; i++) dst[i] = nn_round_bf16(src[i]);
    else
        for (int64_t i = 0; i < count; i++) dst[i] = nn_round_fp16(src[i]);
}

nn_status nn_cpu_round_operands(const nn_gemm_params *p, const float **a, const float **b, float **owned) {
    *owned = NULL;
    const int64_t span_a = span(p->batch, p->stride_a, p->lda, p->trans_a ? p->k : p->m, p->trans_a ? p->m : p->k);
    const int64_t span_b = span(p->batch, p->stride_b, p->ldb, p->trans_b ? p->n : p->k, p->trans_b ? p->k : p->n);
    float *copies = malloc((size_t)(span_a + span_b > 0 ? span_a + span_b : 1) * sizeof *copies);
    if (!copies) return NN_ERR_MEMORY;
    round_into(copies, *a, span_a, p->precision);
    round_into(copies + span_a, *b, span_b, p->precision);
    *a = copies;
    *b = copies + span_a;
    *owned = copies;
    return NN_OK;
}
