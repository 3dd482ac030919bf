/* A user's own operation and optimizer with nn-engine's C API
 * (include/nn_custom.h): a SiLU-gated linear unit whose gate is a custom
 * kernel (a GLSL compute shader on the GPU, a C function on the CPU) with
 * its own backward, trained by Lion written as a custom optimizer, on
 * Fashion-MNIST (an IDX pair).
 *
 *     make examples
 *     build/examples/custom_ops /usr/share/datasets/fashion-mnist [cpu|vulkan|auto] [epochs] [limit] [hidden] [lr]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"

/* ---- the gate: y = silu(a) * b, and its gradients packed in [2, ...] ---- */

static const char kGate[] =
    "void main() {\n"
    "    uint i = NN_INDEX.x;\n"
    "    if (i >= NN_GRID.x) return;\n"
    "    float a = NN_LOAD(0, i);\n"
    "    NN_STORE(2, i, a / (1.0 + exp(-a)) * NN_LOAD(1, i));\n"
    "}\n";

static int gate_cpu(nn_custom_cpu_call *c) {
    const float *a = c->buffers[0], *b = c->buffers[1];
    float *y = c->buffers[2];
    for (uint32_t i = 0; i < c->grid[0]; i++) y[i] = a[i] / (1.0f + expf(-a[i])) * b[i];
    return 0;
}

static const char kGateGrad[] =
    "void main() {\n"
    "    uint i = NN_INDEX.x, n = NN_GRID.x;\n"
    "    if (i >= n) return;\n"
    "    float a = NN_LOAD(0, i), b = NN_LOAD(1, i), dy = NN_LOAD(2, i);\n"
    "    float s = 1.0 / (1.0 + exp(-a));\n"
    "    NN_STORE(3, i, dy * s * (1.0 + a * (1.0 - s)) * b);\n"
    "    NN_STORE(3, n + i, dy * a * s);\n"
    "}\n";

static int gate_grad_cpu(nn_custom_cpu_call *c) {
    const float *a = c->buffers[0], *b = c->buffers[1], *dy = c->buffers[2];
    float *g = c->buffers[3];
    const uint32_t n = c->grid[0];
    for (uint32_t i = 0; i < n; i++) {
        const float s = 1.0f / (1.0f + expf(-a[i]));
        g[i] = dy[i] * s * (1.0f + a[i] * (1.0f - s)) * b[i];
        g[n + i] = dy[i] * a[i] * s;
    }
    return 0;
}

static nn_custom_kernel *gate_kernel, *gate_grad_kernel, *lion_kernel;

static nn_tensor *output_like(nn_custom_kernel *k, nn_tensor *const *in, int count, int lead) {
    int64_t shape[NN_MAX_DIMS] = {2};
    const int ndim = nn_tensor_ndim(in[0]);
    for (int d = 0; d < ndim; d++) shape[d + lead] = nn_tensor_dim(in[0], d);
    const uint32_t grid[3] = {(uint32_t)nn_tensor_numel(in[0]), 1, 1};
    return nn_custom_call(k, in, count, &(nn_custom_output){NN_F32, ndim + lead, shape}, NULL, 0, grid);
}

static nn_status gate_backward(nn_function_call *call) {
    nn_tensor *in[3] = {call->inputs[0], call->inputs[1], call->grad_output};
    nn_tensor *packed = output_like(gate_grad_kernel, in, 3, 1);
    if (!packed) return nn_last_status();
    call->grad_inputs[0] = nn_select(packed, 0, 0);
    call->grad_inputs[1] = nn_select(packed, 0, 1);
    return call->grad_inputs[0] && call->grad_inputs[1] ? NN_OK : nn_last_status();
}

/* For an ONNX export: the same in library operations. */
static nn_tensor *gate_compose(nn_tensor *const *in, int count, void *user) {
    return nn_mul(nn_silu(in[0]), in[1]);
}

static const nn_function_def kGateFunction = {.name = "silu_gate", .backward = gate_backward,
                                              .compose = gate_compose};

static nn_tensor *silu_gate(nn_tensor *a, nn_tensor *b) {
    nn_ctx *ctx = nn_tensor_ctx(a);
    nn_tensor *in[2] = {a, b};
    const bool was = nn_ctx_set_grad_enabled(ctx, false);
    nn_tensor *y = output_like(gate_kernel, in, 2, 0);
    nn_ctx_set_grad_enabled(ctx, was);
    return y ? nn_function_apply(&kGateFunction, in, 2, y, NULL, 0, NULL) : NULL;
}

/* ---- the model: 784 -> gated hidden -> 10, as a module ---- */

static nn_tensor *gated_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *flat = nn_flatten(x);
    nn_tensor *a = nn_module_forward(nn_module_child(self, "gate"), flat);
    nn_tensor *b = nn_module_forward(nn_module_child(self, "value"), flat);
    return nn_module_forward(nn_module_child(self, "out"), silu_gate(a, b));
}

