/* The state of one ONNX export, shared by the graph walk (onnx_export.c)
 * and the per-operation translations (onnx_ops.c). */
#ifndef NN_IO_ONNX_GRAPH_H
#define NN_IO_ONNX_GRAPH_H

#include "core/internal.h"
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
/* Append the ONNX node(s) for io->node, writing its result to `out`, and set
 * io->out_batch. An operation without a mapping is refused by name. */
nn_status nn_onnx_emit_op(exporter *x, op_io *io, const char *out);

#endif
