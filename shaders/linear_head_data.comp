#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA (kernels.h): dh = (dy wb) * (h > 0),
// then dx (+)= dh wa (times x > 0 with mask_input), for ROWS rows per
// workgroup (linear_head.glsl); dx is skipped when not bound (given_a).
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PARTS1 = 1u; // THREADS / hidden
layout(constant_id = 1) const uint SPAN1 = 1u;  // ceil(out / PARTS1): wb loads per invocation
layout(constant_id = 2) const uint PARTS2 = 1u; // THREADS / in
layout(constant_id = 3) const uint SPAN2 = 1u;  // ceil(hidden / PARTS2): wa loads per invocation

#include "linear_head.glsl"

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer WB { float wb[]; };
layout(std430, binding = 2) readonly buffer H { float h[]; };
layout(std430, binding = 3) readonly buffer WA { float wa[]; };
layout(std430, binding = 4) readonly buffer X { float x[]; };
layout(std430, binding = 5) buffer DH { float dh[]; };
layout(std430, binding = 6) buffer DX { float dx[]; };

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = gl_WorkGroupID.x * ROWS, rows = min(ROWS, p.rows - row0);
    const uint in_f = p.in_features, hidden = p.hidden, out_f = p.out_features;
    const bool want_dx = p.given_a != 0u;

    // dy's rows and both layers' weights for this invocation, all in flight.
    float dyv[ROWS];
    for (uint r = 0u; r < ROWS; r++) {
        uint i = r * out_f + tid;
        dyv[r] = tid < out_f && i < rows * out_f ? dy[p.off[0] + row0 * out_f + i] : 0.0;
    }
    // First: column j of wb (out x hidden), rows part, part + PARTS1, ...
    const uint j = tid % hidden, part1 = tid / hidden;
    float wbv[SPAN1];
    for (uint s = 0u; s < SPAN1; s++) {
        uint o = part1 + s * PARTS1;
        bool inside = part1 < PARTS1 && o < out_f;
        wbv[s] = wb[p.off[1] + (inside ? o * hidden + j : 0u)];
        if (!inside) wbv[s] = 0.0;
    }
    // Second: column k of wa (hidden x in), rows part2, part2 + PARTS2, ...
    const uint k = tid % in_f, part2 = tid / in_f;
    float wav[SPAN2];
    for (uint s = 0u; s < SPAN2; s++) {
        uint jj = part2 + s * PARTS2;
        bool inside = want_dx && part2 < PARTS2 && jj < hidden;
        wav[s] = wa[p.off[3] + (inside ? jj * in_f + k : 0u)];
        if (!inside) wav[s] = 0.0;
    }
    // What the invocation reads when it finishes outputs (item tid + i *
    // THREADS of each layer: the ReLU's outputs for dh's mask; x for dx's,
    // and dx itself when adding into it), loaded up front with the weights,
    // so finishing an output reads no memory.
    const uint ITEMS = ROWS * MAX_FEATURES / THREADS;
    float h_at[ITEMS], x_at[ITEMS], dx_at[ITEMS];
    for (uint i = 0u; i < ITEMS; i++) {
        uint item = tid + i * THREADS, r = item / hidden;
        h_at[i] = r < rows ? h[p.off[2] + row0 * hidden + item] : 0.0;
        r = item / in_f;
        bool inside = want_dx && r < rows;
        x_at[i] = inside && p.mask_input != 0u ? x[p.off[4] + row0 * in_f + item] : 1.0;
        dx_at[i] = inside && p.accumulate != 0u ? dx[p.off[6] + row0 * in_f + item] : 0.0;
    }
    for (uint r = 0u; r < ROWS; r++)
        if (tid < out_f) first_rows[r * out_f + tid] = dyv[r];
    barrier();

    for (uint r = 0u; r < ROWS; r++) {
        float sum = 0.0;
        for (uint s = 0u; s < SPAN1; s++) {
            uint o = part1 + s * PARTS1;
            if (part1 < PARTS1 && o < out_f) sum += first_rows[r * out_f + o] * wbv[s];
        }
        partials[r * THREADS + tid] = sum;
    }
    barrier();
    // dh (j, r): the parts in order, masked by the ReLU's output.
    for (uint i = 0u; i < ITEMS; i++) {
        uint item = tid + i * THREADS, r = item / hidden, jj = item - r * hidden;
        if (r >= rows) continue;
        float t = 0.0;
        for (uint part = 0u; part < PARTS1; part++) t += partials[r * THREADS + part * hidden + jj];
        t = h_at[i] > 0.0 ? t : 0.0;
        second_rows[r * hidden + jj] = t;
        dh[p.off[5] + row0 * hidden + item] = t;
    }
    if (!want_dx) return; // the same for the whole workgroup
    barrier();

    for (uint r = 0u; r < ROWS; r++) {
        float sum = 0.0;
        for (uint s = 0u; s < SPAN2; s++) {
            uint jj = part2 + s * PARTS2;
            if (part2 < PARTS2 && jj < hidden && r < rows) sum += second_rows[r * hidden + jj] * wav[s];
        }
        partials[r * THREADS + tid] = sum;
    }
    barrier();
    for (uint i = 0u; i < ITEMS; i++) {
        uint item = tid + i * THREADS, r = item / in_f, kk = item - r * in_f;
        if (r >= rows) continue;
        float t = 0.0;
        for (uint part = 0u; part < PARTS2; part++) t += partials[r * THREADS + part * in_f + kk];
        if (!(x_at[i] > 0.0)) t = 0.0; // 1 without mask_input
        dx[p.off[6] + row0 * in_f + item] = p.accumulate != 0u ? dx_at[i] + t : t;
    }
}
