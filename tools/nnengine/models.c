#include "models.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "suggest.h"

typedef struct model_entry {
    const char *name;
    const char *description;
    int channels, height, width; /* the input it needs; 0 = any */
    const char *classifier;      /* the module path of its last layer, which --classes replaces */
    model_recipe recipe;
} model_entry;

static const model_entry models[] = {
    {"lenet5", "LeNet-5: conv 6@5x5, pool, conv 16@5x5, pool, 120, 84, classes (1x28x28 input)", 1, 28, 28, "l3", {0}},
    {"mlp", "multilayer perceptron: flatten, 300, 100, classes, with ReLU (any image size)", 0, 0, 0, "l3", {0}},
    {"alexnet", "AlexNet, the seed's form: 5 convolutions, 9216-512-512-classes (3x224x224 input)", 3, 224, 224, "l3",
     {0}},
    {"alexnet-tv", "AlexNet as torchvision's: 5 convolutions, dropout, 9216-4096-4096-classes "
                   "(3x224x224 input)", 3, 224, 224, "classifier.6", {0}},
    /* The zoo with torchvision's names (nn_layers.h): its weights load with --init. */
    {"resnet18", "ResNet-18 as torchvision's (3x224x224 input)", 3, 224, 224, "fc", {0}},
    {"resnet34", "ResNet-34 as torchvision's (3x224x224 input)", 3, 224, 224, "fc", {0}},
    {"resnet50", "ResNet-50 as torchvision's, Bottleneck v1.5 (3x224x224 input)", 3, 224, 224, "fc", {0}},
    {"mobilenet_v2", "MobileNetV2 as torchvision's, width 1.0 (3x224x224 input)", 3, 224, 224, "classifier.1", {0}},
    /* The recipe PyTorch reached 94.74% on Fashion-MNIST with in 15 epochs (issue 22): SGD with Nesterov
     * momentum 0.9, weight decay 5e-4 (sgd's), one-cycle to 0.1, batch 128, 2-pixel shifts and flips. */
    {"resnet18-cifar", "ResNet-18 for small images: 3x3 stride-1 stem, no max pool (the data's channels "
                       "and size)", 0, 0, 0, "fc",
     {.epochs = 15, .schedule = "onecycle", .batch = 128, .lr = 0.1, .nesterov = true, .crop_pad = 2, .flip = true}},
    /* A vision transformer's small-data recipe: AdamW (decay 0.05), warm-up over the run's first 5% then
     * cosine, label smoothing 0.1, the device-side shifts and flips. */
    {"vit-tiny", "vision transformer for small images: patch 4, width 192, 6 layers, 3 heads (square images, "
                 "a side divisible by 4; the data's channels)", 0, 0, 0, "heads.head",
     {.epochs = 20, .schedule = "cosine", .batch = 256, .optimizer = "adamw", .lr = 1e-3, .weight_decay = 0.05,
      .crop_pad = 2, .flip = true, .warmup_fraction = 0.05, .label_smoothing = 0.1}},
};
#define MODEL_COUNT ((int)(sizeof models / sizeof models[0]))

/* LeCun et al. 1998's 300-100 network: the classic MLP baseline on MNIST. */
static const int mlp_hidden[] = {300, 100};

const char *models_names(void) {
    return "lenet5, mlp, alexnet, alexnet-tv, resnet18, resnet34, resnet50, mobilenet_v2, resnet18-cifar, vit-tiny";
}

const char *model_unknown(const char *name, char *text, size_t size) {
    const char *names[MODEL_COUNT];
    for (int i = 0; i < MODEL_COUNT; i++) names[i] = models[i].name;
    const char *near = suggest_name(name, strlen(name), names, MODEL_COUNT);
    if (near) snprintf(text, size, "unknown model '%s' (did you mean %s? known: %s)", name, near, models_names());
    else snprintf(text, size, "unknown model '%s' (known: %s)", name, models_names());
    return text;
}

/* A model name ending in ".onnx" is a file whose graph nn_onnx_import runs. */
static bool is_onnx(const char *name) {
    const size_t n = strlen(name);
    return n > 5 && strcasecmp(name + n - 5, ".onnx") == 0;
}

/* The file's declared input [N, C, H, W] and class count (its output's last
 * dimension): 0 where the graph leaves them open. */
static bool onnx_shapes(const char *path, int64_t chw[3], int64_t *classes, char *why, size_t why_size) {
    int64_t in[NN_MAX_DIMS], out[NN_MAX_DIMS];
    int in_ndim, out_ndim;
    if (nn_onnx_io_shapes(path, in, &in_ndim, out, &out_ndim) != NN_OK) {
        snprintf(why, why_size, "%s", nn_last_error());
        return false;
    }
    for (int d = 0; d < 3; d++) chw[d] = in_ndim == 4 && in[d + 1] > 0 ? in[d + 1] : 0;
    *classes = out_ndim >= 1 && out[out_ndim - 1] > 0 ? out[out_ndim - 1] : 0;
    return true;
}

