/* Products in reduced precision on the CPU (nn_ctx_set_precision): the
 * operands rounded to fp16 or bf16 as a GPU's matrix cores take them, then
 * multiplied and summed in fp32 by the usual GEMM. The rounding is to
 * nearest, ties to even; fp16 keeps its subnormals and overflows to
 * infinity; NaNs and infinities stay. shaders/precision.glsl rounds the
 * same way. */
#ifndef NN_CPU_PRECISION_H
#define NN_CPU_PRECISION_H

#include "../kernels.h"

float nn_round_fp16(float x);
float nn_round_bf16(float x);

/* For a product with p->precision != FP32: copies of A's and B's spans
 * (as the strides reach them) rounded, in one allocation the caller frees
 * (*owned). *a and *b are replaced by the copies. NN_ERR_MEMORY when the
 * copies do not fit. */
nn_status nn_cpu_round_operands(const nn_gemm_params *p, const float **a, const float **b, float **owned);

#endif
