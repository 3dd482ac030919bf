/* An ONNX file read into memory (onnx/onnx.proto, IR versions 3 and later):
 * the main graph's nodes, initializers, inputs and outputs, with tensors'
 * values decoded (floating point as float, integers and booleans as int64).
 * What the importer (onnx_import.c) turns into a module. Checked here: the
 * wire format, the fields' types, tensor sizes against their data, and
 * limits (dimensions, element counts); refused with a message naming the
 * part: external data, sparse initializers, subgraph attributes of nodes
 * the importer would run. */
#ifndef NN_IO_ONNX_READ_H
#define NN_IO_ONNX_READ_H

#include <stdbool.h>
#include <stdint.h>

#include "nn_tensor.h"

enum { /* TensorProto.DataType values the reader decodes */
    ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_UINT16 = 4, ONNX_INT16 = 5, ONNX_INT32 = 6,
    ONNX_INT64 = 7, ONNX_BOOL = 9, ONNX_FLOAT16 = 10, ONNX_DOUBLE = 11
};
/* AttributeProto.AttributeType */
enum { ONNX_ATTR_FLOAT = 1, ONNX_ATTR_INT = 2, ONNX_ATTR_STRING = 3, ONNX_ATTR_TENSOR = 4, ONNX_ATTR_GRAPH = 5,
       ONNX_ATTR_FLOATS = 6, ONNX_ATTR_INTS = 7 };

typedef struct onnx_tensor {
    char *name;
    int data_type;
    int ndim;
    int64_t dims[NN_MAX_DIMS];
    int64_t numel;
    float *floats;   /* floating-point types */
    int64_t *ints;   /* integer and boolean types */
} onnx_tensor;

typedef struct onnx_attr {
    char *name;
    int type;
    int64_t i;
    float f;
    char *s;
    int64_t *ints;
    int64_t n_ints;
    float *floats;
    int64_t n_floats;
    onnx_tensor *t;
} onnx_attr;

typedef struct onnx_node {
    char *name, *op_type, *domain;
    char **inputs, **outputs; /* "" for an omitted optional input */
    int n_inputs, n_outputs;
    onnx_attr *attrs;
    int n_attrs;
} onnx_node;

/* A graph input or output: its element type and shape (-1 for a symbolic
 * or unknown dimension; ndim -1 when the shape is not given). */
typedef struct onnx_value_info {
    char *name;
    int elem_type;
    int ndim;
    int64_t dims[NN_MAX_DIMS];
} onnx_value_info;

typedef struct onnx_model {
    int64_t ir_version;
    int64_t opset; /* of the default domain ("" or "ai.onnx") */
    onnx_node *nodes;
    int n_nodes;
    onnx_tensor *initializers;
    int n_initializers;
    onnx_value_info *inputs, *outputs;
    int n_inputs, n_outputs;
} onnx_model;

/* Reads `path` into *m (zeroed first); NN_ERR_IO naming the path and what is
 * wrong otherwise, with *m freed. */
nn_status nn_onnx_read(const char *path, onnx_model *m);
/* The same from bytes in memory (`who` names them in messages). */
nn_status nn_onnx_parse(const void *data, size_t size, const char *who, onnx_model *m);
void nn_onnx_model_free(onnx_model *m);

/* A node's attribute of that name, NULL when absent. */
const onnx_attr *nn_onnx_attr(const onnx_node *n, const char *name);

#endif
