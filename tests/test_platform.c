/* The platform layer (src/platform/) on the system the suite runs on: Linux,
 * and the Windows build under Wine. Non-ASCII paths through every file call
 * the engine makes, atomic replacement of an existing file, the host's
 * counts, and the word the thread pool sleeps on. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "io_test_util.h"
#include "platform/files.h"
#include "platform/host_info.h"
#include "platform/wait_word.h"
#include "test.h"

/* "modèle-ü-λ.safetensors": Latin-1 and Greek letters, outside any one ANSI code page. */
#define NON_ASCII_NAME "mod\xc3\xa8le-\xc3\xbc-\xce\xbb.safetensors"

TEST(platform_non_ascii_paths_save_replace_and_load) {
    const char *dir = io_test_dir();
    CHECK(dir != NULL);
    if (!dir) return;
    const char *path = io_test_path(dir, NON_ASCII_NAME);
    nn_ctx_options o = {.device = "cpu", .threads = 1, .seed = 3};
    nn_ctx *ctx = nn_ctx_new(&o);
    nn_module *a = io_test_mlp(ctx), *b = io_test_mlp(ctx);
    uint64_t state = 11;
    io_test_randomize(a, &state);
    CHECK_MSG(nn_save_module(b, path) == NN_OK, "%s", nn_last_error());
    /* The second save replaces the first file in one step. */
    CHECK_MSG(nn_save_module(a, path) == NN_OK, "%s", nn_last_error());
    nn_file_status st;
    CHECK_MSG(nn_file_stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0, "stat %s", path);
    CHECK(io_test_dir_entries(dir) == 1); /* no temporary file left */
    CHECK_MSG(nn_load_module(b, path) == NN_OK, "%s", nn_last_error());
    CHECK(io_test_same_params(a, b));
    FILE *f = nn_file_fopen(path, "rb");
    CHECK(f != NULL);
    if (f) fclose(f);
    CHECK(nn_check_writable_path(path) == NN_OK);
    CHECK(nn_file_remove(path) == 0);
    CHECK(nn_file_stat(path, &st) != 0);
    /* A folder of that name, then a file in it. */
    const char *folder = io_test_path(dir, "donn\xc3\xa9" "es");
    CHECK(nn_file_make_folder(folder) == 0);
    CHECK(nn_file_stat(folder, &st) == 0 && S_ISDIR(st.st_mode));
    const char *inner = io_test_path(folder, NON_ASCII_NAME);
    CHECK_MSG(nn_save_module(a, inner) == NN_OK, "%s", nn_last_error());
    CHECK(nn_file_remove(inner) == 0);
    CHECK(nn_file_remove_folder(folder) == 0);
    CHECK(nn_file_stat(folder, &st) != 0);
    nn_module_free(a);
    nn_module_free(b);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}

TEST(platform_host_counts_are_plausible) {
    int online = nn_host_online_cores(), usable = nn_host_usable_cores();
    CHECK_MSG(online >= 1 && usable >= 1 && usable <= online, "online %d usable %d", online, usable);
    uint64_t memory = nn_host_memory_bytes();
    CHECK_MSG(memory >= ((uint64_t)64 << 20), "memory %llu bytes", (unsigned long long)memory);
    char name[256];
    nn_host_name(name, sizeof name);
    CHECK(name[0] != '\0' && strlen(name) < sizeof name);
}

typedef struct {
    _Atomic uint32_t word;
    _Atomic int woken;
} wait_state;

static void *sleeper(void *arg) {
    wait_state *s = arg;
    while (atomic_load(&s->word) == 0) nn_wait_word(&s->word, 0);
    atomic_fetch_add(&s->woken, 1);
    return NULL;
}

TEST(platform_wait_word_wakes_every_sleeper) {
    wait_state s = {0, 0};
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) CHECK(pthread_create(&threads[i], NULL, sleeper, &s) == 0);
    nn_wait_word(&s.word, 1); /* the word is not 1: returns at once */
    atomic_store(&s.word, 1);
    nn_wake_word(&s.word, 1 << 30);
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    CHECK(atomic_load(&s.woken) == 3);
}
