#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY (kernels.h): a row per workgroup
// through Linear, ReLU and Linear (as linear_head_forward.comp), its softmax
// cross-entropy (as softmax_ce_fused.comp), and the gradient of the mean
// loss back through both layers (as linear_head_data.comp). The row never
// leaves the workgroup between the steps, so they need no barrier between
// kernels: unfused they were three dependent kernels.
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint A_PASSES = 1u; // ceil(hidden / PER_PASS)
layout(constant_id = 1) const uint A_SPAN = 1u;   // ceil(in / LANES): weights per lane and pass
layout(constant_id = 2) const uint B_PASSES = 1u; // ceil(out / PER_PASS)
layout(constant_id = 3) const uint B_SPAN = 1u;   // ceil(hidden / LANES)
layout(constant_id = 4) const uint PARTS1 = 1u;   // THREADS / hidden
layout(constant_id = 5) const uint SPAN1 = 1u;    // ceil(out / PARTS1): wb loads per invocation
layout(constant_id = 6) const uint PARTS2 = 1u;   // THREADS / in
layout(constant_id = 7) const uint SPAN2 = 1u;    // ceil(hidden / PARTS2): wa loads per invocation

#define HEAD_PUSH PUSH_LINEAR_HEAD_LOSS
#include "linear_head.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer WA { float wa[]; };
layout(std430, binding = 2) readonly buffer BA { float ba[]; };
layout(std430, binding = 3) readonly buffer WB { float wb[]; };
layout(std430, binding = 4) readonly buffer BB { float bb[]; };
layout(std430, binding = 5) readonly buffer L { int labels[]; };
layout(std430, binding = 6) writeonly buffer H { float h[]; };
layout(std430, binding = 7) writeonly buffer Y { float logits[]; };
layout(std430, binding = 8) buffer Status { int status[]; }; // bad row, its label, cols
// arguments 8 to 11 (common.glsl: argument i at binding i + 1)
layout(std430, binding = 9) writeonly buffer RL { float row_loss[]; };
layout(std430, binding = 10) writeonly buffer DY { float dlogits[]; };
layout(std430, binding = 11) writeonly buffer DH { float dh[]; };
layout(std430, binding = 12) writeonly buffer DX { float dx[]; };

shared float third_row[MAX_FEATURES]; // the logits, then their gradient

