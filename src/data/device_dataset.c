/* A dataset kept on the device (nn_device_loop.h): pixels as packed uint8
 * (a quarter of the floats' memory: Fashion-MNIST's 60,000 images are 47 MB),
 * labels and the current order as int32. Batches are gathered and normalised
 * there by one kernel each, at positions read from a device-side counter. */
#include <stdlib.h>
#include <string.h>

#include "ops/op_common.h"
#include "core/context_mismatch.h"

struct nn_device_dataset {
    nn_ctx *ctx;
    int64_t count;
    int channels, height, width;
    nn_tensor *samples, *labels, *order;
    nn_tensor *draws; /* int32 [1]: the augmentation's draw, advanced after each gather */
    int64_t order_count;
    float scale[4], shift[4];
    int crop_pad, flip; /* augmentation (nn_device_dataset_set_augment) */
    uint64_t seed;
    int shard_rank; /* nn_device_dataset_set_shard: this rank's place in every global batch */
};

void nn_device_dataset_free(nn_device_dataset *d) {
    if (!d) return;
    nn_tensor_free(d->samples);
    nn_tensor_free(d->labels);
    nn_tensor_free(d->order);
    nn_tensor_free(d->draws);
    free(d);
}

int64_t nn_device_dataset_count(const nn_device_dataset *d) { return d ? d->count : 0; }

static nn_tensor *int_tensor(nn_ctx *ctx, int64_t n) {
    int64_t shape[1] = {n > 0 ? n : 1};
    return nn_tensor_alloc(ctx, NN_I32, 1, shape, false);
}

/* The pixels, four to a word; the last word is padded with zeros. */
static nn_status upload_pixels(nn_device_dataset *d, const uint8_t *pixels, size_t bytes) {
    size_t whole = bytes / 4 * 4;
    if (whole) NN_TRY(nn_ctx_write(d->ctx, nn_tensor_ref(d->samples), pixels, whole));
    if (whole == bytes) return NN_OK;
    uint8_t last[4] = {0};
    memcpy(last, pixels + whole, bytes - whole);
    nn_buffer_ref tail = nn_tensor_ref(d->samples);
    tail.offset += whole;
    tail.bytes = 4;
    return nn_ctx_write(d->ctx, tail, last, 4);
}

static nn_status upload_identity_order(nn_device_dataset *d) {
    int32_t *order = malloc(sizeof *order * (size_t)d->count);
    if (!order) return nn_set_error(NN_ERR_MEMORY, "nn_device_dataset_new: out of host memory");
    for (int64_t i = 0; i < d->count; i++) order[i] = (int32_t)i;
    nn_status st = nn_ctx_write(d->ctx, nn_tensor_ref(d->order), order, sizeof *order * (size_t)d->count);
    free(order);
    d->order_count = d->count;
    return st;
}

