/* The sequential container: children run in order; the parameter list is
 * the children's, named "child.param" as in PyTorch's state_dict. Which of
 * the children's operations run fused is the fusion pass's business
 * (core/fusion.h), the same for a model written from raw operations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"

static nn_tensor *sequential_forward(nn_module *m, nn_tensor *x) {
    for (int i = 0; i < m->child_count && x; i++) {
        nn_module *child = m->children[i];
        if (x->ctx != child->ctx)
            return NN_FAIL_NULL(NN_ERR_STATE, "nn_module_forward: %s and its input belong to different contexts",
                                child->kind);
        x = nn_module_forward(child, x);
    }
    return x;
}

nn_module *nn_sequential(nn_ctx *ctx) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_sequential: ctx is NULL");
    return nn_module_alloc(ctx, "Sequential", sequential_forward);
}

static bool valid_name(const char *name) {
    if (!*name) return false;
    for (const char *c = name; *c; c++)
        if (!(*c == '_' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
              (*c >= 'A' && *c <= 'Z')))
            return false;
    return true;
}

static nn_status check_append(nn_module *seq, const char *name, nn_module *child) {
    const char *fn = "nn_sequential_append";
    if (!child) {
        /* Copy first: the message is about to be overwritten. */
        char cause[512];
        snprintf(cause, sizeof cause, "%s", nn_last_error());
        return nn_set_error(nn_last_status() != NN_OK ? nn_last_status() : NN_ERR_ARGUMENT,
                            "%s: child '%s' is NULL (its constructor failed: %s)", fn,
                            name ? name : "(null)", cause[0] ? cause : "no message");
    }
    if (!seq) return nn_set_error(NN_ERR_ARGUMENT, "%s: container is NULL", fn);
    if (seq->forward != sequential_forward)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: the container is a %s, not a Sequential", fn, seq->kind);
    if (!name || !valid_name(name))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: name '%s' must be letters, digits or '_'", fn,
                            name ? name : "(null)");
    for (int i = 0; i < seq->child_count; i++)
        if (strcmp(seq->child_names[i], name) == 0)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: a child named '%s' exists already", fn, name);
    if (child == seq || child->ctx != seq->ctx)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: '%s' is the container itself or from another context",
                            fn, name);
    return NN_OK;
}

nn_status nn_sequential_append(nn_module *seq, const char *name, nn_module *child) {
    nn_status status = check_append(seq, name, child);
    if (status == NN_OK && seq->child_count == seq->child_capacity) {
        int capacity = seq->child_capacity ? seq->child_capacity * 2 : 8;
        nn_module **children = realloc(seq->children, (size_t)capacity * sizeof *children);
        if (children) seq->children = children;
        char **names = realloc(seq->child_names, (size_t)capacity * sizeof *names);
        if (names) seq->child_names = names;
        if (children && names) seq->child_capacity = capacity;
        else status = nn_set_error(NN_ERR_MEMORY, "nn_sequential_append: out of host memory");
    }
    char *child_name = status == NN_OK ? strdup(name) : NULL;
    if (status == NN_OK && !child_name)
        status = nn_set_error(NN_ERR_MEMORY, "nn_sequential_append: out of host memory");
    int first_param = seq ? seq->param_count : 0;
    for (int i = 0; status == NN_OK && i < child->param_count; i++) {
        char full[256];
        snprintf(full, sizeof full, "%s.%s", name, child->param_names[i]);
        status = nn_module_add_param(seq, full, child->params[i]);
    }
    if (status != NN_OK) {
        /* Undo the parameters already added, then free the child as promised. */
        while (seq && seq->param_count > first_param) {
            seq->param_count--;
            nn_tensor_release(seq->params[seq->param_count]);
            free(seq->param_names[seq->param_count]);
        }
        free(child_name);
        nn_module_free(child);
        return status;
    }
    seq->children[seq->child_count] = child;
    seq->child_names[seq->child_count] = child_name;
    seq->child_count++;
    return NN_OK;
}
