/* The fused Linear -> ReLU -> Linear kernels (kernels.h,
 * nn_linear_head_params) on the CPU: the unfused layers' GEMMs one after
 * another, so the fused op computes exactly the floats the layers compute
 * unfused. There is no barrier to save here, so nn_sequential does not fuse
 * the layers on the CPU (nn_cpu_linear_head_fuses); the kernels are the
 * reference the other backends' are tested against. */
#include <math.h>

#include "backends/linear_head.h"
#include "core/error.h"
#include "cpu_backend.h"

static nn_status product(nn_backend *self, nn_buffer_ref a, nn_buffer_ref b, nn_buffer_ref c, nn_buffer_ref aux,
                         const nn_gemm_epilogue_params *p) {
    nn_buffer_ref args[4] = {a, b, c, aux};
    return self->run(self, NN_KERNEL_GEMM_EPILOGUE, args, 4, p);
}

/* Each row's loss, logsumexp(logits) - logits[label], and the gradient of
 * the mean loss, (softmax - onehot(label)) / rows, as softmax_ce_fused
 * computes them (the sums in double); a bad label gives its row a NaN loss
 * and is reported (the first such row) after every row is done. */
static nn_status cross_entropy_rows(const nn_linear_head_params *p, const float *logits, const int32_t *labels,
                                    float *row_loss, float *dlogits) {
    const int32_t cols = p->out;
    const float inv_rows = 1.0f / (float)p->rows;
    int64_t bad = -1;
    for (int64_t r = 0; r < p->rows; r++) {
        const float *x = logits + r * cols;
        float *d = dlogits + r * cols;
        float m = x[0];
        for (int32_t j = 1; j < cols; j++) m = x[j] > m ? x[j] : m;
        double sum = 0.0;
        for (int32_t j = 0; j < cols; j++) sum += exp((double)x[j] - m);
        const int32_t label = labels[r];
        const bool good = label >= 0 && label < cols;
        for (int32_t j = 0; j < cols; j++)
            d[j] = ((float)(exp((double)x[j] - m) / sum) - (j == label ? 1.0f : 0.0f)) * inv_rows;
        row_loss[r] = good ? (float)(log(sum) + m - x[label]) : NAN;
        if (!good && bad < 0) bad = r;
    }
    if (bad >= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "softmax_cross_entropy: label %d at row %lld is outside [0, %d)",
                            (int)labels[bad], (long long)bad, cols);
    return NN_OK;
}

/* NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY: FORWARD's products, the rows' loss
 * and gradient, then BACKWARD_DATA's products with dy = dlogits. */
static nn_status head_cross_entropy(nn_backend *self, const nn_linear_head_params *p, const nn_buffer_ref *a) {
    NN_TRY(nn_linear_head_loss_args_check("cpu", p, a));
    if (p->rows == 0) return NN_OK;
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_gemm_epilogue_params first = nn_linear_head_first_forward(p, a[2].buffer != NULL);
    nn_gemm_epilogue_params second = nn_linear_head_second_forward(p, a[4].buffer != NULL);
    NN_TRY(product(self, a[0], a[1], a[6], a[2], &first));
    NN_TRY(product(self, a[6], a[3], a[7], a[4], &second));
    nn_status loss = cross_entropy_rows(p, nn_cpu_f32(a[7]), nn_cpu_i32(a[5]), nn_cpu_f32(a[8]), nn_cpu_f32(a[9]));
    if (!a[10].buffer) return loss;
    nn_gemm_epilogue_params hidden = nn_linear_head_hidden_gradient(p), input = nn_linear_head_input_gradient(p);
    NN_TRY(product(self, a[9], a[3], a[10], a[6], &hidden));
    if (a[11].buffer) NN_TRY(product(self, a[10], a[1], a[11], p->mask_input ? a[0] : none, &input));
    return loss;
}

nn_status nn_cpu_linear_head(nn_backend *self, nn_kernel kernel, const nn_linear_head_params *p,
                             const nn_buffer_ref *a) {
    NN_TRY(nn_linear_head_params_check("cpu", kernel, p));
    if (kernel == NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY) return head_cross_entropy(self, p, a);
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

bool nn_cpu_linear_head_fuses(nn_backend *self, const nn_linear_head_params *p) {
    (void)self, (void)p;
    return false;
}
