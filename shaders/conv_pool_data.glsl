// Shared by conv_pool_data.comp and conv_pool_chain_weight.comp: the data
// gradient of Conv2d -> ReLU -> MaxPool2d for one image, from the pooled
// gradient and the winners.
//
// For each chunk of filters it first stages, every load in flight at once
// (these kernels are bound by latency), the chunk's weights and the
// image's convolution-output gradient dz: zero, with each window's pooled
// gradient at its winner (one writer per entry), placed at the stride's
// spacing and with a margin of KH - 1 rows and KW - 1 columns in front, so
// every read below is inside the array and the transposed convolution
// needs no bounds tests:
//   dx[c, h, w] += dz[f, r - (KH - 1), col - (KW - 1)] * W[f, c, ki, kj]
// where r = h + pad_h - ki + KH - 1 and col = w + pad_w - kj + KW - 1 are
// the staged coordinates (entries off the stride's grid are zero).
//
// The includer declares THREADS, the specialization constants KH, KW, SH,
// SW and R (pixels per unit), the push constants p (offsets off0-off2,
// then batch, channels, height, width, pad_h, pad_w, out_w, filters,
// pooled_plane, rows, cols and chunk as conv_pool_data.comp's), dy[],
// winners[] and w[] (bindings 0-2), and shared float smem[], whose first
// chunk * rows * cols floats take the staged planes and whose floats from
// data_weights_at() on take the chunk's weights.
const int SEG = R + KW - 1; // staged columns one kernel row of a unit reads
// Loads in flight per invocation while staging. Each staging loop is
// unrolled LOADS times and a workgroup runs it about once, so more costs
// instruction fetches than the loads it overlaps save (bench/README.md).
const uint LOADS = 4u;

uint data_weights_at() { return p.chunk * p.rows * p.cols; }

// LOADS pooled gradients and winners of image n from filter f0 on, entries
// i0 + k * THREADS (clamped to the last entry: gather keeps them in range).
void gather(uint i0, uint n, uint f0, uint entries, out int win[LOADS], out float g[LOADS]) {
    for (uint k = 0u; k < LOADS; k++) {
        uint j = (n * p.filters + f0) * p.pooled_plane + min(i0 + k * THREADS, entries - 1u);
        win[k] = winners[p.off[1] + j];
        g[k] = dy[p.off[0] + j];
    }
}

// Their gradients to the winners' places in the staged planes.
void scatter(uint i0, int win[LOADS], float g[LOADS], uint count, uint plane) {
    for (uint k = 0u; k < LOADS; k++) {
        uint i = i0 + k * THREADS;
        if (i >= count * p.pooled_plane || win[k] < 0) continue;
        uint oh = uint(win[k]) / p.out_w, ow = uint(win[k]) - oh * p.out_w;
        uint r = oh * uint(SH) + uint(KH - 1), col = ow * uint(SW) + uint(KW - 1);
        // Past the last pixel's reach (padding wider than the kernel): no pixel reads it.
        if (r < p.rows && col < p.cols) smem[(i / p.pooled_plane) * plane + r * p.cols + col] = g[k];
    }
}

// acc = dx of image n at the unit's R pixels (channel c, row h, columns w0
// on), for the invocations with in_range, whose channels are among the
// `channels` from c0 on (only their weights are staged); every invocation
// of the workgroup calls it (it holds barriers).
void image_gradient(uint n, uint c, uint h, uint w0, bool in_range, uint c0, uint channels, out float acc[R]) {
    const uint tid = gl_LocalInvocationID.x, plane = p.rows * p.cols, ws = data_weights_at();
    for (int r = 0; r < R; r++) acc[r] = 0.0;
    for (uint f0 = 0u; f0 < p.filters; f0 += p.chunk) {
        uint count = min(p.chunk, p.filters - f0);
        const uint filter_floats = channels * uint(KH * KW); // staged per filter
        barrier(); // the previous chunk's reads are done
        const uint entries = count * p.pooled_plane, batch = tid;
        int first_win[LOADS];
        float first_g[LOADS];
        gather(batch, n, f0, entries, first_win, first_g);
        for (uint i = tid; i < count * plane; i += THREADS) smem[i] = 0.0;
        const uint weight_floats = count * filter_floats;
        for (uint i0 = tid; i0 < weight_floats; i0 += LOADS * THREADS) {
            float v[LOADS];
            for (uint k = 0u; k < LOADS; k++) {
                uint i = min(i0 + k * THREADS, weight_floats - 1u), fl = i / filter_floats;
                v[k] = w[p.off[2] + ((f0 + fl) * p.channels + c0) * uint(KH * KW) + i - fl * filter_floats];
            }
            for (uint k = 0u; k < LOADS; k++)
                if (i0 + k * THREADS < weight_floats) smem[ws + i0 + k * THREADS] = v[k];
        }
        // The first gradients' loads went out before the zeros; only
        // their stores wait for the barrier.
        barrier();
        scatter(batch, first_win, first_g, count, plane);
        for (uint i0 = batch + LOADS * THREADS; i0 < entries; i0 += LOADS * THREADS) {
            int win[LOADS];
            float g[LOADS];
            gather(i0, n, f0, entries, win, g);
            scatter(i0, win, g, count, plane);
        }
        barrier();
        if (!in_range) continue;
        for (uint fl = 0u; fl < count; fl++) {
            uint weights = ws + (fl * channels + c - c0) * uint(KH * KW);
            for (int ki = 0; ki < KH; ki++) {
                uint row = fl * plane + (h + uint(p.pad_h) + uint(KH - 1 - ki)) * p.cols + w0 + uint(p.pad_w);
                float seg[SEG];
                for (int t = 0; t < SEG; t++) seg[t] = smem[row + uint(t)];
                for (int kj = 0; kj < KW; kj++) {
                    float wv = smem[weights + uint(ki * KW + kj)];
                    for (int r = 0; r < R; r++) acc[r] += seg[r + KW - 1 - kj] * wv;
                }
            }
        }
    }
}
