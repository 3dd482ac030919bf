#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "pool2d_common.glsl"
// Max-pooling backward (NN_KERNEL_POOL2D_MAX_BACKWARD): dx[argmax] (+)= dy, gathered.
#define MAX 1
#include "pool2d_backward.glsl"
