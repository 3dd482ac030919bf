#include "io_test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _WIN32
#include <windows.h>

/* A new folder in Windows' temporary folder (Windows has no mkdtemp). */
const char *io_test_dir(void) {
    static char dir[MAX_PATH + 32];
    char temp[MAX_PATH];
    DWORD length = GetTempPathA(sizeof temp, temp);
    if (length == 0 || length >= sizeof temp) return NULL;
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(dir, sizeof dir, "%snn-io-test-XXXXXX", temp);
        if (_mktemp_s(dir, strlen(dir) + 1) != 0) return NULL;
        if (_mkdir(dir) == 0) return dir;
    }
    return NULL;
}
#else
const char *io_test_dir(void) {
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/nn-io-test-XXXXXX");
    return mkdtemp(dir);
}
#endif

const char *io_test_path(const char *dir, const char *name) {
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

void io_test_rmdir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0) rmdir(path);
    }
    closedir(d);
    rmdir(dir);
}

int io_test_dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

int io_test_write_bytes(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t put = fwrite(data, 1, size, f);
    return fclose(f) == 0 && put == size ? 0 : -1;
}

uint8_t *io_test_read_bytes(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc((size_t)n + 1);
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return data;
}

int io_test_write_safetensors(const char *path, const char *json, const void *data, size_t size) {
    size_t n = strlen(json);
    uint8_t *buf = malloc(8 + n + size + 1);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(buf + 8, json, n);
    if (size) memcpy(buf + 8 + n, data, size);
    int rc = io_test_write_bytes(path, buf, 8 + n + size);
    free(buf);
    return rc;
}

nn_module *io_test_mlp(nn_ctx *ctx) {
    nn_module *m = nn_sequential(ctx);
    nn_sequential_append(m, "fc1", nn_linear_layer(ctx, 3, 5, NN_INIT_KAIMING_UNIFORM));
    nn_sequential_append(m, "act", nn_relu_layer(ctx));
    nn_sequential_append(m, "fc2", nn_linear_layer(ctx, 5, 7, NN_INIT_KAIMING_UNIFORM));
    return m;
}

static uint64_t xorshift(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

void io_test_randomize(nn_module *m, uint64_t *state) {
    for (int i = 0; i < nn_module_param_count(m); i++) {
        nn_tensor *p = nn_module_param(m, i);
        size_t n = (size_t)nn_tensor_numel(p);
        float *v = malloc(n * sizeof *v);
        for (size_t k = 0; k < n; k++) v[k] = (float)((double)(xorshift(state) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        nn_tensor_write(p, v, n * sizeof *v);
        free(v);
    }
}

float *io_test_snapshot(const nn_module *m, size_t *count) {
    size_t total = 0;
    for (int i = 0; i < nn_module_param_count(m); i++) total += (size_t)nn_tensor_numel(nn_module_param(m, i));
    float *all = malloc(total * sizeof *all + 1);
    size_t at = 0;
    for (int i = 0; i < nn_module_param_count(m); i++) {
        nn_tensor *p = nn_module_param(m, i);
        size_t n = (size_t)nn_tensor_numel(p);
        nn_tensor_read(p, all + at, n * sizeof *all);
        at += n;
    }
    *count = total;
    return all;
}

int io_test_same_params(const nn_module *a, const nn_module *b) {
    size_t na, nb;
    float *x = io_test_snapshot(a, &na), *y = io_test_snapshot(b, &nb);
    int same = na == nb && memcmp(x, y, na * sizeof *x) == 0;
    free(x);
    free(y);
    return same;
}
