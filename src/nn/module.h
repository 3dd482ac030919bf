/* The private shape of a module: a forward function, a flat list of named
 * parameters (a container lists its children's under "child.name"), and the
 * few integers a layer needs. */
#ifndef NN_MODULE_H
#define NN_MODULE_H

#include "core/internal.h"

struct nn_module {
    const char *kind;
    nn_ctx *ctx;
    nn_tensor *(*forward)(nn_module *self, nn_tensor *x);

    nn_tensor **params; /* references held by the module */
    char **param_names;
    int param_count, param_capacity;

    nn_module **children; /* owned, for containers */
    char **child_names;
    int child_count, child_capacity;

    int kernel, stride, padding; /* layers that need them */
    float p;                     /* dropout's probability */
    bool training;               /* train (true, the default) or eval mode */
};

/* A module with no parameters; NULL (error set) when out of memory. */
nn_module *nn_module_alloc(nn_ctx *ctx, const char *kind,
                           nn_tensor *(*forward)(nn_module *self, nn_tensor *x));
/* Add a parameter (the module takes a reference) under `name`. */
nn_status nn_module_add_param(nn_module *m, const char *name, nn_tensor *param);

#endif
