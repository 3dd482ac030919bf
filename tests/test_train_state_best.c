/* Training state: the best epoch so far (best_epoch, best_metric, best_by)
 * and a stopped epoch's figures so far, saved and read back exactly, absent
 * in a state without them, and refused when out of range or malformed, on
 * saving and on loading. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io_test_util.h"
#include "nn_optim.h"
#include "test.h"

typedef struct small_run {
    nn_ctx *ctx;
    nn_module *net;
    nn_optimizer *opt;
} small_run;

static void small_open(small_run *r) {
    r->ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 3});
    r->net = io_test_mlp(r->ctx);
    nn_tensor *params[4];
    for (int i = 0; i < 4; i++) params[i] = nn_module_param(r->net, i);
    r->opt = nn_sgd_new(params, 4, &(nn_sgd_options){.lr = 0.1f, .momentum = 0.9f});
}

static void small_close(small_run *r) {
    nn_optimizer_free(r->opt);
    nn_module_free(r->net);
    nn_ctx_free(r->ctx);
}

/* The file at `path` with the first `from` replaced by `to` (same length),
 * written to `out`; false when `from` is not there. */
static bool edited_copy(const char *path, const char *out, const char *from, const char *to) {
    size_t size;
    uint8_t *bytes = io_test_read_bytes(path, &size);
    char *at = bytes ? memmem(bytes, size, from, strlen(from)) : NULL;
    if (at) memcpy(at, to, strlen(to));
    bool ok = at && strlen(from) == strlen(to) && io_test_write_bytes(out, bytes, size) == 0;
    free(bytes);
    return ok;
}

/* The file at `path` edited as edited_copy does is refused on loading
 * (NN_ERR_IO) with a message holding `want`. */
static void check_edit_refused(small_run *r, const char *path, const char *edited, const char *from, const char *to,
                               const char *want) {
    CHECK_MSG(edited_copy(path, edited, from, to), "no %s in %s", from, path);
    nn_train_progress got;
    CHECK_MSG(nn_load_train_state(edited, r->net, r->opt, &got) == NN_ERR_IO, "%s -> %s was not refused", from, to);
    CHECK_MSG(strstr(nn_last_error(), want), "%s -> %s: want \"%s\" in: %s", from, to, want, nn_last_error());
}

TEST(train_state_best_epoch_round_trip) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "best.safetensors");
    small_run r;
    small_open(&r);
    /* A metric %g would round: the file must give back the same double. */
    nn_train_progress p = {.epoch = 5, .step = 20, .seed = 9, .best_epoch = 3, .best_metric = 0.1 + 0.2,
                           .best_by = "accuracy"};
    CHECK_MSG(nn_save_train_state(path, r.net, r.opt, &p) == NN_OK, "%s", nn_last_error());
    nn_train_progress got = {.best_epoch = -1};
    CHECK_MSG(nn_load_train_state(path, r.net, r.opt, &got) == NN_OK, "%s", nn_last_error());
    CHECK(got.epoch == 5 && got.step == 20 && got.best_epoch == 3);
    CHECK_MSG(got.best_metric == 0.1 + 0.2, "best_metric %.17g", got.best_metric);
    CHECK_MSG(strcmp(got.best_by, "accuracy") == 0, "best_by '%s'", got.best_by);
    /* The best epoch may be the last one, by loss. */
    p = (nn_train_progress){.epoch = 1, .step = 4, .seed = 9, .best_epoch = 1, .best_metric = 2.718281828459045,
                            .best_by = "loss"};
    CHECK(nn_save_train_state(path, r.net, r.opt, &p) == NN_OK);
    CHECK(nn_load_train_state(path, r.net, r.opt, &got) == NN_OK);
    CHECK(got.best_epoch == 1 && got.best_metric == 2.718281828459045 && strcmp(got.best_by, "loss") == 0);
    /* No best epoch yet: none in the file, zeros back (what older files give too). */
    p = (nn_train_progress){.epoch = 2, .step = 8, .seed = 9};
    CHECK(nn_save_train_state(path, r.net, r.opt, &p) == NN_OK);
    size_t size;
    uint8_t *bytes = io_test_read_bytes(path, &size);
    CHECK(bytes && !memmem(bytes, size, "best_", 5));
    free(bytes);
    got = (nn_train_progress){.best_epoch = 7, .best_metric = 1, .best_by = "x"};
    CHECK(nn_load_train_state(path, r.net, r.opt, &got) == NN_OK);
    CHECK(got.best_epoch == 0 && got.best_metric == 0 && got.best_by[0] == '\0');
    small_close(&r);
    io_test_rmdir(dir);
}

