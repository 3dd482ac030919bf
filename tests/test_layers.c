/* Layers, containers and initialisers: parameter names and shapes, the
 * initialisers' ranges and reproducibility, and layer outputs against the
 * same computation written with ops. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"

static nn_ctx *open_ctx(uint64_t seed) {
    nn_ctx_options o = {.device = "cpu", .threads = 2, .seed = seed};
    return nn_ctx_new(&o);
}

static float *read_all(nn_tensor *t) {
    float *values = malloc((size_t)nn_tensor_numel(t) * sizeof *values);
    nn_tensor_read(t, values, (size_t)nn_tensor_numel(t) * sizeof *values);
    return values;
}

TEST(layers_lenet5_parameters) {
    nn_ctx *ctx = open_ctx(1);
    nn_module *net = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    CHECK(net != NULL);
    static const char *names[] = {"c1.weight", "c1.bias", "c2.weight", "c2.bias", "l1.weight",
                                  "l1.bias",   "l2.weight", "l2.bias", "l3.weight", "l3.bias"};
    static const int64_t numel[] = {150, 6, 2400, 16, 30720, 120, 10080, 84, 840, 10};
    CHECK(nn_module_param_count(net) == 10);
    int64_t total = 0;
    for (int i = 0; i < 10 && i < nn_module_param_count(net); i++) {
        CHECK_MSG(strcmp(nn_module_param_name(net, i), names[i]) == 0, "param %d is %s, want %s", i,
                  nn_module_param_name(net, i), names[i]);
        CHECK(nn_tensor_numel(nn_module_param(net, i)) == numel[i]);
        CHECK(nn_tensor_requires_grad(nn_module_param(net, i)));
        total += nn_tensor_numel(nn_module_param(net, i));
    }
    CHECK(total == 44426); /* LeNet-5 with 256 flattened features */
    CHECK(strcmp(nn_module_kind(net), "Sequential") == 0);

    int64_t shape[4] = {3, 1, 28, 28};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, shape);
    nn_tensor *y = nn_module_forward(net, x);
    CHECK(y && nn_tensor_ndim(y) == 2 && nn_tensor_dim(y, 0) == 3 && nn_tensor_dim(y, 1) == 10);
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_module_free(net);
    nn_ctx_free(ctx);
}

/* Kaiming-uniform with a = sqrt(5) (PyTorch's default) bounds weights by
 * 1/sqrt(fan_in), as do the biases; Xavier by sqrt(6/(fan_in+fan_out)), with
 * zero biases. The values must also spread over the range, not sit at 0. */
static void check_range(nn_tensor *t, double bound, double zero_ok) {
    float *v = read_all(t);
    double max_abs = 0.0, mean = 0.0;
    int64_t n = nn_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        max_abs = fmax(max_abs, fabs(v[i]));
        mean += v[i] / (double)n;
    }
    CHECK_MSG(max_abs <= bound * (1 + 1e-6), "max |value| %g exceeds bound %g", max_abs, bound);
    if (zero_ok) CHECK(max_abs == 0.0);
    else if (n >= 100) {
        CHECK_MSG(max_abs > 0.9 * bound, "values use only %g of the bound %g", max_abs, bound);
        CHECK_MSG(fabs(mean) < 0.1 * bound, "mean %g is far from 0 (bound %g)", mean, bound);
    }
    free(v);
}

TEST(layers_initialisers) {
    nn_ctx *ctx = open_ctx(7);
    nn_module *conv = nn_conv2d_layer(ctx, 6, 16, 5, 1, 0, NN_INIT_KAIMING_UNIFORM);
    check_range(nn_module_param(conv, 0), 1.0 / sqrt(150.0), 0);
    check_range(nn_module_param(conv, 1), 1.0 / sqrt(150.0), 0);
    nn_module *fc = nn_linear_layer(ctx, 256, 120, NN_INIT_XAVIER_UNIFORM);
    check_range(nn_module_param(fc, 0), sqrt(6.0 / (256 + 120)), 0);
    check_range(nn_module_param(fc, 1), 0.0, 1);
    int64_t shape[4] = {8, 4, 3, 3};
    nn_tensor *t = nn_tensor_new(ctx, NN_F32, 4, shape);
    CHECK(nn_init_kaiming_uniform(t, 0.0f) == NN_OK); /* gain sqrt(2): bound sqrt(6/fan_in) */
    check_range(t, sqrt(6.0 / 36.0), 0);
    CHECK(nn_init_xavier_uniform(t, 2.0f) == NN_OK);
    check_range(t, 2.0 * sqrt(6.0 / (36.0 + 72.0)), 0);
    nn_tensor_free(t);
    nn_module_free(conv);
    nn_module_free(fc);
    nn_ctx_free(ctx);
}

TEST(layers_seeded_initialisation_is_reproducible) {
    float *first = NULL;
    for (int run = 0; run < 3; run++) {
        nn_ctx *ctx = open_ctx(run < 2 ? 42 : 43);
        nn_module *fc = nn_linear_layer(ctx, 30, 20, NN_INIT_KAIMING_UNIFORM);
        float *w = read_all(nn_module_param(fc, 0));
        if (run == 0) first = w;
        else {
            int same = memcmp(first, w, 600 * sizeof(float)) == 0;
            CHECK_MSG(run == 1 ? same : !same, "run %d: weights %s", run,
                      same ? "repeat with another seed" : "differ with the same seed");
            free(w);
        }
        nn_module_free(fc);
        nn_ctx_free(ctx);
    }
    free(first);
}

/* A Sequential of layers computes what the ops compute by hand. */
TEST(layers_sequential_matches_ops) {
    nn_ctx *ctx = open_ctx(5);
    nn_module *net = nn_sequential(ctx);
    CHECK(nn_sequential_append(net, "conv", nn_conv2d_layer(ctx, 2, 3, 3, 2, 1, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_sequential_append(net, "act", nn_relu_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "pool", nn_maxpool2d_layer(ctx, 2, 1)) == NN_OK);
    CHECK(nn_sequential_append(net, "flat", nn_flatten_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "fc", nn_linear_layer(ctx, 3 * 3 * 3, 4, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(strcmp(nn_module_param_name(net, 2), "fc.weight") == 0);
    int64_t shape[4] = {2, 2, 7, 7};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, shape);
    nn_init_uniform(x, -1.0f, 1.0f);
    nn_tensor *y = nn_module_forward(net, x);
    nn_tensor *h = nn_conv2d(x, nn_module_param(net, 0), nn_module_param(net, 1), 2, 1);
    nn_tensor *by_hand = nn_linear(nn_flatten(nn_maxpool2d(nn_relu(h), 2, 1)), nn_module_param(net, 2),
                                   nn_module_param(net, 3));
    CHECK(y && by_hand);
    if (y && by_hand) {
        float *a = read_all(y), *b = read_all(by_hand);
        for (int i = 0; i < 8; i++) CHECK(a[i] == b[i]);
        free(a);
        free(b);
    }
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_module_free(net);
    nn_ctx_free(ctx);
}
