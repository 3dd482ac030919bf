/* The fused Linear -> ReLU -> Linear kernels (kernels.h,
 * nn_linear_head_params) on Vulkan: linear_head_forward.comp and
 * linear_head_data.comp, built per head shape (the numbers of weights each
 * invocation holds in registers are specialization constants:
 * vk_pipeline_special); linear_head_loss.comp does both with the softmax
 * cross-entropy between them. They are made for the small layers at the end
 * of a classifier, where a step's time goes to the barriers between layers,
 * and vk_linear_head_fuses (the backend's supports) says yes only there; they take any sizes within
 * the limits below and refuse the rest by name. */
#include <stdio.h>

#include "backends/linear_head.h"
#include "base/error.h"
#include "vk_backend.h"

#define THREADS 256
/* Rows per workgroup (linear_head.glsl's ROWS): one, as more workgroups,
 * each reading all the weights, beat fewer that share them (bench/README.md). */
#define ROWS 1
#define MAX_FEATURES 256 /* per layer: one invocation per feature */
#define LANES 8          /* forward: invocations sharing an output */
#define MAX_HELD 64      /* weights an invocation holds in registers */

static int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

/* The forward's constants: passes and weights per lane of each layer. */
static void forward_constants(const nn_linear_head_params *p, uint32_t c[4]) {
    const int32_t per_pass = THREADS / LANES;
    c[0] = (uint32_t)ceil_div(p->hidden, per_pass);
    c[1] = (uint32_t)ceil_div(p->in, LANES);
    c[2] = (uint32_t)ceil_div(p->out, per_pass);
    c[3] = (uint32_t)ceil_div(p->hidden, LANES);
}

/* The data gradient's: parts and weights per invocation of each layer. */
static void data_constants(const nn_linear_head_params *p, uint32_t c[4]) {
    c[0] = (uint32_t)(THREADS / p->hidden);
    c[1] = (uint32_t)ceil_div(p->out, (int32_t)c[0]);
    c[2] = (uint32_t)(THREADS / p->in);
    c[3] = (uint32_t)ceil_div(p->hidden, (int32_t)c[2]);
}

/* NULL when the kernels take p, else what they cannot take. */
static const char *unsupported(const nn_linear_head_params *p) {
    if (p->in < 1 || p->hidden < 1 || p->out < 1) return "a layer with no features";
    if (p->in > MAX_FEATURES || p->hidden > MAX_FEATURES || p->out > MAX_FEATURES)
        return "a layer of more than 256 features";
    uint32_t f[VK_SPECIAL_CONSTANTS] = {0}, d[VK_SPECIAL_CONSTANTS] = {0};
    forward_constants(p, f);
    data_constants(p, d);
    if (f[0] * f[1] > MAX_HELD || f[2] * f[3] > MAX_HELD || d[1] > MAX_HELD || d[3] > MAX_HELD)
        return "more weights than a workgroup holds in registers";
    if ((int64_t)ceil_div(p->rows, ROWS) > (int64_t)VK_MAX_GROUPS) return "more rows than one dispatch takes";
    return NULL;
}

bool vk_linear_head_fuses(nn_backend *self, const nn_linear_head_params *p) {
    (void)self;
    const int64_t macs = (int64_t)p->rows * ((int64_t)p->in * p->hidden + (int64_t)p->hidden * p->out);
    return vk_latency_wanted(macs) && !unsupported(p);
}

/* The cross-entropy kernel binds 12 buffers: a device binding fewer runs
 * the head and the loss apart. */
bool vk_linear_head_loss_fuses(nn_backend *self, const nn_linear_head_params *p) {
    return vk_linear_head_fuses(self, p) &&
           ((vk_backend *)self)->arg_bindings >= (uint32_t)nn_kernel_arg_count(NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY);
}

/* NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY: the forward's and the data
 * gradient's constants (linear_head_loss.comp). */
