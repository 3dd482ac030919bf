#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Full reduction to one value (REDUCE_SUM: alpha * sum x; SUM_SQUARES: sum
// x^2). Small inputs take one workgroup; large ones two passes: each
// workgroup writes a partial, then one workgroup adds the partials. Each
// invocation keeps a compensated (Kahan) sum, so long ranges stay close to
// the CPU's double-precision total.
layout(local_size_x = 256) in;
layout(push_constant) uniform Params {
    PC_OFFSETS
    uint n;
    int square_input; // sum x^2 instead of x
    int final;        // 1: write alpha * total to out[0] (+= with accumulate); 0: one partial per workgroup
    int accumulate;
    float alpha;
} p;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer O { float o[]; };

shared float part[256];

void main() {
    uint tid = gl_LocalInvocationID.x;
    precise float sum = 0.0, comp = 0.0;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += gl_NumWorkGroups.x * 256) {
        float v = x[p.off0 + i];
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
        o[p.off1 + gl_WorkGroupID.x] = part[0];
    } else {
        float v = p.alpha * part[0];
        o[p.off1] = p.accumulate != 0 ? o[p.off1] + v : v;
    }
}
