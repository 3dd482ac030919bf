// The body of softmax_ce_forward.comp and softmax_ce_fused.comp (FUSED):
// softmax + cross-entropy over [rows, cols], the mean of -log p[label] to
// loss[0]; FUSED writes dlogits = (softmax - onehot(label)) / rows to
// binding 2, else the probabilities. Narrow rows (p.row_groups == 0) go
// an invocation each; wide ones (1) a workgroup each, its invocations
// across the columns, reduced by a fixed tree. With several workgroups
// each writes its loss sum and its first bad row to the split work area
// (binding 4) and the last to arrive adds them in workgroup order
// (vk_split_work.c), so the loss depends on the sizes alone. A label
// outside [0, cols) gives its row a NaN loss (and, FUSED, the gradient
// softmax / rows) and the first such row is reported through the status
// buffer (binding 8) with its label; the host turns it into an error at
// the next read or sync.
layout(local_size_x = 256) in;
const uint THREADS = 256u;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer L { int labels[]; };
layout(std430, binding = 2) buffer Out { float outv[]; };
layout(std430, binding = 3) buffer Loss { float loss[]; };
layout(std430, binding = 4) coherent buffer Work { float partial[]; };
layout(std430, binding = 4) coherent buffer WorkCounters { uint work_counters[]; };
layout(std430, binding = 8) buffer Status { int status[]; }; // bad row, its label, cols

shared float part[THREADS];
shared int bad_rows[THREADS];
shared bool last_arrival;
#include "last_arrival.glsl"

const int NO_ROW = 0x7fffffff;

#include "workgroup_tree.glsl"

// bad_rows[0] = the smallest of every invocation's bad row.
void first_bad_row(int row) {
    uint tid = gl_LocalInvocationID.x;
    bad_rows[tid] = row;
    barrier();
    for (uint s = THREADS / 2u; s > 0u; s >>= 1) {
        if (tid < s) bad_rows[tid] = min(bad_rows[tid], bad_rows[tid + s]);
        barrier();
    }
}

// Row r's outputs from its maximum m and its sum of exponentials, columns
// from `first` every `step`; returns its loss.
float finish_row(uint r, float m, float sum, uint first, uint step, inout int bad) {
    uint xi = p.off[0] + r * uint(p.cols), oi = p.off[2] + r * uint(p.cols);
    int label = labels[p.off[1] + r];
    float inv = 1.0 / sum;
    // The exponentials again from x (cached), rather than written out and
    // read back: that waited on a round trip to memory.
#if FUSED
    float inv_rows = 1.0 / float(p.rows);
    for (uint j = first; j < uint(p.cols); j += step)
        outv[oi + j] = (exp(x[xi + j] - m) * inv - (int(j) == label ? 1.0 : 0.0)) * inv_rows;
#else
    for (uint j = first; j < uint(p.cols); j += step) outv[oi + j] = exp(x[xi + j] - m) * inv;
#endif
    if (label < 0 || label >= p.cols) {
        bad = min(bad, int(r));
        return uintBitsToFloat(0x7fc00000u); // NaN, as the CPU's row loss
    }
    return (log(sum) + m) - x[xi + uint(label)];
}

void main() {
    uint tid = gl_LocalInvocationID.x, group = gl_WorkGroupID.x, groups = gl_NumWorkGroups.x;
    float total = 0.0;
    int bad = NO_ROW;
    if (p.row_groups == 0) {
        for (uint r = group * THREADS + tid; r < uint(p.rows); r += groups * THREADS) {
            uint xi = p.off[0] + r * uint(p.cols);
            float m = x[xi];
            for (int j = 1; j < p.cols; j++) m = max(m, x[xi + j]);
            float sum = 0.0;
            for (int j = 0; j < p.cols; j++) sum += exp(x[xi + j] - m);
            total += finish_row(r, m, sum, 0u, 1u, bad);
        }
        tree(total, false);
    } else {
        float rows_total = 0.0; // invocation 0's
        for (uint r = group; r < uint(p.rows); r += groups) {
            uint xi = p.off[0] + r * uint(p.cols);
            float m = -uintBitsToFloat(0x7f800000u);
            for (uint j = tid; j < uint(p.cols); j += THREADS) m = max(m, x[xi + j]);
            tree(m, true);
            m = part[0];
            float sum = 0.0;
            for (uint j = tid; j < uint(p.cols); j += THREADS) sum += exp(x[xi + j] - m);
            tree(sum, false);
            sum = part[0];
            int row_bad = NO_ROW;
            float row_loss = finish_row(r, m, sum, tid, THREADS, row_bad);
            if (tid == 0u) rows_total += row_loss, bad = min(bad, row_bad);
        }
        barrier(); // part[0]'s last readers are done
        if (tid == 0u) part[0] = rows_total;
        barrier();
    }
    first_bad_row(bad);
    float sum = part[0];
    int first_bad = bad_rows[0];
    if (groups > 1u) {
        if (tid == 0u) {
            partial[p.off[4] + 2u * group] = sum;
            partial[p.off[4] + 2u * group + 1u] = intBitsToFloat(first_bad);
        }
        if (!arrives_last(0u, groups)) return;
        float t = 0.0;
        int b = NO_ROW;
        for (uint g = tid; g < groups; g += THREADS) {
            t += partial[p.off[4] + 2u * g];
            b = min(b, floatBitsToInt(partial[p.off[4] + 2u * g + 1u]));
        }
        tree(t, false);
        barrier();
        first_bad_row(b);
        sum = part[0];
        first_bad = bad_rows[0];
    }
    if (tid == 0u) {
        loss[p.off[3]] = sum / float(p.rows);
        if (first_bad != NO_ROW && atomicCompSwap(status[0], NO_ROW, first_bad) == NO_ROW) {
            status[1] = labels[p.off[1] + uint(first_bad)];
            status[2] = p.cols;
        }
    }
}
