/* Module checkpoints in safetensors: round trips, a file built by hand (the
 * format as the spec writes it, independent of our writer), every kind of
 * malformed file refused with nothing loaded, and atomic writes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/atomic_file.h"
#include "io_test_util.h"
#include "test.h"

#define CHECK_ERROR(status, want_status, path, text)                                         \
    do {                                                                                     \
        nn_status s_ = (status);                                                             \
        CHECK_MSG(s_ == (want_status), "status %s, want %s (%s)", nn_status_name(s_),         \
                  nn_status_name(want_status), nn_last_error());                             \
        CHECK_MSG(strstr(nn_last_error(), (path)) != NULL, "message lacks the path: %s",      \
                  nn_last_error());                                                          \
        CHECK_MSG(strstr(nn_last_error(), (text)) != NULL, "message lacks \"%s\": %s", (text), \
                  nn_last_error());                                                          \
    } while (0)

static nn_ctx *cpu_ctx(uint64_t seed) {
    nn_ctx_options o = {.device = "cpu", .threads = 1, .seed = seed};
    return nn_ctx_new(&o);
}

TEST(safetensors_lenet_round_trip_and_layout) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "lenet.safetensors");
    nn_ctx *ctx = cpu_ctx(1);
    nn_module *a = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    nn_module *b = nn_lenet5(ctx, NN_INIT_XAVIER_UNIFORM);
    uint64_t s = 77;
    io_test_randomize(a, &s);
    CHECK(!io_test_same_params(a, b));
    CHECK_MSG(nn_save_module(a, path) == NN_OK, "%s", nn_last_error());
    CHECK_MSG(nn_load_module(b, path) == NN_OK, "%s", nn_last_error());
    CHECK(io_test_same_params(a, b));

    /* The bytes, read as the spec describes them. */
    size_t size;
    uint8_t *file = io_test_read_bytes(path, &size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | file[i];
    CHECK(n % 8 == 0 && 8 + n < size);
    char *json = calloc(1, n + 1);
    memcpy(json, file + 8, n);
    CHECK(json[0] == '{');
    CHECK_MSG(strstr(json, "\"c1.weight\":{\"dtype\":\"F32\",\"shape\":[6,1,5,5],\"data_offsets\":[0,600]}"),
              "%s", json);
    CHECK(strstr(json, "\"l3.bias\":{\"dtype\":\"F32\",\"shape\":[10],"));
    size_t count;
    float *values = io_test_snapshot(a, &count);
    CHECK(size == 8 + n + count * sizeof(float));
    CHECK(memcmp(file + 8 + n, values, count * sizeof(float)) == 0);
    CHECK(io_test_dir_entries(dir) == 1); /* no temporary file left */
    free(values);
    free(json);
    free(file);
    nn_module_free(a);
    nn_module_free(b);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}

/* The MLP's tensors in a different order from the module's, with metadata
 * and trailing-space padding: what another writer may produce. */
TEST(safetensors_loads_hand_built_file) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "mlp.safetensors");
    const char *json =
        "{\"__metadata__\":{\"format\":\"pt\"},"
        "\"fc2.bias\":{\"dtype\":\"F32\",\"shape\":[7],\"data_offsets\":[0,28]},"
        " \"fc1.weight\" : {\"shape\":[5,3],\"dtype\":\"F32\",\"data_offsets\":[28,88]},\n"
        "\"fc2.weight\":{\"data_offsets\":[88,228],\"dtype\":\"F32\",\"shape\":[7,5]},"
        "\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[228,248]}}    ";
    float data[62];
    for (int i = 0; i < 62; i++) data[i] = 0.25f * (float)i - 3.0f;
    CHECK(io_test_write_safetensors(path, json, data, sizeof data) == 0);
    nn_ctx *ctx = cpu_ctx(2);
    nn_module *m = io_test_mlp(ctx);
    CHECK_MSG(nn_load_module(m, path) == NN_OK, "%s", nn_last_error());
    /* fc1.weight, fc1.bias, fc2.weight, fc2.bias in module order. */
    const struct { int param, at, n; } where[] = {{0, 7, 15}, {1, 57, 5}, {2, 22, 35}, {3, 0, 7}};
    for (int k = 0; k < 4; k++) {
        float got[35];
        CHECK(nn_tensor_read(nn_module_param(m, where[k].param), got, sizeof(float) * (size_t)where[k].n) == NN_OK);
        CHECK(memcmp(got, data + where[k].at, sizeof(float) * (size_t)where[k].n) == 0);
    }
    nn_module_free(m);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}

