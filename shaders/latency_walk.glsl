// main() of the latency-bound products (latency_tiles.glsl says what the
// includer provides). The push constants name at least m, n, k, batch,
// summed, alpha, beta, splits, split_steps, epilogue and counters; the
// buffers C (binding 2), aux (binding 3) and work / work_counters (binding 4).
//
// Workgroup x is an output tile (row-major over the tiles); z is the
// product (batch > 1, not summed), or, for a summed batch or a long k, a
// split: with splits > 1 workgroup z walks steps [z * split_steps, ...) of
// the (product, k slice) walk and writes its partial tile to the split
// work area (binding 4, vk_split_work.c); the last workgroup of a tile to
// finish adds the partials in split order, applies alpha, the epilogue and
// beta, and resets the tile's counter. One dispatch, no second kernel, and
// the same sum whatever order the workgroups ran in.
void main() {
    uint tid = gl_LocalInvocationID.x;
    uint r = tid / BN, c = tid % BN;
    uint tiles_n = (p.n + BN - 1u) / BN;
    uint tile = gl_WorkGroupID.x;
    uint row0 = (tile / tiles_n) * BM, col0 = (tile % tiles_n) * BN;
    uint row = row0 + r, col = col0 + c;
    bool inside = row < p.m && col < p.n;
    uint ktiles = (p.k + BK - 1u) / BK;
    bool split = p.splits > 1u;
    bool one_output = split || p.summed != 0u;
    uint outputs = split ? p.splits : (p.summed != 0u ? 1u : p.batch);
    tile_begin(row0, col0);
    for (uint z = gl_WorkGroupID.z; z < outputs; z += gl_NumWorkGroups.z) {
        // Steps [begin, end) of this output's walk; step s multiplies
        // product first + s / ktiles at k slice s % ktiles, kept below as
        // the pair (b, kt), which advances without dividing.
        uint first = one_output ? 0u : z;
        uint walk = (one_output ? p.batch : 1u) * ktiles;
        uint begin = split ? z * p.split_steps : 0u;
        uint end = split ? min(begin + p.split_steps, walk) : walk;
        float acc = 0.0;
        uint b = first, kt = 0u, buf = 0u;
        if (begin < end) {
            b = first + begin / ktiles;
            kt = begin % ktiles;
            slice_prepare(0u, b, kt * BK);
            barrier();
            fetch(b, row0, col0, kt * BK, 0u);
        }
        for (uint s = begin; s < end; s++) {
            barrier();
            stash();
            // Only the slice's real k: a short k (10, 16 or 25: few
            // channels, a small window) would otherwise multiply mostly zeros.
            uint depth = min(BK, p.k - kt * BK);
            if (++kt == ktiles) {
                kt = 0u;
                b++;
            }
            // The next slice's tables go to the other buffer (the last
            // fetch that read it came before this step's first barrier).
            if (s + 1u < end) slice_prepare(buf ^ 1u, b, kt * BK);
            barrier();
            buf ^= 1u;
            if (s + 1u < end) fetch(b, row0, col0, kt * BK, buf);
            // Four independent sums: one chain would wait on each shared
            // load, and a split runs few workgroups per multiprocessor.
            uint kk = 0u;
            float a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
            for (; kk + 4u <= depth; kk += 4u) {
                a0 += As[kk][r] * Bs[kk][c];
                a1 += As[kk + 1u][r] * Bs[kk + 1u][c];
                a2 += As[kk + 2u][r] * Bs[kk + 2u][c];
                a3 += As[kk + 3u][r] * Bs[kk + 3u][c];
            }
            for (; kk < depth; kk++) a0 += As[kk][r] * Bs[kk][c];
            acc += (a0 + a1) + (a2 + a3);
        }
        if (split) {
            uint plane = p.m * p.n;
            if (inside) work[p.off[4] + z * plane + row * p.n + col] = acc;
            memoryBarrierBuffer();
            barrier();
            if (tid == 0u) last_of_tile = atomicAdd(work_counters[p.counters + tile], 1u) == p.splits - 1u;
            barrier();
            if (!last_of_tile) continue; // the same for the whole workgroup
            memoryBarrierBuffer();
            acc = 0.0;
            if (inside) {
                // Loads sixteen at a time (all in flight), added in split order.
                uint base = p.off[4] + row * p.n + col, s = 0u;
                for (; s + 16u <= p.splits; s += 16u) {
                    float v[16];
                    for (uint j = 0; j < 16u; j++) v[j] = work[base + (s + j) * plane];
                    for (uint j = 0; j < 16u; j++) acc += v[j];
                }
                for (; s < p.splits; s++) acc += work[base + s * plane];
            }
            if (tid == 0u) work_counters[p.counters + tile] = 0u;
        }
        if (inside) {
            uint idx = c_index(one_output ? 0u : z, row, col);
            float v = p.alpha * acc;
            if (p.epilogue != 0u) v = gemm_epilogue(p.epilogue, v, row, col, p.off[3], p.off[3] + (idx - p.off[2]));
            C[idx] = p.beta == 0.0 ? v : p.beta * C[idx] + v;
        }
    }
}