TEST(train_state_best_epoch_refusals) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "best.safetensors"), *edited = io_test_path(dir, "edited.safetensors");
    small_run r;
    small_open(&r);
    nn_train_progress p = {.epoch = 4, .step = 16, .seed = 9, .best_epoch = 5, .best_metric = 0.5, .best_by = "loss"};
    CHECK(nn_save_train_state(path, r.net, r.opt, &p) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "nn_save_train_state: best_epoch must be in [0, epoch 4], got 5"), "%s",
              nn_last_error());
    p.best_epoch = -1;
    CHECK(nn_save_train_state(path, r.net, r.opt, &p) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "got -1"), "%s", nn_last_error());
    p.best_epoch = 2;
    p.best_metric = NAN;
    CHECK(nn_save_train_state(path, r.net, r.opt, &p) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "best_metric of best_epoch 2 must be finite, got nan"), "%s", nn_last_error());
    p.best_metric = 0.5;
    const char *bad_names[] = {"", "acc\"uracy", "loss\n", "sixteen-letters!"};
    for (int i = 0; i < 4; i++) {
        memset(p.best_by, 0, sizeof p.best_by);
        memcpy(p.best_by, bad_names[i], strlen(bad_names[i]) < sizeof p.best_by ? strlen(bad_names[i]) : sizeof p.best_by);
        CHECK_MSG(nn_save_train_state(path, r.net, r.opt, &p) == NN_ERR_ARGUMENT, "best_by '%s'", bad_names[i]);
        CHECK_MSG(strstr(nn_last_error(), "best_by must name the metric in 1 to 15 printable ASCII characters"), "%s",
                  nn_last_error());
    }
    /* Hand-edited files (the header keeps its length) are refused by key. */
    snprintf(p.best_by, sizeof p.best_by, "loss");
    p.best_metric = 0.625;
    CHECK(nn_save_train_state(path, r.net, r.opt, &p) == NN_OK);
    check_edit_refused(&r, path, edited, "\"best_epoch\":\"2\"", "\"best_epoch\":\"7\"",
                       "metadata \"best_epoch\" = \"7\" is not an integer in [0, 4]");
    check_edit_refused(&r, path, edited, "\"best_epoch\":\"2\"", "\"best_epoch\":\"0\"",
                       "\"best_epoch\" is 0");
    check_edit_refused(&r, path, edited, "\"best_metric\":\"0.625\"", "\"best_metric\":\"inf00\"",
                       "metadata \"best_metric\" = \"inf00\" is not a finite number");
    check_edit_refused(&r, path, edited, "\"best_metric\":\"0.625\"", "\"best_metric\":\"1e999\"",
                       "\"1e999\" is not a finite number");
    check_edit_refused(&r, path, edited, "\"best_metric\"", "\"best_metriX\"",
                       "has \"best_epoch\" but lacks metadata \"best_metric\"");
    check_edit_refused(&r, path, edited, "\"best_by\":\"loss\"", "\"best_by\":\"\\t  \"",
                       "metadata \"best_by\"");
    small_close(&r);
    io_test_rmdir(dir);
}

/* A run stopped part way keeps its epoch's figures so far (a resumed epoch
 * reports the whole epoch): saved exactly, read back, none without
 * epoch_step, refused when they are not figures an epoch gives. */
TEST(train_state_stopped_epoch_figures) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "stopped.safetensors"), *edited = io_test_path(dir, "edited.safetensors");
    small_run r;
    small_open(&r);
    nn_train_progress p = {.epoch = 1, .step = 7, .seed = 9, .epoch_step = 3, .epoch_loss_sum = 0.1 + 0.7,
                           .epoch_correct = 61, .epoch_images = 96};
    CHECK_MSG(nn_save_train_state(path, r.net, r.opt, &p) == NN_OK, "%s", nn_last_error());
    nn_train_progress got = {0};
    CHECK_MSG(nn_load_train_state(path, r.net, r.opt, &got) == NN_OK, "%s", nn_last_error());
    CHECK_MSG(got.epoch_step == 3 && got.epoch_loss_sum == 0.1 + 0.7 && got.epoch_correct == 61 &&
                  got.epoch_images == 96, "%lld %.17g %g %lld", (long long)got.epoch_step, got.epoch_loss_sum,
              got.epoch_correct, (long long)got.epoch_images);
    /* Malformed in the file: refused by key. */
    check_edit_refused(&r, path, edited, "\"epoch_correct\":\"61\"", "\"epoch_correct\":\"-1\"",
                       "metadata \"epoch_correct\" = \"-1\" is not a finite number of at least 0");
    check_edit_refused(&r, path, edited, "\"epoch_images\":\"96\"", "\"epoch_images\":\"9x\"",
                       "metadata \"epoch_images\" = \"9x\" is not an integer");
    check_edit_refused(&r, path, edited, "\"epoch_loss_sum\"", "\"epoch_loss_suX\"",
                       "lacks metadata \"epoch_loss_sum\"");
    /* A file without them (written before they were kept): zeros, the resumed part's figures alone. */
    CHECK(edited_copy(path, edited, "\"epoch_images\"", "\"epoch_imageX\""));
    got = (nn_train_progress){.epoch_loss_sum = 5, .epoch_correct = 5, .epoch_images = 5};
    CHECK_MSG(nn_load_train_state(edited, r.net, r.opt, &got) == NN_OK, "%s", nn_last_error());
    CHECK(got.epoch_step == 3 && got.epoch_loss_sum == 0 && got.epoch_correct == 0 && got.epoch_images == 0);
    /* Refused on saving: not finite, negative, or given without epoch_step. */
    p.epoch_loss_sum = NAN;
    CHECK(nn_save_train_state(path, r.net, r.opt, &p) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "the stopped epoch's figures must be finite"), "%s", nn_last_error());
    p.epoch_loss_sum = 1, p.epoch_images = -4;
    CHECK(nn_save_train_state(path, r.net, r.opt, &p) == NN_ERR_ARGUMENT);
    p.epoch_images = 96, p.epoch_step = 0;
    CHECK(nn_save_train_state(path, r.net, r.opt, &p) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "all 0 without epoch_step"), "%s", nn_last_error());
    /* A whole epoch's state holds none of the keys. */
    p = (nn_train_progress){.epoch = 2, .step = 8, .seed = 9};
    CHECK(nn_save_train_state(path, r.net, r.opt, &p) == NN_OK);
    size_t size;
    uint8_t *bytes = io_test_read_bytes(path, &size);
    CHECK(bytes && !memmem(bytes, size, "epoch_", 6));
    free(bytes);
    small_close(&r);
    io_test_rmdir(dir);
}
