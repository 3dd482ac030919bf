#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NORM_RUNNING_UPDATE: running = (1 - f) running + f stat per channel, the
// variance made unbiased; f = momentum, or 1 / count_tracked[0] for
// momentum < 0 (the cumulative average), read here so a replayed step
// uses the count of its own batch.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NORM_RUNNING)
layout(std430, binding = 0) readonly buffer M { float mean[]; };
layout(std430, binding = 1) readonly buffer V { float var[]; };
layout(std430, binding = 2) buffer RM { float running_mean[]; };
layout(std430, binding = 3) buffer RV { float running_var[]; };
layout(std430, binding = 4) readonly buffer C { int count_tracked[]; };

void main() {
    float f = p.momentum;
    if (p.momentum < 0.0) {
        int batches = count_tracked[p.off[4]];
        f = batches > 0 ? 1.0 / float(batches) : 1.0;
    }
    GRID_STRIDE_LOOP(c, p.channels) {
        running_mean[p.off[2] + c] = (1.0 - f) * running_mean[p.off[2] + c] + f * mean[p.off[0] + c];
        running_var[p.off[3] + c] = (1.0 - f) * running_var[p.off[3] + c] + f * var[p.off[1] + c] * p.unbias;
    }
}
