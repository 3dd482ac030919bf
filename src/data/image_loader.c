/* The image loader: worker threads decode, crop, resize and normalise the
 * images of upcoming batches into a ring of batch slots, while the training
 * loop consumes the batches in order.
 *
 * The ring has prefetch + 1 slots: one lent to the consumer (until its next
 * call), up to `prefetch` being filled or ready. Work is handed out one
 * image at a time, in epoch order, to whichever worker is free, so that the
 * batch the consumer waits for is always the one most workers are on; a
 * worker may take an image of batch b only once b's slot has been given
 * back by the consumer (this is the bound on the queue).
 *
 * Everything that decides an image's pixels depends on (seed, epoch, image)
 * alone, never on which worker decodes it or when: results are identical
 * for any number of threads. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/rng.h"
#include "data/image_internal.h"
#include "io/file_read.h"
#include "nn_data.h"

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_LENT };

typedef struct slot {
    enum slot_state state;
    int64_t batch;       /* the batch it holds (while not FREE) */
    int64_t first, size; /* its positions in the epoch: [first, first + size) */
    int64_t done;        /* images finished (decoded or failed) */
    float *images;       /* batch x channels x height x width */
    int32_t *labels;
    uint8_t *ok;         /* per image: decoded (1) or failed (0) */
} slot;

struct nn_loader {
    const nn_image_index *index;
    int64_t *subset; /* count images of the index */
    int64_t count, batches;
    int rank, ranks;   /* nn_loader_shard: this rank's share of each epoch (1 rank: all of it) */
    int64_t positions; /* images an epoch gives: count, or the rank's share (nn_shard_count) */
    size_t image_floats;
    nn_loader_options o;

    pthread_mutex_t mutex;
    pthread_cond_t work;  /* workers wait here for an image to decode */
    pthread_cond_t ready; /* the consumer waits here for its batch */
    pthread_cond_t idle;  /* start_epoch waits here for workers to finish old work */
    pthread_t *threads;
    int thread_count;

    /* Under the mutex: */
    int64_t *order;          /* this epoch: position -> index image */
    uint64_t epoch;
    uint64_t generation;     /* +1 per start_epoch: results of older work are dropped */
    bool active, stopping;
    int64_t next_position;   /* the next image to hand to a worker */
    int64_t next_batch;      /* the next batch to give the consumer */
    int64_t delivered;       /* images given to the consumer this epoch */
    int busy;                /* workers decoding right now */
    slot *slots;
    int slot_count;
    slot *lent;
    uint8_t *failed;         /* per index image: failed to decode once, never retried */
    int64_t failures;
    char first_failure[640]; /* the earliest in (epoch, position): the same for any thread timing */
    uint64_t first_failure_epoch;
    int64_t first_failure_position;
    nn_status error;         /* a worker's error (out of memory): ends the loader */
    char error_message[1024];
};

/* ---- per-image randomness ------------------------------------------------ */

static uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static double uniform_double(void *state) {
    nn_rng *rng = state;
    uint64_t bits = (uint64_t)nn_rng_next_u32(rng) << 21 ^ nn_rng_next_u32(rng);
    return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

typedef struct image_job {
    const nn_loader *loader;
    nn_rng rng; /* the image's own stream: (seed, epoch, image) */
} image_job;

static void choose_box(void *user, int width, int height, nn_box *box) {
    image_job *job = user;
    const nn_loader_options *o = &job->loader->o;
    nn_crop_box_for(o->crop, width, height, o->width, o->height, uniform_double, &job->rng, box);
}

/* ---- a worker's decoding ------------------------------------------------- */

typedef struct worker_buffers {
    uint8_t *file;
    size_t file_capacity;
    nn_image image;
} worker_buffers;

/* Whole file into the worker's buffer; 0 with the reason on failure. */
static int read_whole_file(const char *path, worker_buffers *w, size_t *size, char *why,
                           size_t why_size) {
    int64_t length;
    FILE *f = nn_open_regular_file(path, &length, why, why_size);
    if (!f) return 0;
    if ((size_t)length + 1 > w->file_capacity) {
        uint8_t *grown = realloc(w->file, (size_t)length + 1);
        if (!grown) {
            fclose(f);
            snprintf(why, why_size, "out of memory for %lld bytes", (long long)length);
            return 0;
        }
        w->file = grown;
        w->file_capacity = (size_t)length + 1;
    }
    *size = fread(w->file, 1, (size_t)length, f);
    fclose(f);
    return 1;
}

/* Decode index image `image` of epoch `epoch` into `dst`. Returns NN_OK,
 * NN_ERR_IO (the file is bad: reason in `why`) or NN_ERR_MEMORY. */
static nn_status decode_one(const nn_loader *loader, worker_buffers *w, int64_t image,
                            uint64_t epoch, float *dst, char *why, size_t why_size) {
    const nn_loader_options *o = &loader->o;
    image_job job = {loader, {0, 0, 0}};
    nn_rng_seed(&job.rng, splitmix64(splitmix64(splitmix64(o->seed) ^ epoch) ^ (uint64_t)image));
    bool flip = o->flip && uniform_double(&job.rng) < 0.5;
    size_t size = 0;
    if (!read_whole_file(loader->index->paths[image], w, &size, why, why_size)) return NN_ERR_IO;
    nn_decode_request request = {.channels = o->channels, .min_width = o->width,
                                 .min_height = o->height, .choose_box = choose_box, .user = &job};
    nn_box box;
    nn_status status = nn_decode_image(w->file, size, &request, &w->image, &box, why, why_size);
    if (status != NN_OK) return status;
    const nn_image *im = &w->image;
    status = nn_image_resize_bilinear(im->pixels, im->width, im->height, im->channels, box.x0,
                                      box.y0, box.w, box.h, flip, o->mean, o->std, dst, o->width,
                                      o->height);
    if (status != NN_OK) snprintf(why, why_size, "%s", nn_last_error());
    return status;
}

/* The slot of batch b can take work: free, or already holding b. */
static slot *slot_for_batch(nn_loader *l, int64_t b) {
    slot *s = &l->slots[b % l->slot_count];
    if (s->state == SLOT_FREE) {
        s->state = SLOT_FILLING;
        s->batch = b;
        s->first = b * l->o.batch;
        s->size = l->positions - s->first < l->o.batch ? l->positions - s->first : l->o.batch;
        s->done = 0;
        return s;
    }
    return s->state == SLOT_FILLING && s->batch == b ? s : NULL;
}

static void *worker_main(void *arg) {
    nn_loader *l = arg;
    worker_buffers w = {0};
    char why[256];
    pthread_mutex_lock(&l->mutex);
    for (;;) {
        slot *s = NULL;
        while (!l->stopping &&
               !(l->active && l->error == NN_OK && l->next_position < l->positions &&
                 (s = slot_for_batch(l, l->next_position / l->o.batch))))
            pthread_cond_wait(&l->work, &l->mutex);
        if (l->stopping) break;
        int64_t position = l->next_position++;
        int64_t image = l->order[position];
        uint64_t generation = l->generation, epoch = l->epoch;
        bool known_bad = l->failed[image];
        int64_t k = position - s->first; /* its place in the batch */
        float *dst = s->images + (size_t)k * l->image_floats;
        l->busy++;
        pthread_mutex_unlock(&l->mutex);

        /* The slot cannot be reused while busy > 0 (start_epoch waits),
         * so writing into it unlocked is safe. */
        nn_status status =
            known_bad ? NN_ERR_IO : decode_one(l, &w, image, epoch, dst, why, sizeof why);

        pthread_mutex_lock(&l->mutex);
        l->busy--;
        if (l->busy == 0) pthread_cond_broadcast(&l->idle);
        if (generation != l->generation) continue; /* the epoch was abandoned */
        s->labels[k] = l->index->labels[image];
        s->ok[k] = status == NN_OK;
        if (status == NN_ERR_IO && !known_bad) {
            l->failed[image] = 1;
            bool earlier = l->failures++ == 0 || epoch < l->first_failure_epoch ||
                           (epoch == l->first_failure_epoch && position < l->first_failure_position);
            if (earlier) {
                snprintf(l->first_failure, sizeof l->first_failure, "%.400s: %.200s",
                         l->index->paths[image], why);
                l->first_failure_epoch = epoch;
                l->first_failure_position = position;
            }
        } else if (status != NN_OK && status != NN_ERR_IO && l->error == NN_OK) {
            l->error = status;
            snprintf(l->error_message, sizeof l->error_message, "image loader: %.400s: %.500s",
                     l->index->paths[image], why);
            pthread_cond_broadcast(&l->ready);
        }
        if (++s->done == s->size) {
            s->state = SLOT_READY;
            pthread_cond_broadcast(&l->ready);
        }
    }
    pthread_mutex_unlock(&l->mutex);
    free(w.file);
    free(w.image.pixels);
    return NULL;
}

/* ---- the consumer's side ------------------------------------------------- */

nn_loader_options nn_loader_defaults(void) {
    return (nn_loader_options){
        .channels = 3, .height = 224, .width = 224, .batch = 128, .threads = 4, .prefetch = 3,
        .seed = 1, .shuffle = false, .flip = false, .crop = NN_CROP_NONE,
        .mean = {0.485f, 0.456f, 0.406f}, .std = {0.229f, 0.224f, 0.225f},
    };
}

static nn_status check_options(const nn_image_index *index, const int64_t *subset, int64_t count,
                               const nn_loader_options *o) {
    if (!index || !o) return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_new: NULL argument");
    /* A subset may repeat images (oversampling); without one, count <= images. */
    if (count < 1 || (!subset && count > index->count) || count > ((int64_t)1 << 40))
        return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_new: count %lld is not in [1, %lld]",
                            (long long)count, (long long)(subset ? (int64_t)1 << 40 : index->count));
    for (int64_t i = 0; subset && i < count; i++)
        if (subset[i] < 0 || subset[i] >= index->count)
            return nn_set_error(NN_ERR_ARGUMENT,
                                "nn_loader_new: subset[%lld] = %lld is not in [0, %lld)", (long long)i,
                                (long long)subset[i], (long long)index->count);
    if (o->channels != 1 && o->channels != 3)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_new: channels must be 1 or 3, got %d",
                            o->channels);
    if (o->height < 1 || o->width < 1 || o->height > 8192 || o->width > 8192)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_new: image size %dx%d is not in 1..8192",
                            o->width, o->height);
    if (o->batch < 1 || o->batch > (1 << 20))
        return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_new: batch %lld is not in 1..1048576",
                            (long long)o->batch);
    if (o->threads < 1 || o->threads > 256)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_new: threads %d is not in 1..256", o->threads);
    if (o->prefetch < 1 || o->prefetch > 64)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_new: prefetch %d is not in 1..64", o->prefetch);
    if (o->crop != NN_CROP_NONE && o->crop != NN_CROP_RANDOM_RESIZED && o->crop != NN_CROP_CENTER)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_new: unknown crop mode %d", (int)o->crop);
    for (int c = 0; c < o->channels; c++)
        if (!(o->std[c] > 0) || o->mean[c] != o->mean[c])
            return nn_set_error(NN_ERR_ARGUMENT,
                                "nn_loader_new: channel %d has mean %g, std %g (std must be > 0)", c,
                                o->mean[c], o->std[c]);
    size_t bytes = (size_t)o->batch * o->channels * o->height * o->width * sizeof(float);
    if (bytes / sizeof(float) / o->batch != (size_t)o->channels * o->height * o->width ||
        bytes > ((size_t)1 << 36))
        return nn_set_error(NN_ERR_ARGUMENT,
                            "nn_loader_new: a batch of %lld %dx%dx%d images is too large (> 64 GiB)",
                            (long long)o->batch, o->channels, o->height, o->width);
    return NN_OK;
}

