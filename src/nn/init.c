/* Initialisers, with PyTorch's definitions of fan-in and fan-out. */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"

static nn_status fans(const char *fn, const nn_tensor *t, double *fan_in, double *fan_out) {
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "%s: tensor is NULL", fn);
    if (t->dtype != NN_F32) return nn_set_error(NN_ERR_DTYPE, "%s: tensor must be float32", fn);
    if (t->ndim < 2) {
        char buf[96];
        return nn_set_error(NN_ERR_SHAPE, "%s: fan in and fan out need >= 2 dimensions, got %s",
                            fn, nn_format_shape(t->ndim, t->shape, buf, sizeof buf));
    }
    double receptive = 1.0;
    for (int i = 2; i < t->ndim; i++) receptive *= (double)t->shape[i];
    *fan_in = (double)t->shape[1] * receptive;
    *fan_out = (double)t->shape[0] * receptive;
    return NN_OK;
}

nn_status nn_init_uniform(nn_tensor *t, float low, float high) {
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "nn_init_uniform: tensor is NULL");
    if (t->dtype != NN_F32) return nn_set_error(NN_ERR_DTYPE, "nn_init_uniform: tensor must be float32");
    if (!(low <= high) || !isfinite(low) || !isfinite(high))
        return nn_set_error(NN_ERR_ARGUMENT, "nn_init_uniform: need finite low <= high, got [%g, %g]",
                            low, high);
    float *values = malloc((size_t)t->numel * sizeof *values);
    if (!values) return nn_set_error(NN_ERR_MEMORY, "nn_init_uniform: out of host memory");
    for (int64_t i = 0; i < t->numel; i++)
        values[i] = low + (high - low) * nn_rng_uniform(&t->ctx->rng);
    nn_status status = nn_tensor_write(t, values, (size_t)t->numel * sizeof *values);
    free(values);
    return status;
}

nn_status nn_init_xavier_uniform(nn_tensor *t, float gain) {
    double fan_in = 0.0, fan_out = 0.0;
    NN_TRY(fans("nn_init_xavier_uniform", t, &fan_in, &fan_out));
    float bound = (float)(gain * sqrt(6.0 / (fan_in + fan_out)));
    return nn_init_uniform(t, -bound, bound);
}

nn_status nn_init_kaiming_uniform(nn_tensor *t, float a) {
    double fan_in = 0.0, fan_out = 0.0;
    NN_TRY(fans("nn_init_kaiming_uniform", t, &fan_in, &fan_out));
    double gain = sqrt(2.0 / (1.0 + (double)a * a));
    float bound = (float)(gain * sqrt(3.0 / fan_in));
    return nn_init_uniform(t, -bound, bound);
}

/* Box-Muller on the context's generator: PyTorch's nn.init.normal_ (as
 * Embedding's weights), not its bit stream. */
nn_status nn_init_normal(nn_tensor *t, float mean, float std) {
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "nn_init_normal: tensor is NULL");
    if (t->dtype != NN_F32) return nn_set_error(NN_ERR_DTYPE, "nn_init_normal: tensor must be float32");
    if (!isfinite(mean) || !isfinite(std) || std < 0.0f)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_init_normal: need a finite mean and std >= 0, got mean %g std %g",
                            mean, std);
    float *values = malloc((size_t)t->numel * sizeof *values);
    if (!values) return nn_set_error(NN_ERR_MEMORY, "nn_init_normal: out of host memory");
    for (int64_t i = 0; i < t->numel; i += 2) {
        const double u1 = 1.0 - (double)nn_rng_uniform(&t->ctx->rng); /* in (0, 1]: log is finite */
        const double u2 = (double)nn_rng_uniform(&t->ctx->rng), radius = sqrt(-2.0 * log(u1));
        values[i] = mean + std * (float)(radius * cos(2.0 * M_PI * u2));
        if (i + 1 < t->numel) values[i + 1] = mean + std * (float)(radius * sin(2.0 * M_PI * u2));
    }
    nn_status status = nn_tensor_write(t, values, (size_t)t->numel * sizeof *values);
    free(values);
    return status;
}
