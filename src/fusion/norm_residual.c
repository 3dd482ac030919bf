/* A normalisation -> an add of a residual (a tensor of its shape, either
 * side of the add) -> optionally a pointwise activation: a residual block's
 * end (ResNet's BatchNorm, add, ReLU; MobileNetV2's BatchNorm and add). The
 * apply adds the residual and runs the activation as its epilogue, so
 * neither the normalised tensor nor the sum is written: two passes over the
 * activation-sized tensors go. Every member keeps its own backward: the
 * normalisation's reads x and its saved statistics, the add's nothing, the
 * activation's its output alone (nn_epilogue_of takes no other). The
 * unwritten outputs keep recipes, as every fused interior output. */
#include "patterns.h"

/* The add's other operand, or NULL where it is not a residual the apply
 * can read: one of the normalised tensor's shape and layout (the apply
 * reads it in x's order), float. */
static nn_tensor *residual_of(nn_node *const *m) {
    const nn_tensor *y = m[0]->output;
    nn_node *add = m[1];
    nn_tensor *r = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
    if (!r || r == y || !nn_same_shape(r, y) || r->dtype != NN_F32 || r->layout != y->layout) return NULL;
    return r;
}

static bool fits(nn_node *const *m, int count) {
    if (!nn_norm_takes_epilogue(m[0]) || !residual_of(m)) return false;
    const nn_tensor *y = m[0]->output, *out = m[count - 1]->output;
    if (out->layout != y->layout || !nn_same_shape(out, y)) return false;
    nn_pointwise_epilogue epilogue;
    return count == 2 || nn_epilogue_of(m[2], &epilogue);
}

static bool match_with_activation(const nn_fusion_graph *g, nn_node *const *m) { return fits(m, 3); }
static bool match_add(const nn_fusion_graph *g, nn_node *const *m) { return fits(m, 2); }

static nn_status launch(nn_node *const *m, int count) {
    nn_pointwise_epilogue epilogue = {0};
    if (count == 3) nn_epilogue_of(m[2], &epilogue);
    nn_tensor *out = m[count - 1]->output;
    NN_TRY(nn_tensor_attach_storage(out));
    for (int k = 1; k < count; k++) m[k]->launched = true;
    NN_TRY(nn_norm_forward_with_epilogue(m[0], out, count == 3 ? &epilogue : NULL, residual_of(m)));
    if (count == 3) NN_TRY(nn_node_elide(m[1]));
    return NN_OK;
}

static nn_status launch_with_activation(const nn_fusion_graph *g, nn_node *const *m) { return launch(m, 3); }
static nn_status launch_add(const nn_fusion_graph *g, nn_node *const *m) { return launch(m, 2); }

/* The second member is an add reading the normalised tensor on either side. */
const nn_fusion_pattern nn_pattern_norm_add_activation = {
    "norm+add+activation", 3, {NULL, &nn_op_add, NULL}, match_with_activation, launch_with_activation,
    .any_precision = true, .any_input = 1u << 1};
const nn_fusion_pattern nn_pattern_norm_add = {"norm+add", 2, {NULL, &nn_op_add}, match_add, launch_add,
                                               .any_precision = true, .any_input = 1u << 1};
