#include "tensorboard.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "crc32c.h"
#include "io/protobuf.h"
#include "platform/files.h"
#include "platform/host_info.h"

/* tensorflow/core/util/event.proto and summary.proto: the fields used. */
enum { EVENT_WALL_TIME = 1, EVENT_STEP = 2, EVENT_FILE_VERSION = 3, EVENT_SUMMARY = 5 };
enum { SUMMARY_VALUE = 1 };
enum { VALUE_TAG = 1, VALUE_SIMPLE_VALUE = 2 };

static double wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void put_double(nn_pb *b, int field, double value) {
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(bits >> (8 * i));
    nn_pb_tag(b, field, NN_PB_FIXED64);
    nn_pb_raw(b, le, sizeof le);
}

static void put_u32(uint8_t *out, uint32_t v) {
    for (int i = 0; i < 4; i++) out[i] = (uint8_t)(v >> (8 * i));
}

/* One record: u64 length, u32 masked CRC of those 8 bytes, the data, u32
 * masked CRC of the data (all little-endian). */
static bool write_record(tensorboard *tb, const nn_pb *event) {
    if (event->failed) return false;
    uint8_t head[12], tail[4];
    for (int i = 0; i < 8; i++) head[i] = (uint8_t)((uint64_t)event->len >> (8 * i));
    put_u32(head + 8, crc32c_masked(head, 8));
    put_u32(tail, crc32c_masked(event->data, event->len));
    return fwrite(head, 1, sizeof head, tb->file) == sizeof head &&
           fwrite(event->data, 1, event->len, tb->file) == event->len &&
           fwrite(tail, 1, sizeof tail, tb->file) == sizeof tail && fflush(tb->file) == 0;
}

bool tensorboard_open(tensorboard *tb, const char *dir) {
    memset(tb, 0, sizeof *tb);
    if (nn_file_make_folders(dir) != 0) { /* and the folders above it, as TensorBoard's writers do */
        fprintf(stderr, "nnengine train: --tensorboard %s: cannot create the folder: %s\n", dir, strerror(errno));
        return false;
    }
    char host[256];
    nn_host_name(host, sizeof host);
    double now = wall_time();
    snprintf(tb->path, sizeof tb->path, "%s/events.out.tfevents.%lld.%s", dir, (long long)now, host);
    if (!(tb->file = nn_file_fopen(tb->path, "wb"))) {
        fprintf(stderr, "nnengine train: --tensorboard: cannot write %s: %s\n", tb->path, strerror(errno));
        return false;
    }
    nn_pb event = {0};
    put_double(&event, EVENT_WALL_TIME, now);
    nn_pb_string(&event, EVENT_FILE_VERSION, "brain.Event:2");
    bool ok = write_record(tb, &event);
    nn_pb_free(&event);
    if (!ok) {
        fprintf(stderr, "nnengine train: --tensorboard: writing %s failed\n", tb->path);
        tensorboard_close(tb);
    }
    return ok;
}

bool tensorboard_scalars(tensorboard *tb, int64_t step, const char *const *tags, const double *values, int count) {
    nn_pb summary = {0};
    for (int i = 0; i < count; i++) {
        nn_pb value = {0};
        nn_pb_string(&value, VALUE_TAG, tags[i]);
        nn_pb_float(&value, VALUE_SIMPLE_VALUE, (float)values[i]);
        nn_pb_message(&summary, SUMMARY_VALUE, &value);
        nn_pb_free(&value);
    }
    nn_pb event = {0};
    put_double(&event, EVENT_WALL_TIME, wall_time());
    nn_pb_int(&event, EVENT_STEP, step);
    nn_pb_message(&event, EVENT_SUMMARY, &summary);
    bool ok = write_record(tb, &event);
    nn_pb_free(&summary);
    nn_pb_free(&event);
    return ok;
}

void tensorboard_close(tensorboard *tb) {
    if (tb->file) fclose(tb->file);
    tb->file = NULL;
}
