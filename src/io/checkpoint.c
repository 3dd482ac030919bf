/* Module checkpoints: the parameters alone, under PyTorch names, so the file
 * is a plain state_dict for torch (see nn_io.h). */
#include <stdlib.h>
#include <string.h>

#include "nn/module.h"
#include "safetensors.h"

/* The module's parameters as bindings (caller frees). */
static nn_st_binding *module_bindings(const char *who, const nn_module *m) {
    nn_st_binding *b = calloc((size_t)m->param_count + 1, sizeof *b);
    if (!b) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", who);
    for (int i = 0; i < m->param_count; i++) {
        b[i].name = m->param_names[i];
        b[i].tensor = m->params[i];
    }
    return b;
}

nn_status nn_save_module(const nn_module *module, const char *path) {
    const char *who = "nn_save_module";
    if (!module) return nn_set_error(NN_ERR_ARGUMENT, "%s: module is NULL", who);
    if (!path || !*path) return nn_set_error(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    nn_st_binding *b = module_bindings(who, module);
    if (!b) return nn_last_status();
    nn_status status = nn_st_save(who, path, b, module->param_count, NULL, 0);
    free(b);
    return status;
}

nn_status nn_load_module(nn_module *module, const char *path) {
    const char *who = "nn_load_module";
    if (!module) return nn_set_error(NN_ERR_ARGUMENT, "%s: module is NULL", who);
    nn_st_file file;
    NN_TRY(nn_st_open(who, path, &file));
    /* Say what the file is rather than listing its first unknown tensor. */
    const char *format = nn_st_meta_get(&file.header, "format");
    if (format && strcmp(format, NN_TRAIN_STATE_FORMAT) == 0) {
        nn_st_close(&file);
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: this is a training state (parameters plus "
                                             "optimizer buffers), not a weights file: resume from "
                                             "it with nn_load_train_state", who, path);
    }
    nn_st_binding *b = module_bindings(who, module);
    nn_status status = b ? nn_st_assign(who, path, &file, b, module->param_count) : nn_last_status();
    free(b);
    nn_st_close(&file);
    return status;
}
