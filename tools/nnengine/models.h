/* The models the command line can train, by name, and ONNX files (a name
 * ending in ".onnx": the file's graph, nn_onnx_import). */
#ifndef NNENGINE_MODELS_H
#define NNENGINE_MODELS_H

#include <stdbool.h>
#include <stddef.h>
#include "nn_engine.h"

/* "lenet5, mlp, alexnet, ...": every model's name, for help texts and error messages. */
const char *models_names(void);
/* "unknown model 'resnet18cifar' (did you mean resnet18-cifar? known: ...)" in text. */
const char *model_unknown(const char *name, char *text, size_t size);
bool model_known(const char *name);
/* One line describing the model. */
const char *model_description(const char *name);

/* The input size `name` needs (channels x height x width), so a loader can
 * decode and resize to it: false when the model takes any size (mlp) or is
 * unknown. */
/* The module path of the model's classifier (its last layer: "fc",
 * "classifier.1"), which train's --classes replaces. */
const char *model_classifier(const char *name);

bool model_input(const char *name, int *channels, int *height, int *width);

/* What a model trains with where the flags leave it unset (nnengine train,
 * train_config_apply_recipe): zeros, NULL and false take the general
 * defaults (10 epochs, the cosine schedule, the input kind's batch and SGD
 * rate, no augmentation). */
typedef struct model_recipe {
    int epochs;
    const char *schedule;
    int batch;
    const char *optimizer; /* NULL: sgd */
    double lr, weight_decay; /* the recipe's optimizer's (another's are its own: optimizers.h); 0: its default */
    bool nesterov;  /* SGD's Nesterov momentum */
    int crop_pad;   /* data on the device: random shifts of up to this many pixels */
    bool flip;      /* random horizontal flips */
    double warmup_fraction; /* of the run's optimizer steps: linear warm-up (cosine, linear) */
    double label_smoothing;
} model_recipe;
/* The recipe of `name` (the general defaults for an ONNX file or an unknown name). */
model_recipe model_recipe_of(const char *name);

/* Builds `name` for images of channels x height x width and `classes`
 * classes. Returns NULL after writing the reason to `why` (an input the model
 * cannot take, or the library's error). */
nn_module *model_build(nn_ctx *ctx, const char *name, int channels, int height, int width,
                       int classes, char *why, size_t why_size);

#endif
