#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "pool2d_common.glsl"
// Average-pooling backward (NN_KERNEL_POOL2D_AVG_BACKWARD): every element
// of a window (+)= its output's dy over the window's divisor, gathered.
#define MAX 0
#include "pool2d_backward.glsl"
