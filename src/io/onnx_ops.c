/* The ONNX node builders the operations' emitters share (onnx_graph.h),
 * and the dispatch to the emitter of a recorded node's operation. */
#include <stdio.h>
#include <string.h>

#include "core/graph.h"
#include "onnx_graph.h"

nn_status nn_onnx_refuse_batch(exporter *x, const op_io *io, const char *why) {
    return nn_set_error(NN_ERR_SHAPE, "%s: %s %s, so the graph would only be right for batch "
                                      "size %lld: export with static_batch (the traced batch size "
                                      "becomes fixed)", x->who, io->node->op->name, why,
                        (long long)x->input->shape[0]);
}

nn_status nn_onnx_only_input_carries_batch(exporter *x, op_io *io, int batch_input) {
    for (int i = 0; i < io->node->input_count; i++)
        if (i != batch_input && io->in[i] && io->in[i]->batch && x->dynamic)
            return nn_onnx_refuse_batch(x, io, "takes a batch-dependent value as a weight");
    io->out_batch = batch_input >= 0 && io->in[batch_input]->batch;
    return NN_OK;
}

const char *nn_onnx_batch_size(exporter *x) {
    static const char *name = "batch_size", *shape = "batch_size_input_shape";
    if (x->batch_size_made) return name;
    const char *input = NULL;
    for (int i = 0; i < x->count && !input; i++)
        if (x->values[i]->t == x->input) input = x->values[i]->name;
    const int64_t one = 1, zero = 0;
    const char *starts = nn_onnx_add_constant(x, "batch_size_starts", NN_ONNX_INT64, &one, 1, &zero, sizeof zero);
    const char *ends = nn_onnx_add_constant(x, "batch_size_ends", NN_ONNX_INT64, &one, 1, &one, sizeof one);
    if (!input || !starts || !ends) {
        if (!input) nn_set_error(NN_ERR_STATE, "%s: the graph's input has no value yet", x->who);
        return NULL;
    }
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Shape", shape);
    nn_onnx_node_input(&n, input);
    nn_onnx_node_output(&n, shape);
    nn_onnx_node_end(&n, &x->graph);
    nn_onnx_node_begin(&n, "Slice", name);
    nn_onnx_node_input(&n, shape);
    nn_onnx_node_input(&n, starts);
    nn_onnx_node_input(&n, ends);
    nn_onnx_node_output(&n, name);
    nn_onnx_node_end(&n, &x->graph);
    x->batch_size_made = true;
    return name;
}

/* With a dynamic batch, an operand without it must broadcast along the
 * batch dimension (size 1 there, or fewer dimensions): one of the traced
 * batch's size would stop matching at another. */
nn_status nn_onnx_broadcast_batch(exporter *x, op_io *io) {
    const bool ba = io->in[0]->batch, bb = io->in[1]->batch;
    if (x->dynamic && ba != bb) {
        const nn_tensor *batched = io->node->inputs[ba ? 0 : 1], *other = io->node->inputs[ba ? 1 : 0];
        const int aligned = other->ndim - batched->ndim;
        if (aligned > 0 || (aligned == 0 && other->shape[0] != 1))
            return nn_onnx_refuse_batch(x, io, "combines a batch value with a constant that does not broadcast "
                                               "along the batch");
    }
    io->out_batch = ba || bb;
    return NN_OK;
}

void nn_onnx_reserve_name(exporter *x, const char *op_type, op_io *io) {
    snprintf(io->name, sizeof io->name, "%s_%d", op_type, x->nodes_made++);
}

void nn_onnx_begin(exporter *x, nn_onnx_node *n, const char *op_type, op_io *io) {
    nn_onnx_reserve_name(x, op_type, io);
    nn_onnx_node_begin(n, op_type, io->name);
}

void nn_onnx_inputs(nn_onnx_node *n, const op_io *io, int count) {
    for (int i = 0; i < count; i++)
        if (io->in[i]) nn_onnx_node_input(n, io->in[i]->name);
}

nn_status nn_onnx_simple(exporter *x, op_io *io, const char *out, const char *op_type) {
    nn_onnx_node n;
    nn_onnx_begin(x, &n, op_type, io);
    nn_onnx_inputs(&n, io, io->node->input_count);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

nn_status nn_onnx_elementwise(exporter *x, op_io *io, const char *out, const char *op_type) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    return nn_onnx_simple(x, io, out, op_type);
}

nn_status nn_onnx_along_axis(exporter *x, op_io *io, const char *out, const char *op_type, int64_t axis) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    nn_onnx_node n;
    nn_onnx_begin(x, &n, op_type, io);
    nn_onnx_inputs(&n, io, 1);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_int(&n, "axis", axis);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

const char *nn_onnx_fresh_value(exporter *x, const op_io *io, const char *what, char *buf, size_t size) {
    snprintf(buf, size, "%s_%s", io->name, what);
    return nn_onnx_add_value(x, NULL, buf, false) ? buf : NULL;
}

void nn_onnx_pair(exporter *x, const char *op_type, const char *name, const char *a, const char *b, const char *out) {
    nn_onnx_node n;
    nn_onnx_node_begin(&n, op_type, name);
    nn_onnx_node_input(&n, a);
    nn_onnx_node_input(&n, b);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
}

void nn_onnx_begin_window(exporter *x, nn_onnx_node *n, const char *op_type, op_io *io, int inputs, const char *out,
                          const int64_t kernel[2], const int64_t strides[2], const int64_t pads[4]) {
    nn_onnx_begin(x, n, op_type, io);
    nn_onnx_inputs(n, io, inputs);
    nn_onnx_node_output(n, out);
    nn_onnx_attr_ints(n, "kernel_shape", kernel, 2);
    nn_onnx_attr_ints(n, "strides", strides, 2);
    nn_onnx_attr_ints(n, "pads", pads, 4);
}

void nn_onnx_cast(exporter *x, const char *from, int to, const char *out) {
    char name[48];
    snprintf(name, sizeof name, "Cast_%d", x->nodes_made++);
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Cast", name);
    nn_onnx_node_input(&n, from);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_int(&n, "to", to);
    nn_onnx_node_end(&n, &x->graph);
}

nn_status nn_onnx_reshape_to(exporter *x, const char *name, const char *from, const int64_t *dims, int ndim,
                             const char *out) {
    char const_name[64];
    snprintf(const_name, sizeof const_name, "%s_shape", name);
    int64_t len = ndim;
    const char *shape = nn_onnx_add_constant(x, const_name, NN_ONNX_INT64, &len, 1, dims, (size_t)ndim * sizeof *dims);
    if (!shape) return nn_last_status();
    nn_onnx_pair(x, "Reshape", name, from, shape, out);
    return NN_OK;
}

nn_status nn_onnx_emit_op(exporter *x, op_io *io, const char *out) {
    if (io->node->op->to_onnx) return io->node->op->to_onnx(x, io, out);
    return nn_set_error(NN_ERR_ARGUMENT, "%s: operation %s has no ONNX mapping", x->who, io->node->op->name);
}