static void stop_threads(nn_loader *l) {
    pthread_mutex_lock(&l->mutex);
    l->stopping = true;
    pthread_cond_broadcast(&l->work);
    pthread_mutex_unlock(&l->mutex);
    for (int t = 0; t < l->thread_count; t++) pthread_join(l->threads[t], NULL);
    l->thread_count = 0;
}

void nn_loader_free(nn_loader *l) {
    if (!l) return;
    stop_threads(l);
    for (int i = 0; l->slots && i < l->slot_count; i++) {
        free(l->slots[i].images);
        free(l->slots[i].labels);
        free(l->slots[i].ok);
    }
    pthread_cond_destroy(&l->idle);
    pthread_cond_destroy(&l->ready);
    pthread_cond_destroy(&l->work);
    pthread_mutex_destroy(&l->mutex);
    free(l->slots), free(l->threads), free(l->order), free(l->subset), free(l->failed);
    free(l);
}

nn_loader *nn_loader_new(const nn_image_index *index, const int64_t *subset, int64_t count,
                         const nn_loader_options *options) {
    if (check_options(index, subset, count, options) != NN_OK) return NULL;
    nn_loader *l = calloc(1, sizeof *l);
    if (!l) return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_loader_new: out of memory");
    l->index = index;
    l->o = *options;
    l->count = count;
    l->ranks = 1;
    l->positions = count;
    l->batches = (count + options->batch - 1) / options->batch;
    l->image_floats = (size_t)options->channels * options->height * options->width;
    l->slot_count = options->prefetch + 1;
    pthread_mutex_init(&l->mutex, NULL);
    pthread_cond_init(&l->work, NULL);
    pthread_cond_init(&l->ready, NULL);
    pthread_cond_init(&l->idle, NULL);
    l->subset = malloc((size_t)count * sizeof *l->subset);
    l->order = malloc((size_t)count * sizeof *l->order);
    l->failed = calloc((size_t)index->count, 1);
    l->slots = calloc((size_t)l->slot_count, sizeof *l->slots);
    l->threads = calloc((size_t)options->threads, sizeof *l->threads);
    int ok = l->subset && l->order && l->failed && l->slots && l->threads;
    for (int i = 0; ok && i < l->slot_count; i++) {
        slot *s = &l->slots[i];
        s->images = malloc((size_t)options->batch * l->image_floats * sizeof(float));
        s->labels = malloc((size_t)options->batch * sizeof *s->labels);
        s->ok = malloc((size_t)options->batch);
        ok = s->images && s->labels && s->ok;
    }
    if (!ok) {
        nn_loader_free(l);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_loader_new: out of memory for %d batches of %lld images",
                            options->prefetch + 1, (long long)options->batch);
    }
    for (int64_t i = 0; i < count; i++) l->subset[i] = subset ? subset[i] : i;
    for (int t = 0; t < options->threads; t++) {
        int err = pthread_create(&l->threads[t], NULL, worker_main, l);
        if (err) {
            nn_loader_free(l);
            return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_loader_new: cannot start thread %d of %d (%s)",
                                t + 1, options->threads, strerror(err));
        }
        l->thread_count++;
    }
    return l;
}

