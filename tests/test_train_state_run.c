/* Training state: the run's description (nn_train_extras.run, metadata
 * "run") saved and read back by nn_train_state_run, "" from a state saved
 * without one, and refusals: a description that is not printable text or
 * too long, a buffer too small for it, a file that is no training state,
 * one cut short (nn_train_state_run reads the header alone). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_test_util.h"
#include "nn_optim.h"
#include "test.h"

TEST(train_state_run_description_round_trip_and_refusals) {
    const char *dir = io_test_dir();
    char path[512], plain[512], weights[512], bad[512]; /* io_test_path's buffers are reused */
    snprintf(path, sizeof path, "%s", io_test_path(dir, "run.safetensors"));
    snprintf(plain, sizeof plain, "%s", io_test_path(dir, "plain.safetensors"));
    snprintf(weights, sizeof weights, "%s", io_test_path(dir, "weights.safetensors"));
    snprintf(bad, sizeof bad, "%s", io_test_path(dir, "bad.safetensors"));
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 3});
    nn_module *net = io_test_mlp(ctx);
    nn_tensor *params[4];
    for (int i = 0; i < 4; i++) params[i] = nn_module_param(net, i);
    nn_optimizer *opt = nn_sgd_new(params, 4, &(nn_sgd_options){.lr = 0.1f, .momentum = 0.9f});
    const nn_train_progress p = {.epoch = 2, .step = 8, .seed = 9};
    /* JSON's special characters survive the header's escaping. */
    const char *run = "the model=mlp; --lr=0.05; --freeze=\"a\\b\"; --normalize=0.5,0.2";
    nn_train_extras extras = {NULL, NULL, run};
    CHECK_MSG(nn_save_train_state_with(path, net, opt, &extras, &p) == NN_OK, "%s", nn_last_error());
    char got[NN_TRAIN_STATE_RUN_MAX];
    CHECK_MSG(nn_train_state_run(path, got, sizeof got) == NN_OK, "%s", nn_last_error());
    CHECK_MSG(strcmp(got, run) == 0, "got '%s'", got);
    /* The description changes nothing the load restores. */
    nn_train_progress back;
    CHECK_MSG(nn_load_train_state(path, net, opt, &back) == NN_OK, "%s", nn_last_error());
    CHECK(back.epoch == 2 && back.step == 8);
    CHECK(nn_train_state_run(path, got, 10) == NN_ERR_ARGUMENT && strstr(nn_last_error(), "does not fit 10"));
    /* Saved without one: "". */
    CHECK_MSG(nn_save_train_state(plain, net, opt, &p) == NN_OK, "%s", nn_last_error());
    strcpy(got, "x");
    CHECK(nn_train_state_run(plain, got, sizeof got) == NN_OK && got[0] == '\0');
    /* Refusals, naming the problem; nothing written. */
    extras.run = "two\nlines";
    CHECK(nn_save_train_state_with(bad, net, opt, &extras, &p) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "printable text of at most 4095 bytes"), "%s", nn_last_error());
    char *long_run = malloc(NN_TRAIN_STATE_RUN_MAX + 1);
    memset(long_run, 'x', NN_TRAIN_STATE_RUN_MAX);
    long_run[NN_TRAIN_STATE_RUN_MAX] = '\0';
    extras.run = long_run;
    CHECK(nn_save_train_state_with(bad, net, opt, &extras, &p) == NN_ERR_ARGUMENT);
    free(long_run);
    CHECK(nn_save_module(net, weights) == NN_OK);
    CHECK(nn_train_state_run(weights, got, sizeof got) == NN_ERR_ARGUMENT &&
          strstr(nn_last_error(), "is not an nn-engine training state"));
    CHECK(nn_train_state_run(io_test_path(dir, "missing.safetensors"), got, sizeof got) != NN_OK);
    size_t size;
    uint8_t *written = io_test_read_bytes(bad, &size);
    CHECK_MSG(!written, "a refused save wrote %s", bad);
    free(written);
    /* Only the header is read, but a file cut anywhere is still refused: in its length, its header, its tensors. */
    size_t whole;
    uint8_t *state = io_test_read_bytes(path, &whole);
    const uint64_t header = state && whole >= 8 ? state[0] | (uint64_t)state[1] << 8 | (uint64_t)state[2] << 16 : 0;
    static const char *const kCutSays[3] = {"not a safetensors file", "truncated safetensors file", "truncated file?"};
    const size_t cuts[3] = {5, (size_t)(8 + header / 2), whole - 4};
    for (int i = 0; state && i < 3; i++) {
        CHECK(io_test_write_bytes(bad, state, cuts[i]) == 0);
        CHECK_MSG(nn_train_state_run(bad, got, sizeof got) == NN_ERR_IO && strstr(nn_last_error(), kCutSays[i]),
                  "cut at %zu: %s", cuts[i], nn_last_error());
    }
    free(state);
    remove(bad);
    nn_optimizer_free(opt);
    nn_module_free(net);
    nn_ctx_free(ctx);
}
