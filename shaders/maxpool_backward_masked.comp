#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "pool_params.glsl"
// Max-pool backward fused with the backward of the ReLU before the pool
// (NN_KERNEL_MAXPOOL_BACKWARD_MASKED): dx[argmax] (+)= y > 0 ? dy : 0.
#define MASKED 1
#include "maxpool_backward.glsl"
