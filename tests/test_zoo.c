/* The torchvision-form zoo (zoo_resnet.c, zoo_mobilenet.c): arguments
 * refused with messages naming the function, argument and value; output
 * shapes; evaluation mode deterministic; nn_load_module_except replacing
 * a classifier. Logits and names are checked against torchvision in
 * tests/io/test_zoo_torchvision.py, gradients in the same file. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn_engine.h"
#include "test.h"

static nn_ctx *cpu(uint64_t seed) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 2, .seed = seed});
    CHECK_MSG(ctx, "%s", nn_last_error());
    return ctx;
}

static void check_refused(nn_module *net, const char *fragment_a, const char *fragment_b) {
    CHECK(net == NULL);
    nn_module_free(net);
    CHECK_MSG(strstr(nn_last_error(), fragment_a) && strstr(nn_last_error(), fragment_b), "message: %s",
              nn_last_error());
}

TEST(zoo_refuses_bad_arguments_naming_them) {
    nn_ctx *ctx = cpu(1);
    check_refused(nn_resnet18(ctx, 0), "nn_resnet18: num_classes", "got 0");
    check_refused(nn_resnet34(ctx, -3), "nn_resnet34: num_classes", "got -3");
    check_refused(nn_resnet50(NULL, 10), "nn_resnet50", "ctx is NULL");
    check_refused(nn_resnet18_cifar(ctx, 0, 10), "nn_resnet18_cifar: in_channels", "got 0");
    check_refused(nn_mobilenet_v2(ctx, 0), "nn_mobilenet_v2: num_classes", "got 0");
    check_refused(nn_vit_tiny(ctx, 1, 30, 10), "nn_vision_transformer", "image size (30)");
    check_refused(nn_vision_transformer(ctx, NULL), "nn_vision_transformer", "must not be NULL");
    check_refused(nn_gpt(ctx, &(nn_gpt_options){.vocab_size = 256, .context = 8, .width = 10, .depth = 1, .heads = 3}),
                  "nn_gpt", "the heads must divide the width");
    check_refused(nn_gpt_mini(ctx, 0), "nn_gpt", "context 0");
    check_refused(nn_self_attention_layer(ctx, 6, 4, true, false), "nn_self_attention_layer", "num_heads (4)");
    /* A GPT takes int32 tokens no longer than its context: it says so. */
    nn_module *gpt = nn_gpt(ctx, &(nn_gpt_options){.vocab_size = 7, .context = 4, .width = 8, .depth = 1, .heads = 2});
    nn_tensor *tokens = nn_tensor_new(ctx, NN_I32, 2, (int64_t[]){1, 5});
    CHECK(gpt && tokens && nn_module_forward(gpt, tokens) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "1 <= T <= the context 4") != NULL, "message: %s", nn_last_error());
    nn_ctx_step_end(ctx);
    nn_tensor_free(tokens);
    nn_module_free(gpt);
    /* A ResNet's input must have its channels: the convolution says so. */
    nn_module *net = nn_resnet18_cifar(ctx, 2, 5);
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, (int64_t[]){2, 3, 9, 9});
    CHECK(nn_module_forward(net, x) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "conv") != NULL, "message: %s", nn_last_error());
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_module_free(net);
    nn_ctx_free(ctx);
}

/* Logits [batch, classes] of a random input, in evaluation mode. */
static void check_eval_output(nn_ctx *ctx, nn_module *net, int64_t channels, int64_t size, int classes) {
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, (int64_t[]){2, channels, size, size});
    nn_init_uniform(x, -1.0f, 1.0f);
    nn_module_set_training(net, false);
    float first[2 * 16], second[2 * 16];
    for (int pass = 0; pass < 2; pass++) {
        nn_tensor *y = nn_module_forward(net, x);
        CHECK_MSG(y, "%s", nn_last_error());
        if (!y) break;
        CHECK(nn_tensor_ndim(y) == 2 && nn_tensor_dim(y, 0) == 2 && nn_tensor_dim(y, 1) == classes);
        CHECK(nn_tensor_read(y, pass ? second : first, sizeof(float) * 2 * (size_t)classes) == NN_OK);
        nn_ctx_step_end(ctx);
    }
    CHECK(memcmp(first, second, sizeof(float) * 2 * (size_t)classes) == 0); /* no dropout, no batch statistics */
    bool differ = false;
    for (int c = 0; c < classes; c++) differ |= first[c] != first[classes + c];
    CHECK(differ);
    nn_tensor_free(x);
}

