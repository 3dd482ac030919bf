/* The sequential container: children run in order; the parameter list is
 * the children's, named "child.param" as in PyTorch's state_dict.
 *
 * Forward fuses what it can see (issue 6, src/ops/fused_relu.h): a Conv2d
 * or Linear followed by a ReLU runs as one kernel (still two tape nodes, so
 * ONNX export and state_dict names are unchanged), and when the next layer
 * is a Linear or MaxPool2d -- the ReLU output's only consumer, since the
 * container passes it to nobody else -- that layer applies the ReLU's
 * backward mask where it produces the gradient, so the ReLU costs no kernel
 * in backward either. Conv2d, ReLU and MaxPool2d with whole windows run as
 * one operation where the backend fuses them (src/ops/conv_pool.c) -- with
 * a Flatten and a Linear after them, the Linear's forward in the same
 * kernel (src/ops/conv_pool_linear.c) -- and so do Linear, ReLU and Linear
 * (src/ops/linear_head.c) -- with the softmax
 * cross-entropy after them when they end the container and
 * nn_module_forward_loss asks for the loss (src/ops/head_cross_entropy.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"
#include "ops/fused_relu.h"

static bool is_kind(const nn_module *m, const char *kind) { return strcmp(m->kind, kind) == 0; }

/* Layers that can run with a fused ReLU after them, and layers that can take
 * the mask of the ReLU before them. */
static bool fuses_relu(const nn_module *m) { return is_kind(m, "Conv2d") || is_kind(m, "Linear"); }
static bool takes_mask(const nn_module *m) { return is_kind(m, "Linear") || is_kind(m, "MaxPool2d"); }

static nn_tensor *fused_forward(nn_module *m, nn_tensor *x, int flags) {
    if (is_kind(m, "Linear")) return nn_linear_fused(x, m->params[0], m->params[1], flags);
    if (is_kind(m, "MaxPool2d")) return nn_maxpool2d_fused(x, m->kernel, m->stride, 0, flags);
    nn_conv2d_params p = {m->stride, m->stride, m->padding, m->padding};
    return nn_conv2d_fused(x, m->params[0], m->params[1], &p, flags);
}

/* Children i, i+1, i+2 (all before `end`) are Conv2d, ReLU and a MaxPool2d
 * of whole windows (stride == window) that the backend runs as one
 * (src/ops/conv_pool.c). */
static bool conv_pool_at(nn_module *m, int i, int end, nn_tensor *x) {
    if (i + 2 >= end || !is_kind(m->children[i], "Conv2d") || !is_kind(m->children[i + 1], "ReLU") ||
        !is_kind(m->children[i + 2], "MaxPool2d"))
        return false;
    const nn_module *conv = m->children[i], *pool = m->children[i + 2];
    if (pool->kernel != pool->stride || pool->ctx != x->ctx || m->children[i + 1]->ctx != x->ctx) return false;
    nn_conv2d_params p = {conv->stride, conv->stride, conv->padding, conv->padding};
    return nn_conv2d_relu_maxpool_fuses(x, conv->params[0], conv->params[1], &p, pool->kernel);
}

/* Children i to i+4 (all before `end`) are a fused Conv2d, ReLU and
 * MaxPool2d (conv_pool_at), Flatten and a Linear that does not start a
 * Linear, ReLU, Linear head (which fuses its own way), and the backend runs
 * the first layers' forward and the Linear's as one kernel
 * (src/ops/conv_pool_linear.c). */
static bool linear_head_kinds_at(nn_module *m, int i, int end, nn_tensor *x);
static bool conv_pool_linear_at(nn_module *m, int i, int end, nn_tensor *x) {
    if (i + 4 >= end || !is_kind(m->children[i + 3], "Flatten") || !is_kind(m->children[i + 4], "Linear") ||
        m->children[i + 3]->ctx != x->ctx || m->children[i + 4]->ctx != x->ctx ||
        linear_head_kinds_at(m, i + 4, end, x))
        return false;
    const nn_module *conv = m->children[i], *linear = m->children[i + 4];
    nn_conv2d_params p = {conv->stride, conv->stride, conv->padding, conv->padding};
    return nn_conv2d_relu_maxpool_linear_fuses(x, conv->params[0], conv->params[1], &p, m->children[i + 2]->kernel,
                                               linear->params[0], linear->params[1]);
}

/* Children i, i+1, i+2 (all before `end`) are Linear, ReLU and Linear,
 * with no ReLU after them, all in x's context. */
static bool linear_head_kinds_at(nn_module *m, int i, int end, nn_tensor *x) {
    return i >= 0 && i + 2 < end && is_kind(m->children[i], "Linear") && is_kind(m->children[i + 1], "ReLU") &&
           is_kind(m->children[i + 2], "Linear") && !(i + 3 < end && is_kind(m->children[i + 3], "ReLU")) &&
           m->children[i]->ctx == x->ctx && m->children[i + 1]->ctx == x->ctx && m->children[i + 2]->ctx == x->ctx;
}

