/* nnengine eval MODEL --weights FILE --data DIR: test loss and accuracy of
 * saved weights. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "class_names.h"
#include "evaluate.h"
#include "models.h"
#include "nn_io.h"
#include "options.h"
#include "photo_data.h"
#include "setup.h"

typedef struct eval_config {
    const char *model, *weights, *data, *device, *normalize, *class_names;
    int64_t threads, seed;
    int64_t classes; /* 0, or the classifier's outputs (train --classes) */
    double validation_fraction;
    bool confusion; /* per-class accuracy and the confusion matrix */
} eval_config;

/* The normalisation eval feeds the model: --normalize when given (saying
 * what it overrides), else the one train saved with the weights, else
 * "auto" as train's default. On success *saved tells whether mean and std
 * (3 per-channel values) hold the saved one; *text is what to parse
 * otherwise. Returns an exit status, having printed why on failure. */
static int choose_normalization(const eval_config *c, const nn_model_info *info, bool *saved, float mean[3],
                                float std[3], const char **text) {
    *saved = false;
    *text = c->normalize ? c->normalize : "auto";
    if (c->normalize) {
        if (info->channels > 0)
            fprintf(stderr, "nnengine eval: --normalize %s overrides the normalisation saved with the weights "
                            "(mean %g, std %g%s)\n", c->normalize, (double)info->mean[0], (double)info->std[0],
                    info->channels > 1 ? ", ..." : "");
        return EXIT_OK;
    }
    if (info->channels == 0) {
        fprintf(stderr, "nnengine eval: %s carries no normalisation; using --normalize auto, train's default\n",
                c->weights);
        return EXIT_OK;
    }
    if (info->channels != 1 && info->channels != 3) {
        fprintf(stderr, "nnengine eval: %s saves a normalisation of %d channels; eval reads 1 or 3 (give "
                        "--normalize)\n", c->weights, info->channels);
        return EXIT_BAD_INPUT;
    }
    for (int ch = 0; ch < 3; ch++) { /* one saved channel stands for all */
        mean[ch] = info->mean[info->channels == 1 ? 0 : ch];
        std[ch] = info->std[info->channels == 1 ? 0 : ch];
    }
    *saved = true;
    fprintf(stderr, "normalisation saved with the weights: mean %g, std %g%s\n", (double)mean[0], (double)std[0],
            info->channels > 1 ? ", ..." : "");
    return EXIT_OK;
}

/* The weights loaded into `name`'s model, then the loss and accuracy on the
 * test images: in memory (LeNet, MLP) or decoded by the image loader
 * (AlexNet: `photos` set). */
