/* Checkpoints: named tensors in a safetensors file, nothing else (but
 * the model info, or a caller's note: nn_save_tensors_meta); a module's are
 * its state_dict under PyTorch's names, so the file is a plain state_dict
 * for torch (see nn_io.h). */
#include <stdlib.h>
#include <string.h>

#include "model_info.h"
#include "safetensors.h"

static nn_st_binding *bindings(const char *who, int count, nn_tensor *const *tensors, const char *const *names) {
    if (count < 0 || (count > 0 && (!tensors || !names)))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: %d tensors, tensors or names NULL", who, count);
    nn_st_binding *b = calloc((size_t)count + 1, sizeof *b);
    if (!b) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", who);
    for (int i = 0; i < count; i++) {
        if (!tensors[i] || !names[i] || !*names[i]) {
            free(b);
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: tensor %d or its name is NULL or empty", who, i);
        }
        b[i] = (nn_st_binding){names[i], tensors[i]};
    }
    return b;
}

/* Writes the tensors, and the model info (or NULL) as metadata. */
static nn_status save_info(const char *who, const char *path, int count, nn_tensor *const *tensors,
                           const char *const *names, const nn_model_info *info) {
    if (!path || !*path) return nn_set_error(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    nn_st_meta meta[2];
    int meta_count = 0;
    NN_TRY(nn_model_info_to_meta(who, info, meta, &meta_count));
    nn_st_binding *b = bindings(who, count, tensors, names);
    nn_status status = b ? nn_st_save(who, path, b, count, meta, meta_count) : nn_last_status();
    free(b);
    nn_model_info_meta_free(meta, meta_count);
    return status;
}

static nn_status save(const char *who, const char *path, int count, nn_tensor *const *tensors,
                      const char *const *names) {
    return save_info(who, path, count, tensors, names, NULL);
}

/* Fills the tensors from the file; entries under `except` (a child's
 * path, or NULL) are ignored in the file. */
static nn_status load_except(const char *who, const char *path, int count, nn_tensor *const *tensors,
                             const char *const *names, const char *except) {
    nn_st_binding *b = bindings(who, count, tensors, names);
    if (!b) return nn_last_status();
    nn_st_file file;
    nn_status status = nn_st_open(who, path, &file);
    if (status != NN_OK) {
        free(b);
        return status;
    }
    /* Say what the file is rather than listing its first unknown tensor. */
    const char *format = nn_st_meta_get(&file.header, "format");
    if (format && strcmp(format, NN_TRAIN_STATE_FORMAT) == 0)
        status = nn_set_error(NN_ERR_ARGUMENT, "%s: %s: this is a training state (parameters plus "
                                               "optimizer buffers), not a weights file: resume from "
                                               "it with nn_load_train_state", who, path);
    else
        status = nn_st_assign_except(who, path, &file, b, count, except);
    free(b);
    nn_st_close(&file);
    return status;
}

static nn_status load(const char *who, const char *path, int count, nn_tensor *const *tensors,
                      const char *const *names) {
    return load_except(who, path, count, tensors, names, NULL);
}

nn_status nn_save_tensors(const char *path, int count, nn_tensor *const *tensors, const char *const *names) {
    return save("nn_save_tensors", path, count, tensors, names);
}

nn_status nn_load_tensors(const char *path, int count, nn_tensor *const *tensors, const char *const *names) {
    return load("nn_load_tensors", path, count, tensors, names);
}

nn_status nn_save_tensors_info(const char *path, int count, nn_tensor *const *tensors, const char *const *names,
                               const nn_model_info *info) {
    return save_info("nn_save_tensors_info", path, count, tensors, names, info);
}

nn_status nn_save_tensors_meta(const char *path, int count, nn_tensor *const *tensors, const char *const *names,
                               const char *key, const char *value) {
    const char *who = "nn_save_tensors_meta";
    if (!path || !*path) return nn_set_error(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    if (!key || !*key || !value) return nn_set_error(NN_ERR_ARGUMENT, "%s: key is NULL or empty, or value is NULL", who);
    nn_st_binding *b = bindings(who, count, tensors, names);
    if (!b) return nn_last_status();
    nn_st_meta meta = {(char *)key, (char *)value};
    nn_status status = nn_st_save(who, path, b, count, &meta, 1);
    free(b);
    return status;
}

/* save or load over the module's state_dict. */
typedef nn_status (*state_io)(const char *who, const char *path, int count, nn_tensor *const *tensors,
                              const char *const *names, const nn_model_info *info);

/* load with the signature of save_info (a loaded file's info is read by nn_read_model_info). */
static nn_status load_io(const char *who, const char *path, int count, nn_tensor *const *tensors,
                         const char *const *names, const nn_model_info *info) {
    (void)info;
    return load(who, path, count, tensors, names);
}

static nn_status with_state_dict(const char *who, const nn_module *m, const char *path, state_io io,
                                 const nn_model_info *info) {
    if (!m) return nn_set_error(NN_ERR_ARGUMENT, "%s: module is NULL", who);
    const int count = nn_module_state_count(m);
    nn_tensor **tensors = calloc((size_t)count + 1, sizeof *tensors);
    const char **names = calloc((size_t)count + 1, sizeof *names);
    nn_status status = tensors && names ? NN_OK : nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
    for (int i = 0; status == NN_OK && i < count; i++) {
        tensors[i] = nn_module_state(m, i);
        names[i] = nn_module_state_name(m, i);
    }
    if (status == NN_OK) status = io(who, path, count, tensors, names, info);
    free(tensors);
    free(names);
    return status;
}

nn_status nn_save_module(const nn_module *module, const char *path) {
    return with_state_dict("nn_save_module", module, path, save_info, NULL);
}

nn_status nn_save_module_info(const nn_module *module, const char *path, const nn_model_info *info) {
    return with_state_dict("nn_save_module_info", module, path, save_info, info);
}

nn_status nn_load_module(nn_module *module, const char *path) {
    return with_state_dict("nn_load_module", module, path, load_io, NULL);
}

nn_status nn_load_module_except(nn_module *module, const char *path, const char *child_path) {
    const char *who = "nn_load_module_except";
    if (!module) return nn_set_error(NN_ERR_ARGUMENT, "%s: module is NULL", who);
    if (!child_path || !*child_path) return nn_set_error(NN_ERR_ARGUMENT, "%s: child_path is NULL or empty", who);
    if (!nn_module_child(module, child_path))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: the %s has no child '%s'", who, nn_module_kind(module), child_path);
    const int all = nn_module_state_count(module);
    nn_tensor **tensors = calloc((size_t)all + 1, sizeof *tensors);
    const char **names = calloc((size_t)all + 1, sizeof *names);
    nn_status status = tensors && names ? NN_OK : nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
    int count = 0;
    for (int i = 0; status == NN_OK && i < all; i++) {
        if (nn_st_name_under(nn_module_state_name(module, i), child_path)) continue;
        tensors[count] = nn_module_state(module, i);
        names[count++] = nn_module_state_name(module, i);
    }
    if (status == NN_OK) status = load_except(who, path, count, tensors, names, child_path);
    free(tensors);
    free(names);
    return status;
}
