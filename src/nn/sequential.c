/* The sequential container: children run in order; their parameters are
 * listed under "child.param" as in PyTorch's state_dict. Which of the
 * children's operations run fused is the fusion pass's business
 * (core/fusion.h), the same for a model written from raw operations. */
#include "module.h"

static nn_tensor *sequential_forward(nn_module *m, nn_tensor *x) {
    for (int i = 0; i < m->child_count && x; i++) x = nn_module_forward(m->children[i], x);
    return x;
}

nn_module *nn_sequential(nn_ctx *ctx) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_sequential: ctx is NULL");
    return nn_module_alloc(ctx, "Sequential", sequential_forward);
}

nn_status nn_sequential_append(nn_module *seq, const char *name, nn_module *child) {
    if (seq && child && seq->forward != sequential_forward) {
        nn_status status = nn_set_error(NN_ERR_ARGUMENT, "nn_sequential_append: the container is a %s, not a "
                                                         "Sequential (nn_module_add_child adds to any module)",
                                        seq->kind);
        if (!child->parent) nn_module_free(child);
        return status;
    }
    return nn_module_add_child(seq, name, child);
}