/* Offsets of the MLP in module order, for the malformed cases. */
#define W1 "\"fc1.weight\":{\"dtype\":\"F32\",\"shape\":[5,3],\"data_offsets\":[0,60]}"
#define B1 "\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[60,80]}"
#define W2 "\"fc2.weight\":{\"dtype\":\"F32\",\"shape\":[7,5],\"data_offsets\":[80,220]}"
#define B2 "\"fc2.bias\":{\"dtype\":\"F32\",\"shape\":[7],\"data_offsets\":[220,248]}"

static const struct bad_case {
    const char *json;
    size_t data;
    nn_status status;
    const char *text;
} bad_cases[] = {
    {"{" W1 "," B1 "," W2 "," B2 "}", 247, NN_ERR_IO, "truncated file"},
    {"{" W1 "," B1 "," W2 "," B2 "}", 249, NN_ERR_IO, "the file holds 249 after the header"},
    {"{" W1 "," B1 "," W2 ",\"fc2.bias\":{\"dtype\":\"F32\",\"shape\":[7],\"data_offsets\":[224,252]}}",
     252, NN_ERR_IO, "starts at data byte 224"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[56,76]}," W2 "," B2 "}",
     248, NN_ERR_IO, "starts at data byte 56"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[60,84]}," W2 "," B2 "}",
     248, NN_ERR_IO, "needs 20 bytes"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[80,60]}," W2 "," B2 "}",
     248, NN_ERR_IO, "end before they begin"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"I32\",\"shape\":[5],\"data_offsets\":[60,80]}," W2 "," B2 "}",
     248, NN_ERR_DTYPE, "'fc1.bias' is I32 in the file, expected F32"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F16\",\"shape\":[10],\"data_offsets\":[60,80]}," W2 "," B2 "}",
     248, NN_ERR_DTYPE, "'fc1.bias' is F16 in the file, expected F32"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F33\",\"shape\":[5],\"data_offsets\":[60,80]}," W2 "," B2 "}",
     248, NN_ERR_IO, "unknown dtype \"F33\""},
    {"{\"fc1.weight\":{\"dtype\":\"F32\",\"shape\":[3,5],\"data_offsets\":[0,60]}," B1 "," W2 "," B2 "}",
     248, NN_ERR_SHAPE, "'fc1.weight' has shape [3, 5] in the file, expected [5, 3]"},
    {"{\"fc1.weight\":{\"dtype\":\"F32\",\"shape\":[15],\"data_offsets\":[0,60]}," B1 "," W2 "," B2 "}",
     248, NN_ERR_SHAPE, "has shape [15] in the file, expected [5, 3]"},
    {"{" W1 "," B1 "," W2 "," B2 ",\"fc3.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[248,252]}}",
     252, NN_ERR_ARGUMENT, "'fc3.bias', which the model does not have"},
    {"{" W1 "," B1 "," W2 "}", 220, NN_ERR_ARGUMENT, "'fc2.bias' is missing"},
    {"{}", 0, NN_ERR_ARGUMENT, "'fc1.weight' is missing"},
    {"{" W1 "," B1 "," W2 "," B2 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[248,268]}}",
     268, NN_ERR_IO, "'fc1.bias' appears twice"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[60,80],\"x\":1}," W2 "," B2 "}",
     248, NN_ERR_IO, "unknown key \"x\""},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[60,80]}," W2 "," B2 "}",
     248, NN_ERR_IO, "repeated key \"dtype\""},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[5]}," W2 "," B2 "}",
     248, NN_ERR_IO, "lacks \"data_offsets\""},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[-5],\"data_offsets\":[60,80]}," W2 "," B2 "}",
     248, NN_ERR_IO, "non-negative integer"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[5.0],\"data_offsets\":[60,80]}," W2 "," B2 "}",
     248, NN_ERR_IO, "must be an integer"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[05],\"data_offsets\":[60,80]}," W2 "," B2 "}",
     248, NN_ERR_IO, "leading zero"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[60,80,100]}," W2 "," B2 "}",
     248, NN_ERR_IO, "data_offsets has more than 2 entries"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,5],\"data_offsets\":[60,80]}," W2 "," B2 "}",
     248, NN_ERR_IO, "a shape has more than 8 entries"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[60,80]}," W2 "," B2 "}",
     248, NN_ERR_IO, "too large"},
    {"{" W1 ",\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[60,18446744073709551616]}," W2 "," B2 "}",
     248, NN_ERR_IO, "does not fit in 64 bits"},
    {"{" W1 "," B1 "," W2 "," B2 "}x", 248, NN_ERR_IO, "unexpected bytes after the JSON object"},
    {"{" W1 "," B1 "," W2 "," B2, 248, NN_ERR_IO, "expected '}', the header ends"},
    {"[" W1 "]", 60, NN_ERR_IO, "must be a JSON object"},
    {"", 0, NN_ERR_IO, "must be a JSON object"},
    {"{\"fc1.weight", 0, NN_ERR_IO, "unterminated string"},
    {"{\"fc1\\qweight\":{}}", 0, NN_ERR_IO, "bad escape"},
    {"{\"fc1\\u0000\":{}}", 0, NN_ERR_IO, "\\u0000"},
    {"{\"fc1\\ud800\":{}}", 0, NN_ERR_IO, "unpaired UTF-16 surrogate"},
    {"{\"fc1\x01\":{}}", 0, NN_ERR_IO, "control character 0x01"},
    {"{\"__metadata__\":{\"a\":1}," W1 "}", 60, NN_ERR_IO, "metadata value of \"a\" must be a string"},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, NN_ERR_IO, "\"__metadata__\" appears twice"},
    {"{\"fc1.weight\":[]}", 0, NN_ERR_IO, "expected '{', found '['"},
};

