/* Image folders for models that take photos (AlexNet): an index of the files
 * (DIR/<class>/<file>), and a loader that decodes, crops, resizes and
 * normalises them on worker threads ahead of the training loop.
 *
 * Unlike nn_dataset (nn_data.h), which holds small grayscale images of one
 * size in memory (MNIST-like sets), nothing is decoded when the index is
 * built: the index holds paths and labels, and the loader decodes each
 * image when its batch is due, at the size the model asks for.
 *
 * Typical training loop (epochs counted from 0 here; the CLI's 1-based
 * epoch e passes e - 1, as it does to nn_shuffle_indices):
 *
 *   nn_image_index train, test;
 *   bool test_is_validation;
 *   nn_image_index_load_dir(dir, 0.1, seed, 16, &train, &test, &test_is_validation);
 *   // report train.skipped + test.skipped once, naming train.first_skipped
 *   nn_loader_options o = nn_loader_defaults();       // 224x224 RGB, ImageNet mean/std
 *   o.batch = 128; o.threads = 15; o.seed = seed;
 *   o.shuffle = true; o.flip = true; o.crop = NN_CROP_RANDOM_RESIZED;
 *   nn_loader *loader = nn_loader_new(&train, NULL, train.count, &o);
 *   for (int64_t epoch = 0; epoch < epochs; epoch++) {
 *       nn_status s = nn_loader_start_epoch(loader, epoch);
 *       nn_batch b;
 *       while (s == NN_OK && (s = nn_loader_next(loader, &b)) == NN_OK && b.count > 0)
 *           train_step(b.images, b.labels, b.count);   // b is valid until the next call
 *       if (s != NN_OK) report(nn_last_error());
 *   }
 *   nn_loader_free(loader);
 *
 * The evaluation pass uses a second loader over the test index with
 * shuffle and flip off and crop NN_CROP_NONE (or NN_CROP_CENTER).
 */
#ifndef NN_LOADER_H
#define NN_LOADER_H

#include <stdbool.h>
#include <stdint.h>
#include "nn_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The files of DIR/<class>/<file>: classes are the sub-folders in sorted
 * name order (label = position), files sorted by name inside each. Hidden
 * entries (".name") are ignored. */
typedef struct nn_image_index {
    int64_t count;            /* images */
    int classes;
    char **class_names;       /* `classes` folder names */
    char **paths;             /* `count` paths, DIR/<class>/<file> */
    int32_t *labels;          /* `count` labels in [0, classes) */
    int64_t skipped;          /* files left out: empty, neither PNG nor JPEG, or (after
                                 nn_image_index_verify) failing to decode */
    char first_skipped[512];  /* the first of them with the reason, for the report */
    char skipped_entries[512]; /* entries that are no image file or class folder, in one line:
                                  "skipped 3 entries in DIR: 2 dangling links, 1 FIFO"; "" if none */
} nn_image_index;

/* Index DIR/<class>/<file>. Each file's first bytes are read: a file that is
 * empty or does not start with a PNG or JPEG signature is skipped and
 * counted (the body is checked only when the loader decodes it). A class
 * folder with no PNG or JPEG file is an error naming the folder; a DIR
 * without class folders is an error. */
nn_status nn_image_index_load(const char *dir, nn_image_index *out);

/* Decode every image of the index once on `threads` threads (JPEGs at 1/8
 * scale: the whole compressed stream is still read and checked) and remove
 * those that fail, adding them to `skipped` (first_skipped names the first
 * bad file if none was skipped before). Then the loader meets no bad file
 * and the report comes before training, as the seed's did. A class left
 * without an image is an error naming its folder. At 1/8 scale this costs
 * little next to training (bench/README.md). */
nn_status nn_image_index_verify(nn_image_index *index, int threads);

/* DIR/train/<class>/... and DIR/test/<class>/... when both exist; otherwise
 * DIR/<class>/..., of which `validation_fraction` (chosen by `seed`, the
 * same images nn_dataset_load_dir would hold out) becomes *test and
 * *test_is_validation is set. verify_threads > 0: nn_image_index_verify
 * first (before the split, so that the held-out images are the ones
 * nn_dataset_load_dir, which decodes everything, would hold out); 0: only
 * the signature check. test may be NULL (training set only).
 * test_is_validation may be NULL. */
nn_status nn_image_index_load_dir(const char *dir, double validation_fraction, uint64_t seed,
                                  int verify_threads, nn_image_index *train, nn_image_index *test,
                                  bool *test_is_validation);

void nn_image_index_free(nn_image_index *index);

/* How each image becomes a height x width tensor. */
typedef enum nn_crop_mode {
    /* The whole image, stretched to height x width (the seed's resize;
     * aspect ratio not kept). */
    NN_CROP_NONE = 0,
    /* torchvision's RandomResizedCrop(size, scale=(0.08, 1), ratio=(3/4, 4/3)):
     * a random box of 8%..100% of the area and aspect ratio 3/4..4/3 (10
     * tries, then the centre box of the nearest allowed ratio), resized to
     * height x width. The AlexNet/ImageNet training recipe. */
    NN_CROP_RANDOM_RESIZED,
    /* The evaluation counterpart, torchvision's Resize(256) + CenterCrop(224)
     * scaled to the target: the centred box whose shorter side is
     * height/width * 224/256 (0.875) of the image's shorter side, resized to
     * height x width. */
    NN_CROP_CENTER,
} nn_crop_mode;

