/* Modules: creation, registration of parameters, buffers and children,
 * running, training mode and freeing (include/nn_module.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"
#include "base/names.h"
#include "core/context_mismatch.h"

static nn_module *module_create(nn_ctx *ctx, const char *kind, nn_module_forward_fn forward, void *data,
                                void (*free_data)(void *)) {
    const char *fn = "nn_module_new";
    nn_module *m = NULL;
    if (!ctx) nn_set_error(NN_ERR_ARGUMENT, "%s: ctx is NULL", fn);
    else if (!kind || !*kind) nn_set_error(NN_ERR_ARGUMENT, "%s: kind is NULL or empty", fn);
    else if (!forward) nn_set_error(NN_ERR_ARGUMENT, "%s: %s has no forward function", fn, kind);
    else if (!(m = calloc(1, sizeof *m)) || !(m->kind = strdup(kind))) {
        free(m);
        m = NULL;
        nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", fn);
    }
    if (!m) {
        if (free_data) free_data(data);
        return NULL;
    }
    m->ctx = ctx;
    m->forward = forward;
    m->data = data;
    m->free_data = free_data;
    m->training = true; /* PyTorch's default */
    return m;
}

nn_module *nn_module_new(nn_ctx *ctx, const char *kind, nn_module_forward_fn forward, void *data,
                         void (*free_data)(void *data)) {
    return module_create(ctx, kind, forward, data, free_data);
}

nn_module *nn_module_alloc(nn_ctx *ctx, const char *kind, nn_module_forward_fn forward) {
    return module_create(ctx, kind, forward, NULL, NULL);
}

void *nn_module_data(const nn_module *m) { return m ? m->data : NULL; }
nn_ctx *nn_module_ctx(const nn_module *m) { return m ? m->ctx : NULL; }
const char *nn_module_kind(const nn_module *m) { return m ? m->kind : ""; }

/* ---- registration ---- */

static bool valid_name(const char *name) { return name && *name && !nn_name_bad_char(name); }

static int find_name(char *const *names, int count, const char *name) {
    for (int i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

/* The name is valid and not yet used by any of m's entries. */
static nn_status check_new_name(const char *fn, const nn_module *m, const char *name) {
    if (!valid_name(name))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: name '%s' must be letters, digits or '_'", fn, m->kind,
                            name ? name : "(null)");
    const char *taken = find_name(m->params.names, m->params.count, name) >= 0    ? "parameter"
                        : find_name(m->buffers.names, m->buffers.count, name) >= 0 ? "buffer"
                        : find_name(m->child_names, m->child_count, name) >= 0     ? "child"
                                                                                  : NULL;
    if (taken) return nn_set_error(NN_ERR_ARGUMENT, "%s: %s has a %s named '%s' already", fn, m->kind, taken, name);
    return NN_OK;
}

/* A tensor a module may keep: its own (not an operation's result). */
static nn_status check_kept_tensor(const char *fn, const nn_module *m, const char *name, const nn_tensor *t) {
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: tensor '%s' is NULL", fn, m->kind, name);
    if (t->ctx != m->ctx) {
        char module[64], tensor[96];
        snprintf(module, sizeof module, "the %s", m->kind);
        snprintf(tensor, sizeof tensor, "tensor '%.80s'", name);
        return nn_error_other_context(NN_ERR_ARGUMENT, fn, module, m->ctx, tensor, t->ctx);
    }
    if (t->step_slot >= 0 || t->is_result)
        return nn_set_error(NN_ERR_ARGUMENT,
                            "%s: %s: tensor '%s' is an operation's result; register a tensor of its own "
                            "(nn_tensor_new, then nn_tensor_copy)",
                            fn, m->kind, name);
    return NN_OK;
}

/* What registering any tensor needs: a module, a new name, a tensor of its own. */
static nn_status check_register(const char *fn, const nn_module *m, const char *name, const nn_tensor *t) {
    if (!m) return nn_set_error(NN_ERR_ARGUMENT, "%s: module is NULL", fn);
    NN_TRY(check_new_name(fn, m, name));
    return check_kept_tensor(fn, m, name, t);
}

static nn_status keep(nn_named_tensors *list, const char *name, nn_tensor *t) {
    NN_TRY(nn_named_append(list, "", name, t));
    nn_tensor_retain(t);
    nn_module_changed();
    return NN_OK;
}

nn_status nn_module_register_parameter(nn_module *m, const char *name, nn_tensor *param) {
    const char *fn = "nn_module_register_parameter";
    NN_TRY(check_register(fn, m, name, param));
    if (param->dtype != NN_F32)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: parameter '%s' must be float32", fn, m->kind, name);
    NN_TRY(nn_tensor_set_requires_grad(param, true));
    return keep(&m->params, name, param);
}

nn_status nn_module_register_buffer(nn_module *m, const char *name, nn_tensor *buffer) {
    const char *fn = "nn_module_register_buffer";
    NN_TRY(check_register(fn, m, name, buffer));
    if (buffer->requires_grad)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: buffer '%s' requires grad; a tensor that trains is a "
                                             "parameter (nn_module_register_parameter)",
                            fn, m->kind, name);
    return keep(&m->buffers, name, buffer);
}

