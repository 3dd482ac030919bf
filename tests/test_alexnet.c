/* The AlexNet models: torchvision's state_dict names and shapes, the seed's
 * names, output shapes at 224 x 224, evaluation mode turning the classifier's
 * dropout off (two eval passes agree, two training passes do not), and
 * AdaptiveAvgPool2d's refusal of a size other than 6 x 6, naming it. The
 * numbers themselves are checked against PyTorch in tests/io/test_alexnet_torch.py. */
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"

static nn_ctx *cpu(void) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 2, .seed = 3});
    CHECK_MSG(ctx, "%s", nn_last_error());
    return ctx;
}

static void check_params(nn_module *net, const char *const *names, const int64_t (*shapes)[4], int count) {
    CHECK(nn_module_param_count(net) == count);
    for (int i = 0; i < count && i < nn_module_param_count(net); i++) {
        CHECK_MSG(strcmp(nn_module_param_name(net, i), names[i]) == 0, "parameter %d is %s, want %s", i,
                  nn_module_param_name(net, i), names[i]);
        nn_tensor *p = nn_module_param(net, i);
        int ndim = shapes[i][1] ? (shapes[i][2] ? 4 : 2) : 1;
        CHECK_MSG(nn_tensor_ndim(p) == ndim, "%s: %d-D", names[i], nn_tensor_ndim(p));
        for (int d = 0; d < ndim && d < nn_tensor_ndim(p); d++)
            CHECK_MSG(nn_tensor_dim(p, d) == shapes[i][d], "%s dim %d = %lld, want %lld", names[i], d,
                      (long long)nn_tensor_dim(p, d), (long long)shapes[i][d]);
    }
}

TEST(alexnet_tv_has_torchvision_state_dict_names_and_shapes) {
    nn_ctx *ctx = cpu();
    if (!ctx) return;
    nn_module *net = nn_alexnet_tv(ctx, 7, NN_INIT_KAIMING_UNIFORM);
    CHECK_MSG(net, "%s", nn_last_error());
    static const char *const names[] = {
        "features.0.weight", "features.0.bias", "features.3.weight", "features.3.bias", "features.6.weight",
        "features.6.bias", "features.8.weight", "features.8.bias", "features.10.weight", "features.10.bias",
        "classifier.1.weight", "classifier.1.bias", "classifier.4.weight", "classifier.4.bias",
        "classifier.6.weight", "classifier.6.bias"};
    static const int64_t shapes[][4] = {
        {64, 3, 11, 11}, {64}, {192, 64, 5, 5}, {192}, {384, 192, 3, 3}, {384}, {256, 384, 3, 3}, {256},
        {256, 256, 3, 3}, {256}, {4096, 9216}, {4096}, {4096, 4096}, {4096}, {7, 4096}, {7}};
    if (net) check_params(net, names, shapes, 16);
    nn_module_free(net);
    CHECK(nn_alexnet_tv(ctx, 0, NN_INIT_KAIMING_UNIFORM) == NULL && strstr(nn_last_error(), "classes"));
    nn_ctx_free(ctx);
}

TEST(alexnet_seed_form_names_and_train_eval_outputs) {
    nn_ctx *ctx = cpu();
    if (!ctx) return;
    nn_module *net = nn_alexnet(ctx, 3, NN_INIT_XAVIER_UNIFORM);
    CHECK_MSG(net, "%s", nn_last_error());
    static const char *const names[] = {"c1.weight", "c1.bias", "c2.weight", "c2.bias", "c3.weight", "c3.bias",
                                        "c4.weight", "c4.bias", "c5.weight", "c5.bias", "l1.weight", "l1.bias",
                                        "l2.weight", "l2.bias", "l3.weight", "l3.bias"};
    static const int64_t shapes[][4] = {
        {64, 3, 11, 11}, {64}, {192, 64, 5, 5}, {192}, {384, 192, 3, 3}, {384}, {256, 384, 3, 3}, {256},
        {256, 256, 3, 3}, {256}, {512, 9216}, {512}, {512, 512}, {512}, {3, 512}, {3}};
    if (net) check_params(net, names, shapes, 16);
    int64_t shape[4] = {1, 3, 224, 224};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, shape);
    CHECK(x && nn_init_uniform(x, -1, 1) == NN_OK);
    nn_tensor *y = net && x ? nn_module_forward(net, x) : NULL;
    CHECK_MSG(y && nn_tensor_ndim(y) == 2 && nn_tensor_dim(y, 0) == 1 && nn_tensor_dim(y, 1) == 3, "%s",
              nn_last_error());
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_module_free(net);
    nn_ctx_free(ctx);
}

TEST(alexnet_tv_dropout_only_in_training_and_avgpool_adapts_other_sizes) {
    nn_ctx *ctx = cpu();
    if (!ctx) return;
    nn_module *net = nn_alexnet_tv(ctx, 5, NN_INIT_KAIMING_UNIFORM);
    int64_t shape[4] = {1, 3, 224, 224};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, shape);
    CHECK(net && x && nn_init_uniform(x, -1, 1) == NN_OK);
    float out[4][5];
    bool modes[4] = {true, true, false, false};
    for (int i = 0; net && x && i < 4; i++) {
        CHECK(nn_module_set_training(net, modes[i]) == NN_OK);
        nn_tensor *y = nn_module_forward(net, x);
        CHECK_MSG(y && nn_tensor_read(y, out[i], sizeof out[i]) == NN_OK, "%s", nn_last_error());
        nn_ctx_step_end(ctx);
    }
    CHECK_MSG(memcmp(out[0], out[1], sizeof out[0]) != 0, "two training passes drew the same dropout masks");
    CHECK_MSG(memcmp(out[2], out[3], sizeof out[2]) == 0, "two evaluation passes differ");
    /* 256 x 256 gives 7 x 7 features, averaged to 6 x 6 as torchvision's
     * AdaptiveAvgPool2d does: output i of 6 averages inputs i and i + 1 of 7
     * along each side */
    int64_t big[4] = {1, 3, 256, 256};
    nn_tensor *x2 = nn_tensor_new(ctx, NN_F32, 4, big);
    CHECK(x2 && nn_init_uniform(x2, -1, 1) == NN_OK);
    nn_tensor *y2 = net && x2 ? nn_module_forward(net, x2) : NULL;
    CHECK_MSG(y2 && nn_tensor_numel(y2) == 5, "%s", nn_last_error());
    float plane[49], pooled[36];
    for (int i = 0; i < 49; i++) plane[i] = (float)((i * 13) % 11);
    nn_tensor *features = nn_tensor_from_data(ctx, NN_F32, 4, (int64_t[]){1, 1, 7, 7}, plane);
    nn_tensor *p = features && net ? nn_module_forward(nn_module_child(net, "avgpool"), features) : NULL;
    CHECK_MSG(p && nn_tensor_numel(p) == 36 && nn_tensor_read(p, pooled, sizeof pooled) == NN_OK, "%s",
              nn_last_error());
    for (int i = 0; p && i < 6; i++)
        for (int j = 0; j < 6; j++) {
            const double want = (plane[i * 7 + j] + plane[i * 7 + j + 1] + plane[(i + 1) * 7 + j] +
                                 plane[(i + 1) * 7 + j + 1]) / 4.0;
            CHECK_CLOSE(pooled[i * 6 + j], want, 1e-6);
        }
    nn_ctx_step_end(ctx);
    nn_tensor_free(features);
    nn_tensor_free(x);
    nn_tensor_free(x2);
    nn_module_free(net);
    nn_ctx_free(ctx);
}
