#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "softmax_params.glsl"
// Softmax + cross-entropy (NN_KERNEL_SOFTMAX_CE_FORWARD):
// softmax_ce_rows.glsl writing the probabilities.
#define FUSED 0
#include "softmax_ce_rows.glsl"