static nn_status check_child(const char *fn, const nn_module *m, const char *name, const nn_module *child) {
    if (!child) {
        /* Copy first: the message is about to be overwritten. */
        char cause[512];
        snprintf(cause, sizeof cause, "%s", nn_last_error());
        return nn_set_error(nn_last_status() != NN_OK ? nn_last_status() : NN_ERR_ARGUMENT,
                            "%s: child '%s' is NULL (its constructor failed: %s)", fn, name ? name : "(null)",
                            cause[0] ? cause : "no message");
    }
    if (!m) return nn_set_error(NN_ERR_ARGUMENT, "%s: container is NULL", fn);
    NN_TRY(check_new_name(fn, m, name));
    if (child->ctx != m->ctx) {
        char container[64], named[96];
        snprintf(container, sizeof container, "the %s", m->kind);
        snprintf(named, sizeof named, "child '%.80s'", name);
        return nn_error_other_context(NN_ERR_ARGUMENT, fn, container, m->ctx, named, child->ctx);
    }
    if (child->parent)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: child '%s' is a part of a %s already", fn, name,
                            child->parent->kind);
    for (const nn_module *up = m; up; up = up->parent)
        if (up == child)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: child '%s' is the %s itself or contains it", fn, name,
                                m->kind);
    return NN_OK;
}

nn_status nn_module_add_child(nn_module *m, const char *name, nn_module *child) {
    const char *fn = "nn_module_add_child";
    nn_status status = check_child(fn, m, name, child);
    if (status == NN_OK && m->child_count == m->child_capacity) {
        int capacity = m->child_capacity ? m->child_capacity * 2 : 8;
        nn_module **children = realloc(m->children, (size_t)capacity * sizeof *children);
        if (children) m->children = children;
        char **names = realloc(m->child_names, (size_t)capacity * sizeof *names);
        if (names) m->child_names = names;
        if (children && names) m->child_capacity = capacity;
        else status = nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", fn);
    }
    char *child_name = status == NN_OK ? strdup(name) : NULL;
    if (status == NN_OK && !child_name) status = nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", fn);
    if (status != NN_OK) {
        /* Owned in every case, as promised; unless it is someone's already
         * or holds m. */
        bool holds_m = false;
        for (const nn_module *up = m; up && child; up = up->parent) holds_m |= up == child;
        if (child && !child->parent && !holds_m) nn_module_free(child);
        return status;
    }
    child->parent = m;
    m->children[m->child_count] = child;
    m->child_names[m->child_count++] = child_name;
    nn_module_changed();
    return NN_OK;
}

int nn_module_child_count(const nn_module *m) { return m ? m->child_count : 0; }

