#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The gradient of nll_forward.comp's loss for every input element (o, c, i):
// -g ((1 - eps) w[t] [c == t] + eps / classes w[c]) where the position's
// target t is kept, 0 where it is ignored or out of range.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NLL)
layout(std430, binding = 0) readonly buffer DL { float dloss[]; };
layout(std430, binding = 1) readonly buffer T { int target[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) readonly buffer Total { float total[]; };
layout(std430, binding = 4) buffer DX { float dx[]; };

float weight_of(int c) { return p.has_weight != 0 ? w[p.off[2] + uint(c)] : 1.0; }

void main() {
    uint inner = uint(p.inner), classes = uint(p.classes);
    uint plane = classes * inner;
    float scale = 0.0;
    if (p.reduction == 2) scale = dloss[p.off[0]];
    if (p.reduction == 1) scale = dloss[p.off[0]] / total[p.off[3]];
    GRID_STRIDE_LOOP(e, uint(p.outer) * plane) {
        uint pos = (e / plane) * inner + e % inner;
        int c = int((e / inner) % classes), t = target[p.off[1] + pos];
        float g = 0.0;
        if (t != p.ignore_index && t >= 0 && t < p.classes) {
            float d = p.reduction == 0 ? dloss[p.off[0] + pos] : scale;
            g = -d * ((c == t ? (1.0 - p.smoothing) * weight_of(t) : 0.0) +
                      p.smoothing / float(p.classes) * weight_of(c));
        }
        uint o = p.off[4] + e;
        dx[o] = p.accumulate != 0 ? dx[o] + g : g;
    }
}
