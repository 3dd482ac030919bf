#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The weight [filters, cg, kernel_h, kernel_w] (filters = groups * fg)
// rearranged as conv_gemm.comp's B matrices read it, rows along k and the
// other operand's channels contiguous:
//   mode 0 (forward): [group][r][s][c][f];
//   mode 1 (data):    per stride phase (ph, pw) (the pixels h % sh = ph,
//                     w % sw = pw), [phase][group][its taps (i, j)][f][c],
//                     a phase's taps being those (r, s) that reach its
//                     pixels (conv_gemm.comp's phase_taps), each tap in
//                     exactly one phase.
// One invocation per weight entry, writing its one place.
PUSH_CONSTANTS(PUSH_CONV_GEMM_PACK)
layout(std430, binding = 0) readonly buffer W { float w[]; };
layout(std430, binding = 1) writeonly buffer Packed { float packed[]; };
layout(local_size_x = 256) in;

uint lo16(uint v) { return v & 0xffffu; }
uint hi16(uint v) { return v >> 16; }

uint gcd(uint a, uint b) {
    while (b != 0u) {
        uint t = a % b;
        a = b;
        b = t;
    }
    return a;
}

// As conv_gemm.comp: the taps of one axis reaching phase `phase`.
uint phase_taps(uint phase, uint pad, uint stride, uint dil, uint kernel, out uint first, out uint every) {
    every = stride / gcd(stride, dil);
    first = kernel;
    for (uint t = 0u; t < kernel && t < every; t++)
        if ((int(phase + pad) - int(t * dil)) % int(stride) == 0) {
            first = t;
            break;
        }
    return first < kernel ? (kernel - first + every - 1u) / every : 0u;
}

// The phase (0 <= phase < stride) whose pixels tap t reaches.
uint phase_of(uint t, uint pad, uint stride, uint dil) {
    int r = (int(t * dil) - int(pad)) % int(stride);
    return uint(r < 0 ? r + int(stride) : r);
}

void main() {
    uint kh = hi16(p.kernel_hw), kw = lo16(p.kernel_hw);
    GRID_STRIDE_LOOP(e, p.count) {
        uint s = e % kw, rest = e / kw;
        uint r = rest % kh;
        rest /= kh;
        uint c = rest % p.cg, out_channel = rest / p.cg;
        uint g = out_channel / p.fg, f = out_channel - g * p.fg;
        uint at;
        if (p.mode == 0u) {
            at = (((g * kh + r) * kw + s) * p.cg + c) * p.fg + f;
        } else {
            uint sh = hi16(p.stride_hw), sw = lo16(p.stride_hw), ph = hi16(p.pad_hw), pw = lo16(p.pad_hw);
            uint dh = hi16(p.dilation_hw), dw = lo16(p.dilation_hw);
            uint phase_h = phase_of(r, ph, sh, dh), phase_w = phase_of(s, pw, sw, dw);
            uint first_h, every_h, first_w, every_w;
            uint taps_h = phase_taps(phase_h, ph, sh, dh, kh, first_h, every_h);
            uint taps_w = phase_taps(phase_w, pw, sw, dw, kw, first_w, every_w);
            uint i = (r - first_h) / every_h, j = (s - first_w) / every_w;
            uint before = 0u, phase = phase_h * sw + phase_w;
            for (uint q = 0u; q < phase; q++) {
                uint f0, e0, f1, e1;
                before += phase_taps(q / sw, ph, sh, dh, kh, f0, e0) * phase_taps(q % sw, pw, sw, dw, kw, f1, e1);
            }
            at = (before * p.groups + g * taps_h * taps_w) * p.fg * p.cg + ((i * taps_w + j) * p.fg + f) * p.cg + c;
        }
        packed[p.off[1] + at] = w[p.off[0] + e];
    }
}