static int eval(const eval_config *c) {
    if (!model_known(c->model)) {
        char unknown[512];
        fprintf(stderr, "nnengine eval: %s\n", model_unknown(c->model, unknown, sizeof unknown));
        return EXIT_BAD_INPUT;
    }
    nn_model_info info = {0};
    if (nn_read_model_info(c->weights, &info) != NN_OK) {
        fprintf(stderr, "nnengine eval: %s\n", library_error());
        return EXIT_BAD_INPUT;
    }
    bool saved;
    float mean[3], std[3];
    const char *normalize;
    int status = choose_normalization(c, &info, &saved, mean, std, &normalize);
    if (status != EXIT_OK) {
        nn_model_info_free(&info);
        return status;
    }
    int channels, height, width;
    bool photos = model_input(c->model, &channels, &height, &width) && channels == 3;
    data_setup data = {0};
    photo_data photo = {0};
    if (photos) {
        photo_options o = {.channels = channels, .height = height, .width = width, .batch = 32,
                           .validation_fraction = c->validation_fraction, .seed = (uint64_t)c->seed,
                           .normalize = normalize, .mean = saved ? mean : NULL, .std = saved ? std : NULL};
        status = photo_data_load("eval", c->data, &o, &photo);
    } else {
        /* "none" skips the pixel statistics that the saved values replace. */
        status = data_setup_load("eval", c->data, c->validation_fraction, (uint64_t)c->seed, 0,
                                 saved ? "none" : normalize, &data);
        if (saved && (mean[1] != mean[0] || mean[2] != mean[0] || std[1] != std[0] || std[2] != std[0])) {
            fprintf(stderr, "nnengine eval: %s saves a different normalisation per channel; %s takes one mean "
                            "and std (give --normalize)\n", c->weights, c->model);
            status = status == EXIT_OK ? EXIT_BAD_INPUT : status;
        } else if (saved) {
            data.norm = (normalization){mean[0], std[0]};
        }
        channels = data.train.channels, height = data.train.height, width = data.train.width;
    }
    if (status != EXIT_OK) {
        nn_model_info_free(&info);
        data_setup_free(&data);
        photo_data_free(&photo);
        return status;
    }
    const int data_classes = photos ? photo.classes : data.classes;
    int classes = data_classes;
    if (c->classes && c->classes < data_classes) {
        fprintf(stderr, "nnengine eval: --classes %lld is fewer than the %d classes of %s\n", (long long)c->classes,
                data_classes, c->data);
        nn_model_info_free(&info);
        data_setup_free(&data);
        photo_data_free(&photo);
        return EXIT_BAD_INPUT;
    }
    if (c->classes) classes = (int)c->classes; /* a classifier trained with train --classes K */
    /* The names the confusion matrix shows: --class-names, else those saved
     * with the weights (train --class-names, or class folders), else the data's. */
    char *const *names = classes != data_classes ? NULL : photos ? photo.test.class_names : data.test.class_names;
    char **file_names = c->class_names ? class_names_read("eval", c->class_names, classes) : NULL;
    if (file_names) names = file_names;
    else if (info.class_count == classes) names = info.class_names;
    nn_ctx *ctx = c->class_names && !file_names ? NULL
                                                : open_device("eval", c->device, (int)c->threads, (uint64_t)c->seed);
    char why[512];
    nn_module *net = ctx ? model_build(ctx, c->model, channels, height, width, classes, why, sizeof why) : NULL;
    if (!ctx) {
        status = EXIT_BAD_INPUT;
    } else if (!net) {
        fprintf(stderr, "nnengine eval: %s\n", why);
        status = EXIT_BAD_INPUT;
    } else if (nn_load_module(net, c->weights) != NN_OK) {
        const bool shape = strstr(library_error(), "has shape") != NULL;
        fprintf(stderr, "nnengine eval: %s%s\n", library_error(),
                shape && !c->classes ? " (weights trained with train --classes K need eval --classes K)" : "");
        status = EXIT_BAD_INPUT;
    } else {
        double loss, accuracy;
        confusion matrix = {0};
        nn_status st = c->confusion && !confusion_init(&matrix, classes) ? NN_ERR_MEMORY : NN_OK;
        confusion *counts = c->confusion ? &matrix : NULL;
        if (st == NN_OK)
            st = photos ? photo_evaluate(ctx, net, &photo, NULL, &loss, &accuracy, counts)
                        : evaluate(ctx, net, &data.test, data.norm, classes, 0, NULL, &loss, &accuracy, counts);
        int64_t count = photos ? photo.test.count : data.test.count;
        bool validation = photos ? photo.test_is_validation : data.test_is_validation;
        if (st != NN_OK) {
            fprintf(stderr, "nnengine eval: %s\n", library_error());
            status = EXIT_FAILURE_RUNTIME;
        } else {
            printf("%s on %lld %s images: loss %.4f  accuracy %.2f%%\n", c->model, (long long)count,
                   validation ? "validation" : "test", loss, 100 * accuracy);
            if (counts) confusion_print(counts, names, stdout);
        }
        confusion_free(&matrix);
    }
    nn_module_free(net);
    nn_ctx_free(ctx);
    class_names_free(file_names, classes);
    nn_model_info_free(&info);
    data_setup_free(&data);
    photo_data_free(&photo);
    return status;
}

int command_eval(int argc, char **argv) {
    eval_config c = {.device = "auto", .seed = 1, .validation_fraction = 0.1};
    const char *positional[1] = {NULL};
    const option_spec options[] = {
        {"--weights", OPTION_STRING, &c.weights, 0, 0, "FILE", "weights written by nnengine train --save"},
        {"--data", OPTION_STRING, &c.data, 0, 0, "DIR", "dataset folder, as for train"},
        {"--device", OPTION_STRING, &c.device, 0, 0, "D", "auto, cpu or vulkan"},
        {"--threads", OPTION_INT, &c.threads, 0, 1024, "T", "CPU worker threads (default 0: one per core)"},
        {"--normalize", OPTION_STRING, &c.normalize, 0, 0, "N", "auto, none or MEAN,STD instead of the normalisation saved with the weights"},
        {"--seed", OPTION_INT, &c.seed, 0, 9.2e18, "S", "as given to train: picks the validation split of a folder without a test set"},
        {"--val-fraction", OPTION_FLOAT, &c.validation_fraction, 0, 1, "F", "as given to train (default 0.1)"},
        {"--confusion", OPTION_SWITCH, &c.confusion, 0, 0, NULL, "also print each class's accuracy and the confusion matrix (rows: true class)"},
        {"--class-names", OPTION_STRING, &c.class_names, 0, 0, "FILE", "the classes' names, one per line, for --confusion (default: those saved with the weights)"},
        {"--classes", OPTION_INT, &c.classes, 1, 1 << 20, "K", "the classifier's outputs, as train --classes K gave them (default: the data's classes)"},
    };
    static const char *const required[] = {"--weights", "--data", NULL};
    const command_spec spec = {
        "eval", "eval MODEL --weights FILE --data DIR [options]",
        "Evaluate saved weights on DIR's test set (or the validation split train held out).",
        "The images are normalised as train --save recorded in the weights (weights\n"
        "without it: auto, train's default); --normalize overrides that. Give the\n"
        "same --seed and --val-fraction as the training run.",
        1, positional, options, (int)(sizeof options / sizeof options[0]), required,
    };
    int status;
    if (options_parse_or_help(&spec, argc, argv, &status)) return status;
    c.model = positional[0];
    return eval(&c);
}
