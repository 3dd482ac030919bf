/* One translation per recorded operation (see nn_io.h for the list), each
 * also saying whether its result keeps the batch in dimension 0 (see
 * onnx_export.c for why that matters). */
#include <stdio.h>
#include <string.h>

#include "onnx_graph.h"

static nn_status refuse_batch(exporter *x, const op_io *io, const char *why) {
    return nn_set_error(NN_ERR_SHAPE, "%s: %s %s, so the graph would only be right for batch "
                                      "size %lld: export with static_batch (the traced batch size "
                                      "becomes fixed)", x->who, io->node->op, why,
                        (long long)x->input->shape[0]);
}

/* Inputs other than `batch_input` must not depend on the batch. */
static nn_status only_input_carries_batch(exporter *x, op_io *io, int batch_input) {
    for (int i = 0; i < io->node->input_count; i++)
        if (i != batch_input && io->in[i] && io->in[i]->batch && x->dynamic)
            return refuse_batch(x, io, "takes a batch-dependent value as a weight");
    io->out_batch = batch_input >= 0 && io->in[batch_input]->batch;
    return NN_OK;
}

/* A unique node name ("Conv_3") into io->name. */
static void reserve_name(exporter *x, const char *op_type, op_io *io) {
    snprintf(io->name, sizeof io->name, "%s_%d", op_type, x->nodes_made++);
}

static void begin(exporter *x, nn_onnx_node *n, const char *op_type, op_io *io) {
    reserve_name(x, op_type, io);
    nn_onnx_node_begin(n, op_type, io->name);
}

static void inputs(nn_onnx_node *n, const op_io *io, int count) {
    for (int i = 0; i < count; i++)
        if (io->in[i]) nn_onnx_node_input(n, io->in[i]->name);
}

/* A Conv node (named io->name) of geometry g from io's inputs to `out`. */
static void conv_node(exporter *x, op_io *io, const nn_conv_geometry *g, const char *out) {
    int64_t kernel[2] = {g->kernel_h, g->kernel_w}, strides[2] = {g->stride_h, g->stride_w};
    int64_t pads[4] = {g->pad_h, g->pad_w, g->pad_h, g->pad_w}, dilations[2] = {1, 1};
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Conv", io->name);
    inputs(&n, io, 3);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_ints(&n, "kernel_shape", kernel, 2);
    nn_onnx_attr_ints(&n, "strides", strides, 2);
    nn_onnx_attr_ints(&n, "pads", pads, 4);
    nn_onnx_attr_ints(&n, "dilations", dilations, 2);
    nn_onnx_attr_int(&n, "group", 1);
    nn_onnx_node_end(&n, &x->graph);
}

/* A MaxPool node of square windows from `in` to `out`. */
static void maxpool_node(exporter *x, const char *name, const char *in, int kernel, int stride, int pad,
                         const char *out) {
    int64_t kernels[2] = {kernel, kernel}, strides[2] = {stride, stride}, pads[4] = {pad, pad, pad, pad};
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "MaxPool", name);
    nn_onnx_node_input(&n, in);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_ints(&n, "kernel_shape", kernels, 2);
    nn_onnx_attr_ints(&n, "strides", strides, 2);
    nn_onnx_attr_ints(&n, "pads", pads, 4);
    nn_onnx_node_end(&n, &x->graph);
}

static nn_status emit_conv(exporter *x, op_io *io, const char *out) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    reserve_name(x, "Conv", io);
    conv_node(x, io, &io->node->params.conv, out);
    return NN_OK;
}

/* A fused op written as three ONNX nodes, first -> Relu -> last: the
 * names of the values and nodes after the first node (named io->name). */
typedef struct fused_names {
    char first_out[64], relu[64], relu_out[64], last[64];
} fused_names;

static fused_names fused_names_of(const op_io *io, const char *last_suffix) {
    fused_names f;
    snprintf(f.first_out, sizeof f.first_out, "%s_out", io->name);
    snprintf(f.relu, sizeof f.relu, "%s_relu", io->name);
    snprintf(f.relu_out, sizeof f.relu_out, "%s_relu_out", io->name);
    snprintf(f.last, sizeof f.last, "%s_%s", io->name, last_suffix);
    return f;
}

/* The Relu node between the first node and the last. */
static void fused_relu_node(exporter *x, const fused_names *f) {
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Relu", f->relu);
    nn_onnx_node_input(&n, f->first_out);
    nn_onnx_node_output(&n, f->relu_out);
    nn_onnx_node_end(&n, &x->graph);
}

/* The fused layers (src/ops/conv_pool.c) as the three ONNX nodes they are:
 * Conv -> Relu -> MaxPool. */
static nn_status emit_conv_relu_maxpool(exporter *x, op_io *io, const char *out) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    const nn_conv_pool_params *p = &io->node->params.conv_pool;
    reserve_name(x, "Conv", io);
    const fused_names f = fused_names_of(io, "pool");
    conv_node(x, io, &p->conv.g, f.first_out);
    fused_relu_node(x, &f);
    maxpool_node(x, f.last, f.relu_out, p->pool, p->pool, 0, out);
    return NN_OK;
}