typedef struct nn_loader_options {
    int channels;          /* 3: RGB; 1: grey (a JPEG's Y; 0.299 R + 0.587 G + 0.114 B for PNG) */
    int height, width;     /* the model's input size */
    int64_t batch;         /* images per batch; the last of an epoch may be smaller */
    int threads;           /* decoding threads (>= 1) */
    int prefetch;          /* batches decoded ahead of the consumer (>= 1; 3 = triple buffering) */
    uint64_t seed;         /* the shuffle and the augmentation */
    bool shuffle;          /* order of an epoch = nn_shuffle_indices(seed, epoch) */
    bool flip;             /* random horizontal flip, probability 1/2 */
    nn_crop_mode crop;
    float mean[3], std[3]; /* per channel: value = (pixel / 255 - mean[c]) / std[c] */
} nn_loader_options;

/* 224x224 RGB, batch 128, 4 threads, prefetch 3, seed 1, no shuffle, no
 * augmentation, ImageNet's mean (0.485, 0.456, 0.406) and std (0.229,
 * 0.224, 0.225). */
nn_loader_options nn_loader_defaults(void);

/* A loader owns its worker threads; its functions are called from one
 * thread at a time (the training loop's). */
typedef struct nn_loader nn_loader;

/* A batch lent by the loader: valid until the next nn_loader_next,
 * nn_loader_start_epoch or nn_loader_free on the same loader. */
typedef struct nn_batch {
    const float *images;    /* count x channels x height x width, normalised */
    const int32_t *labels;  /* count */
    int64_t count;          /* 0: the epoch is over */
    int64_t first;          /* position in the epoch of the batch's first slot */
} nn_batch;

/* A loader over index images subset[0..count-1] (subset NULL: images
 * 0..count-1; a subset may list an image more than once). The index must
 * outlive the loader; the subset is copied. Starts its threads; they wait
 * for nn_loader_start_epoch. */
nn_loader *nn_loader_new(const nn_image_index *index, const int64_t *subset, int64_t count,
                         const nn_loader_options *options);

/* Begin epoch `epoch` (0-based): the order is nn_shuffle_indices(seed,
 * epoch) over the subset (or the subset's order without shuffle); the
 * random crop and flip of an image depend only on (seed, epoch, image).
 * An epoch in progress is abandoned (its queued batches are dropped). */
nn_status nn_loader_start_epoch(nn_loader *loader, int64_t epoch);

/* The next batch of the epoch, in order, waiting for it if needed. At the
 * end of the epoch returns NN_OK with count 0. A file that fails to decode
 * is left out of its batch (the batch is that much smaller; a batch with no
 * image left is skipped) and counted, see nn_loader_failures; it is never
 * replaced by a blank image. An epoch in which every file failed ends with
 * NN_ERR_IO instead of an empty epoch. An error (out of memory in a
 * worker, a call out of order) returns its status with nn_last_error() set
 * on the calling thread (the message is thread-local: a worker's error is
 * carried over to the caller's thread here). After a worker's error the
 * loader only reports it; free it. */
nn_status nn_loader_next(nn_loader *loader, nn_batch *out);

/* Batches of a full epoch: ceil(count / batch), or of this rank's share
 * after nn_loader_shard (one fewer for each batch whose every file failed
 * to decode). */
int64_t nn_loader_batches(const nn_loader *loader);

/* Data parallelism: from the first epoch on, the loader gives rank `rank`
 * of `ranks` only its share of each epoch's order (nn_shard_indices at the
 * loader's batch: of every global batch of ranks x batch images, positions
 * [rank x batch, (rank + 1) x batch); of the last an equal share), and
 * decodes only those. Every rank computes the same order from the seed, and
 * an image's crop and flip depend on (seed, epoch, image) alone, so N ranks
 * at batch B decode exactly the images one loader at batch N x B would, with
 * the same pixels. nn_loader_batches then counts this rank's batches (the
 * same on every rank). Call it before the first nn_loader_start_epoch
 * (NN_ERR_STATE after); NN_ERR_ARGUMENT for a rank outside [0, ranks) or
 * when the ranks would get no image. */
nn_status nn_loader_shard(nn_loader *loader, int rank, int ranks);

/* Files that failed to decode so far (each counted once over all epochs; a
 * failed file is not retried), and the earliest of them in epoch order,
 * with its reason, written to `first` (may be NULL). None after
 * nn_image_index_verify, unless files change on disk. */
int64_t nn_loader_failures(nn_loader *loader, char *first, int first_size);

/* Stops the threads (an epoch in progress is abandoned) and frees. */
void nn_loader_free(nn_loader *loader);

/* Bilinear resize of the box (x0, y0, w, h) of an 8-bit interleaved image
 * (height x width x channels) to out_h x out_w, mirrored left-right when
 * `flip`, written as planar floats (channels x out_h x out_w) with
 * value = (pixel / 255 - mean[c]) / std[c]. Half-pixel centres, as PyTorch's
 * interpolate(mode='bilinear', align_corners=False, antialias=False) applied
 * to the cropped box: source x = x0 + (x_out + 0.5) * w / out_w - 0.5,
 * clamped to the box. The box may have fractional bounds within the image. */
nn_status nn_image_resize_bilinear(const uint8_t *pixels, int width, int height, int channels,
                                   double x0, double y0, double w, double h, bool flip,
                                   const float *mean, const float *std, float *out, int out_w,
                                   int out_h);

#ifdef __cplusplus
}
#endif
#endif