static void release_lent(nn_loader *l) {
    if (!l->lent) return;
    l->lent->state = SLOT_FREE;
    l->lent = NULL;
    pthread_cond_broadcast(&l->work);
}

nn_status nn_loader_start_epoch(nn_loader *l, int64_t epoch) {
    if (!l) return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_start_epoch: NULL loader");
    if (epoch < 0)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_start_epoch: epoch %lld < 0", (long long)epoch);
    pthread_mutex_lock(&l->mutex);
    /* Abandon the epoch in progress: new work waits until old work is done,
     * since an old image may still be written into a slot's buffer. */
    l->active = false;
    l->generation++;
    while (l->busy > 0) pthread_cond_wait(&l->idle, &l->mutex);
    l->lent = NULL;
    for (int i = 0; i < l->slot_count; i++) l->slots[i].state = SLOT_FREE;
    nn_status status = l->error;
    if (status != NN_OK) {
        nn_set_error(status, "%s", l->error_message);
    } else {
        if (l->o.shuffle) {
            nn_shuffle_indices(l->order, l->count, l->o.seed, (uint64_t)epoch);
            for (int64_t i = 0; i < l->count; i++) l->order[i] = l->subset[l->order[i]];
        } else {
            memcpy(l->order, l->subset, (size_t)l->count * sizeof *l->order);
        }
        /* The whole epoch's order on every rank, then this rank's share at its front. */
        if (l->ranks > 1) nn_shard_indices(l->order, l->count, l->o.batch, l->rank, l->ranks);
        l->epoch = (uint64_t)epoch;
        l->next_position = 0;
        l->next_batch = 0;
        l->delivered = 0;
        l->active = true;
        pthread_cond_broadcast(&l->work);
    }
    pthread_mutex_unlock(&l->mutex);
    return status;
}

