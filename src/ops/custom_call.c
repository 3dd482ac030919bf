/* nn_custom_call and nn_custom_launch (include/nn_custom.h): a custom
 * kernel as an operation (a node whose forward zero-fills its output and
 * launches the CUSTOM kernel over its dense inputs and the output) and as
 * a command on existing tensors. Either way the launch goes through
 * nn_ctx_run, so a step capture records it and the schedules and barriers
 * follow the buffers it writes. */
#include <stdio.h>
#include <string.h>

#include "backends/custom_kernels.h"
#include "io/onnx_graph.h"
#include "ops.h"

/* The node's parameters: the launch, and the inputs' count. */
typedef struct custom_call_node {
    nn_custom_params launch;
    int32_t inputs;
} custom_call_node;

static nn_status refuse_in_capture(nn_ctx *ctx, const nn_custom_kernel *k) {
    if (ctx->recording && k->not_capturable)
        return nn_set_error(NN_ERR_STATE, "custom kernel %s is not capturable (nn_custom_kernel_desc.not_capturable): "
                            "run its step without a capture", k->name);
    return NN_OK;
}

static nn_status run_launch(nn_ctx *ctx, const nn_custom_params *launch, nn_tensor *const *tensors, int count) {
    const nn_custom_kernel *k = nn_custom_kernel_find(launch->id);
    if (!k) return nn_set_error(NN_ERR_STATE, "custom kernel #%d: the kernel was freed", (int)launch->id);
    NN_TRY(refuse_in_capture(ctx, k));
    nn_buffer_ref args[NN_CUSTOM_MAX_BUFFERS] = {{0}};
    for (int i = 0; i < count; i++) args[i] = nn_tensor_ref(tensors[i]);
    return nn_ctx_run(ctx, NN_KERNEL_CUSTOM, args, NN_CUSTOM_MAX_BUFFERS, launch);
}

static nn_status custom_call_forward(nn_node *node) {
    const custom_call_node *p = NN_NODE_PARAMS(node, custom_call_node);
    nn_tensor *tensors[NN_CUSTOM_MAX_BUFFERS];
    for (int i = 0; i < p->inputs; i++) tensors[i] = node->inputs[i];
    tensors[p->inputs] = node->output;
    nn_ctx *ctx = node->output->ctx;
    NN_TRY(nn_ctx_fill(ctx, nn_tensor_ref(node->output), 0.0f, (size_t)node->output->numel));
    return run_launch(ctx, &p->launch, tensors, p->inputs + 1);
}

static nn_status custom_call_refusal(exporter *x, const nn_node *node) {
    const custom_call_node *p = NN_NODE_PARAMS(node, custom_call_node);
    const nn_custom_kernel *k = nn_custom_kernel_find(p->launch.id);
    return nn_set_error(NN_ERR_ARGUMENT, "%s: custom kernel %s has no ONNX form (wrap it in a custom function whose "
                        "ONNX form is a composition, or export without it)", x->who, k ? k->name : "(freed)");
}

/* On the tape only to be traced: an input that wants a gradient is refused
 * when the call is made. */
static const nn_op nn_op_custom_call = {.name = "nn_custom_call",
                                        .forward = custom_call_forward,
                                        .backward = nn_no_gradient,
                                        .export_refusal = custom_call_refusal};

/* The launch's parameters, checked; `who` names the caller. */
static nn_status make_launch(const char *who, const nn_custom_kernel *k, const void *params, size_t params_size,
                             const uint32_t grid[3], unsigned written, nn_custom_params *out) {
    if (!k) return nn_set_error(NN_ERR_ARGUMENT, "%s: kernel is NULL", who);
    if (params_size > NN_CUSTOM_MAX_PARAMS || (params_size && !params))
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: %zu bytes of parameters%s; at most %d", who, k->name, params_size,
                            params ? "" : " from NULL", NN_CUSTOM_MAX_PARAMS);
    if (!grid || !grid[0] || !grid[1] || !grid[2])
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: the grid must be three counts >= 1", who, k->name);
    *out = (nn_custom_params){.id = k->id, .written = written, .params_size = (uint32_t)params_size};
    memcpy(out->grid, grid, sizeof out->grid);
    if (params_size) memcpy(out->params, params, params_size);
    return NN_OK;
}

