#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// dbias[c] (+)= sum over o, i of dy[o, c, i]: one workgroup per channel
// (striding over channels past the workgroup-count limit).
layout(local_size_x = 256) in;
layout(push_constant) uniform Params { PC_OFFSETS uint outer, inner, channels; int accumulate; } p;
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) buffer DB { float db[]; };

shared float part[256];

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint count = p.outer * p.inner;
    for (uint c = gl_WorkGroupID.x; c < p.channels; c += gl_NumWorkGroups.x) {
        precise float sum = 0.0, comp = 0.0;
        for (uint e = tid; e < count; e += 256) {
            uint o = e / p.inner, i = e % p.inner;
            precise float y = dy[p.off0 + (o * p.channels + c) * p.inner + i] - comp;
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
        if (tid == 0) db[p.off1 + c] = (p.accumulate != 0 ? db[p.off1 + c] : 0.0) + part[0];
        barrier();
    }
}
