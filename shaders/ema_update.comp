#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_EMA_UPDATE over n 32-bit words: mode 0, shadow = shadow * decay
// + weight * value (floats); 1, shadow = value; 2, the two exchanged.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_EMA_UPDATE)
layout(std430, binding = 0) buffer S { uint shadow[]; };
layout(std430, binding = 1) buffer V { uint value[]; };

void main() {
    uint s0 = p.off[0], v0 = p.off[1];
    GRID_STRIDE_LOOP(i, p.n) {
        uint v = value[v0 + i];
        if (p.mode == 1) {
            shadow[s0 + i] = v;
        } else if (p.mode == 2) {
            value[v0 + i] = shadow[s0 + i];
            shadow[s0 + i] = v;
        } else {
            precise float decayed = uintBitsToFloat(shadow[s0 + i]) * p.decay;
            precise float added = p.weight * uintBitsToFloat(v);
            precise float sum = decayed + added;
            shadow[s0 + i] = floatBitsToUint(sum);
        }
    }
}
