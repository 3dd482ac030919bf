#define _XOPEN_SOURCE 700
#include "test_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#ifdef _WIN32
#include <windows.h>

/* Under Windows' own temporary folder (GetTempPath), which Wine maps too. */
int tf_make_temp_dir(char *out, size_t size) {
    char base[MAX_PATH + 1];
    DWORD n = GetTempPathA(sizeof base, base);
    if (n == 0 || n >= sizeof base) return 0;
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(out, size, "%snn_test_%06x", base, (unsigned)(GetTickCount() * 2654435761u + attempt) & 0xFFFFFF);
        if (CreateDirectoryA(out, NULL)) return 1;
        if (GetLastError() != ERROR_ALREADY_EXISTS) return 0;
    }
    return 0;
}

void tf_remove_tree(const char *path) {
    char pattern[MAX_PATH + 4];
    snprintf(pattern, sizeof pattern, "%s/*", path);
    WIN32_FIND_DATAA entry;
    HANDLE find = FindFirstFileA(pattern, &entry);
    if (find != INVALID_HANDLE_VALUE) {
        do {
            if (!strcmp(entry.cFileName, ".") || !strcmp(entry.cFileName, "..")) continue;
            char child[MAX_PATH + 4];
            snprintf(child, sizeof child, "%s/%s", path, entry.cFileName);
            if (entry.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) tf_remove_tree(child);
            else DeleteFileA(child);
        } while (FindNextFileA(find, &entry));
        FindClose(find);
    }
    RemoveDirectoryA(path);
}
#else
#include <ftw.h>
#include <unistd.h>

int tf_make_temp_dir(char *out, size_t size) {
    snprintf(out, size, "/tmp/nn_test_XXXXXX");
    return mkdtemp(out) != NULL;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void tf_remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }
#endif

int tf_subdir(const char *dir, const char *name, char *out, size_t size) {
    snprintf(out, size, "%s/%s", dir, name);
    return mkdir(out, 0755) == 0;
}

int tf_write_bytes(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok;
}

int tf_write_idx(const char *path, uint32_t magic, const uint32_t *dims, int ndim,
                 const uint8_t *data, size_t bytes, int gz) {
    size_t header = 4 + 4 * (size_t)ndim;
    uint8_t *all = malloc(header + bytes + 1);
    if (!all) return 0;
    uint32_t words[8] = {magic};
    for (int i = 0; i < ndim; i++) words[i + 1] = dims[i];
    for (int w = 0; w <= ndim; w++)
        for (int b = 0; b < 4; b++) all[w * 4 + b] = (uint8_t)(words[w] >> (24 - 8 * b));
    if (bytes) memcpy(all + header, data, bytes);
    int ok;
    if (gz) {
        gzFile f = gzopen(path, "wb");
        ok = f && gzwrite(f, all, (unsigned)(header + bytes)) == (int)(header + bytes);
        if (f) ok = gzclose(f) == Z_OK && ok;
    } else {
        ok = tf_write_bytes(path, all, header + bytes);
    }
    free(all);
    return ok;
}