nn_device_dataset *nn_device_dataset_new(nn_ctx *ctx, const nn_dataset *data, const float *mean,
                                         const float *std) {
    const char *fn = "nn_device_dataset_new";
    if (!ctx || !data || !mean || !std) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: an argument is NULL", fn);
    if (data->count < 1 || !data->pixels || !data->labels)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: the dataset is empty", fn);
    if (data->channels < 1 || data->channels > 4)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: %d channels (1 to 4 supported)", fn, data->channels);
    int64_t image = (int64_t)data->channels * data->height * data->width;
    if (image < 1 || data->count > INT32_MAX || image > INT32_MAX || data->count > INT64_MAX / image)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: %lld images of %lld pixels exceed the kernels' 32-bit indices", fn,
                            (long long)data->count, (long long)image);
    for (int c = 0; c < data->channels; c++)
        if (!(std[c] > 0.0f))
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: std[%d] = %g must be > 0", fn, c, (double)std[c]);
    nn_device_dataset *d = calloc(1, sizeof *d);
    if (!d) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    d->ctx = ctx;
    d->count = data->count;
    d->channels = data->channels;
    d->height = data->height;
    d->width = data->width;
    for (int c = 0; c < data->channels; c++) {
        d->scale[c] = 1.0f / (255.0f * std[c]);
        d->shift[c] = -mean[c] / std[c];
    }
    size_t bytes = (size_t)(data->count * image);
    d->samples = int_tensor(ctx, (int64_t)((bytes + 3) / 4));
    d->labels = int_tensor(ctx, data->count);
    d->order = int_tensor(ctx, data->count);
    d->draws = int_tensor(ctx, 1);
    nn_status st = d->samples && d->labels && d->order && d->draws ? NN_OK : nn_last_status();
    if (st == NN_OK) st = upload_pixels(d, data->pixels, bytes);
    if (st == NN_OK)
        st = nn_ctx_write(ctx, nn_tensor_ref(d->labels), data->labels, sizeof(int32_t) * (size_t)data->count);
    if (st == NN_OK) st = upload_identity_order(d);
    if (st == NN_OK) st = nn_ctx_fill(ctx, nn_tensor_ref(d->draws), 0.0f, 1); /* 0.0f's bits: int32 0 */
    if (st != NN_OK) {
        nn_device_dataset_free(d);
        return NULL;
    }
    return d;
}

nn_status nn_device_dataset_set_order(nn_device_dataset *d, const int64_t *order, int64_t count) {
    const char *fn = "nn_device_dataset_set_order";
    if (!d || !order) return nn_set_error(NN_ERR_ARGUMENT, "%s: an argument is NULL", fn);
    if (count < 1 || count > d->count)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: count %lld is outside [1, %lld]", fn, (long long)count,
                            (long long)d->count);
    int32_t *narrow = malloc(sizeof *narrow * (size_t)count);
    if (!narrow) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", fn);
    for (int64_t i = 0; i < count; i++) {
        if (order[i] < 0 || order[i] >= d->count) {
            free(narrow);
            return nn_set_error(NN_ERR_ARGUMENT, "%s: order[%lld] = %lld is outside [0, %lld)", fn, (long long)i,
                                (long long)order[i], (long long)d->count);
        }
        narrow[i] = (int32_t)order[i];
    }
    nn_buffer_ref ref = nn_tensor_ref(d->order);
    ref.bytes = sizeof *narrow * (size_t)count;
    nn_status st = nn_ctx_write(d->ctx, ref, narrow, ref.bytes);
    free(narrow);
    if (st == NN_OK) d->order_count = count;
    return st;
}

nn_status nn_device_dataset_set_augment(nn_device_dataset *d, int crop_pad, bool flip, uint64_t seed) {
    const char *fn = "nn_device_dataset_set_augment";
    if (!d) return nn_set_error(NN_ERR_ARGUMENT, "%s: dataset is NULL", fn);
    if (crop_pad < 0 || crop_pad >= d->height || crop_pad >= d->width)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: crop_pad %d must be in [0, %d) for %dx%d images", fn, crop_pad,
                            d->height < d->width ? d->height : d->width, d->height, d->width);
    d->crop_pad = crop_pad;
    d->flip = flip;
    d->seed = seed;
    return NN_OK;
}

nn_status nn_device_dataset_set_draw(nn_device_dataset *d, int64_t draw) {
    const char *fn = "nn_device_dataset_set_draw";
    if (!d) return nn_set_error(NN_ERR_ARGUMENT, "%s: dataset is NULL", fn);
    if (draw < 0 || draw > INT32_MAX)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: draw %lld is outside [0, %d]", fn, (long long)draw, INT32_MAX);
    const int32_t value = (int32_t)draw;
    return nn_ctx_write(d->ctx, nn_tensor_ref(d->draws), &value, sizeof value);
}