TEST(zoo_models_give_logits_of_their_classes) {
    nn_ctx *ctx = cpu(2);
    nn_module *cifar = nn_resnet18_cifar(ctx, 1, 7);
    nn_module *mobile = nn_mobilenet_v2(ctx, 5);
    nn_module *resnet = nn_resnet50(ctx, 3);
    CHECK_MSG(cifar && mobile && resnet, "%s", nn_last_error());
    if (cifar) check_eval_output(ctx, cifar, 1, 11, 7);
    if (mobile) check_eval_output(ctx, mobile, 3, 33, 5);
    if (resnet) check_eval_output(ctx, resnet, 3, 35, 3);
    CHECK(strcmp(nn_module_kind(resnet), "ResNet") == 0 && strcmp(nn_module_kind(mobile), "MobileNetV2") == 0);
    CHECK(nn_module_get_buffer(resnet, "layer3.0.downsample.1.running_var") != NULL);
    CHECK(nn_module_get_parameter(mobile, "features.17.conv.2.weight") != NULL);
    nn_module_free(cifar);
    nn_module_free(mobile);
    nn_module_free(resnet);
    nn_ctx_free(ctx);
}

static bool same_values(nn_tensor *a, nn_tensor *b) {
    size_t n = (size_t)nn_tensor_numel(a);
    float *va = malloc(n * sizeof *va), *vb = malloc(n * sizeof *vb);
    bool same = va && vb && n == (size_t)nn_tensor_numel(b) && nn_tensor_read(a, va, n * 4) == NN_OK &&
                nn_tensor_read(b, vb, n * 4) == NN_OK && memcmp(va, vb, n * 4) == 0;
    free(va);
    free(vb);
    return same;
}

TEST(load_module_except_replaces_the_classifier_only) {
    char path[] = "/tmp/nn_zoo_except_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    nn_ctx *ctx = cpu(3);
    nn_module *source = nn_resnet18_cifar(ctx, 1, 10);
    nn_module *target = nn_resnet18_cifar(ctx, 1, 2); /* other initial values: another draw */
    CHECK(nn_save_module(source, path) == NN_OK);
    nn_tensor *fc_before = nn_tensor_new(ctx, NN_F32, 2, (int64_t[]){2, 512});
    nn_tensor_copy(fc_before, nn_module_get_parameter(target, "fc.weight"));
    /* Strict: fc's shape differs, so nothing loads, naming it. */
    CHECK(nn_load_module(target, path) != NN_OK);
    CHECK_MSG(strstr(nn_last_error(), "fc.weight"), "%s", nn_last_error());
    CHECK(!same_values(nn_module_get_parameter(target, "conv1.weight"), nn_module_get_parameter(source, "conv1.weight")));
    CHECK(nn_load_module_except(target, path, "fc") == NN_OK);
    for (int i = 0; i < nn_module_state_count(target); i++) {
        const char *name = nn_module_state_name(target, i);
        if (strncmp(name, "fc.", 3) == 0) continue;
        CHECK_MSG(same_values(nn_module_state(target, i), nn_module_get_parameter(source, name)
                                                              ? nn_module_get_parameter(source, name)
                                                              : nn_module_get_buffer(source, name)),
                  "%s not loaded", name);
    }
    CHECK(same_values(nn_module_get_parameter(target, "fc.weight"), fc_before));
    /* Arguments: a child that is not there, and an empty path. */
    CHECK(nn_load_module_except(target, path, "head") != NN_OK);
    CHECK_MSG(strstr(nn_last_error(), "nn_load_module_except") && strstr(nn_last_error(), "no child 'head'"), "%s",
              nn_last_error());
    CHECK(nn_load_module_except(target, path, "") != NN_OK);
    CHECK_MSG(strstr(nn_last_error(), "child_path"), "%s", nn_last_error());
    /* A prefix that only starts a name ("layer1" of "layer10") is not under it: "bn" is no child. */
    CHECK(nn_load_module_except(target, path, "bn") != NN_OK);
    nn_tensor_free(fc_before);
    nn_module_free(source);
    nn_module_free(target);
    nn_ctx_free(ctx);
    unlink(path);
}