TEST(safetensors_refuses_malformed_files_and_loads_nothing) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "bad.safetensors");
    nn_ctx *ctx = cpu_ctx(3);
    nn_module *m = io_test_mlp(ctx);
    uint64_t s = 5;
    io_test_randomize(m, &s);
    size_t count;
    float *before = io_test_snapshot(m, &count);
    uint8_t data[300];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + 1);
    for (size_t k = 0; k < sizeof bad_cases / sizeof bad_cases[0]; k++) {
        const struct bad_case *c = &bad_cases[k];
        CHECK(io_test_write_safetensors(path, c->json, data, c->data) == 0);
        nn_clear_error();
        nn_status status = nn_load_module(m, path);
        CHECK_MSG(status == c->status, "case %zu: status %s, want %s: %s", k, nn_status_name(status),
                  nn_status_name(c->status), nn_last_error());
        CHECK_MSG(strstr(nn_last_error(), path) && strstr(nn_last_error(), c->text),
                  "case %zu: message lacks the path or \"%s\": %s", k, c->text, nn_last_error());
        size_t n;
        float *after = io_test_snapshot(m, &n);
        CHECK_MSG(memcmp(before, after, count * sizeof *after) == 0, "case %zu loaded something", k);
        free(after);
    }
    /* The same file but valid loads (so the cases above fail for their own reason). */
    CHECK(io_test_write_safetensors(path, "{" W1 "," B1 "," W2 "," B2 "}", data, 248) == 0);
    CHECK_MSG(nn_load_module(m, path) == NN_OK, "%s", nn_last_error());
    free(before);
    nn_module_free(m);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}

