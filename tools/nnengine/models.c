#include "models.h"

#include <stdio.h>
#include <string.h>

typedef struct model_entry {
    const char *name;
    const char *description;
} model_entry;

static const model_entry models[] = {
    {"lenet5", "LeNet-5: conv 6@5x5, pool, conv 16@5x5, pool, 120, 84, classes (1x28x28 input)"},
    {"mlp", "multilayer perceptron: flatten, 300, 100, classes, with ReLU (any image size)"},
};
#define MODEL_COUNT ((int)(sizeof models / sizeof models[0]))

/* LeCun et al. 1998's 300-100 network: the classic MLP baseline on MNIST. */
static const int mlp_hidden[] = {300, 100};

const char *models_names(void) { return "lenet5, mlp"; }

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

nn_module *model_build(nn_ctx *ctx, const char *name, int channels, int height, int width,
                       int classes, char *why, size_t why_size) {
    nn_module *net = NULL;
    if (strcmp(name, "lenet5") == 0) {
        if (channels != 1 || height != 28 || width != 28) {
            snprintf(why, why_size, "lenet5 takes 1x28x28 images; the data has %dx%dx%d", channels,
                     height, width);
            return NULL;
        }
        net = nn_lenet5_classes(ctx, classes, NN_INIT_KAIMING_UNIFORM);
    } else if (strcmp(name, "mlp") == 0) {
        net = nn_mlp(ctx, channels * height * width, mlp_hidden, 2, classes, NN_INIT_KAIMING_UNIFORM);
    } else {
        snprintf(why, why_size, "unknown model '%s' (known: %s)", name, models_names());
        return NULL;
    }
    if (!net) snprintf(why, why_size, "%s", nn_last_error());
    return net;
}
