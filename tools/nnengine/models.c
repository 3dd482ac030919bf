#include "models.h"

#include <stdio.h>
#include <string.h>

typedef struct model_entry {
    const char *name;
    const char *description;
    int channels, height, width; /* the input it needs; 0 = any */
} model_entry;

static const model_entry models[] = {
    {"lenet5", "LeNet-5: conv 6@5x5, pool, conv 16@5x5, pool, 120, 84, classes (1x28x28 input)", 1, 28, 28},
    {"mlp", "multilayer perceptron: flatten, 300, 100, classes, with ReLU (any image size)", 0, 0, 0},
    {"alexnet", "AlexNet, the seed's form: 5 convolutions, 9216-512-512-classes (3x224x224 input)", 3, 224, 224},
    {"alexnet-tv", "AlexNet as torchvision's: 5 convolutions, dropout, 9216-4096-4096-classes "
                   "(3x224x224 input)", 3, 224, 224},
};
#define MODEL_COUNT ((int)(sizeof models / sizeof models[0]))

/* LeCun et al. 1998's 300-100 network: the classic MLP baseline on MNIST. */
static const int mlp_hidden[] = {300, 100};

const char *models_names(void) { return "lenet5, mlp, alexnet, alexnet-tv"; }

static const model_entry *find(const char *name) {
    for (int i = 0; i < MODEL_COUNT; i++)
        if (strcmp(models[i].name, name) == 0) return &models[i];
    return NULL;
}

bool model_known(const char *name) { return find(name) != NULL; }

const char *model_description(const char *name) {
    const model_entry *entry = find(name);
    return entry ? entry->description : "";
}

bool model_input(const char *name, int *channels, int *height, int *width) {
    const model_entry *entry = find(name);
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
    if (strcmp(name, "lenet5") == 0) {
        net = nn_lenet5_classes(ctx, classes, NN_INIT_KAIMING_UNIFORM);
    } else if (strcmp(name, "alexnet") == 0) {
        net = nn_alexnet(ctx, classes, NN_INIT_KAIMING_UNIFORM);
    } else if (strcmp(name, "alexnet-tv") == 0) {
        net = nn_alexnet_tv(ctx, classes, NN_INIT_KAIMING_UNIFORM);
    } else if (strcmp(name, "mlp") == 0) {
        net = nn_mlp(ctx, channels * height * width, mlp_hidden, 2, classes, NN_INIT_KAIMING_UNIFORM);
    } else {
        snprintf(why, why_size, "unknown model '%s' (known: %s)", name, models_names());
        return NULL;
    }
    if (!net) snprintf(why, why_size, "%s", nn_last_error());
    return net;
}
