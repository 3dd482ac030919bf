/* Module bookkeeping shared by every layer and container. */
#include <stdlib.h>
#include <string.h>

#include "module.h"

nn_module *nn_module_alloc(nn_ctx *ctx, const char *kind,
                           nn_tensor *(*forward)(nn_module *self, nn_tensor *x)) {
    nn_module *m = calloc(1, sizeof *m);
    if (!m) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", kind);
    m->kind = kind;
    m->ctx = ctx;
    m->forward = forward;
    m->training = true; /* PyTorch's default */
    return m;
}

nn_status nn_module_add_param(nn_module *m, const char *name, nn_tensor *param) {
    if (m->param_count == m->param_capacity) {
        int capacity = m->param_capacity ? m->param_capacity * 2 : 4;
        nn_tensor **params = realloc(m->params, (size_t)capacity * sizeof *params);
        if (params) m->params = params;
        char **names = realloc(m->param_names, (size_t)capacity * sizeof *names);
        if (names) m->param_names = names;
        if (!params || !names)
            return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory for parameters", m->kind);
        m->param_capacity = capacity;
    }
    char *copy = strdup(name);
    if (!copy) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory for parameters", m->kind);
    m->params[m->param_count] = nn_tensor_retain(param);
    m->param_names[m->param_count] = copy;
    m->param_count++;
    return NN_OK;
}

nn_tensor *nn_module_forward(nn_module *m, nn_tensor *x) {
    if (!m) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_module_forward: module is NULL");
    if (!x) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_module_forward: %s input is NULL", m->kind);
    if (x->ctx != m->ctx)
        return NN_FAIL_NULL(NN_ERR_STATE, "nn_module_forward: %s and its input belong to different contexts",
                            m->kind);
    return m->forward(m, x);
}

nn_tensor *nn_module_forward_loss(nn_module *m, nn_tensor *x, nn_tensor *labels, nn_tensor **logits) {
    if (logits) *logits = NULL;
    if (!m) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_module_forward_loss: module is NULL");
    if (!x || !labels)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_module_forward_loss: %s %s is NULL", m->kind, x ? "labels" : "input");
    if (x->ctx != m->ctx || labels->ctx != m->ctx)
        return NN_FAIL_NULL(NN_ERR_STATE, "nn_module_forward_loss: %s and its %s belong to different contexts",
                            m->kind, x->ctx != m->ctx ? "input" : "labels");
    nn_tensor *y = m->forward(m, x);
    nn_tensor *loss = y ? nn_softmax_cross_entropy(y, labels) : NULL;
    if (loss && logits) *logits = y;
    return loss;
}

nn_status nn_module_set_training(nn_module *m, bool training) {
    if (!m) return nn_set_error(NN_ERR_ARGUMENT, "nn_module_set_training: module is NULL");
    m->training = training;
    for (int i = 0; i < m->child_count; i++) nn_module_set_training(m->children[i], training);
    return NN_OK;
}

bool nn_module_is_training(const nn_module *m) { return m && m->training; }

const char *nn_module_kind(const nn_module *m) { return m ? m->kind : ""; }
int nn_module_param_count(const nn_module *m) { return m ? m->param_count : 0; }

nn_tensor *nn_module_param(const nn_module *m, int i) {
    return m && i >= 0 && i < m->param_count ? m->params[i] : NULL;
}

const char *nn_module_param_name(const nn_module *m, int i) {
    return m && i >= 0 && i < m->param_count ? m->param_names[i] : NULL;
}

void nn_module_free(nn_module *m) {
    if (!m) return;
    for (int i = 0; i < m->param_count; i++) {
        nn_tensor_release(m->params[i]);
        free(m->param_names[i]);
    }
    for (int i = 0; i < m->child_count; i++) {
        nn_module_free(m->children[i]);
        free(m->child_names[i]);
    }
    free(m->params);
    free(m->param_names);
    free(m->children);
    free(m->child_names);
    free(m);
}
