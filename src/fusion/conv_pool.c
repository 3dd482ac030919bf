/* Conv2d -> ReLU -> MaxPool2d with whole windows (stride = window, no
 * padding) as one forward kernel that writes only the pooled output and
 * each window's winner, and backward kernels that read the convolution's
 * output gradient through the winners (kernels.h, nn_conv_pool_params).
 * Neither the convolution's output, nor the ReLU's, nor their gradients
 * are ever in memory. One segment runs the three nodes' backward.
 *
 * Two such layers in a row may chain their backward: where the first's
 * input wants no gradient and the second alone reads the first's output,
 * the second's backward computes the first's weight and bias gradients in
 * one kernel (NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT), and the gradient
 * between them is never computed. */
#include <string.h>

#include "backends/conv_layout.h"
#include "patterns.h"

bool nn_conv_pool_chain_fits(nn_node *const *m, nn_conv_pool_params *out) {
    const nn_conv_params conv = nn_conv2d_params_of(m[0], 0);
    const nn_pool_params *pool = &NN_NODE_PARAMS(m[2], nn_maxpool_node)->pool;
    if (!nn_conv2d_is_plain(m[0])) return false; /* the fused kernels take no groups or dilation */
    if (nn_conv_channels_last(&conv)) return false; /* nor channels-last tensors */
    if (pool->kernel != pool->stride || pool->pad != 0 || conv.g.out_h < pool->kernel || conv.g.out_w < pool->kernel)
        return false;
    *out = (nn_conv_pool_params){.conv = conv, .pool = pool->kernel, .pooled_h = conv.g.out_h / pool->kernel,
                                 .pooled_w = conv.g.out_w / pool->kernel};
    out->conv.epilogue |= NN_EPI_RELU;
    return true;
}

static nn_status conv_pool_backward(nn_segment *s);

/* The first layer's segment, when this layer's backward may take over its
 * weight and bias gradients (x, this layer's input, is its pooled output). */
static nn_segment *chained_first(nn_tensor *x, const nn_conv_pool_params *second) {
    nn_node *pool = x->grad_fn;
    nn_segment *first = pool ? pool->segment : NULL;
    if (!first || first->backward != conv_pool_backward || first->members[2] != pool || !first->members[0] ||
        nn_wants_grad(first->members[0]->inputs[0]) || nn_tape_consumers(x) != 1)
        return NULL;
    const nn_conv_pool_chain_params chain = {*NN_NODE_PARAMS(first, nn_conv_pool_params), *second};
    return nn_ctx_supports(x->ctx, NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT, &chain) ? first : NULL;
}

/* The first layer's weight and bias gradients (those it wants) from this
 * layer's output gradient, through this layer's data gradient. */
static nn_status chain_backward(nn_segment *second, nn_segment *first) {
    nn_node *conv = first->members[0], *pool = second->members[2];
    nn_tensor *w = conv->inputs[1], *bias = conv->inputs[2];
    for (int i = 0; i < first->count; i++)
        if (first->members[i]) first->members[i]->walked = true;
    first->done = true;
    const bool dw = nn_wants_grad(w), db = nn_wants_grad(bias);
    if (!dw && !db) return NN_OK;
    nn_conv_pool_chain_params p = {*NN_NODE_PARAMS(first, nn_conv_pool_params),
                                   *NN_NODE_PARAMS(second, nn_conv_pool_params)};
    nn_tensor *dweight = NULL, *dbias = NULL;
    int32_t acc = 0;
    if (dw) NN_TRY(nn_grad_target(w, &dweight, &p.first.conv.g.accumulate));
    if (db) NN_TRY(nn_grad_target(bias, &dbias, &acc));
    p.first.bias_accumulate = acc;
    nn_buffer_ref args[7] = {nn_tensor_ref(pool->output->grad), nn_tensor_ref(second->saved[0]),
                             nn_tensor_ref(second->members[0]->inputs[1]), nn_tensor_ref(first->saved[0]),
                             nn_tensor_ref(conv->inputs[0]), nn_optional_ref(dweight), nn_optional_ref(dbias)};
    return nn_ctx_run(w->ctx, NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT, args, 7, &p);
}