/* Move the decoded images of a slot to its front; returns how many. */
static int64_t compact(nn_loader *l, slot *s) {
    int64_t kept = 0;
    for (int64_t k = 0; k < s->size; k++) {
        if (!s->ok[k]) continue;
        if (kept != k) {
            memmove(s->images + (size_t)kept * l->image_floats, s->images + (size_t)k * l->image_floats,
                    l->image_floats * sizeof(float));
            s->labels[kept] = s->labels[k];
        }
        kept++;
    }
    return kept;
}

nn_status nn_loader_next(nn_loader *l, nn_batch *out) {
    if (!l || !out) return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_next: NULL argument");
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&l->mutex);
    release_lent(l);
    nn_status status = NN_OK;
    if (!l->active && l->error == NN_OK)
        status = nn_set_error(NN_ERR_STATE,
                              "nn_loader_next: no epoch started (call nn_loader_start_epoch)");
    while (status == NN_OK && l->next_batch < l->batches) {
        slot *s = &l->slots[l->next_batch % l->slot_count];
        while (l->error == NN_OK && !(s->state == SLOT_READY && s->batch == l->next_batch))
            pthread_cond_wait(&l->ready, &l->mutex);
        if (l->error != NN_OK) break;
        l->next_batch++;
        int64_t kept = compact(l, s);
        if (kept == 0) { /* every file of the batch failed: on to the next */
            s->state = SLOT_FREE;
            pthread_cond_broadcast(&l->work);
            continue;
        }
        s->state = SLOT_LENT;
        l->lent = s;
        l->delivered += kept;
        *out = (nn_batch){s->images, s->labels, kept, s->first};
        break;
    }
    if (status == NN_OK && l->error == NN_OK && l->next_batch == l->batches && !l->lent &&
        l->delivered == 0)
        status = nn_set_error(NN_ERR_IO,
                              "image loader: none of the epoch's %lld files could be decoded (first: %s)",
                              (long long)l->positions, l->first_failure);
    if (status == NN_OK && l->error != NN_OK)
        status = nn_set_error(l->error, "%s", l->error_message);
    pthread_mutex_unlock(&l->mutex);
    return status;
}

int64_t nn_loader_batches(const nn_loader *l) { return l ? l->batches : 0; }

nn_status nn_loader_shard(nn_loader *l, int rank, int ranks) {
    if (!l) return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_shard: NULL loader");
    if (ranks < 1 || rank < 0 || rank >= ranks)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_loader_shard: rank %d of %d ranks is not in [0, ranks) with ranks >= 1",
                            rank, ranks);
    const int64_t share = nn_shard_count(l->count, l->o.batch, ranks);
    if (share < 1)
        return nn_set_error(NN_ERR_ARGUMENT,
                            "nn_loader_shard: %lld images at batch %lld give each of %d ranks no image",
                            (long long)l->count, (long long)l->o.batch, ranks);
    pthread_mutex_lock(&l->mutex);
    /* generation counts started epochs: the share must not change under one. */
    const bool started = l->generation > 0;
    if (!started) {
        l->rank = rank;
        l->ranks = ranks;
        l->positions = share;
        l->batches = (share + l->o.batch - 1) / l->o.batch;
    }
    pthread_mutex_unlock(&l->mutex);
    if (started)
        return nn_set_error(NN_ERR_STATE, "nn_loader_shard: an epoch has started; shard the loader before its first "
                                          "nn_loader_start_epoch");
    return NN_OK;
}

int64_t nn_loader_failures(nn_loader *l, char *first, int first_size) {
    if (!l) return 0;
    pthread_mutex_lock(&l->mutex);
    int64_t failures = l->failures;
    if (first && first_size > 0) snprintf(first, (size_t)first_size, "%s", l->first_failure);
    pthread_mutex_unlock(&l->mutex);
    return failures;
}

const uint8_t *nn_loader_failed_flags(const nn_loader *l) { return l->failed; }
