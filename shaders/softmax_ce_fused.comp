#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "softmax_params.glsl"
// Softmax + cross-entropy forward and gradient in one kernel
// (NN_KERNEL_SOFTMAX_CE_FUSED): softmax_ce_rows.glsl writing dlogits.
#define FUSED 1
#include "softmax_ce_rows.glsl"
