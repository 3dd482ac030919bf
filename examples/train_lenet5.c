/* Train LeNet-5 on Fashion-MNIST (or MNIST) with nn-engine's C API: the
 * whole training loop in one readable file. `make demo` runs it.
 *
 *   build/examples/train_lenet5 DATA_DIR [EPOCHS] [THREADS]
 *
 * DATA_DIR holds the four IDX files (train-images-idx3-ubyte.gz, ...),
 * gzip-compressed or raw. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "nn_engine.h"

#define SIDE 28
#define CLASSES 10
#define BATCH 64

typedef struct dataset {
    int count;
    float *images;   /* count x 28 x 28, scaled to [0, 1] */
    int32_t *labels; /* count */
} dataset;

/* Reads a big-endian 32-bit word. */
static int read_u32(gzFile f, uint32_t *value) {
    unsigned char b[4];
    if (gzread(f, b, 4) != 4) return 0;
    *value = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    return 1;
}

/* Opens DIR/NAME.gz, else DIR/NAME (zlib reads raw files as they are). */
static gzFile open_idx(const char *dir, const char *name, char *path, size_t size) {
    snprintf(path, size, "%s/%s.gz", dir, name);
    gzFile f = gzopen(path, "rb");
    if (f) return f;
    snprintf(path, size, "%s/%s", dir, name);
    return gzopen(path, "rb");
}

/* Loads an IDX image file and its label file; prints what is wrong and
 * returns 0 on any problem (missing, bad magic, truncated, counts differ). */
static int load_split(const char *dir, const char *prefix, dataset *out) {
    char image_name[64], label_name[64], path[4096];
    snprintf(image_name, sizeof image_name, "%s-images-idx3-ubyte", prefix);
    snprintf(label_name, sizeof label_name, "%s-labels-idx1-ubyte", prefix);
    gzFile images = open_idx(dir, image_name, path, sizeof path);
    if (!images) {
        fprintf(stderr, "train_lenet5: cannot open %s/%s[.gz]\n", dir, image_name);
        return 0;
    }
    uint32_t magic, count, rows, cols;
    if (!read_u32(images, &magic) || magic != 0x803 || !read_u32(images, &count) ||
        !read_u32(images, &rows) || !read_u32(images, &cols) || rows != SIDE || cols != SIDE ||
        count == 0 || count > 10000000) {
        fprintf(stderr, "train_lenet5: %s is not an IDX file of 28x28 images\n", path);
        gzclose(images);
        return 0;
    }
    size_t pixels = (size_t)count * SIDE * SIDE;
    unsigned char *raw = malloc(pixels);
    out->images = malloc(pixels * sizeof(float));
    out->labels = malloc(count * sizeof(int32_t));
    if (!raw || !out->images || !out->labels) {
        fprintf(stderr, "train_lenet5: out of memory for %u images\n", count);
        gzclose(images);
        free(raw);
        return 0;
    }
    int complete = gzread(images, raw, (unsigned)pixels) == (int)pixels;
    gzclose(images);
    if (!complete) {
        fprintf(stderr, "train_lenet5: %s is truncated (expected %u images)\n", path, count);
        free(raw);
        return 0;
    }
    for (size_t i = 0; i < pixels; i++) out->images[i] = raw[i] / 255.0f;
    free(raw);

    gzFile labels = open_idx(dir, label_name, path, sizeof path);
    uint32_t label_count;
    if (!labels || !read_u32(labels, &magic) || magic != 0x801 ||
        !read_u32(labels, &label_count) || label_count != count) {
        fprintf(stderr, "train_lenet5: %s/%s[.gz] is missing, not IDX labels, or not %u labels\n",
                dir, label_name, count);
        if (labels) gzclose(labels);
        return 0;
    }
    unsigned char *bytes = malloc(count);
    complete = bytes && gzread(labels, bytes, count) == (int)count;
    gzclose(labels);
    for (uint32_t i = 0; complete && i < count; i++) {
        if (bytes[i] >= CLASSES) complete = 0;
        else out->labels[i] = bytes[i];
    }
    free(bytes);
    if (!complete) {
        fprintf(stderr, "train_lenet5: %s is truncated or has a label outside 0..9\n", path);
        return 0;
    }
    out->count = (int)count;
    return 1;
}

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Correct predictions among `n` rows of logits. */
static int count_correct(const float *logits, const int32_t *labels, int n) {
    int correct = 0;
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int c = 1; c < CLASSES; c++)
            if (logits[i * CLASSES + c] > logits[i * CLASSES + best]) best = c;
        correct += best == labels[i];
    }
    return correct;
}