static nn_status cross_entropy(vk_backend *vk, const nn_buffer_ref *a, const nn_linear_head_params *p) {
    NN_TRY(nn_linear_head_loss_args_check("vulkan", p, a));
    VK_PUSH(LINEAR_HEAD_LOSS) push = {.rows = (uint32_t)p->rows, .in_features = (uint32_t)p->in,
                                      .hidden = (uint32_t)p->hidden, .out_features = (uint32_t)p->out,
                                      .mask_input = (uint32_t)p->mask_input, .given_a = a[2].buffer != NULL,
                                      .given_b = a[4].buffer != NULL, .given_dh = a[10].buffer != NULL,
                                      .given_dx = a[11].buffer != NULL};
    uint32_t constants[VK_SPECIAL_CONSTANTS] = {0};
    forward_constants(p, constants);
    data_constants(p, constants + 4);
    if (vk->labels)
        snprintf(vk->profile_label, sizeof vk->profile_label, "linear head cross-entropy %dx%d-%d-%d", p->rows,
                 p->in, p->hidden, p->out);
    return vk_record_special(vk, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, VK_PIPE_LINEAR_HEAD_LOSS, constants, a, 12,
                             NULL, VK_PUSH_REF(push), (uint32_t)p->rows, 1, 1);
}

/* The checks of every kernel of the head: its parameters, and sizes the kernels take. */
static nn_status check(nn_kernel kernel, const nn_linear_head_params *p) {
    NN_TRY(nn_linear_head_params_check("vulkan", kernel, p));
    const char *why = p->rows == 0 ? NULL : unsupported(p);
    if (why)
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: the fused kernels do not take %s (run the layers unfused)",
                            nn_kernel_name(kernel), why);
    return NN_OK;
}

nn_status vk_run_linear_head_cross_entropy(vk_backend *vk, const nn_linear_head_params *p, const nn_buffer_ref *a) {
    NN_TRY(check(NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, p));
    return p->rows == 0 ? NN_OK : cross_entropy(vk, a, p);
}

/* The forward and the data gradient. */
static nn_status layers(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_linear_head_params *p) {
    NN_TRY(check(kernel, p));
    if (p->rows == 0) return NN_OK;
    const bool forward = kernel == NN_KERNEL_LINEAR_HEAD_FORWARD;
    VK_PUSH(LINEAR_HEAD) push = {.rows = (uint32_t)p->rows, .in_features = (uint32_t)p->in,
                                 .hidden = (uint32_t)p->hidden, .out_features = (uint32_t)p->out,
                                 .mask_input = (uint32_t)p->mask_input, .accumulate = (uint32_t)p->accumulate,
                                 /* forward: the biases given; data gradient: dx given */
                                 .given_a = forward ? a[2].buffer != NULL : a[6].buffer != NULL,
                                 .given_b = forward && a[4].buffer != NULL};
    if (!forward && p->mask_input && !a[4].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: mask_input needs x", nn_kernel_name(kernel));
    uint32_t constants[VK_SPECIAL_CONSTANTS] = {0};
    if (forward) forward_constants(p, constants);
    else data_constants(p, constants);
    if (vk->labels)
        snprintf(vk->profile_label, sizeof vk->profile_label, "linear head %s %dx%d-%d-%d",
                 forward ? "forward" : "data", p->rows, p->in, p->hidden, p->out);
    return vk_record_special(vk, kernel, forward ? VK_PIPE_LINEAR_HEAD_FORWARD : VK_PIPE_LINEAR_HEAD_DATA, constants,
                             a, 7, NULL, VK_PUSH_REF(push), (uint32_t)ceil_div(p->rows, ROWS), 1, 1);
}

nn_status vk_run_linear_head_forward(vk_backend *vk, const nn_linear_head_params *p, const nn_buffer_ref *a) {
    return layers(vk, NN_KERNEL_LINEAR_HEAD_FORWARD, a, p);
}

nn_status vk_run_linear_head_backward_data(vk_backend *vk, const nn_linear_head_params *p, const nn_buffer_ref *a) {
    return layers(vk, NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA, a, p);
}
