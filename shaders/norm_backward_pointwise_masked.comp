#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NORM_BACKWARD_FROM_SUMS through an activation's mask (kernels.h's grad_mask).
#define GRAD_MASK 1
#include "norm_backward_pointwise.glsl"
