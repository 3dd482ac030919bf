// The body of norm_columns.comp and norm_columns_masked.comp (GRAD_MASK:
// BatchNorm's backward sums through an activation's mask, kernels.h's grad_mask).
// The normalisation kernels' reductions (kernels.h's nn_norm_params) where
// each row of x holds one element of every channel (channel_inner 1): a
// BatchNorm over channels-last activations or over [N, C] (x is [rows,
// channels], groups = channels, inner 1), and LayerNorm's affine gradients
// (x is [rows, channels], a group per row). Per channel, down the rows:
//   mode 0  NORM_STATS (BatchNorm): out_a[c] = mean, out_b[c] = biased var;
//   mode 1  NORM_BACKWARD_SUMS (BatchNorm): out_a[2 c], out_a[2 c + 1] = the
//           sums of w dy and of w dy xhat (of dy and dy xhat with
//           sums_unweighted); in norm_columns_masked.comp (GRAD_MASK) dy
//           through grad_mask's mask, its bias at binding 6;
//   mode 2  NORM_BACKWARD_AFFINE: out_a[c] (+)= the sum of dy xhat, out_b[c]
//           (+)= the sum of dy (either may be absent).
// Workgroup (j, t) takes rows chunk j of channel tile t: its invocations
// are up to 16 lanes across the tile's channels (four channels each where the
// channels come in fours and the tensors are 16-byte aligned: rows are
// read whole, 16 bytes per invocation) times lanes down the rows, each
// lane keeping its own moments or compensated sums; the lanes are merged
// by a fixed tree, then, with several chunks, each workgroup writes its
// chunk's results to the split work area and the tile's last workgroup to
// arrive merges the chunks, its lanes taking them in turn and then merged
// by the same tree (vk_split_work.c): results depend on the sizes alone.
// Bindings: 0 x, 1 mean, 2 var, 3 weight, 4 dy, 5 out_a, 6 out_b, 7 the work area.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NORM)
#include "norm_common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer M { float mean[]; };
layout(std430, binding = 2) readonly buffer V { float var[]; };
layout(std430, binding = 3) readonly buffer W { float weight[]; };
layout(std430, binding = 4) readonly buffer DY { float dy[]; };
layout(std430, binding = 4) readonly buffer DY4 { vec4 dy4[]; };
layout(std430, binding = 5) buffer OutA { float out_a[]; };
layout(std430, binding = 6) buffer OutB { float out_b[]; };
layout(std430, binding = 6) readonly buffer MaskBias { float mask_bias[]; }; // mode 1
layout(std430, binding = 7) coherent buffer Work { float partial[]; };
layout(std430, binding = 7) coherent buffer WorkCounters { uint work_counters[]; };
shared bool last_arrival;
#include "last_arrival.glsl"

const uint STATS = 0u, SUMS = 1u, AFFINE = 2u;
shared vec4 lane_a[NORM_THREADS], lane_b[NORM_THREADS], lane_c[NORM_THREADS];
const uint CHUNKS_IN_FLIGHT = 8u; // the last workgroup's loads of partials per step of its merge

// Four channels at a time: every row starts 16-byte aligned.
bool wide() {
    bool dy_ok = p.mode == STATS || p.off[4] % 4u == 0u;
    return p.channels % 4u == 0u && p.off[0] % 4u == 0u && dy_ok;
}

// This invocation's channels (from c, `width` of them) and its row lane.
uint width() { return wide() ? 4u : 1u; }
// At most COLUMN_LANES lanes across the channels (64 channels a tile with
// vec4s): wide layers get several tiles, so the chunks of a tile, and the
// last workgroup's merge of them, stay few.
const uint COLUMN_LANES = 16u;
uint column_lanes() { return min((p.channels + width() - 1u) / width(), COLUMN_LANES); }
uint row_lanes() { return NORM_THREADS / column_lanes(); }

// The statistics of element (row r, channels c + i): their group's, which
// is the channel's for BatchNorm and the row's for LayerNorm; any other
// layout through the general rule.
void group_stats(uint r, uint c, uint w, out vec4 mu, out vec4 rstd) {
    for (uint i = 0u; i < 4u; i++) {
        uint g = p.groups == p.channels && p.inner == 1u ? c + i
                 : p.inner == p.channels                 ? r % p.groups
                                                         : group_of(r * p.channels + c + i);
        mu[i] = i < w ? mean[p.off[1] + g] : 0.0;
        rstd[i] = i < w ? inversesqrt(var[p.off[2] + g] + p.eps) : 0.0;
    }
}

// Rows each invocation loads before it adds them, so the loads overlap:
// eight 16-byte loads in flight per invocation in either mode (the sums
// read x and dy). More would cost registers, and with them the workgroups
// resident on a multiprocessor.
const uint STATS_ROWS_IN_FLIGHT = 8u, SUMS_ROWS_IN_FLIGHT = 4u;

