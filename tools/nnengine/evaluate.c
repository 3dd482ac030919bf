#include "evaluate.h"

#include <stdlib.h>

#include "options.h"

/* Images per forward pass: up to 500 (small images, such as 1x28x28), fewer
 * for large images so that one pass reads at most 2^22 input values (16 MiB): at
 * 3x224x224 that is 27 images, whose AlexNet im2col buffers (120 MiB for
 * conv2) still fit the 128 MiB a software Vulkan device binds; 500 would
 * need 2.2 GiB for conv2's alone. */
#define EVAL_CHUNK_MAX 500
#define EVAL_CHUNK_VALUES ((int64_t)1 << 22)

int64_t count_correct(const float *logits, const int32_t *labels, int64_t rows, int classes) {
    int64_t correct = 0;
    for (int64_t i = 0; i < rows; i++) {
        const float *row = logits + i * classes;
        int best = 0;
        for (int c = 1; c < classes; c++)
            if (row[c] > row[best]) best = c;
        correct += best == labels[i];
    }
    return correct;
}

nn_status evaluate(nn_ctx *ctx, nn_module *net, const nn_dataset *data, normalization norm, int classes,
                   int64_t limit, progress *bar, double *loss, double *accuracy, confusion *matrix) {
    const int64_t count = option_first_or_all(limit, data->count);
    int64_t image = (int64_t)data->channels * data->height * data->width;
    int64_t chunk = image > 0 ? EVAL_CHUNK_VALUES / image : EVAL_CHUNK_MAX;
    if (chunk > EVAL_CHUNK_MAX) chunk = EVAL_CHUNK_MAX;
    if (chunk < 1) chunk = 1;
    float *x_host = malloc(sizeof(float) * chunk * image);
    float *logits = malloc(sizeof(float) * chunk * classes);
    int32_t *y_host = malloc(sizeof(int32_t) * chunk);
    int64_t *indices = malloc(sizeof(int64_t) * chunk);
    if (!x_host || !logits || !y_host || !indices) {
        free(x_host), free(logits), free(y_host), free(indices);
        nn_clear_error(); /* no library message: the caller reports host memory */
        return NN_ERR_MEMORY;
    }
    bool was_enabled = nn_ctx_set_grad_enabled(ctx, false);
    bool was_training = nn_module_is_training(net);
    nn_module_set_training(net, false); /* dropout off while evaluating */
    double loss_sum = 0;
    int64_t correct = 0;
    nn_status status = NN_OK;
    for (int64_t start = 0; status == NN_OK && start < count; start += chunk) {
        int64_t n = count - start < chunk ? count - start : chunk;
        if (bar) progress_evaluating(bar, start, count);
        for (int64_t i = 0; i < n; i++) indices[i] = start + i;
        status = nn_dataset_gather(data, indices, n, norm.mean, norm.std, x_host, y_host);
        int64_t x_shape[4] = {n, data->channels, data->height, data->width}, y_shape[1] = {n};
        nn_tensor *x = status == NN_OK ? nn_tensor_from_data(ctx, NN_F32, 4, x_shape, x_host) : NULL;
        nn_tensor *y = x ? nn_tensor_from_data(ctx, NN_I32, 1, y_shape, y_host) : NULL;
        nn_tensor *out = y ? nn_module_forward(net, x) : NULL;
        nn_tensor *batch_loss = out ? nn_softmax_cross_entropy(out, y) : NULL;
        float loss_value = 0;
        if (!batch_loss)
            status = nn_last_status() != NN_OK ? nn_last_status() : NN_ERR_STATE;
        if (status == NN_OK) status = nn_tensor_read(out, logits, sizeof(float) * n * classes);
        if (status == NN_OK) status = nn_tensor_read(batch_loss, &loss_value, sizeof loss_value);
        if (status == NN_OK) {
            loss_sum += (double)loss_value * n;
            correct += count_correct(logits, y_host, n, classes);
            if (matrix) confusion_add(matrix, logits, y_host, n);
        }
        nn_ctx_step_end(ctx);
        nn_tensor_free(x);
        nn_tensor_free(y);
    }
    nn_ctx_set_grad_enabled(ctx, was_enabled);
    nn_module_set_training(net, was_training);
    free(x_host), free(logits), free(y_host), free(indices);
    if (bar) progress_clear(bar);
    if (status == NN_OK) {
        *loss = loss_sum / count;
        *accuracy = (double)correct / count;
    }
    return status;
}
