/* The state of one ONNX export, shared by the graph walk (onnx_export.c)
 * and the per-operation translations (onnx_ops.c). */
#ifndef NN_IO_ONNX_GRAPH_H
#define NN_IO_ONNX_GRAPH_H

#include "core/graph.h"
#include "onnx_proto.h"

/* A named value of the graph. */
typedef struct value {
    const nn_tensor *t; /* NULL for constants the exporter makes */
    char *name;
    bool batch; /* dimension 0 is the (dynamic) batch */
} value;

/* One export in progress: the names given so far and the GraphProto being built. */
typedef struct exporter {
    const char *who, *path;
    nn_tensor *input, *output;
    const nn_onnx_options *opt;
    bool dynamic;
    value **values; /* each value allocated alone, so pointers to it stay valid */
    int count, capacity;
    nn_pb graph;
    int params_made, values_made, nodes_made;
    bool batch_size_made; /* nn_onnx_batch_size's value is in the graph */
} exporter;
/* One recorded operation being translated: its inputs' values, and what
 * the translation reports back. */
typedef struct op_io {
    nn_node *node;
    value *in[NN_NODE_MAX_TENSORS]; /* NULL for an absent optional input (bias) */
    char name[48];                  /* the first ONNX node's name */
    bool out_batch;                 /* set by the handler */
} op_io;

/* Register a value under a unique name (a clash is refused); NULL on failure. */
value *nn_onnx_add_value(exporter *x, const nn_tensor *t, const char *name, bool batch);
/* An exporter-made constant (int64 shape, float factor) as an initializer;
 * returns its name, NULL on failure. */
const char *nn_onnx_add_constant(exporter *x, const char *name, int data_type,
                                 const int64_t *dims, int ndim, const void *data, size_t size);
/* Append the ONNX node(s) for io->node (its operation's to_onnx), writing
 * its result to `out`, and set io->out_batch. An operation without a
 * mapping is refused by name. */
nn_status nn_onnx_emit_op(exporter *x, op_io *io, const char *out);

/* ---- builders for the operations' emitters (onnx_ops.c) ---- */

/* Refused: the operation would bake the traced batch size into the graph
 * (`why` says how). */
nn_status nn_onnx_refuse_batch(exporter *x, const op_io *io, const char *why);
/* Inputs other than `batch_input` must not depend on the batch; the
 * output carries it when that input does. */
nn_status nn_onnx_only_input_carries_batch(exporter *x, op_io *io, int batch_input);
/* Inputs 0 and 1 broadcast together (add, compare): with a dynamic batch,
 * one without the batch must broadcast along it; the output carries the
 * batch when either input does. */
nn_status nn_onnx_broadcast_batch(exporter *x, op_io *io);
/* The graph's batch size, an int64 [1] value (the first entry of the
 * input's Shape), emitted on first use; NULL on failure. */
const char *nn_onnx_batch_size(exporter *x);
/* A unique node name ("Conv_3") into io->name. */
void nn_onnx_reserve_name(exporter *x, const char *op_type, op_io *io);
/* A node of op_type named by nn_onnx_reserve_name. */
void nn_onnx_begin(exporter *x, nn_onnx_node *n, const char *op_type, op_io *io);
/* The first `count` recorded inputs (absent ones skipped). */
void nn_onnx_inputs(nn_onnx_node *n, const op_io *io, int count);
/* An op_type node with the recorded inputs, one output, no attributes. */
nn_status nn_onnx_simple(exporter *x, op_io *io, const char *out, const char *op_type);
/* The same for an operation of one input whose output carries its batch
 * (Relu, Sigmoid, Dropout). */
nn_status nn_onnx_elementwise(exporter *x, op_io *io, const char *out, const char *op_type);
/* ... with the attribute axis (Flatten, Softmax). */
nn_status nn_onnx_along_axis(exporter *x, op_io *io, const char *out, const char *op_type, int64_t axis);
/* A fresh value name `<io->name>_<what>` in buf, registered with the
 * exporter (an intermediate of a translation of several nodes); NULL on
 * failure. */
const char *nn_onnx_fresh_value(exporter *x, const op_io *io, const char *what, char *buf, size_t size);
/* A node `name` of op_type on inputs a and b, with one output. */
void nn_onnx_pair(exporter *x, const char *op_type, const char *name, const char *a, const char *b, const char *out);
/* Begins a node of op_type over the first `inputs` recorded inputs, with
 * output `out` and a 2-D window's attributes (Conv, MaxPool): kernel_shape,
 * strides and pads (top, left, bottom, right). The caller adds any other
 * attribute and ends the node. */
void nn_onnx_begin_window(exporter *x, nn_onnx_node *n, const char *op_type, op_io *io, int inputs, const char *out,
                          const int64_t kernel[2], const int64_t strides[2], const int64_t pads[4]);
/* A Cast node of `from` to the element type `to` (NN_ONNX_FLOAT, ...). */
void nn_onnx_cast(exporter *x, const char *from, int to, const char *out);
/* A Reshape node `name` of `from` to dims (an int64 constant named after it). */
nn_status nn_onnx_reshape_to(exporter *x, const char *name, const char *from, const int64_t *dims, int ndim,
                             const char *out);

/* The preprocessing of x->opt->info in front of the graph (onnx_preprocess.c):
 * the graph input `raw_name` (pixel values 0..255) becomes
 * `normalized_name` = (raw / 255 - mean) / std per channel. */
nn_status nn_onnx_emit_preprocess(exporter *x, const char *raw_name, const char *normalized_name);

#endif