nn_status nn_device_dataset_set_shard(nn_device_dataset *d, int rank, int ranks) {
    const char *fn = "nn_device_dataset_set_shard";
    if (!d) return nn_set_error(NN_ERR_ARGUMENT, "%s: dataset is NULL", fn);
    if (ranks < 1 || rank < 0 || rank >= ranks)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: rank %d of %d ranks (want 0 <= rank < ranks)", fn, rank, ranks);
    d->shard_rank = rank;
    return NN_OK;
}

nn_status nn_device_dataset_gather(nn_device_dataset *d, nn_tensor *counter, int64_t first, nn_tensor *x,
                                   nn_tensor *labels) {
    const char *op = "nn_device_dataset_gather";
    if (!d) return nn_set_error(NN_ERR_ARGUMENT, "%s: dataset is NULL", op);
    NN_TRY(nn_check_tensor_ndim(op, "x", x, NN_F32, 4));
    NN_TRY(nn_check_tensor_ndim(op, "labels", labels, NN_I32, 1));
    NN_TRY(nn_check_counter(op, counter));
    const nn_tensor *foreign = x->ctx != d->ctx ? x : labels->ctx != d->ctx ? labels
                             : counter && counter->ctx != d->ctx ? counter : NULL;
    if (foreign)
        return nn_error_other_context(NN_ERR_STATE, op, "the dataset", d->ctx, foreign == x ? "x" : foreign == labels ? "labels"
                                                                                       : "counter", foreign->ctx);
    int64_t n = x->shape[0];
    if (x->shape[1] != d->channels || x->shape[2] != d->height || x->shape[3] != d->width || labels->shape[0] != n) {
        char a[96], b[96];
        return nn_set_error(NN_ERR_SHAPE, "%s: x %s and labels %s do not fit a batch of %dx%dx%d images", op,
                            nn_format_shape(x->ndim, x->shape, a, sizeof a),
                            nn_format_shape(labels->ndim, labels->shape, b, sizeof b), d->channels, d->height,
                            d->width);
    }
    if (first < 0 || first > INT32_MAX || n > INT32_MAX)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: first = %lld, batch %lld outside 32 bits", op, (long long)first,
                            (long long)n);
    const int64_t draw_row = (int64_t)d->shard_rank * n;
    if (draw_row + n > INT32_MAX)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: rank %d's rows of a batch of %lld exceed 32 bits", op, d->shard_rank,
                            (long long)n);
    nn_gather_params p = {.rows = (int32_t)n, .row_elems = (int32_t)(x->numel / n), .first = (int32_t)first,
                          .stride = (int32_t)n, .positions = (int32_t)d->order_count,
                          .table_rows = (int32_t)d->count, .plane = d->height * d->width, .width = d->width,
                          .crop_pad = d->crop_pad, .flip = d->flip, .seed_lo = (uint32_t)d->seed,
                          .seed_hi = (uint32_t)(d->seed >> 32), .draw_row = (int32_t)draw_row};
    memcpy(p.scale, d->scale, sizeof p.scale);
    memcpy(p.shift, d->shift, sizeof p.shift);
    const bool augment = d->crop_pad || d->flip;
    nn_buffer_ref args[5] = {nn_tensor_ref(d->samples), nn_tensor_ref(d->order), nn_optional_ref(counter),
                             nn_tensor_ref(x), nn_optional_ref(augment ? d->draws : NULL)};
    NN_TRY(nn_ctx_run(d->ctx, NN_KERNEL_GATHER_SAMPLES, args, 5, &p));
    if (augment) NN_TRY(nn_counter_add(d->draws, 1));
    p.row_elems = 1;
    p.plane = 1;
    p.width = 1;
    p.crop_pad = p.flip = 0;
    nn_buffer_ref label_args[4] = {nn_tensor_ref(d->labels), nn_tensor_ref(d->order), nn_optional_ref(counter),
                                   nn_tensor_ref(labels)};
    return nn_ctx_run(d->ctx, NN_KERNEL_GATHER_ROWS, label_args, 4, &p);
}
