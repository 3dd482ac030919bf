// The body of norm_backward_pointwise.comp and norm_backward_pointwise_masked.comp.
// NORM_BACKWARD_DATA's pointwise pass (after norm_backward_sums.comp, or
// alone for constant statistics): dx (+)= rstd (w dy - sums[2 g] / n -
// xhat sums[2 g + 1] / n) (sums_unweighted: the sums times w), or rstd w
// dy without batch statistics; BACKWARD_FROM_SUMS' affine gradients from
// the sums, by the first invocations (p.affine, push_constants.h). Four
// elements per invocation (vec4) where norm_quads (one group and channel)
// or norm_column_quads (four channels) allows, else one. In
// norm_backward_pointwise_masked.comp (GRAD_MASK) dy through grad_mask's
// mask (BACKWARD_FROM_SUMS; its bias at binding 10).
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NORM)
#include "norm_common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer M { float mean[]; };
layout(std430, binding = 2) readonly buffer V { float var[]; };
layout(std430, binding = 3) readonly buffer W { float weight[]; };
layout(std430, binding = 4) readonly buffer DY { float dy[]; };
layout(std430, binding = 4) readonly buffer DY4 { vec4 dy4[]; };
layout(std430, binding = 5) buffer DX { float dx[]; };
layout(std430, binding = 5) buffer DX4 { vec4 dx4[]; };
layout(std430, binding = 6) readonly buffer S { float sums[]; };
layout(std430, binding = 7) buffer DW { float dweight[]; };
layout(std430, binding = 9) buffer DB { float dbias[]; }; // argument 8: binding 8 is the status buffer
layout(std430, binding = 10) readonly buffer B { float bias[]; }; // argument 9

// For element e's group and channel: rstd, the scale of w dy, and the
// terms subtracted: dx = rstd (scale dy - shift - xhat slope); b, the
// bias grad_mask's y = (x - mu) (rstd w) + b adds.
struct Terms { float mu, rstd, w, shift, slope, b; };

Terms terms_of(uint g, uint c) {
    float inv_n = 1.0 / float(p.outer * p.inner);
    Terms t = Terms(mean[p.off[1] + g], inversesqrt(var[p.off[2] + g] + p.eps),
                    p.has_weight != 0 ? weight[p.off[3] + c] : 1.0, 0.0, 0.0,
                    GRAD_MASK != 0 && p.has_bias != 0 ? bias[p.off[9] + c] : 0.0);
    if (p.batch_stats != 0) {
        float scale = p.sums_unweighted != 0 ? t.w : 1.0; // sums of dy, dy xhat: times the group's one channel's w
        t.shift = sums[p.off[6] + 2u * g] * inv_n * scale;
        t.slope = sums[p.off[6] + 2u * g + 1u] * inv_n * scale;
    }
    return t;
}

// dweight[c] (+)= sums[2 c + 1], dbias[c] (+)= sums[2 c]: sums without the
// weight are the affine gradients too (one channel per group).
void affine_from_sums() {
    if (p.affine == 0) return;
    GRID_STRIDE_LOOP(c, p.channels) {
        if ((p.affine & 1) != 0) {
            uint o = p.off[7] + c;
            dweight[o] = ((p.affine & 4) != 0 ? dweight[o] : 0.0) + sums[p.off[6] + 2u * c + 1u];
        }
        if ((p.affine & 2) != 0) {
            uint o = p.off[8] + c;
            dbias[o] = ((p.affine & 8) != 0 ? dbias[o] : 0.0) + sums[p.off[6] + 2u * c];
        }
    }
}

void main() {
    affine_from_sums();
    uint total = p.outer * p.groups * p.inner;
    if (norm_quads(p.off[0], p.off[4], p.off[5])) {
        GRID_STRIDE_LOOP(q, total / 4u) {
            Terms t = terms_of(group_of(4u * q), channel_of(4u * q));
            vec4 xv = x4[p.off[0] / 4u + q], d = dy4[p.off[4] / 4u + q];
            if (GRAD_MASK != 0) d = masked_dy4(d, (xv - t.mu) * (t.rstd * t.w) + t.b);
            vec4 xhat = (xv - t.mu) * t.rstd;
            vec4 v = t.rstd * (t.w * d - t.shift - xhat * t.slope);
            uint o = p.off[5] / 4u + q;
            dx4[o] = p.accumulate != 0 ? dx4[o] + v : v;
        }
        return;
    }
    if (norm_column_quads(p.off[0], p.off[4], p.off[5])) {
        GRID_STRIDE_LOOP(q, total / 4u) {
            uint c = (4u * q) % p.channels;
            vec4 mu, rstd, w, shift, slope, b;
            for (uint i = 0u; i < 4u; i++) {
                Terms t = terms_of(c + i, c + i);
                mu[i] = t.mu, rstd[i] = t.rstd, w[i] = t.w, shift[i] = t.shift, slope[i] = t.slope, b[i] = t.b;
            }
            vec4 xv = x4[p.off[0] / 4u + q], d = dy4[p.off[4] / 4u + q];
            if (GRAD_MASK != 0) d = masked_dy4(d, (xv - mu) * (rstd * w) + b);
            vec4 xhat = (xv - mu) * rstd;
            vec4 v = rstd * (w * d - shift - xhat * slope);
            uint o = p.off[5] / 4u + q;
            dx4[o] = p.accumulate != 0 ? dx4[o] + v : v;
        }
        return;
    }
    GRID_STRIDE_LOOP(e, total) {
        Terms t = terms_of(group_of(e), channel_of(e));
        float xv = x[p.off[0] + e], d = dy[p.off[4] + e];
        if (GRAD_MASK != 0) d = masked_dy(d, (xv - t.mu) * (t.rstd * t.w) + t.b);
        float xhat = (xv - t.mu) * t.rstd;
        float v = t.rstd * (t.w * d - t.shift - xhat * t.slope);
        uint o = p.off[5] + e;
        dx[o] = p.accumulate != 0 ? dx[o] + v : v;
    }
}
