#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// counter[0] += delta: the step counter of a captured training loop,
// unless the optional skip argument says the step is skipped.
layout(local_size_x = 1) in;
PUSH_CONSTANTS(PUSH_COUNTER_ADD)
layout(std430, binding = 0) buffer C { int counter[]; };
#define SKIP_BINDING 1
#include "update_skip.glsl"

void main() {
    if (!update_skipped()) counter[p.off[0]] += p.delta;
}
