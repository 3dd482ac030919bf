/* The private shape of a module (include/nn_module.h): its own named
 * parameters, buffers and children, listings of the whole tree built on
 * demand, and the few numbers the built-in layers need. */
#ifndef NN_MODULE_PRIVATE_H
#define NN_MODULE_PRIVATE_H

#include "core/internal.h"

/* Tensors under names; the names are owned. */
typedef struct nn_named_tensors {
    nn_tensor **tensors;
    char **names;
    int count, capacity;
} nn_named_tensors;

struct nn_module {
    char *kind;
    nn_ctx *ctx;
    nn_module_forward_fn forward;
    void *data;
    void (*free_data)(void *data);
    nn_module *parent; /* not owned; NULL for a root */

    nn_named_tensors params;  /* its own, references held */
    nn_named_tensors buffers; /* its own, references held */
    nn_module **children;     /* owned */
    char **child_names;
    int child_count, child_capacity;

    /* The tree's listings (module_lists.c), valid while `listed_at` equals
     * the count of changes made to any module. */
    uint64_t listed_at;
    nn_named_tensors all_params, all_buffers, all_state; /* borrowed tensors, owned names */

    int kernel, stride, padding; /* built-in layers that need them */
    float p;                     /* dropout's probability */
    bool training;               /* train (true, the default) or eval mode */
    nn_module_forward_hook hook; /* nn_module_set_forward_hook */
    void *hook_user;
};

/* Built-in layers: a module of a static kind string and no data. */
nn_module *nn_module_alloc(nn_ctx *ctx, const char *kind, nn_module_forward_fn forward);

/* Called on every change to any module's parameters, buffers or children:
 * listings built before it are stale. */
void nn_module_changed(void);
/* Append t under prefix + name (the name is copied). */
nn_status nn_named_append(nn_named_tensors *list, const char *prefix, const char *name, nn_tensor *t);
/* Free the listings' names and arrays. */
void nn_module_lists_free(nn_module *m);

#endif
