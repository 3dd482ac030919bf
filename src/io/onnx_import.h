/* The ONNX importer's shared state (onnx_import.c builds the module and
 * runs its graph; onnx_import_ops.c translates each operator). */
#ifndef NN_IO_ONNX_IMPORT_H
#define NN_IO_ONNX_IMPORT_H

#include "nn_module.h"
#include "nn_ops.h"
#include "onnx_read.h"

/* Where a value of the graph comes from. */
typedef enum value_kind {
    VALUE_INPUT,    /* the graph's input: the module's forward argument */
    VALUE_STATE,    /* an initializer the module holds (parameter or buffer) */
    VALUE_CONSTANT, /* an initializer or Constant node kept on the host */
    VALUE_NODE      /* a node's output */
} value_kind;

typedef struct graph_value {
    const char *name;
    value_kind kind;
    const onnx_tensor *constant; /* VALUE_CONSTANT */
    nn_tensor *state;            /* VALUE_STATE (the module's reference) */
    nn_tensor *device_constant;  /* a constant's device copy, made when a node reads it there */
    bool learned;                /* a parameter whatever its name (a new classifier's) */
} graph_value;

/* What a node's input or output is while the graph runs: a device tensor,
 * or a host tensor (constants, and what Shape and its arithmetic compute
 * from shapes, owned when `owned`). */
typedef struct slot {
    nn_tensor *t;
    const onnx_tensor *host;
    onnx_tensor owned;
} slot;

typedef struct imported {
    onnx_model model;
    graph_value *values;
    int n_values;
    int *index; /* values by name (onnx_import.c's hash table) */
    uint32_t index_size;
    int **node_inputs, **node_outputs; /* value indices; -1 for an omitted optional input */
    int *inputs, n_inputs;             /* the graph's inputs' values, in its order */
    int *readers;                      /* per value: the node inputs reading it, + 1 for the graph's output */
    int input, output;                 /* its first input's value, its output's */
    /* The exporters' GELU, x * 0.5 * (1 + erf(x / sqrt(2))), found at import:
     * its last node computes it from value gelu_input[k] (else -1), the
     * others are fused away. */
    int *gelu_input;
    bool *fused_away;
} imported;

/* One node being run. */
typedef struct node_run {
    nn_module *module;
    imported *im;
    const onnx_node *node;
    slot *slots; /* the whole graph's, by value index */
    int n_in;
} node_run;

/* The node's input i: NULL when omitted or out of range. */
slot *nn_onnx_in(node_run *r, int i);
/* Input i on the device (a host constant copied there once); NULL with the error set. */
nn_tensor *nn_onnx_device_in(node_run *r, int i);
/* Sets output i to a device tensor (NULL: the error is already set). */
nn_status nn_onnx_set_out(node_run *r, int i, nn_tensor *t);
/* A refusal naming the node, its operator and the opset. */
nn_status nn_onnx_refuse(const node_run *r, const char *fmt, ...);

/* The operators on shapes and layouts (onnx_import_shape_ops.c), for the
 * table in onnx_import_ops.c. */
nn_status nn_onnx_op_flatten(node_run *r);
nn_status nn_onnx_op_reshape(node_run *r);
nn_status nn_onnx_op_identity(node_run *r);
nn_status nn_onnx_op_constant(node_run *r);
nn_status nn_onnx_op_concat(node_run *r);
nn_status nn_onnx_op_transpose(node_run *r);
nn_status nn_onnx_op_shape(node_run *r);
nn_status nn_onnx_op_gather(node_run *r);
nn_status nn_onnx_op_squeeze(node_run *r);
nn_status nn_onnx_op_slice(node_run *r);
nn_status nn_onnx_op_cast(node_run *r);
nn_status nn_onnx_op_expand(node_run *r);
nn_status nn_onnx_op_split(node_run *r);

/* Runs one node (onnx_import_ops.c); whether an op_type is known (checked
 * for every node before the module is made). */
nn_status nn_onnx_run_node(node_run *r);
bool nn_onnx_known_op(const char *op_type);
/* Whether input i of op_type is read as a host value (shapes, axes, clip
 * bounds): such initializers stay constants. */
bool nn_onnx_host_input(const char *op_type, int i);
/* Whether input i of op_type holds learned state a folded export may have
 * renamed (a convolution's weight and bias, BatchNorm's affine
 * parameters, Gemm's B and C): such initializers are parameters whatever
 * their names; BatchNorm's inputs 3 and 4 are buffers (*buffer). */
bool nn_onnx_state_input(const char *op_type, int i, bool *buffer);

#endif
