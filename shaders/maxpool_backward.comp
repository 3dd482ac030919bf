#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "pool_params.glsl"
// Max-pool backward (the body is shared with the masked variant).
#define MASKED 0
#include "maxpool_backward.glsl"
