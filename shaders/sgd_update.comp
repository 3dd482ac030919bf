#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_SGD_UPDATE: the learning rate is a push constant.
#define DEVICE_LR 0
#include "sgd_update.glsl"
