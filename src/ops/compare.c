/* Elementwise comparisons with NumPy's broadcasting (PyTorch's ==, !=, <,
 * <=, >, >=): an int32 tensor of 0 and 1, PyTorch's bool. Both operands
 * float32 or both int32; a comparison with NaN is false but NE's (IEEE).
 * No gradient: the node is on the tape only to be traced (nn_no_gradient). */
#include <stdio.h>

#include "core/layout.h"
#include "io/onnx_graph.h"
#include "ops.h"
#include "strided.h"

typedef struct compare_node {
    int32_t op; /* nn_compare_op */
} compare_node;

static nn_status compare_forward(nn_node *node) {
    nn_tensor *a = node->inputs[0], *b = node->inputs[1];
    const nn_compare_op op = (nn_compare_op)NN_NODE_PARAMS(node, compare_node)->op;
    return nn_run_compare(a->ctx, op, node->output, a, b);
}

/* ONNX compares to bool: NE is Not(Equal), and the result is cast to int32. */
static nn_status compare_onnx(exporter *x, op_io *io, const char *out) {
    static const char *const kOperator[] = {
        [NN_COMPARE_EQ] = "Equal", [NN_COMPARE_NE] = "Equal", [NN_COMPARE_LT] = "Less",
        [NN_COMPARE_LE] = "LessOrEqual", [NN_COMPARE_GT] = "Greater", [NN_COMPARE_GE] = "GreaterOrEqual"};
    const nn_compare_op op = (nn_compare_op)NN_NODE_PARAMS(io->node, compare_node)->op;
    NN_TRY(nn_onnx_broadcast_batch(x, io));
    nn_onnx_reserve_name(x, kOperator[op], io);
    char holds[80], negated[80], not_name[48];
    snprintf(holds, sizeof holds, "%s_bool", io->name);
    if (!nn_onnx_add_value(x, NULL, holds, false)) return nn_last_status();
    nn_onnx_pair(x, kOperator[op], io->name, io->in[0]->name, io->in[1]->name, holds);
    const char *result = holds;
    if (op == NN_COMPARE_NE) {
        snprintf(negated, sizeof negated, "%s_not", io->name);
        if (!nn_onnx_add_value(x, NULL, negated, false)) return nn_last_status();
        snprintf(not_name, sizeof not_name, "Not_%d", x->nodes_made++);
        nn_onnx_node n;
        nn_onnx_node_begin(&n, "Not", not_name);
        nn_onnx_node_input(&n, holds);
        nn_onnx_node_output(&n, negated);
        nn_onnx_node_end(&n, &x->graph);
        result = negated;
    }
    nn_onnx_cast(x, result, NN_ONNX_INT32, out);
    return NN_OK;
}

/* Operands of one shape are read in a's layout (the output takes it); a
 * broadcast runs on dense tensors, as the strided kernels read them. */
static nn_layout compare_layouts(nn_tensor *const *inputs, int count, const void *params, int ndim,
                                 const int64_t *shape, nn_layout *input_layouts) {
    if (!nn_same_shape(inputs[0], inputs[1])) return NN_LAYOUT_DENSE;
    return nn_layouts_pointwise(inputs, count, params, ndim, shape, input_layouts);
}

static const nn_op nn_op_compare = {.name = "nn_compare", .forward = compare_forward, .backward = nn_no_gradient,
                                    .to_onnx = compare_onnx, .layouts = compare_layouts};

nn_tensor *nn_compare(nn_tensor *a, nn_tensor *b, nn_compare_op op) {
    const char *name = nn_op_compare.name;
    if ((int)op < NN_COMPARE_EQ || (int)op > NN_COMPARE_GE)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: op %d is not an nn_compare_op (NN_COMPARE_EQ .. NN_COMPARE_GE)",
                            name, (int)op);
    if (!a || !b) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: %s is NULL", name, !a ? "a" : "b");
    if (a->dtype != b->dtype)
        return NN_FAIL_NULL(NN_ERR_DTYPE, "%s: a is %s and b is %s: both must be float32 or both int32 (nn_cast "
                            "converts one)", name, a->dtype == NN_F32 ? "float32" : "int32",
                            b->dtype == NN_F32 ? "float32" : "int32");
    if (nn_check_same_ctx(name, "a", a, "b", b)) return NULL;
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    if (nn_broadcast_shapes(name, a->ndim, a->shape, b->ndim, b->shape, &ndim, shape)) return NULL;
    nn_tensor *inputs[2] = {a, b};
    const compare_node p = {op};
    return nn_op_record(&nn_op_compare, inputs, 2, &p, sizeof p, NN_I32, ndim, shape);
}