static const model_entry *find(const char *name) {
    for (int i = 0; i < MODEL_COUNT; i++)
        if (strcmp(models[i].name, name) == 0) return &models[i];
    return NULL;
}

bool model_known(const char *name) { return find(name) != NULL || is_onnx(name); }

const char *model_description(const char *name) {
    const model_entry *entry = find(name);
    return entry ? entry->description : is_onnx(name) ? "the graph of an ONNX file (its input and classes)" : "";
}

model_recipe model_recipe_of(const char *name) {
    const model_entry *entry = find(name);
    return entry ? entry->recipe : (model_recipe){0};
}

const char *model_classifier(const char *name) {
    const model_entry *entry = find(name);
    return entry ? entry->classifier : "";
}

bool model_input(const char *name, int *channels, int *height, int *width) {
    const model_entry *entry = find(name);
    if (is_onnx(name)) {
        int64_t chw[3], classes;
        char why[8];
        if (!onnx_shapes(name, chw, &classes, why, sizeof why) || !chw[0] || !chw[1] || !chw[2] ||
            chw[0] > 1 << 16 || chw[1] > 1 << 16 || chw[2] > 1 << 16)
            return false;
        *channels = (int)chw[0], *height = (int)chw[1], *width = (int)chw[2];
        return true;
    }
    if (!entry || !entry->channels) return false;
    *channels = entry->channels;
    *height = entry->height;
    *width = entry->width;
    return true;
}

nn_module *model_build(nn_ctx *ctx, const char *name, int channels, int height, int width,
                       int classes, char *why, size_t why_size) {
    nn_module *net = NULL;
    int want_c, want_h, want_w;
    if (model_input(name, &want_c, &want_h, &want_w) &&
        (channels != want_c || height != want_h || width != want_w)) {
        snprintf(why, why_size, "%s takes %dx%dx%d images; the data has %dx%dx%d", name, want_c, want_h,
                 want_w, channels, height, width);
        return NULL;
    }
    if (is_onnx(name)) {
        int64_t chw[3], graph_classes;
        if (!onnx_shapes(name, chw, &graph_classes, why, why_size)) return NULL;
        /* Other classes than the graph's: fine-tuning, its classifier replaced. */
        const nn_onnx_import_options o = {.classes = graph_classes && graph_classes != classes ? classes : 0};
        net = nn_onnx_import_with(ctx, name, &o);
        if (net && o.classes)
            fprintf(stderr, "%s: the graph's classifier gets %d outputs for the data's classes, drawn afresh (the "
                            "file's has %lld)\n", name, classes, (long long)graph_classes);
    } else if (strcmp(name, "lenet5") == 0) {
        net = nn_lenet5_classes(ctx, classes, NN_INIT_KAIMING_UNIFORM);
    } else if (strcmp(name, "alexnet") == 0) {
        net = nn_alexnet(ctx, classes, NN_INIT_KAIMING_UNIFORM);
    } else if (strcmp(name, "alexnet-tv") == 0) {
        net = nn_alexnet_tv(ctx, classes, NN_INIT_KAIMING_UNIFORM);
    } else if (strcmp(name, "resnet18") == 0) {
        net = nn_resnet18(ctx, classes);
    } else if (strcmp(name, "resnet34") == 0) {
        net = nn_resnet34(ctx, classes);
    } else if (strcmp(name, "resnet50") == 0) {
        net = nn_resnet50(ctx, classes);
    } else if (strcmp(name, "mobilenet_v2") == 0) {
        net = nn_mobilenet_v2(ctx, classes);
    } else if (strcmp(name, "resnet18-cifar") == 0) {
        net = nn_resnet18_cifar(ctx, channels, classes);
    } else if (strcmp(name, "vit-tiny") == 0) {
        if (height != width || height % 4 != 0) {
            snprintf(why, why_size, "vit-tiny takes square images whose side is a multiple of 4 (patches of 4x4); "
                                    "the data's are %dx%d", height, width);
            return NULL;
        }
        net = nn_vit_tiny(ctx, channels, height, classes);
    } else if (strcmp(name, "mlp") == 0) {
        net = nn_mlp(ctx, channels * height * width, mlp_hidden, 2, classes, NN_INIT_KAIMING_UNIFORM);
    } else {
        model_unknown(name, why, why_size);
        return NULL;
    }
    if (!net) snprintf(why, why_size, "%s", nn_last_error());
    return net;
}
