/* ONNX messages (onnx/onnx.proto, IR version 8) encoded with protobuf.h.
 * Only the fields nn-engine writes; field numbers are given where each
 * message is built, in onnx_proto.c. */
#ifndef NN_IO_ONNX_PROTO_H
#define NN_IO_ONNX_PROTO_H

#include <stdint.h>

#include "protobuf.h"

enum { NN_ONNX_FLOAT = 1, NN_ONNX_INT32 = 6, NN_ONNX_INT64 = 7 }; /* TensorProto.DataType */

/* A node under construction: NodeProto fields appended as they come. */
typedef struct nn_onnx_node {
    nn_pb pb;
} nn_onnx_node;

void nn_onnx_node_begin(nn_onnx_node *n, const char *op_type, const char *name);
void nn_onnx_node_input(nn_onnx_node *n, const char *value); /* "" = omitted optional input */
void nn_onnx_node_output(nn_onnx_node *n, const char *value);
void nn_onnx_attr_int(nn_onnx_node *n, const char *name, int64_t value);
void nn_onnx_attr_ints(nn_onnx_node *n, const char *name, const int64_t *values, int count);
void nn_onnx_attr_float(nn_onnx_node *n, const char *name, float value);
void nn_onnx_attr_string(nn_onnx_node *n, const char *name, const char *value);
/* Append the node to the graph (GraphProto.node) and free it. */
void nn_onnx_node_end(nn_onnx_node *n, nn_pb *graph);

/* GraphProto.initializer: a tensor with raw little-endian data. */
void nn_onnx_initializer(nn_pb *graph, const char *name, int data_type, const int64_t *dims,
                         int ndim, const void *raw, size_t raw_size);
/* GraphProto.input (field 11) or .output (field 12): a float tensor value;
 * dimension 0 is the symbolic `dim0_param` when it is not NULL. */
void nn_onnx_value_info(nn_pb *graph, int field, const char *name, int elem_type,
                        const int64_t *dims, int ndim, const char *dim0_param);
enum { NN_ONNX_GRAPH_INPUT = 11, NN_ONNX_GRAPH_OUTPUT = 12 };

/* ModelProto around a finished graph. */
void nn_onnx_model(nn_pb *model, const nn_pb *graph, int64_t ir_version, int64_t opset,
                   const char *producer_version);
/* ModelProto.metadata_props: one key = value entry. */
void nn_onnx_model_metadata(nn_pb *model, const char *key, const char *value);

#endif