static nn_status conv_pool_backward(nn_segment *s) {
    nn_node *conv = s->members[0], *pool = s->members[2];
    nn_tensor *x = conv->inputs[0], *w = conv->inputs[1], *bias = conv->inputs[2];
    nn_tensor *winners = s->saved[0], *cols = s->saved_count > 1 ? s->saved[1] : NULL;
    nn_tensor *dy = pool->output->grad;
    nn_ctx *ctx = x->ctx;
    nn_conv_pool_params p = *NN_NODE_PARAMS(s, nn_conv_pool_params);
    const bool dw = nn_wants_grad(w), db = nn_wants_grad(bias);
    if (dw || db) {
        nn_tensor *dweight = NULL, *dbias = NULL;
        int32_t acc = 0;
        if (dw) NN_TRY(nn_grad_target(w, &dweight, &p.conv.g.accumulate));
        if (db) NN_TRY(nn_grad_target(bias, &dbias, &acc));
        p.bias_accumulate = acc;
        nn_buffer_ref args[6] = {nn_tensor_ref(dy),         nn_tensor_ref(winners),   nn_tensor_ref(x),
                                 nn_optional_ref(dweight), nn_optional_ref(dbias), nn_optional_ref(cols)};
        NN_TRY(nn_ctx_run(ctx, NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, args, 6, &p));
    }
    nn_segment *first = chained_first(x, NN_NODE_PARAMS(s, nn_conv_pool_params));
    if (first) return chain_backward(s, first);
    if (!nn_wants_grad(x)) return NN_OK;
    nn_tensor *dx;
    NN_TRY(nn_grad_target(x, &dx, &p.conv.g.accumulate));
    nn_buffer_ref args[4] = {nn_tensor_ref(dy), nn_tensor_ref(winners), nn_tensor_ref(w), nn_tensor_ref(dx)};
    return nn_ctx_run(ctx, NN_KERNEL_CONV2D_POOL_BACKWARD_DATA, args, 4, &p);
}

nn_status nn_conv_pool_prepare(nn_node *const *m, const nn_conv_pool_params *p, nn_tensor **winners,
                               nn_tensor **cols) {
    nn_node *conv = m[0];
    nn_tensor *y = m[2]->output;
    *winners = *cols = NULL;
    NN_TRY(nn_tensor_attach_storage(y));
    m[2]->launched = true;
    nn_segment *s = nn_segment_new(m, 3, conv_pool_backward);
    if (!s) return nn_last_status();
    memcpy(s->params, p, sizeof *p);
    nn_tensor *w = nn_op_scratch(y->ctx, NN_I32, 4, y->shape);
    nn_status st = w ? nn_segment_save(s, w) : nn_last_status();
    nn_tensor_release(w);
    NN_TRY(st);
    *winners = w;
    /* The column matrix, when the backend keeps it for the weight gradient. */
    const nn_conv_geometry *g = &p->conv.g;
    if (conv->tape_index >= 0 && nn_wants_grad(conv->inputs[1]) && nn_ctx_conv_keeps_columns(y->ctx, &p->conv)) {
        const int64_t shape[3] = {g->batch, (int64_t)g->channels * g->kernel_h * g->kernel_w,
                                  (int64_t)g->out_h * g->out_w};
        nn_tensor *c = nn_op_scratch(y->ctx, NN_F32, 3, shape);
        st = c ? nn_segment_save(s, c) : nn_last_status();
        nn_tensor_release(c);
        NN_TRY(st);
        *cols = c;
    }
    NN_TRY(nn_node_elide(m[0]));
    return nn_node_elide(m[1]);
}

static bool match(const nn_fusion_graph *g, nn_node *const *m) {
    nn_conv_pool_params p;
    return nn_conv_pool_chain_fits(m, &p) && nn_ctx_supports(g->ctx, NN_KERNEL_CONV2D_POOL_FORWARD, &p);
}

static nn_status launch(const nn_fusion_graph *g, nn_node *const *m) {
    nn_conv_pool_params p;
    nn_conv_pool_chain_fits(m, &p);
    nn_tensor *winners, *cols;
    NN_TRY(nn_conv_pool_prepare(m, &p, &winners, &cols));
    nn_node *conv = m[0];
    nn_buffer_ref args[6] = {nn_tensor_ref(conv->inputs[0]), nn_tensor_ref(conv->inputs[1]),
                             nn_optional_ref(conv->inputs[2]), nn_tensor_ref(m[2]->output),
                             nn_tensor_ref(winners), nn_optional_ref(cols)};
    return nn_ctx_run(conv->output->ctx, NN_KERNEL_CONV2D_POOL_FORWARD, args, 6, &p);
}

const nn_fusion_pattern nn_pattern_conv_pool = {
    "conv2d+relu+maxpool2d", 3, {&nn_op_conv2d, &nn_op_relu, &nn_op_maxpool2d}, match, launch, .any_precision = false};
