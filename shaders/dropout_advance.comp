#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Advances dropout's draw counter after a draw (one invocation; the
// barrier before the next command orders it after the draw that read it).
layout(local_size_x = 1) in;
layout(push_constant) uniform Params { PC_OFFSETS } p;
layout(std430, binding = 0) buffer C { uint counter[]; };

void main() { counter[p.off0] += 1u; }