static nn_module *gated_classifier(nn_ctx *ctx, int hidden) {
    nn_module *m = nn_module_new(ctx, "GatedClassifier", gated_forward, NULL, NULL);
    if (!m) return NULL;
    if (nn_module_add_child(m, "gate", nn_linear_layer(ctx, 784, hidden, NN_INIT_KAIMING_UNIFORM)) != NN_OK ||
        nn_module_add_child(m, "value", nn_linear_layer(ctx, 784, hidden, NN_INIT_KAIMING_UNIFORM)) != NN_OK ||
        nn_module_add_child(m, "out", nn_linear_layer(ctx, hidden, 10, NN_INIT_KAIMING_UNIFORM)) != NN_OK) {
        nn_module_free(m);
        return NULL;
    }
    return m;
}

/* ---- Lion as a custom optimizer ---- */

/* buffers: param, grad, exp_avg, lr[1], skip[1] (absent without loss scaling); words: beta1, beta2, decay */
static const char kLion[] =
    "void main() {\n"
    "    uint i = NN_INDEX.x;\n"
    "    if (i >= NN_GRID.x) return;\n"
    "    if (NN_COUNT(4) > 0u && NN_LOAD(4, 0) != 0.0) return;\n"
    "    float lr = NN_LOAD(3, 0), b1 = NN_PARAM_FLOAT(0), b2 = NN_PARAM_FLOAT(1), wd = NN_PARAM_FLOAT(2);\n"
    "    float g = NN_LOAD(1, i), m = NN_LOAD(2, i);\n"
    "    NN_STORE(0, i, NN_LOAD(0, i) * (1.0 - lr * wd) - lr * sign(m * b1 + g * (1.0 - b1)));\n"
    "    NN_STORE(2, i, m * b2 + g * (1.0 - b2));\n"
    "}\n";

static int lion_cpu(nn_custom_cpu_call *c) {
    float *p = c->buffers[0], *m = c->buffers[2], w[3];
    const float *g = c->buffers[1], lr = ((const float *)c->buffers[3])[0];
    if (c->buffers[4] && ((const float *)c->buffers[4])[0] != 0.0f) return 0;
    memcpy(w, c->params, sizeof w);
    for (uint32_t i = 0; i < c->grid[0]; i++) {
        const float v = m[i] * w[0] + g[i] * (1.0f - w[0]);
        p[i] = p[i] * (1.0f - lr * w[2]) - lr * (float)((v > 0) - (v < 0));
        m[i] = m[i] * w[1] + g[i] * (1.0f - w[1]);
    }
    return 0;
}

static nn_status lion_update(const nn_custom_update *u) {
    nn_tensor *t[5] = {u->param, u->grad, u->state[0], u->lr, u->skip};
    const float words[3] = {u->options[0], u->options[1], u->weight_decay};
    return nn_custom_launch(lion_kernel, t, u->skip ? 5 : 4, 1u | 4u, words, sizeof words,
                            (uint32_t[3]){(uint32_t)u->n, 1, 1});
}

/* ---- training ---- */