static nn_status emit_maxpool(exporter *x, op_io *io, const char *out) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    const nn_pool_params *p = &io->node->params.pool;
    reserve_name(x, "MaxPool", io);
    maxpool_node(x, io->name, io->in[0]->name, p->kernel, p->stride, p->pad, out);
    return NN_OK;
}

/* An ONNX op with the recorded inputs, one output and no attributes. */
static nn_status emit_simple(exporter *x, op_io *io, const char *out, const char *op_type) {
    nn_onnx_node n;
    begin(x, &n, op_type, io);
    inputs(&n, io, io->node->input_count);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

static nn_status emit_relu(exporter *x, op_io *io, const char *out) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    return emit_simple(x, io, out, "Relu");
}

static nn_status emit_softmax(exporter *x, op_io *io, const char *out) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    nn_onnx_node n;
    begin(x, &n, "Softmax", io);
    inputs(&n, io, 1);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_int(&n, "axis", -1);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

/* Elementwise on equal shapes: a batch value with a constant of the traced
 * batch's shape would broadcast differently at another batch size. */
static nn_status emit_binary(exporter *x, op_io *io, const char *out, const char *op_type) {
    if (x->dynamic && io->in[0]->batch != io->in[1]->batch)
        return refuse_batch(x, io, "combines a batch value with a constant of the same shape");
    io->out_batch = io->in[0]->batch;
    return emit_simple(x, io, out, op_type);
}

static nn_status emit_add(exporter *x, op_io *io, const char *out) { return emit_binary(x, io, out, "Add"); }
static nn_status emit_mul(exporter *x, op_io *io, const char *out) { return emit_binary(x, io, out, "Mul"); }

/* A Linear layer's Gemm node, in w^T (+ bias), from named values. */
static void linear_gemm_node(exporter *x, const char *name, const char *in, const value *weight, const value *bias,
                             const char *out) {
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Gemm", name);
    nn_onnx_node_input(&n, in);
    nn_onnx_node_input(&n, weight->name);
    if (bias) nn_onnx_node_input(&n, bias->name);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_int(&n, "transB", 1);
    nn_onnx_node_end(&n, &x->graph);
}

static nn_status emit_linear(exporter *x, op_io *io, const char *out) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    reserve_name(x, "Gemm", io);
    linear_gemm_node(x, io->name, io->in[0]->name, io->in[1], io->in[2], out);
    return NN_OK;
}

/* The fused head (src/ops/linear_head.c) as the three ONNX nodes it is:
 * Gemm -> Relu -> Gemm. */
static nn_status emit_linear_relu_linear(exporter *x, op_io *io, const char *out) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    reserve_name(x, "Gemm", io);
    const fused_names f = fused_names_of(io, "second");
    linear_gemm_node(x, io->name, io->in[0]->name, io->in[1], io->in[2], f.first_out);
    fused_relu_node(x, &f);
    linear_gemm_node(x, f.last, f.relu_out, io->in[3], io->in[4], out);
    return NN_OK;
}

