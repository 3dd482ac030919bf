/* nn_module_set_forward_hook: called after each forward of its module with
 * the input and output, in the order the modules finish; replaced, removed,
 * and refused for a NULL module. */
#include <string.h>

#include "nn_engine.h"
#include "test.h"

typedef struct hook_log {
    int calls;
    char order[8][16];
    int64_t out_dims[8][2];
    nn_tensor *input[8];
} hook_log;

static void record(nn_module *m, nn_tensor *input, nn_tensor *output, void *user) {
    hook_log *log = user;
    if (log->calls >= 8) return;
    snprintf(log->order[log->calls], sizeof log->order[0], "%s", nn_module_kind(m));
    log->out_dims[log->calls][0] = nn_tensor_dim(output, 0);
    log->out_dims[log->calls][1] = nn_tensor_ndim(output) > 1 ? nn_tensor_dim(output, 1) : 0;
    log->input[log->calls] = input;
    log->calls++;
}

TEST(module_forward_hook_sees_each_output_in_finishing_order) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 3});
    nn_module *net = nn_sequential(ctx);
    CHECK(nn_sequential_append(net, "0", nn_linear_layer(ctx, 7, 5, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_sequential_append(net, "1", nn_relu_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "2", nn_linear_layer(ctx, 5, 3, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    hook_log log = {0};
    CHECK(nn_module_set_forward_hook(net, record, &log) == NN_OK);
    for (int i = 0; i < 3; i++) CHECK(nn_module_set_forward_hook(nn_module_child_at(net, i), record, &log) == NN_OK);
    float x_data[2 * 7];
    for (int i = 0; i < 14; i++) x_data[i] = (float)(i % 5) - 1.5f;
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 2, (int64_t[]){2, 7}, x_data);
    nn_tensor *y = nn_module_forward(net, x);
    CHECK(y != NULL);
    CHECK(log.calls == 4);
    const char *want[4] = {"Linear", "ReLU", "Linear", "Sequential"};
    const int64_t cols[4] = {5, 5, 3, 3};
    for (int i = 0; i < 4 && i < log.calls; i++) {
        CHECK_MSG(strcmp(log.order[i], want[i]) == 0, "call %d: %s, want %s", i, log.order[i], want[i]);
        CHECK(log.out_dims[i][0] == 2 && log.out_dims[i][1] == cols[i]);
    }
    CHECK(log.input[0] == x && log.input[3] == x);
    /* Replaced by NULL: no more calls from the root. */
    CHECK(nn_module_set_forward_hook(net, NULL, NULL) == NN_OK);
    log.calls = 0;
    CHECK(nn_module_forward(net, x) != NULL);
    CHECK(log.calls == 3);
    nn_ctx_step_end(ctx);
    CHECK(nn_module_set_forward_hook(NULL, record, &log) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "nn_module_set_forward_hook") && strstr(nn_last_error(), "module is NULL"));
    nn_tensor_free(x);
    nn_module_free(net);
    nn_ctx_free(ctx);
}
