#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "softmax_params.glsl"
// Softmax + cross-entropy in one workgroup: invocations take rows in turn,
// write the probabilities, and the mean of -log p[label] goes to loss[0].
// A label outside [0, cols) gives that row a NaN loss and is reported
// through the status buffer (binding 4): the first bad row since the host
// last looked, with its label; the host turns it into an error at the next
// read or sync.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer L { int labels[]; };
layout(std430, binding = 2) buffer P { float probs[]; };
layout(std430, binding = 3) buffer Loss { float loss[]; };
layout(std430, binding = 8) buffer Status { int status[]; }; // bad row, its label, cols

shared float part[256];
shared int bad_row;

void main() {
    uint tid = gl_LocalInvocationID.x;
    if (tid == 0) bad_row = 0x7fffffff;
    barrier();
    float total = 0.0;
    for (uint r = tid; r < uint(p.rows); r += 256) {
        uint xi = p.off[0] + r * uint(p.cols), pi = p.off[2] + r * uint(p.cols);
        float m = x[xi];
        for (int j = 1; j < p.cols; j++) m = max(m, x[xi + j]);
        float sum = 0.0;
        for (int j = 0; j < p.cols; j++) {
            float e = exp(x[xi + j] - m);
            probs[pi + j] = e;
            sum += e;
        }
        float inv = 1.0 / sum;
        for (int j = 0; j < p.cols; j++) probs[pi + j] *= inv;
        int label = labels[p.off[1] + r];
        if (label < 0 || label >= p.cols) {
            atomicMin(bad_row, int(r));
            total += uintBitsToFloat(0x7fc00000u); // NaN, as the CPU's row loss
        } else {
            total += (log(sum) + m) - x[xi + uint(label)];
        }
    }
    part[tid] = total;
    barrier();
    for (uint s = 128; s > 0; s >>= 1) {
        if (tid < s) part[tid] += part[tid + s];
        barrier();
    }
    if (tid == 0) {
        loss[p.off[3]] = part[0] / float(p.rows);
        if (bad_row != 0x7fffffff && atomicCompSwap(status[0], 0x7fffffff, bad_row) == 0x7fffffff) {
            status[1] = labels[p.off[1] + uint(bad_row)];
            status[2] = p.cols;
        }
    }
}