static nn_status emit_matmul(exporter *x, op_io *io, const char *out) {
    bool ta = io->node->params.matmul.transpose_a, tb = io->node->params.matmul.transpose_b;
    if (x->dynamic && io->in[0]->batch && ta)
        return refuse_batch(x, io, "contracts over the batch dimension (a is transposed)");
    NN_TRY(only_input_carries_batch(x, io, 0));
    nn_onnx_node n;
    begin(x, &n, "Gemm", io);
    inputs(&n, io, 2);
    nn_onnx_node_output(&n, out);
    if (ta) nn_onnx_attr_int(&n, "transA", 1);
    if (tb) nn_onnx_attr_int(&n, "transB", 1);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

/* Reshape `from` to `dims` (an int64 constant named after the node). */
static nn_status emit_reshape_to(exporter *x, op_io *io, const char *op_type_name,
                                 const char *from, const int64_t *dims, int ndim, const char *out) {
    char const_name[64];
    snprintf(const_name, sizeof const_name, "%s_shape", op_type_name);
    int64_t len = ndim;
    const char *shape = nn_onnx_add_constant(x, const_name, NN_ONNX_INT64, &len, 1, dims,
                                     (size_t)ndim * sizeof *dims);
    if (!shape) return nn_last_status();
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Reshape", op_type_name);
    nn_onnx_node_input(&n, from);
    nn_onnx_node_input(&n, shape);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

/* x + bias[C] along dimension 1: ONNX broadcasts from the last dimension,
 * so a bias for [N, C, H, W] is first reshaped to [C, 1, 1]. */
static nn_status emit_add_bias(exporter *x, op_io *io, const char *out) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    const nn_tensor *t = io->node->inputs[0];
    const char *bias = io->in[1]->name;
    char reshaped[80];
    nn_onnx_node n;
    if (t->ndim > 2) {
        char reshape_name[48];
        snprintf(reshape_name, sizeof reshape_name, "Reshape_%d", x->nodes_made++);
        int64_t dims[NN_MAX_DIMS] = {-1, 1, 1, 1};
        snprintf(reshaped, sizeof reshaped, "%s_out", reshape_name);
        NN_TRY(emit_reshape_to(x, io, reshape_name, bias, dims, t->ndim - 1, reshaped));
        if (!nn_onnx_add_value(x, NULL, reshaped, false)) return nn_last_status();
        bias = reshaped;
    }
    begin(x, &n, "Add", io);
    nn_onnx_node_input(&n, io->in[0]->name);
    nn_onnx_node_input(&n, bias);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

static nn_status emit_scale(exporter *x, op_io *io, const char *out) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    reserve_name(x, "Mul", io);
    char const_name[64];
    snprintf(const_name, sizeof const_name, "%s_factor", io->name);
    float factor = io->node->params.factor;
    const char *c = nn_onnx_add_constant(x, const_name, NN_ONNX_FLOAT, NULL, 0, &factor, sizeof factor);
    if (!c) return nn_last_status();
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Mul", io->name);
    nn_onnx_node_input(&n, io->in[0]->name);
    nn_onnx_node_input(&n, c);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

/* Flatten keeps dimension 0 (the batch) and joins the rest: ONNX Flatten axis 1. */
static nn_status emit_flatten(exporter *x, op_io *io, const char *out) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    nn_onnx_node n;
    begin(x, &n, "Flatten", io);
    inputs(&n, io, 1);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_int(&n, "axis", 1);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

/* The recorded output shape; with a dynamic batch, dimension 0 is written
 * as 0 ("copy from the input") and must be the batch on both sides. */
static nn_status emit_reshape(exporter *x, op_io *io, const char *out) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    const nn_tensor *from = io->node->inputs[0], *to = io->node->output;
    int64_t dims[NN_MAX_DIMS];
    memcpy(dims, to->shape, sizeof(int64_t) * (size_t)to->ndim);
    if (x->dynamic && io->in[0]->batch) {
        if (to->shape[0] != from->shape[0])
            return refuse_batch(x, io, "changes dimension 0 (the batch)");
        dims[0] = 0;
    }
    reserve_name(x, "Reshape", io);
    return emit_reshape_to(x, io, io->name, io->in[0]->name, dims, to->ndim, out);
}

/* sum/mean of everything: a scalar, then [1] as nn-engine returns. */
static nn_status emit_reduce(exporter *x, op_io *io, const char *out, const char *op_type) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    io->out_batch = false;
    nn_onnx_node n;
    begin(x, &n, op_type, io);
    char scalar[80];
    snprintf(scalar, sizeof scalar, "%s_out", io->name);
    if (!nn_onnx_add_value(x, NULL, scalar, false)) {
        nn_pb_free(&n.pb);
        return nn_last_status();
    }
    inputs(&n, io, 1);
    nn_onnx_node_output(&n, scalar);
    nn_onnx_attr_int(&n, "keepdims", 0);
    nn_onnx_node_end(&n, &x->graph);
    char reshape_name[48];
    snprintf(reshape_name, sizeof reshape_name, "Reshape_%d", x->nodes_made++);
    int64_t one = 1;
    return emit_reshape_to(x, io, reshape_name, scalar, &one, 1, out);
}

static nn_status emit_sum(exporter *x, op_io *io, const char *out) { return emit_reduce(x, io, out, "ReduceSum"); }
static nn_status emit_mean(exporter *x, op_io *io, const char *out) { return emit_reduce(x, io, out, "ReduceMean"); }

/* Dropout exports as ONNX Dropout in inference mode (no training_mode
 * input: the identity), whether the traced pass ran in training or eval. */
static nn_status emit_dropout(exporter *x, op_io *io, const char *out) {
    NN_TRY(only_input_carries_batch(x, io, 0));
    nn_onnx_node n;
    begin(x, &n, "Dropout", io);
    inputs(&n, io, 1);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

static const struct {
    const char *op;
    nn_status (*emit)(exporter *, op_io *, const char *out);
} handlers[] = {
    {"nn_conv2d", emit_conv},     {"nn_maxpool2d", emit_maxpool}, {"nn_relu", emit_relu},
    {"nn_softmax", emit_softmax}, {"nn_linear", emit_linear},     {"nn_matmul", emit_matmul},
    {"nn_add_bias", emit_add_bias}, {"nn_add", emit_add},         {"nn_mul", emit_mul},
    {"nn_scale", emit_scale},     {"nn_flatten", emit_flatten},   {"nn_reshape", emit_reshape},
    {"nn_sum", emit_sum},         {"nn_mean", emit_mean},
    {"nn_dropout", emit_dropout}, {"nn_conv2d_relu_maxpool", emit_conv_relu_maxpool},
    {"nn_linear_relu_linear", emit_linear_relu_linear},
};

nn_status nn_onnx_emit_op(exporter *x, op_io *io, const char *out) {
    for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++)
        if (strcmp(handlers[i].op, io->node->op) == 0) return handlers[i].emit(x, io, out);
    return nn_set_error(NN_ERR_ARGUMENT, "%s: operation %s has no ONNX mapping%s", x->who,
                        io->node->op,
                        strcmp(io->node->op, "nn_softmax_cross_entropy") == 0
                            ? " (a loss: export the model's logits, not the loss)" : "");
}