TEST(safetensors_refuses_bad_length_prefix_and_paths) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "bad.safetensors");
    nn_ctx *ctx = cpu_ctx(4);
    nn_module *m = io_test_mlp(ctx);
    uint8_t bytes[16] = {0};

    CHECK(io_test_write_bytes(path, bytes, 5) == 0);
    CHECK_ERROR(nn_load_module(m, path), NN_ERR_IO, path, "5 bytes, the header length alone takes 8");

    bytes[0] = 100; /* claims 100 header bytes, 8 follow */
    CHECK(io_test_write_bytes(path, bytes, 16) == 0);
    CHECK_ERROR(nn_load_module(m, path), NN_ERR_IO, path, "the header claims 100 bytes, only 8 follow");

    memset(bytes, 0xff, 8); /* 2^64 - 1 */
    CHECK(io_test_write_bytes(path, bytes, 16) == 0);
    CHECK_ERROR(nn_load_module(m, path), NN_ERR_IO, path, "more than the 100000000 allowed");

    const char *missing = io_test_path(dir, "missing.safetensors");
    CHECK_ERROR(nn_load_module(m, missing), NN_ERR_IO, missing, "cannot open");
    CHECK_ERROR(nn_load_module(m, dir), NN_ERR_IO, dir, "not a regular file");
    CHECK(nn_load_module(NULL, path) == NN_ERR_ARGUMENT);
    CHECK(nn_load_module(m, NULL) == NN_ERR_ARGUMENT);
    CHECK(nn_save_module(NULL, path) == NN_ERR_ARGUMENT);
    CHECK(nn_save_module(m, "") == NN_ERR_ARGUMENT);
    nn_module_free(m);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}

/* A failed save leaves the old file as it was and no temporary file behind. */
TEST(safetensors_failed_writes_leave_old_file_intact) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "model.safetensors");
    nn_ctx *ctx = cpu_ctx(5);
    nn_module *a = io_test_mlp(ctx), *b = io_test_mlp(ctx);
    uint64_t s = 9;
    io_test_randomize(a, &s);
    io_test_randomize(b, &s);
    CHECK(nn_save_module(a, path) == NN_OK);
    size_t old_size;
    uint8_t *old = io_test_read_bytes(path, &old_size);

    /* A full disk at several points: in the header, in the data, at the last byte. */
    const int64_t fail_at[] = {0, 7, 100, (int64_t)old_size - 1};
    for (int k = 0; k < 4; k++) {
        nn_atomic_fail_after_bytes = fail_at[k];
        CHECK_ERROR(nn_save_module(b, path), NN_ERR_IO, path, "No space left on device");
        nn_atomic_fail_after_bytes = -1;
        size_t size;
        uint8_t *now = io_test_read_bytes(path, &size);
        CHECK_MSG(now && size == old_size && memcmp(now, old, size) == 0,
                  "the old file changed after a failure at byte %lld", (long long)fail_at[k]);
        free(now);
        CHECK(io_test_dir_entries(dir) == 1);
    }
    /* Missing directory; a parent that is a file; a destination that is a directory. */
    const char *missing = io_test_path(dir, "no-such-dir/model.safetensors");
    CHECK_ERROR(nn_save_module(b, missing), NN_ERR_IO, missing, "cannot create a temporary file");
    const char *under_file = io_test_path(dir, "model.safetensors/x.safetensors");
#ifdef _WIN32 /* Windows reports a file used as a folder as a missing path */
    CHECK_ERROR(nn_save_module(b, under_file), NN_ERR_IO, under_file, "No such file or directory");
#else
    CHECK_ERROR(nn_save_module(b, under_file), NN_ERR_IO, under_file, "Not a directory");
#endif
    const char *subdir = io_test_path(dir, "sub");
    CHECK(mkdir(subdir, 0755) == 0);
    CHECK_ERROR(nn_save_module(b, subdir), NN_ERR_IO, subdir, "is a folder, not a regular file");
    struct stat st;
    CHECK(stat(subdir, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(io_test_dir_entries(dir) == 2 && io_test_dir_entries(subdir) == 0);

    /* A successful save replaces the file. */
    CHECK(nn_save_module(b, path) == NN_OK);
    nn_module *c = io_test_mlp(ctx);
    CHECK(nn_load_module(c, path) == NN_OK);
    CHECK(io_test_same_params(b, c) && !io_test_same_params(a, c));
    CHECK(io_test_dir_entries(dir) == 2);
    free(old);
    nn_module_free(a);
    nn_module_free(b);
    nn_module_free(c);
    nn_ctx_free(ctx);
    io_test_rmdir(subdir);
    io_test_rmdir(dir);
}
