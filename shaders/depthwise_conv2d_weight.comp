#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "depthwise_common.glsl"
// Depthwise convolution's weight gradient (NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_WEIGHT):
// workgroup (b, j) takes a block of filter_lanes filters at one tap (b =
// block * taps + tap) over chunk j of the (image, output pixel) pairs; its
// invocations are filter_lanes filters times 256 / filter_lanes lanes
// striding over the pairs (channels-last tensors: neighbouring invocations
// read neighbouring channels), then a tree in shared memory adds the lanes
// in a fixed order. One chunk writes dw; several write their partial sums
// [chunk][filter][tap] for gemm_splitk.comp to add in chunk order: no
// atomics, the same result every run. With p.quads the invocations take
// four neighbouring filters (filter_lanes counts quads) and up to
// TAP_GROUP taps at once, reading each dy once per group of taps.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) buffer DW { float dw[]; };

layout(std430, binding = 0) readonly buffer DY4 { vec4 dy4[]; };
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };

shared float partial[256];
shared vec4 partial4[256];

const int TAP_GROUP = 9; // sums held per invocation: a 3 x 3 window at once

void weight_quads() {
    uint taps = uint(p.kernel_h * p.kernel_w), groups_of_taps = (taps + uint(TAP_GROUP) - 1u) / uint(TAP_GROUP);
    uint quads = uint(p.filters) / 4u;
    uint lanes_f = uint(p.filter_lanes), lanes_p = 256u / lanes_f;
    uint blocks = (quads + lanes_f - 1u) / lanes_f;
    uint out_plane = uint(p.out_h * p.out_w), pairs = uint(p.batch) * out_plane;
    uint tid = gl_LocalInvocationID.x, lane_f = tid % lanes_f, lane_p = tid / lanes_f;
    uint j = gl_WorkGroupID.y, begin = j * p.chunk, end = min(pairs, begin + p.chunk);
    for (uint item = gl_WorkGroupID.x; item < blocks * groups_of_taps; item += gl_NumWorkGroups.x) {
        int tap0 = int(item % groups_of_taps) * TAP_GROUP;
        uint quad = (item / groups_of_taps) * lanes_f + lane_f;
        int f = int(quad * 4u);
        vec4 sum[TAP_GROUP];
        [[unroll]] for (int t = 0; t < TAP_GROUP; t++) sum[t] = vec4(0.0);
        uint q = begin + lane_p, n = q / out_plane;
        int oh = int(q % out_plane) / p.out_w, ow = int(q % out_plane) % p.out_w;
        for (; quad < quads && q < end; q += lanes_p) {
            vec4 g = dy4[(p.off[0] + (q * uint(p.filters) + uint(f))) / 4u];
            [[unroll]] for (int t = 0; t < TAP_GROUP; t++) {
                int tap = tap0 + t;
                if (tap >= int(taps)) break;
                int ih = oh * p.stride_h - p.pad_h + (tap / p.kernel_w) * p.dilation_h;
                int iw = ow * p.stride_w - p.pad_w + (tap % p.kernel_w) * p.dilation_w;
                if (ih >= 0 && ih < p.height && iw >= 0 && iw < p.width)
                    sum[t] += g * x4[(p.off[1] + ((n * uint(p.height) + uint(ih)) * uint(p.width) + uint(iw)) *
                                                     uint(p.channels) + uint(f)) / 4u];
            }
            ow += int(lanes_p);
            while (ow >= p.out_w) {
                ow -= p.out_w;
                if (++oh == p.out_h) {
                    oh = 0;
                    n++;
                }
            }
        }
        [[unroll]] for (int t = 0; t < TAP_GROUP; t++) {
            int tap = tap0 + t;
            if (tap >= int(taps)) break;
            partial4[tid] = sum[t];
            barrier();
            for (uint half_ = lanes_p / 2u; half_ > 0u; half_ >>= 1) {
                if (lane_p < half_) partial4[tid] += partial4[tid + half_ * lanes_f];
                barrier();
            }
            if (lane_p == 0u && quad < quads)
                for (int i = 0; i < 4; i++) {
                    uint weight = uint(f + i) * taps + uint(tap);
                    if (gl_NumWorkGroups.y > 1u) {
                        dw[p.off[2] + j * uint(p.filters) * taps + weight] = partial4[tid][i];
                    } else {
                        uint o = p.off[2] + weight;
                        dw[o] = p.accumulate != 0 ? dw[o] + partial4[tid][i] : partial4[tid][i];
                    }
                }
            barrier();
        }
    }
}

void main() {
    if (p.quads != 0) {
        weight_quads();
        return;
    }
    uint taps = uint(p.kernel_h * p.kernel_w);
    uint lanes_f = uint(p.filter_lanes), lanes_p = 256u / lanes_f;
    uint blocks = (uint(p.filters) + lanes_f - 1u) / lanes_f;
    uint out_plane = uint(p.out_h * p.out_w);
    uint pairs = uint(p.batch) * out_plane;
    uint tid = gl_LocalInvocationID.x, lane_f = tid % lanes_f, lane_p = tid / lanes_f;
    uint j = gl_WorkGroupID.y, begin = j * p.chunk, end = min(pairs, begin + p.chunk);
    int mult = multiplier();
    for (uint item = gl_WorkGroupID.x; item < blocks * taps; item += gl_NumWorkGroups.x) {
        uint tap = item % taps;
        int f = int((item / taps) * lanes_f + lane_f);
        int ki = int(tap) / p.kernel_w, kj = int(tap) % p.kernel_w;
        float sum = 0.0;
        // The lane's pairs q = (n, oh, ow), stepped by lanes_p without a division per pair.
        uint q = begin + lane_p, n = q / out_plane;
        int oh = int(q % out_plane) / p.out_w, ow = int(q % out_plane) % p.out_w;
        for (; f < p.filters && q < end; q += lanes_p) {
            int ih = oh * p.stride_h - p.pad_h + ki * p.dilation_h;
            int iw = ow * p.stride_w - p.pad_w + kj * p.dilation_w;
            if (ih >= 0 && ih < p.height && iw >= 0 && iw < p.width) {
                uint at_y = element(p.output_last != 0, n, uint(f), uint(oh), uint(ow), uint(p.filters),
                                    uint(p.out_h), uint(p.out_w));
                uint at_x = element(p.image_last != 0, n, uint(f / mult), uint(ih), uint(iw), uint(p.channels),
                                    uint(p.height), uint(p.width));
                sum += dy[p.off[0] + at_y] * x[p.off[1] + at_x];
            }
            ow += int(lanes_p);
            while (ow >= p.out_w) {
                ow -= p.out_w;
                if (++oh == p.out_h) {
                    oh = 0;
                    n++;
                }
            }
        }
        partial[tid] = sum;
        barrier();
        for (uint half_ = lanes_p / 2u; half_ > 0u; half_ >>= 1) {
            if (lane_p < half_) partial[tid] += partial[tid + half_ * lanes_f];
            barrier();
        }
        if (lane_p == 0u && f < p.filters) {
            uint weight = uint(f) * taps + tap;
            if (gl_NumWorkGroups.y > 1u) {
                dw[p.off[2] + j * uint(p.filters) * taps + weight] = partial[tid];
            } else {
                uint o = p.off[2] + weight;
                dw[o] = p.accumulate != 0 ? dw[o] + partial[tid] : partial[tid];
            }
        }
        barrier();
    }
}
