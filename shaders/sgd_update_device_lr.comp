#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_SGD_UPDATE_DEVICE_LR: sgd_update.glsl reading the learning rate
// from scalars[0] (binding 3) and the squared gradient norm from scalars[1].
#define DEVICE_LR 1
#include "sgd_update.glsl"