void main() {
    // ROWS is 1 (linear_head.glsl): the workgroup's row is its index.
    const uint tid = gl_LocalInvocationID.x, lane = tid % LANES, slot = tid / LANES;
    const uint row = gl_WorkGroupID.x;
    const uint in_f = p.in_features, hidden = p.hidden, out_f = p.out_features;
    const bool want_dh = p.given_dh != 0u, want_dx = p.given_dx != 0u;

    // The forward's loads, all in flight together, as linear_head_forward.comp.
    const float xv = tid < in_f ? x[p.off[0] + row * in_f + tid] : 0.0;
    float wav[A_PASSES * A_SPAN];
    for (uint q = 0u; q < A_PASSES; q++)
        for (uint s = 0u; s < A_SPAN; s++) {
            uint j = q * PER_PASS + slot, k = lane + s * LANES;
            bool inside = j < hidden && k < in_f;
            wav[q * A_SPAN + s] = wa[p.off[1] + (inside ? j * in_f + k : 0u)];
            if (!inside) wav[q * A_SPAN + s] = 0.0;
        }
    const bool finisher = tid < PER_PASS; // finishes output q * PER_PASS + tid of pass q
    float bias_a[A_PASSES], bias_b[B_PASSES];
    for (uint q = 0u; q < A_PASSES; q++) {
        uint j = q * PER_PASS + tid;
        bias_a[q] = p.given_a != 0u && finisher && j < hidden ? ba[p.off[2] + j] : 0.0;
    }
    for (uint q = 0u; q < B_PASSES; q++) {
        uint o = q * PER_PASS + tid;
        bias_b[q] = p.given_b != 0u && finisher && o < out_f ? bb[p.off[4] + o] : 0.0;
    }
    const int label = labels[p.off[5] + row];
    if (tid < in_f) first_rows[tid] = xv;
    barrier();

    float wbv[B_PASSES * B_SPAN];
    for (uint q = 0u; q < B_PASSES; q++)
        for (uint s = 0u; s < B_SPAN; s++) {
            uint o = q * PER_PASS + slot, k = lane + s * LANES;
            bool inside = o < out_f && k < hidden;
            wbv[q * B_SPAN + s] = wb[p.off[3] + (inside ? o * hidden + k : 0u)];
            if (!inside) wbv[q * B_SPAN + s] = 0.0;
        }

    // h = relu(x wa^T + ba) into second_rows (the passes unroll, as in
    // linear_head_forward.comp, to keep the register arrays in registers).
    [[unroll]] for (uint q = 0u; q < A_PASSES; q++) {
        float sum = 0.0;
        for (uint s = 0u; s < A_SPAN; s++) {
            uint k = lane + s * LANES;
            if (k < in_f) sum += wav[q * A_SPAN + s] * first_rows[k];
        }
        partials[tid] = sum;
        barrier();
        const uint j = q * PER_PASS + tid;
        if (finisher && j < hidden) {
            float t = 0.0;
            for (uint l = 0u; l < LANES; l++) t += partials[tid * LANES + l];
            t += bias_a[q];
            t = t < 0.0 ? 0.0 : t; // a NaN passes, as relu_forward
            second_rows[j] = t;
            h[p.off[6] + row * hidden + j] = t;
        }
        barrier();
    }
    // logits = h wb^T + bb into third_row.
    [[unroll]] for (uint q = 0u; q < B_PASSES; q++) {
        float sum = 0.0;
        for (uint s = 0u; s < B_SPAN; s++) {
            uint k = lane + s * LANES;
            if (k < hidden) sum += wbv[q * B_SPAN + s] * second_rows[k];
        }
        partials[tid] = sum;
        barrier();
        const uint o = q * PER_PASS + tid;
        if (finisher && o < out_f) {
            float t = 0.0;
            for (uint l = 0u; l < LANES; l++) t += partials[tid * LANES + l];
            t += bias_b[q];
            third_row[o] = t;
            logits[p.off[7] + row * out_f + o] = t;
        }
        barrier();
    }

    // The gradient's weights go out now, to arrive during the softmax, as
    // linear_head_data.comp loads them: column j of wb, column k of wa.
    const uint j = tid % hidden, part1 = tid / hidden;
    float wbt[SPAN1];
    for (uint s = 0u; s < SPAN1; s++) {
        uint o = part1 + s * PARTS1;
        bool inside = want_dh && part1 < PARTS1 && o < out_f;
        wbt[s] = wb[p.off[3] + (inside ? o * hidden + j : 0u)];
        if (!inside) wbt[s] = 0.0;
    }
    const uint k = tid % in_f, part2 = tid / in_f;
    float wat[SPAN2];
    for (uint s = 0u; s < SPAN2; s++) {
        uint jj = part2 + s * PARTS2;
        bool inside = want_dx && part2 < PARTS2 && jj < hidden;
        wat[s] = wa[p.off[1] + (inside ? jj * in_f + k : 0u)];
        if (!inside) wat[s] = 0.0;
    }

    // Softmax cross-entropy of the row: every invocation reads the logits
    // (shared memory, the same word across a warp) for their max and sum.
    float m = third_row[0];
    for (uint o = 1u; o < out_f; o++) m = max(m, third_row[o]);
    float total = 0.0;
    for (uint o = 0u; o < out_f; o++) total += exp(third_row[o] - m);
    const bool good = label >= 0 && label < int(out_f);
    const float at_label = good ? third_row[uint(label)] : 0.0;
    const float mine = tid < out_f ? third_row[tid] : 0.0;
    barrier(); // every logit read before the gradient replaces it
    if (tid < out_f) {
        float g = (exp(mine - m) / total - (int(tid) == label ? 1.0 : 0.0)) / float(p.rows);
        third_row[tid] = g;
        dlogits[p.off[9] + row * out_f + tid] = g;
    }
    if (tid == 0u) {
        row_loss[p.off[8] + row] = good ? (log(total) + m) - at_label : uintBitsToFloat(0x7fc00000u); // NaN
        if (!good && atomicCompSwap(status[0], 0x7fffffff, int(row)) == 0x7fffffff) {
            status[1] = label;
            status[2] = int(out_f);
        }
    }
    if (!want_dh) return; // the same for the whole workgroup
    barrier();

    // dh = (dlogits wb) * (h > 0), in place of h in second_rows.
    float sum = 0.0;
    for (uint s = 0u; s < SPAN1; s++) {
        uint o = part1 + s * PARTS1;
        if (part1 < PARTS1 && o < out_f) sum += third_row[o] * wbt[s];
    }
    partials[tid] = sum;
    barrier();
    if (tid < hidden) {
        float t = 0.0;
        for (uint part = 0u; part < PARTS1; part++) t += partials[part * hidden + tid];
        t = second_rows[tid] > 0.0 ? t : 0.0;
        second_rows[tid] = t;
        dh[p.off[10] + row * hidden + tid] = t;
    }
    if (!want_dx) return;
    barrier();

    // dx = dh wa, times (x > 0) with mask_input (x is in first_rows).
    sum = 0.0;
    for (uint s = 0u; s < SPAN2; s++) {
        uint jj = part2 + s * PARTS2;
        if (part2 < PARTS2 && jj < hidden) sum += second_rows[jj] * wat[s];
    }
    partials[tid] = sum;
    barrier();
    if (tid < in_f) {
        float t = 0.0;
        for (uint part = 0u; part < PARTS2; part++) t += partials[part * in_f + tid];
        if (p.mask_input != 0u && !(first_rows[tid] > 0.0)) t = 0.0;
        dx[p.off[11] + row * in_f + tid] = t;
    }
}
