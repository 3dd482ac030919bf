#include "onnx_proto.h"

/* NodeProto: input 1, output 2, name 3, op_type 4, attribute 5. */
void nn_onnx_node_begin(nn_onnx_node *n, const char *op_type, const char *name) {
    n->pb = (nn_pb){0};
    nn_pb_string(&n->pb, 3, name);
    nn_pb_string(&n->pb, 4, op_type);
}

void nn_onnx_node_input(nn_onnx_node *n, const char *value) { nn_pb_string(&n->pb, 1, value); }
void nn_onnx_node_output(nn_onnx_node *n, const char *value) { nn_pb_string(&n->pb, 2, value); }

/* AttributeProto: name 1, f 2, i 3, ints 8, type 20 (FLOAT 1, INT 2, INTS 7). */
static void attr_end(nn_onnx_node *n, nn_pb *attr, int type) {
    nn_pb_int(attr, 20, type);
    nn_pb_message(&n->pb, 5, attr);
    nn_pb_free(attr);
}

void nn_onnx_attr_int(nn_onnx_node *n, const char *name, int64_t value) {
    nn_pb attr = {0};
    nn_pb_string(&attr, 1, name);
    nn_pb_int(&attr, 3, value);
    attr_end(n, &attr, 2);
}

void nn_onnx_attr_ints(nn_onnx_node *n, const char *name, const int64_t *values, int count) {
    nn_pb attr = {0};
    nn_pb_string(&attr, 1, name);
    for (int i = 0; i < count; i++) nn_pb_int(&attr, 8, values[i]);
    attr_end(n, &attr, 7);
}

void nn_onnx_attr_float(nn_onnx_node *n, const char *name, float value) {
    nn_pb attr = {0};
    nn_pb_string(&attr, 1, name);
    nn_pb_float(&attr, 2, value);
    attr_end(n, &attr, 1);
}

void nn_onnx_attr_string(nn_onnx_node *n, const char *name, const char *value) {
    nn_pb attr = {0};
    nn_pb_string(&attr, 1, name);
    nn_pb_string(&attr, 4, value); /* AttributeProto.s */
    attr_end(n, &attr, 3);         /* STRING */
}

void nn_onnx_node_end(nn_onnx_node *n, nn_pb *graph) {
    nn_pb_message(graph, 1, &n->pb); /* GraphProto.node */
    nn_pb_free(&n->pb);
}

/* TensorProto: dims 1, data_type 2, name 8, raw_data 9. */
void nn_onnx_initializer(nn_pb *graph, const char *name, int data_type, const int64_t *dims,
                         int ndim, const void *raw, size_t raw_size) {
    nn_pb t = {0};
    for (int i = 0; i < ndim; i++) nn_pb_int(&t, 1, dims[i]);
    nn_pb_int(&t, 2, data_type);
    nn_pb_string(&t, 8, name);
    nn_pb_bytes(&t, 9, raw, raw_size);
    nn_pb_message(graph, 5, &t); /* GraphProto.initializer */
    nn_pb_free(&t);
}

/* ValueInfoProto: name 1, type 2. TypeProto: tensor_type 1. TypeProto.Tensor:
 * elem_type 1, shape 2. TensorShapeProto: dim 1. Dimension: dim_value 1,
 * dim_param 2. */
void nn_onnx_value_info(nn_pb *graph, int field, const char *name, int elem_type,
                        const int64_t *dims, int ndim, const char *dim0_param) {
    nn_pb shape = {0}, tensor = {0}, type = {0}, info = {0};
    for (int i = 0; i < ndim; i++) {
        nn_pb dim = {0};
        if (i == 0 && dim0_param) nn_pb_string(&dim, 2, dim0_param);
        else nn_pb_int(&dim, 1, dims[i]);
        nn_pb_message(&shape, 1, &dim);
        nn_pb_free(&dim);
    }
    nn_pb_int(&tensor, 1, elem_type);
    nn_pb_message(&tensor, 2, &shape);
    nn_pb_message(&type, 1, &tensor);
    nn_pb_string(&info, 1, name);
    nn_pb_message(&info, 2, &type);
    nn_pb_message(graph, field, &info);
    nn_pb_free(&shape);
    nn_pb_free(&tensor);
    nn_pb_free(&type);
    nn_pb_free(&info);
}

/* ModelProto: ir_version 1, producer_name 2, producer_version 3, graph 7,
 * opset_import 8. OperatorSetIdProto: domain 1, version 2 (the default
 * domain "" is left out, as onnx's own helpers do). */
void nn_onnx_model(nn_pb *model, const nn_pb *graph, int64_t ir_version, int64_t opset,
                   const char *producer_version) {
    nn_pb_int(model, 1, ir_version);
    nn_pb_string(model, 2, "nn-engine");
    nn_pb_string(model, 3, producer_version);
    nn_pb_message(model, 7, graph);
    nn_pb opset_id = {0};
    nn_pb_int(&opset_id, 2, opset);
    nn_pb_message(model, 8, &opset_id);
    nn_pb_free(&opset_id);
}

/* ModelProto.metadata_props 14; StringStringEntryProto: key 1, value 2. */
void nn_onnx_model_metadata(nn_pb *model, const char *key, const char *value) {
    nn_pb entry = {0};
    nn_pb_string(&entry, 1, key);
    nn_pb_string(&entry, 2, value);
    nn_pb_message(model, 14, &entry);
    nn_pb_free(&entry);
}