/* The tensors: present, float32 or int32, of one context. */
static nn_status check_tensors(const char *who, const nn_custom_kernel *k, nn_tensor *const *tensors, int count,
                               int most) {
    if (count < 0 || count > most || (count && !tensors))
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: %d tensors; at most %d", who, k->name, count, most);
    for (int i = 0; i < count; i++) {
        if (!tensors[i]) return nn_set_error(NN_ERR_ARGUMENT, "%s %s: tensor %d is NULL", who, k->name, i);
        if (tensors[i]->ctx != tensors[0]->ctx)
            return nn_set_error(NN_ERR_STATE, "%s %s: tensor %d is on another context than tensor 0", who, k->name, i);
    }
    return NN_OK;
}

nn_tensor *nn_custom_call(nn_custom_kernel *kernel, nn_tensor *const *inputs, int count,
                          const nn_custom_output *output, const void *params, size_t params_size,
                          const uint32_t grid[3]) {
    const char *who = "nn_custom_call";
    custom_call_node node = {.inputs = count};
    if (make_launch(who, kernel, params, params_size, grid, NN_ARG(count), &node.launch) != NN_OK ||
        check_tensors(who, kernel, inputs, count, NN_CUSTOM_MAX_BUFFERS - 1) != NN_OK)
        return NULL;
    if (count == 0) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s %s: no input (the output's context is an input's)", who,
                                        kernel->name);
    if (!output || output->ndim < 1 || output->ndim > NN_MAX_DIMS || !output->shape ||
        (output->dtype != NN_F32 && output->dtype != NN_I32))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s %s: the output needs a dtype (float32 or int32) and 1 to %d sizes",
                            who, kernel->name, NN_MAX_DIMS);
    for (int d = 0; d < output->ndim; d++)
        if (output->shape[d] < 1)
            return NN_FAIL_NULL(NN_ERR_SHAPE, "%s %s: output size %lld in dimension %d; each must be >= 1", who,
                                kernel->name, (long long)output->shape[d], d);
    nn_ctx *ctx = inputs[0]->ctx;
    if (ctx->grad_enabled)
        for (int i = 0; i < count; i++)
            if (inputs[i]->requires_grad)
                return NN_FAIL_NULL(NN_ERR_STATE, "%s %s: input %d requires grad, and a custom kernel has no gradient "
                                    "of its own: call it inside a custom function (nn_function_apply) or with grad "
                                    "mode off", who, kernel->name, i);
    return nn_op_record(&nn_op_custom_call, inputs, count, &node, sizeof node, output->dtype, output->ndim,
                        output->shape);
}

nn_status nn_custom_launch(nn_custom_kernel *kernel, nn_tensor *const *tensors, int count, unsigned written,
                           const void *params, size_t params_size, const uint32_t grid[3]) {
    const char *who = "nn_custom_launch";
    nn_custom_params launch;
    NN_TRY(make_launch(who, kernel, params, params_size, grid, written, &launch));
    NN_TRY(check_tensors(who, kernel, tensors, count, NN_CUSTOM_MAX_BUFFERS));
    if (count == 0) return nn_set_error(NN_ERR_ARGUMENT, "%s %s: no tensor", who, kernel->name);
    if (written >> count)
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: written 0x%x names a tensor past the %d given", who, kernel->name,
                            written, count);
    nn_ctx *ctx = tensors[0]->ctx;
    NN_TRY(nn_ctx_enter(ctx, who));
    nn_status st = NN_OK;
    for (int i = 0; i < count && st == NN_OK; i++) {
        st = nn_tensor_materialize(tensors[i]);
        if (st == NN_OK && tensors[i]->layout != NN_LAYOUT_DENSE)
            st = nn_set_error(NN_ERR_ARGUMENT, "%s %s: tensor %d holds channels-last memory (a convolution's "
                              "result); a launch reads dense rows: nn_custom_call converts its inputs", who,
                              kernel->name, i);
    }
    if (st == NN_OK) st = nn_ctx_flush(ctx, NULL);
    if (st == NN_OK) st = run_launch(ctx, &launch, tensors, count);
    for (int i = 0; i < count && st == NN_OK; i++)
        if ((written >> i) & 1u) nn_tensor_written(tensors[i]); /* autograd refuses what read the old values */
    nn_ctx_leave(ctx);
    return st;
}
