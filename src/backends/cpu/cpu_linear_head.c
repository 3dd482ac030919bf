/* The fused Linear -> ReLU -> Linear kernels (kernels.h,
 * nn_linear_head_params) on the CPU: the unfused layers' GEMMs one after
 * another, so the fused op computes exactly the floats the layers compute
 * unfused. There is no barrier to save here, so the backend does not offer
 * them (it has no nn_backend.supports); the kernels are the reference the
 * other backends' are tested against. */
#include "backends/linear_head.h"
#include "base/error.h"
#include "cpu_backend.h"

static nn_status product(nn_backend *self, nn_buffer_ref a, nn_buffer_ref b, nn_buffer_ref c, nn_buffer_ref aux,
                         const nn_gemm_epilogue_params *p) {
    nn_buffer_ref args[4] = {a, b, c, aux};
    return self->run(self, NN_KERNEL_GEMM_EPILOGUE, args, 4, p);
}

/* NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY: FORWARD's products, the rows' loss
 * and gradient as softmax_ce_fused computes them (a bad label gives its row
 * a NaN loss and is reported after the rest is done), then BACKWARD_DATA's
 * products with dy = dlogits. */
static nn_status head_cross_entropy(nn_backend *self, nn_thread_pool *pool, const nn_linear_head_params *p,
                                    const nn_buffer_ref *a) {
    NN_TRY(nn_linear_head_loss_args_check("cpu", p, a));
    if (p->rows == 0) return NN_OK;
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_gemm_epilogue_params first = nn_linear_head_first_forward(p, a[2].buffer != NULL);
    nn_gemm_epilogue_params second = nn_linear_head_second_forward(p, a[4].buffer != NULL);
    NN_TRY(product(self, a[0], a[1], a[6], a[2], &first));
    NN_TRY(product(self, a[6], a[3], a[7], a[4], &second));
    const nn_softmax_params softmax = {.rows = p->rows, .cols = p->out};
    float *dlogits = nn_cpu_f32(a[9]);
    nn_status loss =
        nn_cpu_softmax_ce_row_losses(pool, &softmax, nn_cpu_f32(a[7]), nn_cpu_i32(a[5]), dlogits, nn_cpu_f32(a[8]));
    if (loss == NN_ERR_MEMORY) return loss;
    nn_cpu_softmax_ce_gradient(&softmax, nn_cpu_i32(a[5]), dlogits);
    if (!a[10].buffer) return loss;
    nn_gemm_epilogue_params hidden = nn_linear_head_hidden_gradient(p), input = nn_linear_head_input_gradient(p);
    NN_TRY(product(self, a[9], a[3], a[10], a[6], &hidden));
    if (a[11].buffer) NN_TRY(product(self, a[10], a[1], a[11], p->mask_input ? a[0] : none, &input));
    return loss;
}

nn_status nn_cpu_linear_head(nn_backend *self, nn_thread_pool *pool, nn_kernel kernel,
                             const nn_linear_head_params *p, const nn_buffer_ref *a) {
    NN_TRY(nn_linear_head_params_check("cpu", kernel, p));
    if (kernel == NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY) return head_cross_entropy(self, pool, p, a);
    const nn_buffer_ref none = {NULL, 0, 0};
    if (kernel == NN_KERNEL_LINEAR_HEAD_FORWARD) {
        nn_gemm_epilogue_params first = nn_linear_head_first_forward(p, a[2].buffer != NULL);
        nn_gemm_epilogue_params second = nn_linear_head_second_forward(p, a[4].buffer != NULL);
        NN_TRY(product(self, a[0], a[1], a[5], a[2], &first));
        return product(self, a[5], a[3], a[6], a[4], &second);
    }
    nn_gemm_epilogue_params hidden = nn_linear_head_hidden_gradient(p), input = nn_linear_head_input_gradient(p);
    NN_TRY(product(self, a[0], a[1], a[5], a[2], &hidden));
    return a[6].buffer ? product(self, a[5], a[3], a[6], p->mask_input ? a[4] : none, &input) : NN_OK;
}
