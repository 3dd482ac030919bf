/* The C side of tests/io/test_zoo_torchvision.py: the zoo's torchvision
 * models built, loaded from a state_dict that torchvision saved, and run.
 * Tensors cross as raw little-endian float32 files.
 *
 *   nn_zoo_fixture params  MODEL CLASSES CHANNELS
 *       prints the parameter count, then one line per state_dict entry:
 *       "name numel"
 *   nn_zoo_fixture save    MODEL CLASSES CHANNELS SEED WEIGHTS
 *       the model's initial weights (context seed SEED)
 *   nn_zoo_fixture forward MODEL CLASSES CHANNELS WEIGHTS IN N H W OUT
 *       evaluation-mode logits of IN ([N, CHANNELS, H, W]) with WEIGHTS
 *       loaded strictly (nn_load_module), on the CPU
 *   nn_zoo_fixture grad    MODEL CLASSES CHANNELS WEIGHTS IN N H W LABELS OUT
 *       training mode (batch statistics): the softmax cross-entropy of IN
 *       against LABELS (int32 [N]), then every parameter's gradient in
 *       parameter order, into OUT (loss first); MobileNetV2's dropout off
 *       (classifier.0 in evaluation mode: its mask is not PyTorch's)
 *   nn_zoo_fixture grad-eval ...  the same in evaluation mode (running statistics)
 *
 * MODEL: resnet18 | resnet34 | resnet50 | mobilenet_v2 (CHANNELS must be
 * 3) | resnet18-cifar (CHANNELS input channels). Exit status 0 on
 * success; errors go to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"

static int fail(const char *what) {
    fprintf(stderr, "nn_zoo_fixture: %s: %s\n", what, nn_last_error());
    return 1;
}

static nn_module *build(nn_ctx *ctx, const char *name, int classes, int channels) {
    if (strcmp(name, "resnet18-cifar") == 0) return nn_resnet18_cifar(ctx, channels, classes);
    if (channels != 3) {
        fprintf(stderr, "nn_zoo_fixture: %s takes 3 channels, got %d\n", name, channels);
        return NULL;
    }
    if (strcmp(name, "resnet18") == 0) return nn_resnet18(ctx, classes);
    if (strcmp(name, "resnet34") == 0) return nn_resnet34(ctx, classes);
    if (strcmp(name, "resnet50") == 0) return nn_resnet50(ctx, classes);
    if (strcmp(name, "mobilenet_v2") == 0) return nn_mobilenet_v2(ctx, classes);
    fprintf(stderr, "nn_zoo_fixture: unknown model %s\n", name);
    return NULL;
}

static int print_params(nn_module *net) {
    int64_t total = 0;
    for (int i = 0; i < nn_module_param_count(net); i++) total += nn_tensor_numel(nn_module_param(net, i));
    printf("%lld\n", (long long)total);
    for (int i = 0; i < nn_module_state_count(net); i++)
        printf("%s %lld\n", nn_module_state_name(net, i), (long long)nn_tensor_numel(nn_module_state(net, i)));
    return 0;
}

static float *read_floats(const char *path, size_t count) {
    float *v = malloc(count * sizeof *v + 1);
    FILE *f = fopen(path, "rb");
    size_t got = f && v ? fread(v, sizeof *v, count, f) : 0;
    if (f) fclose(f);
    if (got != count) {
        fprintf(stderr, "nn_zoo_fixture: %s: expected %zu floats\n", path, count);
        free(v);
        return NULL;
    }
    return v;
}

static int forward(nn_ctx *ctx, nn_module *net, char **argv, int channels) {
    const char *weights = argv[0], *in_path = argv[1], *out_path = argv[5];
    int64_t shape[4] = {strtoll(argv[2], NULL, 10), channels, strtoll(argv[3], NULL, 10), strtoll(argv[4], NULL, 10)};
    float *in = read_floats(in_path, (size_t)(shape[0] * shape[1] * shape[2] * shape[3]));
    if (!in) return 1;
    int rc = nn_load_module(net, weights) == NN_OK ? 0 : fail("load");
    nn_ctx_set_grad_enabled(ctx, false);
    nn_module_set_training(net, false);
    nn_tensor *x = rc == 0 ? nn_tensor_from_data(ctx, NN_F32, 4, shape, in) : NULL;
    nn_tensor *y = x ? nn_module_forward(net, x) : NULL;
    if (rc == 0 && !y) rc = fail("forward");
    if (rc == 0) {
        size_t n = (size_t)nn_tensor_numel(y);
        float *out = malloc(n * sizeof *out);
        FILE *o = out && nn_tensor_read(y, out, n * sizeof *out) == NN_OK ? fopen(out_path, "wb") : NULL;
        rc = o && fwrite(out, sizeof *out, n, o) == n ? 0 : fail("write");
        if (o) fclose(o);
        free(out);
    }
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    free(in);
    return rc;
}

static int gradients(nn_ctx *ctx, nn_module *net, char **argv, int channels, bool training) {
    const char *weights = argv[0], *out_path = argv[6];
    int64_t shape[4] = {strtoll(argv[2], NULL, 10), channels, strtoll(argv[3], NULL, 10), strtoll(argv[4], NULL, 10)};
    float *in = read_floats(argv[1], (size_t)(shape[0] * shape[1] * shape[2] * shape[3]));
    float *labels = read_floats(argv[5], (size_t)shape[0]); /* int32 bits, the same size */
    int rc = in && labels && nn_load_module(net, weights) == NN_OK ? 0 : fail("load");
    nn_module_set_training(net, training);
    nn_module *dropout = nn_module_child(net, "classifier.0");
    if (dropout) nn_module_set_training(dropout, false);
    nn_tensor *x = rc == 0 ? nn_tensor_from_data(ctx, NN_F32, 4, shape, in) : NULL;
    nn_tensor *y = x ? nn_tensor_from_data(ctx, NN_I32, 1, shape, labels) : NULL;
    nn_tensor *loss = y ? nn_softmax_cross_entropy(nn_module_forward(net, x), y) : NULL;
    FILE *f = loss && nn_backward(loss) == NN_OK ? fopen(out_path, "wb") : NULL;
    if (rc == 0 && !f) rc = fail("grad");
    float value = 0;
    if (f && (nn_tensor_read(loss, &value, sizeof value) != NN_OK || fwrite(&value, 4, 1, f) != 1)) rc = 1;
    for (int i = 0; f && rc == 0 && i < nn_module_param_count(net); i++) {
        nn_tensor *g = nn_tensor_grad(nn_module_param(net, i));
        size_t n = (size_t)nn_tensor_numel(g);
        float *host = malloc(n * sizeof *host);
        if (!host || nn_tensor_read(g, host, n * sizeof *host) != NN_OK || fwrite(host, 4, n, f) != n)
            rc = fail(nn_module_param_name(net, i));
        free(host);
    }
    if (f) fclose(f);
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_tensor_free(y);
    free(in);
    free(labels);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: see the comment at the top of tests/io/nn_zoo_fixture.c\n");
        return 2;
    }
    const char *cmd = argv[1], *name = argv[2];
    const int classes = atoi(argv[3]), channels = atoi(argv[4]);
    const bool save = strcmp(cmd, "save") == 0 && argc == 7;
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .seed = save ? strtoull(argv[5], NULL, 10) : 1});
    if (!ctx) return fail("context");
    nn_module *net = build(ctx, name, classes, channels);
    int rc = net ? 0 : fail("build");
    if (rc == 0 && strcmp(cmd, "params") == 0 && argc == 5) {
        rc = print_params(net);
    } else if (rc == 0 && save) {
        rc = nn_save_module(net, argv[6]) == NN_OK ? 0 : fail("save");
    } else if (rc == 0 && strcmp(cmd, "forward") == 0 && argc == 11) {
        rc = forward(ctx, net, argv + 5, channels);
    } else if (rc == 0 && (strcmp(cmd, "grad") == 0 || strcmp(cmd, "grad-eval") == 0) && argc == 12) {
        rc = gradients(ctx, net, argv + 5, channels, strcmp(cmd, "grad") == 0);
    } else if (rc == 0) {
        fprintf(stderr, "nn_zoo_fixture: bad command line\n");
        rc = 2;
    }
    nn_module_free(net);
    nn_ctx_free(ctx);
    return rc;
}
