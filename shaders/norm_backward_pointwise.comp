#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define GRAD_MASK 0
#include "norm_backward_pointwise.glsl"