nn_module *nn_module_child_at(const nn_module *m, int i) {
    return m && i >= 0 && i < m->child_count ? m->children[i] : NULL;
}

const char *nn_module_child_name(const nn_module *m, int i) {
    return m && i >= 0 && i < m->child_count ? m->child_names[i] : NULL;
}

/* ---- running ---- */

nn_tensor *nn_module_forward(nn_module *m, nn_tensor *x) {
    if (!m) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_module_forward: module is NULL");
    if (!x) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_module_forward: %s input is NULL", m->kind);
    if (x->ctx != m->ctx) {
        char module[64];
        snprintf(module, sizeof module, "%s's parameters", m->kind);
        nn_error_other_context(NN_ERR_STATE, "nn_module_forward", module, m->ctx, "its input", x->ctx);
        return NULL;
    }
    /* A module's forward may change its own state (running statistics). */
    if (nn_ctx_enter(m->ctx, "nn_module_forward") != NN_OK) return NULL;
    nn_tensor *y = m->forward(m, x);
    nn_ctx_leave(m->ctx);
    if (!y && nn_last_status() == NN_OK)
        return NN_FAIL_NULL(NN_ERR_STATE, "nn_module_forward: %s returned no output and set no error", m->kind);
    if (y && m->hook) m->hook(m, x, y, m->hook_user);
    return y;
}

nn_status nn_module_set_forward_hook(nn_module *m, nn_module_forward_hook hook, void *user) {
    if (!m) return nn_set_error(NN_ERR_ARGUMENT, "nn_module_set_forward_hook: module is NULL");
    m->hook = hook;
    m->hook_user = hook ? user : NULL;
    return NN_OK;
}

nn_tensor *nn_module_forward_loss(nn_module *m, nn_tensor *x, nn_tensor *labels, nn_tensor **logits) {
    if (logits) *logits = NULL;
    if (!m) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_module_forward_loss: module is NULL");
    if (!x || !labels)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_module_forward_loss: %s %s is NULL", m->kind, x ? "labels" : "input");
    if (labels->ctx != m->ctx) {
        char module[64];
        snprintf(module, sizeof module, "%s's parameters", m->kind);
        nn_error_other_context(NN_ERR_STATE, "nn_module_forward_loss", module, m->ctx, "its labels", labels->ctx);
        return NULL;
    }
    nn_tensor *y = nn_module_forward(m, x);
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

/* ---- freeing ---- */

static void named_free(nn_named_tensors *list, bool release) {
    for (int i = 0; i < list->count; i++) {
        if (release) nn_tensor_release(list->tensors[i]);
        free(list->names[i]);
    }
    free(list->tensors);
    free(list->names);
    *list = (nn_named_tensors){0};
}

void nn_module_lists_free(nn_module *m) {
    named_free(&m->all_params, false);
    named_free(&m->all_buffers, false);
    named_free(&m->all_state, false);
    m->listed_at = 0;
}

void nn_module_free(nn_module *m) {
    if (!m) return;
    if (m->parent) {
        /* A child leaves its parent's list (the parent no longer frees it). */
        nn_module *p = m->parent;
        for (int i = 0; i < p->child_count; i++)
            if (p->children[i] == m) {
                free(p->child_names[i]);
                memmove(&p->children[i], &p->children[i + 1], (size_t)(p->child_count - i - 1) * sizeof *p->children);
                memmove(&p->child_names[i], &p->child_names[i + 1],
                        (size_t)(p->child_count - i - 1) * sizeof *p->child_names);
                p->child_count--;
                break;
            }
    }
    for (int i = 0; i < m->child_count; i++) {
        m->children[i]->parent = NULL;
        nn_module_free(m->children[i]);
        free(m->child_names[i]);
    }
    named_free(&m->params, true);
    named_free(&m->buffers, true);
    nn_module_lists_free(m);
    if (m->free_data) m->free_data(m->data);
    free(m->children);
    free(m->child_names);
    free(m->kind);
    free(m);
    nn_module_changed();
}