/* Runs `images` through the network in batches, without recording gradients. */
static int evaluate(nn_ctx *ctx, nn_module *net, const dataset *data, double *loss, double *accuracy) {
    const int chunk = 1000;
    static float logits[1000 * CLASSES];
    double total_loss = 0.0;
    int correct = 0;
    bool was = nn_ctx_set_grad_enabled(ctx, false);
    for (int start = 0; start < data->count; start += chunk) {
        int n = data->count - start < chunk ? data->count - start : chunk;
        int64_t x_shape[4] = {n, 1, SIDE, SIDE}, y_shape[1] = {n};
        nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, x_shape, data->images + (size_t)start * SIDE * SIDE);
        nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, y_shape, data->labels + start);
        nn_tensor *out = x && y ? nn_module_forward(net, x) : NULL;
        nn_tensor *l = out ? nn_softmax_cross_entropy(out, y) : NULL;
        float batch_loss;
        if (!l || nn_tensor_read(out, logits, sizeof(float) * n * CLASSES) ||
            nn_tensor_read(l, &batch_loss, sizeof batch_loss)) {
            fprintf(stderr, "train_lenet5: evaluation failed: %s\n", nn_last_error());
            return 0;
        }
        total_loss += batch_loss * n;
        correct += count_correct(logits, data->labels + start, n);
        nn_ctx_step_end(ctx);
        nn_tensor_free(x);
        nn_tensor_free(y);
    }
    nn_ctx_set_grad_enabled(ctx, was);
    *loss = total_loss / data->count;
    *accuracy = (double)correct / data->count;
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 5) {
        fprintf(stderr, "usage: %s DATA_DIR [EPOCHS] [THREADS] [DEVICE: cpu|vulkan|auto]\n", argv[0]);
        return 2;
    }
    int epochs = argc > 2 ? atoi(argv[2]) : 3, threads = argc > 3 ? atoi(argv[3]) : 0;
    if (epochs < 1 || threads < 0) {
        fprintf(stderr, "train_lenet5: EPOCHS must be >= 1 and THREADS >= 0\n");
        return 2;
    }
    dataset train = {0}, test = {0};
    if (!load_split(argv[1], "train", &train) || !load_split(argv[1], "t10k", &test)) return 2;

    const char *device = argc > 4 ? argv[4] : "cpu";
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = threads, .seed = 1});
    nn_module *net = ctx ? nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM) : NULL;
    if (!net) {
        fprintf(stderr, "train_lenet5: %s\n", nn_last_error());
        return 1;
    }
    nn_tensor *params[16];
    int param_count = nn_module_param_count(net);
    for (int i = 0; i < param_count; i++) params[i] = nn_module_param(net, i);
    nn_sgd *opt = nn_sgd_new(params, param_count, &(nn_sgd_options){.lr = 0.05f, .momentum = 0.9f});
    printf("LeNet-5 on %s: %d training and %d test images, %s\n", argv[1], train.count, test.count,
           nn_ctx_device_name(ctx));

    int64_t x_shape[4] = {BATCH, 1, SIDE, SIDE}, y_shape[1] = {BATCH};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, x_shape), *y = nn_tensor_new(ctx, NN_I32, 1, y_shape);
    float *batch_images = malloc(sizeof(float) * BATCH * SIDE * SIDE);
    int32_t batch_labels[BATCH];
    int *order = malloc(sizeof(int) * (size_t)train.count);
    for (int i = 0; i < train.count; i++) order[i] = i;
    uint64_t rng = 1;
    for (int epoch = 1; epoch <= epochs; epoch++) {
        for (int i = train.count - 1; i > 0; i--) { /* Fisher-Yates with xorshift64 */
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            int j = (int)(rng % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        double start = seconds(), loss_sum = 0.0;
        int steps = train.count / BATCH, correct = 0; /* the last partial batch is dropped */
        for (int s = 0; s < steps; s++) {
            for (int b = 0; b < BATCH; b++) {
                int index = order[s * BATCH + b];
                memcpy(batch_images + b * SIDE * SIDE, train.images + (size_t)index * SIDE * SIDE,
                       sizeof(float) * SIDE * SIDE);
                batch_labels[b] = train.labels[index];
            }
            nn_tensor_write(x, batch_images, sizeof(float) * BATCH * SIDE * SIDE);
            nn_tensor_write(y, batch_labels, sizeof batch_labels);
            nn_tensor *logits = nn_module_forward(net, x);
            nn_tensor *loss = nn_softmax_cross_entropy(logits, y);
            float loss_value, logit_values[BATCH * CLASSES];
            if (!loss || nn_sgd_zero_grad(opt) || nn_backward(loss) || nn_sgd_step(opt) ||
                nn_tensor_read(loss, &loss_value, sizeof loss_value) ||
                nn_tensor_read(logits, logit_values, sizeof logit_values)) {
                fprintf(stderr, "train_lenet5: step %d failed: %s\n", s, nn_last_error());
                return 1;
            }
            loss_sum += loss_value;
            correct += count_correct(logit_values, batch_labels, BATCH);
            nn_ctx_step_end(ctx);
        }
        double elapsed = seconds() - start, test_loss, test_accuracy;
        if (!evaluate(ctx, net, &test, &test_loss, &test_accuracy)) return 1;
        printf("epoch %2d  train loss %.4f  acc %5.2f%%  test loss %.4f  acc %5.2f%%  %6.1f s  %6.0f images/s\n",
               epoch, loss_sum / steps, 100.0 * correct / (steps * BATCH), test_loss,
               100.0 * test_accuracy, elapsed, steps * BATCH / elapsed);
        fflush(stdout);
    }
    free(order);
    free(batch_images);
    free(train.images), free(train.labels), free(test.images), free(test.labels);
    nn_tensor_free(x);
    nn_tensor_free(y);
    nn_sgd_free(opt);
    nn_module_free(net);
    nn_ctx_free(ctx);
    return 0;
}
