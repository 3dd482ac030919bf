// Included by conv_pool_forward.comp: the Linear that takes the fused
// layer's pooled output, flattened per image as (filter, position)
// (NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD, LINEAR > 0 outputs).
//
// Each workgroup has computed one run of an image's features, so it
// multiplies them with the same run of every weight row: a partial dot
// product per output. A warp takes whole rows and its lanes read a row's
// run in 16-byte loads, side by side (whole cache lines), ROWS_AT_ONCE
// rows in flight together; the weights come from L2 once per image, which
// at these sizes costs less than a barrier and a GEMM of its own. The
// lanes' sums are added in order in shared memory. With one workgroup per
// image that is the output; with several, each writes its partials and the
// last to finish adds them in workgroup order, so the result does not
// depend on which finished first.
//
// Each workgroup runs this code once, so its size counts: a scalar fallback
// unrolled beside the vector loads made the kernel slower (bench/README.md),
// hence rows_in_floats apart.

// A lane's quads of a run (32 lanes, 4 features each): at most MAX_QUADS,
// as vk_conv_pool.c's shapes give at most 256 features per workgroup.
const uint QUADS = (THREADS * uint(FB) + 127u) / 128u, MAX_QUADS = 2u;
const uint ROWS_AT_ONCE = 4u;
const uint SUM_STRIDE = 33u;                      // a row's 32 lane sums, padded against bank conflicts
const uint PASS_ROWS = IMAGE_FLOATS / SUM_STRIDE; // rows whose lane sums xs holds at once

#include "last_arrival.glsl"

// Rows [pass, pass + rows) times the run's features (f4: this lane's
// quads of them), each lane's sum of a row to xs: the weight rows read in
// 16-byte loads, ROWS_AT_ONCE rows in flight. Flag 8 says the rows are
// whole vec4s (in_features, first and off5 are multiples of 4).
void rows_in_quads(uint pass, uint rows, uint in_features, uint first, uint count, vec4 f4[MAX_QUADS]) {
    const uint lane = gl_LocalInvocationID.x & 31u, warp = gl_LocalInvocationID.x >> 5u, warps = THREADS / 32u;
    for (uint r0 = warp; r0 < rows; r0 += warps * ROWS_AT_ONCE) {
        vec4 wq[ROWS_AT_ONCE * MAX_QUADS];
        [[unroll]] for (uint k = 0u; k < ROWS_AT_ONCE; k++) {
            uint at = (p.off[5] + (pass + min(r0 + k * warps, rows - 1u)) * in_features + first) / 4u + lane;
            [[unroll]] for (uint i = 0u; i < MAX_QUADS; i++)
                wq[k * MAX_QUADS + i] = i < QUADS && 4u * (lane + 32u * i) < count ? lin_w4[at + 32u * i] : vec4(0.0);
        }
        [[unroll]] for (uint k = 0u; k < ROWS_AT_ONCE; k++) {
            float s = 0.0;
            [[unroll]] for (uint i = 0u; i < MAX_QUADS; i++) s += dot(wq[k * MAX_QUADS + i], f4[i]);
            if (r0 + k * warps < rows) xs[(r0 + k * warps) * SUM_STRIDE + lane] = s;
        }
    }
}

// The same where the rows are not whole vec4s: one float at a time, a
// loop of its own (kept out of the unrolled one above, whose code size is
// what these kernels wait on).
void rows_in_floats(uint pass, uint rows, uint in_features, uint first, uint count) {
    const uint lane = gl_LocalInvocationID.x & 31u, warp = gl_LocalInvocationID.x >> 5u, warps = THREADS / 32u;
    for (uint r = warp; r < rows; r += warps) {
        float s = 0.0;
        for (uint f = lane; f < count; f += 32u) s += lin_w[p.off[5] + (pass + r) * in_features + first + f] * feats[f];
        xs[r * SUM_STRIDE + lane] = s;
    }
}

// The Linear's output `row` of image n from its dot product s: its bias,
// then the ReLU (a NaN passes, as relu_forward).
void linear_store(uint n, uint row, float s) {
    if ((p.flags & 2u) != 0u) s += lin_b[p.off[6] + row];
    if ((p.flags & 4u) != 0u) s = s < 0.0 ? 0.0 : s;
    h[p.off[7] + n * LINEAR + row] = s;
}

// Image n's features [first, first + FB * THREADS) are in the invocations'
// pooled[] (item order); every invocation calls this (it holds barriers).
// The lane sums go to xs, whose image the convolution has read.
void linear_tail(uint n, uint first, float pooled[FB]) {
    const uint tid = gl_LocalInvocationID.x, lane = tid & 31u;
    const uint plane = p.pooled_h * p.pooled_w, in_features = p.filters * plane;
    const uint count = first < in_features ? min(THREADS * uint(FB), in_features - first) : 0u;
    const uint tiles = gl_NumWorkGroups.x, tile = gl_WorkGroupID.x;

    // The features to feats in flattened order: an item (block, position)
    // holds filters block * FB + fb at that position. Entries from count on
    // are never read (an item past the image's last filter has none).
    const uint pos = (tile * THREADS + tid) % plane;
    for (int fb = 0; fb < FB; fb++) {
        uint local = uint(FB) * (tid - pos) + uint(fb) * plane + pos;
        if (local < count) feats[local] = pooled[fb];
    }
    barrier(); // also: the convolution's reads of xs are done
    vec4 f4[MAX_QUADS];
    [[unroll]] for (uint i = 0u; i < MAX_QUADS; i++) {
        uint q = lane + 32u * i;
        [[unroll]] for (uint k = 0u; k < 4u; k++) f4[i][k] = i < QUADS && 4u * q + k < count ? feats[4u * q + k] : 0.0;
    }

    for (uint pass = 0u; pass < LINEAR; pass += PASS_ROWS) {
        const uint rows = min(PASS_ROWS, LINEAR - pass);
        if ((p.flags & 8u) != 0u) rows_in_quads(pass, rows, in_features, first, count, f4);
        else rows_in_floats(pass, rows, in_features, first, count);
        barrier();
        for (uint r = tid; r < rows; r += THREADS) {
            float s = 0.0;
            for (uint l = 0u; l < 32u; l++) s += xs[r * SUM_STRIDE + l];
            if (tiles == 1u) linear_store(n, pass + r, s);
            else partials[p.off[8] + (n * tiles + tile) * LINEAR + pass + r] = s;
        }
        barrier(); // the sums are read before the next pass writes xs
    }
    if (tiles == 1u || !arrives_last(n, tiles)) return; // the same for the whole workgroup
    for (uint row = tid; row < LINEAR; row += THREADS) {
        float s = 0.0;
        for (uint t = 0u; t < tiles; t++) s += partials[p.off[8] + (n * tiles + t) * LINEAR + row];
        linear_store(n, row, s);
    }
}
