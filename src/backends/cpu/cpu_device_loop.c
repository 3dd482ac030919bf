/* The kernels of training loops that stay on the device (kernels.h):
 * gathering a batch by a device-side step counter, advancing the counter,
 * and accumulating loss and accuracy. They move little data, so they run on
 * the calling thread. */
#include <string.h>

#include "backends/dropout_philox.h"
#include "base/error.h"
#include "cpu_backend.h"

/* The order position output row i takes. */
static int64_t position_of(const nn_gather_params *p, const int32_t *counter, int64_t i) {
    return (int64_t)p->first + (counter ? (int64_t)counter[0] * p->stride : 0) + i;
}

/* The table row for output row i, or -1 for a row of zeros. */
static int64_t source_row(const nn_gather_params *p, const int32_t *order, const int32_t *counter, int64_t i) {
    int64_t position = position_of(p, counter, i);
    if (position < 0 || position >= p->positions) return -1;
    int64_t index = order ? order[position] : position;
    return index >= 0 && index < p->table_rows ? index : -1;
}

static nn_status check_gather(const char *name, const nn_gather_params *p) {
    if (p->rows < 0 || p->row_elems < 0 || p->positions < 0 || p->table_rows < 0 || p->plane <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu %s: invalid sizes (rows %d, row elements %d, plane %d)", name,
                            p->rows, p->row_elems, p->plane);
    if (p->row_elems / p->plane > 4)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu %s: %d channels (at most 4)", name, p->row_elems / p->plane);
    return NN_OK;
}

/* Output row i's augmentation (nn_gather_params): a shift in [-pad, pad]
 * each way and a mirror bit from one Philox word of (draw_row + i, the draw). */
typedef struct augment {
    int dy, dx, flip;
} augment;

static augment augment_of(const nn_gather_params *p, int64_t i, int32_t draw) {
    augment a = {0, 0, 0};
    if (!p->crop_pad && !p->flip) return a;
    const uint32_t w = nn_philox_word((uint32_t)(p->draw_row + i), (uint32_t)draw, p->seed_lo, p->seed_hi);
    const uint32_t span = 2u * (uint32_t)p->crop_pad + 1u;
    a.dy = (int)((w & 0xffu) % span) - p->crop_pad;
    a.dx = (int)(((w >> 8) & 0xffu) % span) - p->crop_pad;
    a.flip = p->flip && ((w >> 16) & 1u);
    return a;
}

nn_status nn_cpu_gather_samples(const nn_gather_params *p, const uint8_t *samples, const int32_t *order,
                                const int32_t *counter, float *out, const int32_t *draws) {
    NN_TRY(check_gather("gather_samples", p));
    NN_TRY(nn_gather_check_augment("cpu", NN_KERNEL_GATHER_SAMPLES, p));
    if ((p->crop_pad || p->flip) && !draws)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu gather_samples: augmentation needs the draw counter (argument 4)");
    const int width = p->width > 0 ? p->width : p->plane, height = p->plane / width;
    for (int64_t i = 0; i < p->rows; i++) {
        int64_t row = source_row(p, order, counter, i);
        float *dst = out + i * p->row_elems;
        if (row < 0) {
            memset(dst, 0, sizeof(float) * (size_t)p->row_elems);
            continue;
        }
        const augment a = augment_of(p, i, draws ? draws[0] : 0);
        const uint8_t *src = samples + row * p->row_elems;
        for (int32_t j = 0; j < p->row_elems; j++) {
            const int c = j / p->plane, y = (j % p->plane) / width, x = j % width;
            const int sy = y + a.dy, sx = (a.flip ? width - 1 - x : x) + a.dx;
            const bool inside = sy >= 0 && sy < height && sx >= 0 && sx < width;
            const uint8_t v = inside ? src[c * p->plane + sy * width + sx] : 0;
            dst[j] = (float)v * p->scale[c] + p->shift[c];
        }
    }
    return NN_OK;
}

nn_status nn_cpu_gather_rows(const nn_gather_params *p, const int32_t *table, const int32_t *order,
                             const int32_t *counter, int32_t *out) {
    NN_TRY(check_gather("gather_rows", p));
    for (int64_t i = 0; i < p->rows; i++) {
        int64_t row = source_row(p, order, counter, i);
        int32_t *dst = out + i * p->row_elems;
        if (row < 0) memset(dst, 0, sizeof(int32_t) * (size_t)p->row_elems);
        else memcpy(dst, table + row * p->row_elems, sizeof(int32_t) * (size_t)p->row_elems);
    }
    return NN_OK;
}

nn_status nn_cpu_counter_add(const nn_counter_params *p, int32_t *counter) {
    counter[0] += p->delta;
    return NN_OK;
}

nn_status nn_cpu_metrics_accumulate(const nn_metrics_params *p, const float *logits, const int32_t *labels,
                                    const float *loss, float *sums) {
    if (p->rows < 0 || p->cols <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu metrics_accumulate: rows=%d cols=%d", p->rows, p->cols);
    int32_t correct = 0;
    for (int32_t r = 0; r < p->rows; r++) {
        const float *row = logits + (int64_t)r * p->cols;
        int32_t best = 0;
        for (int32_t c = 1; c < p->cols; c++)
            if (row[c] > row[best]) best = c;
        correct += best == labels[r];
    }
    sums[0] += loss[0] * (float)p->rows;
    sums[1] += (float)correct;
    return NN_OK;
}
