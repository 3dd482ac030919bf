#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Full reduction to one value (REDUCE_SUM: alpha * sum x; SUM_SQUARES: sum
// x^2). Small inputs take one workgroup; large ones two passes: each
// workgroup writes a partial, then one workgroup adds the partials. Each
// invocation keeps a compensated (Kahan) sum, so long ranges stay close to
// the CPU's double-precision total.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_REDUCE)
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer O { float o[]; };

shared float part[256];

void main() {
    uint tid = gl_LocalInvocationID.x;
    precise float sum = 0.0, comp = 0.0;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += gl_NumWorkGroups.x * 256) {
        float v = x[p.off[0] + i];
        if (p.square_input != 0) v *= v;
        precise float y = v - comp;
        precise float t = sum + y;
        comp = (t - sum) - y;
        sum = t;
    }
    part[tid] = sum;
    barrier();
    for (uint s = 128; s > 0; s >>= 1) {
        if (tid < s) part[tid] += part[tid + s];
        barrier();
    }
    if (tid != 0) return;
    if (p.final == 0) {
        o[p.off[1] + gl_WorkGroupID.x] = part[0];
    } else {
        float v = p.alpha * part[0];
        o[p.off[1]] = p.accumulate != 0 ? o[p.off[1]] + v : v;
    }
}