/* ... and the backend runs them as one (src/ops/linear_head.c). */
static bool linear_head_at(nn_module *m, int i, int end, nn_tensor *x) {
    if (!linear_head_kinds_at(m, i, end, x)) return false;
    const nn_module *first = m->children[i], *second = m->children[i + 2];
    return nn_linear_relu_linear_fuses(x, first->params[0], first->params[1], second->params[0], second->params[1]);
}

/* Children [from, end) on x. *masked: x is a fused ReLU's output consumed
 * only by child `from` (on entry), and the same of the result (on return). */
static nn_tensor *run_children(nn_module *m, nn_tensor *x, int from, int end, bool *masked) {
    bool masked_input = *masked;
    bool pooled_input = false; /* x is the output of a fused conv + pool that only child i consumes */
    for (int i = from; i < end && x; i++) {
        nn_module *child = m->children[i];
        if (x->ctx != child->ctx)
            return NN_FAIL_NULL(NN_ERR_STATE, "nn_module_forward: %s and its input belong to different contexts",
                                child->kind);
        if (conv_pool_at(m, i, end, x)) {
            nn_conv2d_params p = {child->stride, child->stride, child->padding, child->padding};
            const int chain = pooled_input ? NN_FUSE_CHAIN_INPUT : 0;
            if (conv_pool_linear_at(m, i, end, x)) {
                const nn_module *linear = m->children[i + 4];
                const bool relu_after = i + 5 < end && is_kind(m->children[i + 5], "ReLU");
                x = nn_conv2d_relu_maxpool_linear(x, child->params[0], child->params[1], &p,
                                                  m->children[i + 2]->kernel, chain, linear->params[0],
                                                  linear->params[1], relu_after ? NN_FUSE_RELU : 0);
                i += relu_after ? 5 : 4; /* ReLU, pooling, Flatten, Linear (and its ReLU) ran in the same kernel */
                masked_input = relu_after;
                pooled_input = false;
                continue;
            }
            x = nn_conv2d_relu_maxpool(x, child->params[0], child->params[1], &p, m->children[i + 2]->kernel,
                                       chain);
            i += 2; /* the ReLU and the pooling ran in the same kernels */
            masked_input = false;
            pooled_input = true;
            continue;
        }
        pooled_input = false;
        bool relu_next = i + 1 < end && is_kind(m->children[i + 1], "ReLU");
        int flags = masked_input && takes_mask(child) ? NN_FUSE_MASK_INPUT : 0;
        masked_input = false;
        if (linear_head_at(m, i, end, x)) {
            const nn_module *second = m->children[i + 2];
            x = nn_linear_relu_linear(x, child->params[0], child->params[1], second->params[0], second->params[1],
                                      flags);
            i += 2; /* the ReLU and the second Linear ran in the same kernels */
            continue;
        }
        if (fuses_relu(child) && relu_next) {
            x = fused_forward(child, x, flags | NN_FUSE_RELU);
            i++; /* the ReLU ran in the layer's kernel */
            masked_input = true;
        } else if (flags) {
            x = fused_forward(child, x, flags);
        } else {
            x = nn_module_forward(child, x);
        }
    }
    *masked = masked_input;
    return x;
}

static nn_tensor *sequential_forward(nn_module *m, nn_tensor *x) {
    bool masked = false;
    return run_children(m, x, 0, m->child_count, &masked);
}

/* nn_module_forward_loss: where the container ends in Linear, ReLU, Linear,
 * the layers before them run, then those three and the loss as one op if
 * the backend fuses them (src/ops/head_cross_entropy.c); else the three and
 * then the loss. */
static nn_tensor *sequential_forward_loss(nn_module *m, nn_tensor *x, nn_tensor *labels, nn_tensor **logits) {
    const int end = m->child_count, head = end - 3;
    const bool ends_in_head = linear_head_kinds_at(m, head, end, x);
    bool masked = false;
    x = run_children(m, x, 0, ends_in_head ? head : end, &masked);
    if (ends_in_head && x) {
        const nn_module *first = m->children[head], *second = m->children[head + 2];
        if (nn_head_cross_entropy_fuses(x, first->params[0], first->params[1], second->params[0], second->params[1],
                                        labels))
            return nn_head_cross_entropy(x, first->params[0], first->params[1], second->params[0], second->params[1],
                                         labels, masked ? NN_FUSE_MASK_INPUT : 0, logits);
        x = run_children(m, x, head, end, &masked);
    }
    nn_tensor *loss = x ? nn_softmax_cross_entropy(x, labels) : NULL;
    if (loss && logits) *logits = x;
    return loss;
}

nn_module *nn_sequential(nn_ctx *ctx) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_sequential: ctx is NULL");
    nn_module *m = nn_module_alloc(ctx, "Sequential", sequential_forward);
    if (m) m->forward_loss = sequential_forward_loss;
    return m;
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