vec4 load_x(uint e, uint w) { return w == 4u ? x4[(p.off[0] + e) / 4u] : vec4(x[p.off[0] + e], 0.0, 0.0, 0.0); }
vec4 load_dy(uint e, uint w) { return w == 4u ? dy4[(p.off[4] + e) / 4u] : vec4(dy[p.off[4] + e], 0.0, 0.0, 0.0); }

// Mode 0: the moments (count in a, mean in b, M2 in m2) of one row lane's
// channels over rows [row0, end). Each step's rows (those past the chunk
// masked, so the arrays stay in registers) have their own moments, merged
// into the lane's by Chan's formula.
void lane_moments(uint row0, uint end, uint lane, uint rows_step, uint c, out vec4 a, out vec4 b, out vec4 m2) {
    const uint ROWS = STATS_ROWS_IN_FLIGHT;
    uint w = width();
    a = vec4(0.0), b = vec4(0.0), m2 = vec4(0.0);
    for (uint r0 = row0 + lane; r0 < end; r0 += ROWS * rows_step) {
        vec4 v[ROWS];
        float count = 0.0;
        [[unroll]] for (uint k = 0u; k < ROWS; k++) {
            uint r = r0 + k * rows_step;
            v[k] = r < end ? load_x(r * p.channels + c, w) : vec4(0.0);
            count += r < end ? 1.0 : 0.0;
        }
        vec4 sum = vec4(0.0);
        [[unroll]] for (uint k = 0u; k < ROWS; k++) sum += v[k]; // zero past the chunk
        vec4 piece_mean = sum / count, piece_m2 = vec4(0.0);
        [[unroll]] for (uint k = 0u; k < ROWS; k++)
            if (r0 + k * rows_step < end) piece_m2 += (v[k] - piece_mean) * (v[k] - piece_mean);
        vec4 n = a + count, delta = piece_mean - b, f = count / n;
        m2 += piece_m2 + delta * delta * a * f;
        b += delta * f;
        a = n;
    }
}

// Modes 1, 2: the sums of dy (or w dy) in a and of dy xhat (or w dy xhat)
// in b of one row lane's channels over rows [row0, end). Each step's rows
// are summed, then added to the lane's with Kahan's compensation: a run of
// thousands of rows keeps float precision.
void lane_sums(uint row0, uint end, uint lane, uint rows_step, uint c, out vec4 a, out vec4 b) {
    const uint ROWS = SUMS_ROWS_IN_FLIGHT;
    uint w = width();
    a = vec4(0.0), b = vec4(0.0);
    bool per_channel = p.groups == p.channels && p.inner == 1u; // the statistics are the channels'
    vec4 mu, rstd, scale = vec4(1.0);
    if (per_channel) group_stats(0u, c, w, mu, rstd);
    if (p.mode == SUMS && p.has_weight != 0 && p.sums_unweighted == 0)
        for (uint i = 0u; i < w; i++) scale[i] = weight[p.off[3] + c + i];
#if GRAD_MASK
    vec4 mask_scale = vec4(0.0), mask_shift = vec4(0.0); // grad_mask's y = (x - mu) mask_scale + mask_shift
    for (uint i = 0u; i < w; i++) {
        mask_scale[i] = rstd[i] * (p.has_weight != 0 ? weight[p.off[3] + c + i] : 1.0);
        mask_shift[i] = p.has_bias != 0 ? mask_bias[p.off[6] + c + i] : 0.0;
    }
#endif
    vec4 ca = vec4(0.0), cb = vec4(0.0); // the compensations
    for (uint r0 = row0 + lane; r0 < end; r0 += ROWS * rows_step) {
        vec4 v[ROWS], d[ROWS];
        [[unroll]] for (uint k = 0u; k < ROWS; k++) {
            uint r = r0 + k * rows_step, e = r * p.channels + c;
            v[k] = r < end ? load_x(e, w) : vec4(0.0);
            d[k] = r < end ? load_dy(e, w) * scale : vec4(0.0);
#if GRAD_MASK
            d[k] = masked_dy4(d[k], (v[k] - mu) * mask_scale + mask_shift);
#endif
        }
        vec4 step_a = vec4(0.0), step_b = vec4(0.0);
        [[unroll]] for (uint k = 0u; k < ROWS; k++) {
            if (!per_channel) group_stats(r0 + k * rows_step, c, w, mu, rstd);
            step_a += d[k]; // zero past the chunk
            step_b += d[k] * (v[k] - mu) * rstd;
        }
        precise vec4 ya = step_a - ca, ta = a + ya;
        ca = (ta - a) - ya;
        a = ta;
        precise vec4 yb = step_b - cb, tb = b + yb;
        cb = (tb - b) - yb;
        b = tb;
    }
}

