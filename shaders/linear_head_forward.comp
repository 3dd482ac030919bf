#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// NN_KERNEL_LINEAR_HEAD_FORWARD (kernels.h): h = relu(x wa^T + ba),
// y = h wb^T + bb, for ROWS rows per workgroup (linear_head.glsl).
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint A_PASSES = 1u; // ceil(hidden / PER_PASS)
layout(constant_id = 1) const uint A_SPAN = 1u;   // ceil(in / LANES): weights per lane and pass
layout(constant_id = 2) const uint B_PASSES = 1u; // ceil(out / PER_PASS)
layout(constant_id = 3) const uint B_SPAN = 1u;   // ceil(hidden / LANES)

#include "linear_head.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer WA { float wa[]; };
layout(std430, binding = 2) readonly buffer BA { float ba[]; };
layout(std430, binding = 3) readonly buffer WB { float wb[]; };
layout(std430, binding = 4) readonly buffer BB { float bb[]; };
layout(std430, binding = 5) writeonly buffer H { float h[]; };
layout(std430, binding = 6) writeonly buffer Y { float y[]; };

void main() {
    const uint tid = gl_LocalInvocationID.x, lane = tid % LANES, slot = tid / LANES;
    const uint row0 = gl_WorkGroupID.x * ROWS, rows = min(ROWS, p.rows - row0);
    const uint in_f = p.in_features, hidden = p.hidden, out_f = p.out_features;

    // This block's input rows, and every first-layer weight this invocation
    // multiplies, all loads in flight together (out of range: 0).
    float xv[ROWS];
    for (uint r = 0u; r < ROWS; r++) {
        uint i = r * in_f + tid, n = rows * in_f; // tid < in_f <= MAX_FEATURES = THREADS
        xv[r] = tid < in_f && i < n ? x[p.off[0] + row0 * in_f + i] : 0.0;
    }
    float wav[A_PASSES * A_SPAN];
    for (uint q = 0u; q < A_PASSES; q++)
        for (uint s = 0u; s < A_SPAN; s++) {
            uint j = q * PER_PASS + slot, k = lane + s * LANES;
            bool inside = j < hidden && k < in_f;
            wav[q * A_SPAN + s] = wa[p.off[1] + (inside ? j * in_f + k : 0u)];
            if (!inside) wav[q * A_SPAN + s] = 0.0;
        }
    // The biases this invocation adds when it finishes outputs (pass q:
    // output q * PER_PASS + tid % PER_PASS), loaded up front with the
    // weights, so finishing an output reads no memory.
    const uint finisher_row = tid / PER_PASS, finisher_slot = tid % PER_PASS;
    const bool finisher = finisher_row < ROWS && finisher_row < rows;
    float bias_a[A_PASSES], bias_b[B_PASSES];
    for (uint q = 0u; q < A_PASSES; q++) {
        uint j = q * PER_PASS + finisher_slot;
        bias_a[q] = p.given_a != 0u && j < hidden ? ba[p.off[2] + j] : 0.0;
    }
    for (uint q = 0u; q < B_PASSES; q++) {
        uint o = q * PER_PASS + finisher_slot;
        bias_b[q] = p.given_b != 0u && o < out_f ? bb[p.off[4] + o] : 0.0;
    }
    for (uint r = 0u; r < ROWS; r++)
        if (tid < in_f) first_rows[r * in_f + tid] = xv[r];
    barrier();

    // The second layer's weights go out now, to arrive while the first sums.
    float wbv[B_PASSES * B_SPAN];
    for (uint q = 0u; q < B_PASSES; q++)
        for (uint s = 0u; s < B_SPAN; s++) {
            uint o = q * PER_PASS + slot, k = lane + s * LANES;
            bool inside = o < out_f && k < hidden;
            wbv[q * B_SPAN + s] = wb[p.off[3] + (inside ? o * hidden + k : 0u)];
            if (!inside) wbv[q * B_SPAN + s] = 0.0;
        }

    // The passes unroll (they hold barriers, which kept the compiler from
    // unrolling them on its own): rolled, the register arrays indexed by q
    // went to local memory (NN_ENGINE_VULKAN_PIPELINE_STATS shows it; bench/README.md).
    [[unroll]] for (uint q = 0u; q < A_PASSES; q++) {
        for (uint r = 0u; r < ROWS; r++) {
            float sum = 0.0;
            for (uint s = 0u; s < A_SPAN; s++) {
                uint k = lane + s * LANES;
                if (k < in_f) sum += wav[q * A_SPAN + s] * first_rows[r * in_f + k];
            }
            partials[r * THREADS + tid] = sum;
        }
        barrier();
        // Output (j, r) of invocation (r, slot): its LANES partial sums in
        // lane order, the bias, the ReLU.
        const uint j = q * PER_PASS + finisher_slot, r = finisher_row;
        if (finisher && j < hidden) {
            float t = 0.0;
            for (uint l = 0u; l < LANES; l++) t += partials[r * THREADS + finisher_slot * LANES + l];
            t += bias_a[q]; // 0 without a bias: x + 0 == x
            t = t < 0.0 ? 0.0 : t; // a NaN passes, as relu_forward
            second_rows[r * hidden + j] = t;
            h[p.off[5] + (row0 + r) * hidden + j] = t;
        }
        barrier();
    }

    [[unroll]] for (uint q = 0u; q < B_PASSES; q++) {
        for (uint r = 0u; r < ROWS; r++) {
            float sum = 0.0;
            for (uint s = 0u; s < B_SPAN; s++) {
                uint k = lane + s * LANES;
                if (k < hidden && r < rows) sum += wbv[q * B_SPAN + s] * second_rows[r * hidden + k];
            }
            partials[r * THREADS + tid] = sum;
        }
        barrier();
        const uint o = q * PER_PASS + finisher_slot, r = finisher_row;
        if (finisher && o < out_f) {
            float t = 0.0;
            for (uint l = 0u; l < LANES; l++) t += partials[r * THREADS + finisher_slot * LANES + l];
            y[p.off[6] + (row0 + r) * out_f + o] = t + bias_b[q];
        }
        barrier();
    }
}
