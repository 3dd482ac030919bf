#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#define GRAD_MASK 0
#include "norm_columns.glsl"
