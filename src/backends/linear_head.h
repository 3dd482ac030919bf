/* What every backend checks first in the fused Linear -> ReLU -> Linear
 * kernels (kernels.h, nn_linear_head_params). */
#ifndef NN_LINEAR_HEAD_H
#define NN_LINEAR_HEAD_H

#include <stdbool.h>

#include "backend.h"

/* Sizes >= 0 (rows, in, hidden and out), flags 0 or 1; the message names
 * the backend and the kernel. */
nn_status nn_linear_head_params_check(const char *backend, nn_kernel kernel, const nn_linear_head_params *p);

/* CROSS_ENTROPY's arguments against p: accumulate 0, dx only with dh. */
nn_status nn_linear_head_loss_args_check(const char *backend, const nn_linear_head_params *p,
                                         const nn_buffer_ref *a);

/* The GEMM epilogue parameters of the head's four products, as the unfused
 * layers run them (Linear's forward and its data gradient). */
nn_gemm_epilogue_params nn_linear_head_first_forward(const nn_linear_head_params *p, bool bias);
nn_gemm_epilogue_params nn_linear_head_second_forward(const nn_linear_head_params *p, bool bias);
nn_gemm_epilogue_params nn_linear_head_hidden_gradient(const nn_linear_head_params *p);
nn_gemm_epilogue_params nn_linear_head_input_gradient(const nn_linear_head_params *p);

#endif
