#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "unary_math.glsl"
#include "unary_ops.h"
// NORM_APPLY: y = (x - mean[g]) * rsqrt(var[g] + eps) * weight[c] + bias[c],
// plus residual[e] where bound (a residual connection's add), then the
// epilogue's row of unary_ops.h where it is on (a fused activation), four
// elements per invocation (vec4) where norm_quads (one group and channel)
// or norm_column_quads (four channels) allows, else one.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NORM)
#include "norm_common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer M { float mean[]; };
layout(std430, binding = 2) readonly buffer V { float var[]; };
layout(std430, binding = 3) readonly buffer W { float weight[]; };
layout(std430, binding = 4) readonly buffer B { float bias[]; };
layout(std430, binding = 5) writeonly buffer Y { float y[]; };
layout(std430, binding = 5) writeonly buffer Y4 { vec4 y4[]; };
layout(std430, binding = 6) readonly buffer R { float residual[]; };
layout(std430, binding = 6) readonly buffer R4 { vec4 residual4[]; };

// Group g's and channel c's y = (x - mean) scale + shift (x - mean first:
// no cancellation where x sits far from zero).
vec3 mean_scale_shift(uint g, uint c) {
    float rstd = inversesqrt(var[p.off[2] + g] + p.eps);
    float w = p.has_weight != 0 ? weight[p.off[3] + c] : 1.0;
    return vec3(mean[p.off[1] + g], rstd * w, p.has_bias != 0 ? bias[p.off[4] + c] : 0.0);
}

// The epilogue's row (as unary_forward.comp evaluates it) of y.
float epilogue(float x) {
    if (p.epilogue_on == 0) return x;
    float alpha = p.epilogue_alpha, beta = p.epilogue_beta, y = x;
    int row = 0;
#define EPILOGUE_ROW(ID, name, Onnx, forward_, backward_, export_, public_) \
    if (p.epilogue_op == row) y = (forward_);                              \
    row++;
    NN_UNARY_OPS(EPILOGUE_ROW)
    return y;
}

vec4 epilogue4(vec4 v) { return vec4(epilogue(v.x), epilogue(v.y), epilogue(v.z), epilogue(v.w)); }

float residual_at(uint e) { return p.has_residual != 0 ? residual[p.off[6] + e] : 0.0; }
vec4 residual4_at(uint q) { return p.has_residual != 0 ? residual4[p.off[6] / 4u + q] : vec4(0.0); }

void main() {
    uint total = p.outer * p.groups * p.inner;
    uint off_r = p.has_residual != 0 ? p.off[6] : 0u;
    if (norm_quads(p.off[0], p.off[5], off_r)) {
        GRID_STRIDE_LOOP(q, total / 4u) {
            vec3 f = mean_scale_shift(group_of(4u * q), channel_of(4u * q));
            y4[p.off[5] / 4u + q] = epilogue4((x4[p.off[0] / 4u + q] - f.x) * f.y + f.z + residual4_at(q));
        }
        return;
    }
    if (norm_column_quads(p.off[0], p.off[5], off_r)) {
        GRID_STRIDE_LOOP(q, total / 4u) {
            uint c = (4u * q) % p.channels;
            vec4 mu, scale, shift;
            for (uint i = 0u; i < 4u; i++) {
                vec3 f = mean_scale_shift(c + i, c + i);
                mu[i] = f.x, scale[i] = f.y, shift[i] = f.z;
            }
            y4[p.off[5] / 4u + q] = epilogue4((x4[p.off[0] / 4u + q] - mu) * scale + shift + residual4_at(q));
        }
        return;
    }
    GRID_STRIDE_LOOP(e, total) {
        vec3 f = mean_scale_shift(group_of(e), channel_of(e));
        y[p.off[5] + e] = epilogue((x[p.off[0] + e] - f.x) * f.y + f.z + residual_at(e));
    }
}