// Merge (a, b, m2) of every row lane of a column into lane 0's, by a fixed
// tree (lane l takes lane l + s): the same order on every run.
void merge_lanes(uint tid, uint col, uint lane, uint lanes, inout vec4 a, inout vec4 b, inout vec4 m2) {
    lane_a[tid] = a, lane_b[tid] = b, lane_c[tid] = m2;
    barrier();
    uint top = 1u;
    while (top < lanes) top <<= 1;
    for (uint s = top >> 1; s > 0u; s >>= 1) {
        if (lane < s && lane + s < lanes) {
            uint o = tid + s * column_lanes();
            vec4 oa = lane_a[o], ob = lane_b[o], oc = lane_c[o];
            if (p.mode == STATS) { // Chan's formula
                vec4 n = a + oa, delta = ob - b, f = oa / max(n, vec4(1.0));
                m2 = m2 + oc + delta * delta * a * f;
                b = b + delta * f;
                a = n;
            } else {
                a += oa;
                b += ob;
            }
            lane_a[tid] = a, lane_b[tid] = b, lane_c[tid] = m2;
        }
        barrier();
    }
}

void write_result(uint c, vec4 a, vec4 b, vec4 m2, uint rows) {
    for (uint i = 0u; i < width() && c + i < p.channels; i++) {
        uint ch = c + i;
        if (p.mode == STATS) {
            out_a[p.off[5] + ch] = b[i];
            out_b[p.off[6] + ch] = rows > 0u ? m2[i] / float(rows) : 0.0;
        } else if (p.mode == SUMS) {
            out_a[p.off[5] + 2u * ch] = a[i];
            out_a[p.off[5] + 2u * ch + 1u] = b[i];
        } else {
            if (p.has_weight != 0) out_a[p.off[5] + ch] = (p.accumulate != 0 ? out_a[p.off[5] + ch] : 0.0) + b[i];
            if (p.has_bias != 0) out_b[p.off[6] + ch] = (p.accumulate != 0 ? out_b[p.off[6] + ch] : 0.0) + a[i];
        }
    }
}

void main() {
    uint tid = gl_LocalInvocationID.x, j = gl_WorkGroupID.x;
    uint rows = p.outer * p.groups * p.inner / p.channels;
    uint cols = column_lanes(), lanes = row_lanes(), w = width();
    uint col = tid % cols, lane = tid / cols;
    uint per_tile = cols * w, tiles = (p.channels + per_tile - 1u) / per_tile;
    for (uint t = gl_WorkGroupID.y; t < tiles; t += gl_NumWorkGroups.y) {
        uint c = t * per_tile + col * w;
        bool reading = lane < lanes && c < p.channels;
        vec4 a = vec4(0.0), b = vec4(0.0), m2 = vec4(0.0);
        if (reading && p.mode == STATS) lane_moments(j * p.chunk, chunk_end(j, rows), lane, lanes, c, a, b, m2);
        else if (reading) lane_sums(j * p.chunk, chunk_end(j, rows), lane, lanes, c, a, b);
        merge_lanes(tid, col, lane, lanes, a, b, m2);
        if (p.chunks > 1u) {
            // Per chunk, two rows of every channel: the chunk's means and M2s,
            // or its two sums. Chunk-major, so the merge below reads each
            // chunk's rows with consecutive lanes on consecutive channels.
            for (uint i = 0u; lane == 0u && c < p.channels && i < w; i++) {
                uint slot = p.off[7] + j * 2u * p.channels + c + i;
                partial[slot] = p.mode == STATS ? b[i] : a[i];
                partial[slot + p.channels] = p.mode == STATS ? m2[i] : b[i];
            }
            if (!arrives_last(t, p.chunks)) continue; // the same for the whole workgroup
            // The last workgroup: each lane merges chunks lane, lane + lanes, ...
            // (their partials loaded CHUNKS_IN_FLIGHT at a time), then the lanes.
            a = vec4(0.0), b = vec4(0.0), m2 = vec4(0.0);
            for (uint k0 = lane; reading && k0 < p.chunks; k0 += CHUNKS_IN_FLIGHT * lanes) {
                vec4 first[CHUNKS_IN_FLIGHT], second[CHUNKS_IN_FLIGHT];
                [[unroll]] for (uint q = 0u; q < CHUNKS_IN_FLIGHT; q++) {
                    uint k = k0 + q * lanes;
                    [[unroll]] for (uint i = 0u; i < 4u; i++) {
                        uint slot = p.off[7] + min(k, p.chunks - 1u) * 2u * p.channels + c + i;
                        first[q][i] = i < w ? partial[slot] : 0.0;
                        second[q][i] = i < w ? partial[slot + p.channels] : 0.0;
                    }
                }
                [[unroll]] for (uint q = 0u; q < CHUNKS_IN_FLIGHT; q++) {
                    uint k = k0 + q * lanes;
                    if (k >= p.chunks) break;
                    if (p.mode == STATS) { // Chan's formula
                        float nk = float(chunk_end(k, rows) - k * p.chunk);
                        vec4 n = a + nk, delta = first[q] - b, f = nk / n;
                        m2 += second[q] + delta * delta * a * f;
                        b += delta * f;
                        a = n;
                    } else {
                        a += first[q];
                        b += second[q];
                    }
                }
            }
            merge_lanes(tid, col, lane, lanes, a, b, m2);
        }
        if (lane == 0u && c < p.channels) write_result(c, a, b, m2, rows);
        barrier();
    }
}
