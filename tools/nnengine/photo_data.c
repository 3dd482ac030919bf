#include "photo_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "platform/host_info.h"
#include "setup.h"

static bool parse_normalize(const char *text, photo_data *d) {
    static const float imagenet_mean[3] = {0.485f, 0.456f, 0.406f}, imagenet_std[3] = {0.229f, 0.224f, 0.225f};
    if (strcmp(text, "auto") == 0) {
        memcpy(d->mean, imagenet_mean, sizeof d->mean);
        memcpy(d->std, imagenet_std, sizeof d->std);
        return true;
    }
    float mean, std;
    if (!parse_fixed_normalization(text, &mean, &std)) return false;
    for (int c = 0; c < 3; c++) d->mean[c] = mean, d->std[c] = std;
    return true;
}

static int default_workers(void) {
    int cores = nn_host_online_cores();
    return cores > 2 ? cores - 1 : 1; /* one core stays with the training loop */
}

int photo_data_load(const char *command, const char *dir, const photo_options *o, photo_data *out) {
    memset(out, 0, sizeof *out);
    if (o->mean && o->std) {
        memcpy(out->mean, o->mean, sizeof out->mean);
        memcpy(out->std, o->std, sizeof out->std);
    } else if (!parse_normalize(o->normalize, out)) {
        fprintf(stderr, "nnengine %s: --normalize takes auto, none or MEAN,STD (finite, STD >= 1e-6); got '%s': %s\n",
                command, o->normalize, normalization_problem(o->normalize));
        return EXIT_BAD_INPUT;
    }
    out->workers = o->workers > 0 ? o->workers : default_workers();
    if (nn_image_index_load_dir(dir, o->validation_fraction, o->seed, out->workers, &out->train, &out->test,
                                &out->test_is_validation) != NN_OK) {
        fprintf(stderr, "nnengine %s: %s\n", command, library_error());
        return EXIT_BAD_INPUT;
    }
    int64_t skipped = out->train.skipped + out->test.skipped;
    if (skipped > 0)
        fprintf(stderr, "skipped %lld file%s that are not readable images (the first: %s)\n", (long long)skipped,
                skipped == 1 ? "" : "s", out->train.skipped ? out->train.first_skipped : out->test.first_skipped);
    /* Links, FIFOs and loops among the folders: one line per walk. */
    if (out->train.skipped_entries[0]) fprintf(stderr, "nnengine %s: %s\n", command, out->train.skipped_entries);
    if (out->test.skipped_entries[0] && strcmp(out->test.skipped_entries, out->train.skipped_entries) != 0)
        fprintf(stderr, "nnengine %s: %s\n", command, out->test.skipped_entries);
    if (out->test.count == 0) {
        fprintf(stderr, "nnengine %s: %s: no test or validation images (give --val-fraction > 0, or DIR/test)\n",
                command, dir);
        return EXIT_BAD_INPUT;
    }
    out->classes = out->train.classes;
    out->channels = o->channels;
    out->height = o->height;
    out->width = o->width;
    nn_loader_options lo = nn_loader_defaults();
    lo.channels = o->channels;
    lo.height = o->height;
    lo.width = o->width;
    lo.batch = o->batch;
    lo.threads = out->workers;
    lo.seed = o->seed;
    memcpy(lo.mean, out->mean, sizeof lo.mean);
    memcpy(lo.std, out->std, sizeof lo.std);
    nn_loader_options eval = lo;
    lo.shuffle = true;
    lo.flip = o->flip;
    lo.crop = o->random_crop ? NN_CROP_RANDOM_RESIZED : NN_CROP_NONE;
    const int64_t count = option_first_or_all(o->limit, out->train.count);
    out->train_loader = nn_loader_new(&out->train, NULL, count, &lo);
    const int64_t evaluated = option_first_or_all(o->eval_limit, out->test.count);
    out->test_loader = out->train_loader ? nn_loader_new(&out->test, NULL, evaluated, &eval) : NULL;
    out->evaluated = evaluated;
    if (out->test_loader && o->ranks > 1 && nn_loader_shard(out->train_loader, o->rank, o->ranks) != NN_OK) {
        fprintf(stderr, "nnengine %s: %s (give fewer ranks, a smaller --batch or more images)\n", command,
                library_error());
        return EXIT_BAD_INPUT;
    }
    if (!out->test_loader) {
        fprintf(stderr, "nnengine %s: %s\n", command, library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    return EXIT_OK;
}

void photo_data_free(photo_data *d) {
    nn_loader_free(d->train_loader);
    nn_loader_free(d->test_loader);
    nn_image_index_free(&d->train);
    nn_image_index_free(&d->test);
    memset(d, 0, sizeof *d);
}

/* One evaluation batch: its loss and correct predictions summed on the
 * device into `sums`. */
static nn_status evaluate_batch(nn_ctx *ctx, nn_module *net, const nn_batch *b, int channels, int height,
                                int width, nn_tensor *sums, confusion *matrix) {
    int64_t x_shape[4] = {b->count, channels, height, width}, y_shape[1] = {b->count};
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, x_shape, b->images);
    nn_tensor *y = x ? nn_tensor_from_data(ctx, NN_I32, 1, y_shape, b->labels) : NULL;
    nn_tensor *logits = y ? nn_module_forward(net, x) : NULL;
    nn_tensor *loss = logits ? nn_softmax_cross_entropy(logits, y) : NULL;
    nn_status st = loss ? nn_accumulate_metrics(logits, y, loss, sums) : nn_last_status();
    if (st == NN_OK && !loss) st = NN_ERR_STATE;
    if (st == NN_OK && matrix) {
        float *host = malloc(sizeof(float) * (size_t)b->count * (size_t)matrix->classes);
        st = host ? nn_tensor_read(logits, host, sizeof(float) * (size_t)b->count * (size_t)matrix->classes)
                  : NN_ERR_MEMORY;
        if (st == NN_OK) confusion_add(matrix, host, b->labels, b->count);
        free(host);
    }
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_tensor_free(y);
    return st;
}

nn_status photo_evaluate(nn_ctx *ctx, nn_module *net, photo_data *d, progress *bar, double *loss, double *accuracy,
                         confusion *matrix) {
    int64_t two[1] = {2};
    nn_tensor *sums = nn_tensor_new(ctx, NN_F32, 1, two);
    if (!sums) return nn_last_status();
    bool was_enabled = nn_ctx_set_grad_enabled(ctx, false);
    bool was_training = nn_module_is_training(net);
    nn_module_set_training(net, false);
    int64_t seen = 0;
    nn_status st = nn_loader_start_epoch(d->test_loader, 0);
    nn_batch b;
    while (st == NN_OK && (st = nn_loader_next(d->test_loader, &b)) == NN_OK && b.count > 0) {
        if (bar) progress_evaluating(bar, seen, d->evaluated);
        st = evaluate_batch(ctx, net, &b, d->channels, d->height, d->width, sums, matrix);
        seen += b.count;
    }
    if (bar) progress_clear(bar);
    nn_module_set_training(net, was_training);
    nn_ctx_set_grad_enabled(ctx, was_enabled);
    float total[2] = {0, 0};
    if (st == NN_OK) st = nn_tensor_read(sums, total, sizeof total);
    nn_tensor_free(sums);
    if (st == NN_OK && seen > 0) {
        *loss = total[0] / (double)seen;
        *accuracy = total[1] / (double)seen;
    }
    return st;
}
