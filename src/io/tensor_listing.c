/* The listing of a safetensors file (include/nn_io.h, nn_list_tensors):
 * its entries' names, dtypes and shapes and a metadata value, so that a
 * reader (Python's nn_engine.load) can make the tensors before loading
 * them with nn_load_tensors. */
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

void nn_tensor_listing_free(nn_tensor_listing *listing) {
    if (!listing) return;
    for (int i = 0; listing->names && i < listing->count; i++) free(listing->names[i]);
    free(listing->names);
    free(listing->dtypes);
    free(listing->ndims);
    free(listing->shapes);
    free(listing->value);
    memset(listing, 0, sizeof *listing);
}

static char *copy_text(const char *text) {
    char *copy = malloc(strlen(text) + 1);
    if (copy) strcpy(copy, text);
    return copy;
}

/* The header's entries as the listing's, or an error naming the entry the
 * engine cannot hold (a dtype other than F32 and I32, 0 or > NN_MAX_DIMS
 * dimensions). */
static nn_status fill(const char *who, const char *path, const nn_st_header *h, const char *key,
                      nn_tensor_listing *out) {
    const int n = h->count;
    out->names = calloc((size_t)n + 1, sizeof *out->names);
    out->dtypes = calloc((size_t)n + 1, sizeof *out->dtypes);
    out->ndims = calloc((size_t)n + 1, sizeof *out->ndims);
    out->shapes = calloc((size_t)n * NN_MAX_DIMS + 1, sizeof *out->shapes);
    if (!out->names || !out->dtypes || !out->ndims || !out->shapes)
        return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
    for (int i = 0; i < n; i++) {
        const nn_st_entry *e = &h->entries[i];
        const bool f32 = !strcmp(e->dtype, "F32"), i32 = !strcmp(e->dtype, "I32");
        if (!f32 && !i32)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: tensor '%s' is %s; nn-engine tensors are F32 or I32", who,
                                path, e->name, e->dtype);
        if (e->ndim < 1 || e->ndim > NN_MAX_DIMS)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: tensor '%s' has %d dimensions; nn-engine tensors have 1 to %d",
                                who, path, e->name, e->ndim, NN_MAX_DIMS);
        if (!(out->names[i] = copy_text(e->name))) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
        out->count = i + 1;
        out->dtypes[i] = f32 ? NN_F32 : NN_I32;
        out->ndims[i] = e->ndim;
        memcpy(&out->shapes[(size_t)i * NN_MAX_DIMS], e->shape, (size_t)e->ndim * sizeof *e->shape);
    }
    const char *value = key ? nn_st_meta_get(h, key) : NULL;
    if (value && !(out->value = copy_text(value))) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
    return NN_OK;
}

nn_status nn_list_tensors(const char *path, const char *key, nn_tensor_listing *out) {
    const char *who = "nn_list_tensors";
    if (!out) return nn_set_error(NN_ERR_ARGUMENT, "%s: out is NULL", who);
    memset(out, 0, sizeof *out);
    if (!path || !*path) return nn_set_error(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    nn_st_header header;
    NN_TRY(nn_st_read_header(who, path, &header));
    nn_status status = fill(who, path, &header, key, out);
    nn_st_header_free(&header);
    if (status != NN_OK) nn_tensor_listing_free(out);
    return status;
}