static int fail(const char *what) {
    fprintf(stderr, "custom_ops: %s: %s\n", what, nn_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s IDX_DIR [cpu|vulkan|auto] [epochs] [limit] [hidden] [lr]\n", argv[0]);
        return 2;
    }
    const char *device = argc > 2 ? argv[2] : "auto";
    const int epochs = argc > 3 ? atoi(argv[3]) : 2, hidden = argc > 5 ? atoi(argv[5]) : 256;
    const int64_t limit = argc > 4 ? atoll(argv[4]) : 0;
    const float lr = argc > 6 ? (float)atof(argv[6]) : 1e-4f; /* Lion's: several times below Adam's */
    if (epochs < 1 || hidden < 1 || limit < 0 || !(lr > 0)) {
        fprintf(stderr, "custom_ops: epochs and hidden must be >= 1, limit >= 0, lr > 0\n");
        return 2;
    }
    nn_dataset train, test;
    bool validation;
    if (nn_dataset_load_dir(argv[1], 0.1, 0, &train, &test, &validation) != NN_OK) return fail(argv[1]);
    nn_dataset_truncate(&train, limit);
    nn_dataset_truncate(&test, limit);
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .seed = 1});
    if (!ctx) return fail(device);
    const bool glsl = nn_custom_glsl_available();
    gate_kernel = nn_custom_kernel_new(&(nn_custom_kernel_desc){.name = "silu_gate", .cpu = gate_cpu,
                                                                .glsl = glsl ? kGate : NULL});
    gate_grad_kernel = nn_custom_kernel_new(&(nn_custom_kernel_desc){.name = "silu_gate_grad", .cpu = gate_grad_cpu,
                                                                     .glsl = glsl ? kGateGrad : NULL});
    lion_kernel = nn_custom_kernel_new(&(nn_custom_kernel_desc){.name = "lion", .cpu = lion_cpu,
                                                                .glsl = glsl ? kLion : NULL});
    if (!gate_kernel || !gate_grad_kernel || !lion_kernel) return fail("nn_custom_kernel_new");
    nn_module *model = gated_classifier(ctx, hidden);
    if (!model) return fail("the model");
    nn_tensor *params[16];
    const int count = nn_module_param_count(model);
    for (int i = 0; i < count; i++) params[i] = nn_module_param(model, i);
    const nn_param_group group = {params, count, lr, 0.1f, false};
    const nn_custom_optimizer_desc lion = {.name = "user_lion", .states = {"exp_avg"}, .state_count = 1,
                                           .options = {"beta1", "beta2"}, .option_values = {0.9f, 0.99f},
                                           .option_count = 2, .update = lion_update};
    nn_optimizer *opt = nn_custom_optimizer_new(&lion, &group, 1);
    if (!opt) return fail("nn_custom_optimizer_new");
    printf("device %s, %lld training images\n", nn_ctx_device_name(ctx), (long long)train.count);

    enum { BATCH = 128 };
    const int64_t shape[4] = {BATCH, 1, 28, 28};
    float *x = malloc(sizeof(float) * BATCH * 784);
    int32_t labels[BATCH];
    int64_t *order = malloc(sizeof *order * (size_t)(train.count > test.count ? train.count : test.count));
    nn_tensor *xt = nn_tensor_new(ctx, NN_F32, 4, shape), *yt = nn_tensor_new(ctx, NN_I32, 1, shape);
    if (!x || !order || !xt || !yt) return fail("memory");
    int status = 0;
    for (int epoch = 0; epoch < epochs && !status; epoch++) {
        nn_shuffle_indices(order, train.count, 1, (uint64_t)epoch);
        double loss_sum = 0;
        int64_t steps = 0;
        for (int64_t at = 0; at + BATCH <= train.count && !status; at += BATCH, steps++) {
            nn_dataset_gather(&train, order + at, BATCH, 0.2860f, 0.3530f, x, labels);
            float loss_value;
            nn_tensor *loss;
            if (nn_tensor_write(xt, x, sizeof(float) * BATCH * 784) != NN_OK ||
                nn_tensor_write(yt, labels, sizeof labels) != NN_OK || nn_optimizer_zero_grad(opt) != NN_OK ||
                !(loss = nn_module_forward_loss(model, xt, yt, NULL)) || nn_backward(loss) != NN_OK ||
                nn_optimizer_step(opt) != NN_OK || nn_tensor_read(loss, &loss_value, sizeof loss_value) != NN_OK ||
                nn_ctx_step_end(ctx) != NN_OK)
                status = fail("a training step");
            else loss_sum += loss_value;
        }
        int64_t correct = 0, seen = 0;
        nn_module_set_training(model, false);
        for (int64_t i = 0; i < test.count; i++) order[i] = i;
        for (int64_t at = 0; at + BATCH <= test.count && !status; at += BATCH) {
            nn_dataset_gather(&test, order + at, BATCH, 0.2860f, 0.3530f, x, labels);
            float logits[BATCH * 10];
            nn_tensor *y;
            if (nn_tensor_write(xt, x, sizeof(float) * BATCH * 784) != NN_OK || !(y = nn_module_forward(model, xt)) ||
                nn_tensor_read(y, logits, sizeof logits) != NN_OK || nn_ctx_step_end(ctx) != NN_OK) {
                status = fail("a test batch");
                break;
            }
            for (int r = 0; r < BATCH; r++, seen++) {
                int best = 0;
                for (int c = 1; c < 10; c++) best = logits[r * 10 + c] > logits[r * 10 + best] ? c : best;
                correct += best == labels[r];
            }
        }
        nn_module_set_training(model, true);
        if (!status)
            printf("epoch %d/%d  train loss %.4f  test acc %6.2f%%\n", epoch + 1, epochs,
                   steps ? loss_sum / (double)steps : 0.0, seen ? 100.0 * (double)correct / (double)seen : 0.0);
    }
    free(x);
    free(order);
    nn_tensor_free(xt);
    nn_tensor_free(yt);
    nn_optimizer_free(opt);
    nn_module_free(model);
    nn_custom_kernel_free(gate_kernel);
    nn_custom_kernel_free(gate_grad_kernel);
    nn_custom_kernel_free(lion_kernel);
    nn_ctx_free(ctx);
    nn_dataset_free(&train);
    nn_dataset_free(&test);
    return status;
}
