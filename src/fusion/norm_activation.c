/* A normalisation (BatchNorm, LayerNorm, GroupNorm) -> a pointwise
 * activation: the activation is the apply's epilogue (kernels.h's
 * nn_pointwise_epilogue), so the normalised tensor is never written, its
 * memory never taken, and a pass over the activation goes. Both nodes keep
 * their own backward: the normalisation's reads x and its saved statistics,
 * the activation's its output alone (nn_epilogue_of takes no other). The
 * normalised tensor keeps a recipe, as every unwritten interior output. */
#include "patterns.h"

static bool takes_epilogue(const nn_fusion_graph *g, nn_node *const *members) {
    nn_pointwise_epilogue epilogue;
    return nn_norm_takes_epilogue(members[0]) && nn_epilogue_of(members[1], &epilogue);
}

static nn_status launch_norm_activation(const nn_fusion_graph *g, nn_node *const *m) {
    nn_pointwise_epilogue epilogue;
    nn_epilogue_of(m[1], &epilogue);
    nn_tensor *out = m[1]->output;
    NN_TRY(nn_tensor_attach_storage(out));
    m[1]->launched = true;
    return nn_norm_forward_with_epilogue(m[0], out, &epilogue, NULL);
}

/* Any first and second operation (NULL): takes_epilogue decides. */
const nn_fusion_pattern nn_pattern_norm_activation = {"norm+activation", 2, {NULL, NULL}, takes_epilogue,
                                                      launch_norm_activation, .any_precision = true};
