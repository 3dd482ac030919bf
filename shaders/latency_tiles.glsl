// The tiles of the latency-bound products (gemm_latency.comp,
// conv_latency.comp): one output per invocation, a BM x BN tile per
// workgroup, k in slices of BK staged in shared memory. The includer
// declares BM, BN, BK (specialization constants) before this file, and
// after it defines
//   tile_begin(row0, col0)            once per tile;
//   slice_prepare(buf, b, k0)         tables a slice's fetch needs, into
//                                     shared buffer buf (0 or 1), made by
//                                     the workgroup before a barrier;
//   fetch(b, row0, col0, k0, buf)     the slices of product b at k0 into
//                                     ra / rb;
//   stash()                           ra / rb into As / Bs;
//   c_index(z, row, col)              where output (row, col) of z goes;
// then includes latency_walk.glsl, the main() they share.
// The pipelines (vk_pipelines.c) keep BM * BN a multiple of BK, so an
// invocation's k index (or column) within a slice is the same for all its
// entries t: conv_latency.comp decomposes it once per fetch.
#include "precision.glsl"

const uint THREADS = BM * BN;
const uint LOAD_A = BM * BK / THREADS; // entries of the A slice per invocation
const uint LOAD_B = BN * BK / THREADS;

shared float As[BK][BM + 1];
shared float Bs[BK][BN + 1]; // padded: a k-major store would hit one bank
shared bool last_of_tile;

float ra[LOAD_A];
float rb[LOAD_B];

// Entry t of an invocation's share of a slice: with the slice's rows (or
// columns) varying fastest between neighbouring invocations, or its k. The
// includer picks whichever puts neighbours on neighbouring addresses.
uint slice_entry(uint t) { return gl_LocalInvocationID.x + t * THREADS; }

void stash_a(bool rows_fastest) {
    for (uint t = 0; t < LOAD_A; t++) {
        uint e = slice_entry(t);
        if (rows_fastest) As[e / BM][e % BM] = round_operand(ra[t]);
        else As[e % BK][e / BK] = round_operand(ra[t]);
    }
}

void stash_b(bool cols_fastest) {
    for (uint t = 0; t < LOAD_B; t++) {
        uint e = slice_entry(t);
        if (cols_fastest) Bs[e / BN][e % BN] = round_operand(rb[t]);
        else Bs[e % BK][e / BK] = round_operand(rb[t]);
    }
}
