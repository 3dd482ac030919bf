// The implicit-GEMM convolution's geometry and operand loads, shared by
// its two tile kernels: conv_gemm.comp (fp32 on the shader cores) and
// conv_gemm_coopmat.comp (fp16 on cooperative matrices). Read
// conv_gemm.comp's comment for the three products. The including shader
// declares the specialization constants BM, BN, BK (its tile and k
// slice), DB (two slices in shared memory), VEC_A, VEC_B (four elements
// at a time along the operands' contiguous side, where the host found the
// sizes, strides and offsets multiples of 4) and MODE, the constant
// THREADS, and the tile's four steps (clear_tile, stash, multiply,
// store, declared below); main() here walks the k slices.
const uint FORWARD = 0u, DATA = 1u, WEIGHT = 2u;
const uint CONV_BIAS = 2u, CONV_RELU = 4u; // nn_conv_params.epilogue: NN_EPI_BIAS_ROWS, NN_EPI_RELU

PUSH_CONSTANTS(PUSH_CONV_GEMM)
// Bindings: 0 the gathered tensor (x forward, dy data) or dy (weight);
// 1 the packed weight (forward, data) or x (weight); 2 the output (the
// weight gradient's partials when split); 3 the bias.
layout(std430, binding = 0) readonly buffer In0 { float in0[]; };
layout(std430, binding = 0) readonly buffer In0v { vec4 in0v[]; };
layout(std430, binding = 1) readonly buffer In1 { float in1[]; };
layout(std430, binding = 1) readonly buffer In1v { vec4 in1v[]; };
layout(std430, binding = 2) buffer Out { float outv[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };

// Loads per invocation and slice: A is BM x BK, B is BK x BN; four at a time with VEC_*.
const uint A_LOADS = VEC_A != 0 ? BM * BK / 4 / THREADS : BM * BK / THREADS;
const uint B_LOADS = VEC_B != 0 ? BN * BK / 4 / THREADS : BN * BK / THREADS;
vec4 ra[A_LOADS];
vec4 rb[B_LOADS];

uint lo16(uint v) { return v & 0xffffu; }
uint hi16(uint v) { return v >> 16; }

// ---- the geometry of this workgroup's product ----
uint grp;              // the convolution's group
uint taps_h, taps_w;   // taps each way (DATA: the phase's)
int tap_step_h, tap_step_w; // a tap's offset in the gathered tensor's rows / columns
uint rows_h, rows_w;   // the row space: pixels (n, a, b) with a < rows_h, b < rows_w
int origin_h, origin_w, origin_step_h, origin_step_w; // pixel (a, b) reads from (a * step + origin) + tap offsets
uint out_mul_h, out_add_h, out_mul_w, out_add_w;     // pixel (a, b) writes at (a * mul + add, b * mul + add)
uint channels_k;       // channels per tap in the k order (FORWARD c, DATA f, WEIGHT c)
uint m_rows, k_len;    // the product's rows and k (WEIGHT: its columns are p.n)
uint packed_base;      // the packed weight's start for this group (and phase)

uint gcd(uint a, uint b) {
    while (b != 0u) {
        uint t = a % b;
        a = b;
        b = t;
    }
    return a;
}

// DATA: the taps of one axis that reach pixels of phase `phase`: those t
// with (phase + pad - t * dil) a multiple of stride, an arithmetic
// progression from *first, every `every`; returns how many.
uint phase_taps(uint phase, uint pad, uint stride, uint dil, uint kernel, out uint first, out uint every) {
    every = stride / gcd(stride, dil);
    first = kernel;
    for (uint t = 0u; t < kernel && t < every; t++)
        if ((int(phase + pad) - int(t * dil)) % int(stride) == 0) {
            first = t;
            break;
        }
    return first < kernel ? (kernel - first + every - 1u) / every : 0u;
}

void setup(uint z) {
    uint kh = hi16(p.kernel_hw), kw = lo16(p.kernel_hw), sh = hi16(p.stride_hw), sw = lo16(p.stride_hw);
    uint ph = hi16(p.pad_hw), pw = lo16(p.pad_hw), dh = hi16(p.dilation_hw), dw = lo16(p.dilation_hw);
    grp = z % p.groups;
    packed_base = 0u;
    if (MODE == DATA) {
        uint phase = z / p.groups, phase_h = phase / sw, phase_w = phase % sw;
        uint first_h, every_h, first_w, every_w;
        taps_h = phase_taps(phase_h, ph, sh, dh, kh, first_h, every_h);
        taps_w = phase_taps(phase_w, pw, sw, dw, kw, first_w, every_w);
        // dy row oh = (h + pad - tap * dil) / stride, h = a * sh + phase_h:
        // oh = a + origin_h - i * tap_step_h for the phase's i-th tap.
        origin_h = (int(phase_h + ph) - int(first_h * dh)) / int(sh);
        origin_w = (int(phase_w + pw) - int(first_w * dw)) / int(sw);
        tap_step_h = -int(every_h * dh / sh);
        tap_step_w = -int(every_w * dw / sw);
        origin_step_h = 1;
        origin_step_w = 1;
        rows_h = (p.rows_h + sh - 1u - phase_h) / sh; // rows_h, rows_w: dx's height and width
        rows_w = (p.rows_w + sw - 1u - phase_w) / sw;
        out_mul_h = sh, out_add_h = phase_h, out_mul_w = sw, out_add_w = phase_w;
        channels_k = p.fg;
        // The packed weight: the phases before this one, then the groups before this one.
        uint before = 0u;
        for (uint q = 0u; q < phase; q++) {
            uint f0, e0, f1, e1;
            before += phase_taps(q / sw, ph, sh, dh, kh, f0, e0) * phase_taps(q % sw, pw, sw, dw, kw, f1, e1);
        }
        packed_base = (before * p.groups + grp * taps_h * taps_w) * p.fg * p.cg;
    } else {
        taps_h = kh, taps_w = kw;
        tap_step_h = int(dh), tap_step_w = int(dw);
        origin_h = -int(ph), origin_w = -int(pw);
        origin_step_h = int(sh), origin_step_w = int(sw);
        rows_h = p.rows_h, rows_w = p.rows_w; // out_h, out_w
        out_mul_h = 1u, out_add_h = 0u, out_mul_w = 1u, out_add_w = 0u;
        channels_k = p.cg;
        packed_base = grp * kh * kw * p.cg * p.fg;
    }
    m_rows = p.batch * rows_h * rows_w;
    k_len = taps_h * taps_w * channels_k;
}

// ---- a position along k: (tap i, tap j, channel ch) ----
struct kpos {
    uint i, j, ch;
};

kpos kpos_at(uint k) {
    kpos q;
    uint tap = k / channels_k;
    q.ch = k - tap * channels_k;
    q.i = tap / taps_w;
    q.j = tap - q.i * taps_w;
    return q;
}

// k + delta for delta < channels_k * taps_w at most a few times: no division.
void kpos_advance(inout kpos q, uint delta) {
    q.ch += delta;
    while (q.ch >= channels_k) {
        q.ch -= channels_k;
        q.j++;
        if (q.j == taps_w) {
            q.j = 0u;
            q.i++;
        }
    }
}

// ---- a pixel of the row space: (n, a, b), and its place in the gathered tensor ----
struct pixel {
    uint n, a, b;
};

pixel pixel_at(uint m) {
    pixel q;
    uint plane = rows_h * rows_w;
    q.n = m / plane;
    uint rest = m - q.n * plane;
    q.a = rest / rows_w;
    q.b = rest - q.a * rows_w;
    return q;
}

void pixel_advance(inout pixel q, uint delta) {
    q.b += delta;
    while (q.b >= rows_w) {
        q.b -= rows_w;
        q.a++;
        if (q.a == rows_h) {
            q.a = 0u;
            q.n++;
        }
    }
}

// ---- the loads of one slice ----
// FORWARD, DATA: A is the gathered tensor [pixels x k], B the packed
// weight [k x columns]. WEIGHT: A is dy^T [filters x pixels], B the
// gathered x [pixels x k].
// FORWARD, DATA: each invocation's A loads keep their k position from
// slice to slice, advanced by BK: no division per element.
kpos a_k;          // FORWARD, DATA: this invocation's k for its A loads
// FORWARD, DATA: each A load's row (a pixel), fixed over the tile: the
// element of its tap (0, 0), channel 0 of the group, and where that tap
// falls; a row past the product's has y far outside, so it reads nothing.
int a_base[A_LOADS], a_y[A_LOADS], a_x[A_LOADS];
kpos b_k;          // WEIGHT: its B column's k (fixed over the tile)
bool b_col_ok;
// WEIGHT: the pixels of slice s (k = s * BK + e) in entries (s % 2) * BK + e
// of a table in shared memory, found once per workgroup two slices ahead
// instead of by each load: x's element of tap (0, 0) and channel 0 of the
// group, where that tap falls (y, x), and dy's element of the group's
// filter 0; a pixel past the product's has y far outside and no dy element
// (-1), so it reads nothing. The including shader keeps the table's 2 * BK
// entries, written by invocations 0 .. BK - 1 only.
void set_slice_pixels(uint entry, ivec4 v);
ivec4 slice_pixels(uint entry);

void weight_slice_pixels(uint slice) {
    uint e = gl_LocalInvocationID.x;
    if (e >= BK) return;
    uint m = slice * BK + e;
    ivec4 v = ivec4(0, -0x40000000, 0, -1);
    if (m < m_rows) {
        pixel q = pixel_at(m);
        int y = int(q.a) * origin_step_h + origin_h, x = int(q.b) * origin_step_w + origin_w;
        v.x = int(p.off[1] + q.n * p.in_sn + grp * channels_k * p.in_sc) + y * int(p.in_sh) + x * int(p.in_sw);
        v.y = y, v.z = x;
        v.w = int(p.off[0] + q.n * p.out_sn + grp * p.fg * p.out_sc + q.a * p.out_sh + q.b * p.out_sw);
    }
    set_slice_pixels((slice & 1u) * BK + e, v);
}

uint a_row_of(uint t) { // the row of A load t, and its k offset in the slice
    uint e = gl_LocalInvocationID.x + t * THREADS;
    return VEC_A != 0 ? e / (BK / 4) : e / BK;
}
uint a_kk() { return VEC_A != 0 ? (gl_LocalInvocationID.x % (BK / 4)) * 4 : gl_LocalInvocationID.x % BK; }
uint b_col() { return VEC_B != 0 ? (gl_LocalInvocationID.x % (BN / 4)) * 4 : gl_LocalInvocationID.x % BN; }
uint b_kk(uint t) {
    uint e = gl_LocalInvocationID.x + t * THREADS;
    return VEC_B != 0 ? e / (BN / 4) : e / BN;
}
// WEIGHT's A: filters along the slice's row, pixels along k.
uint wa_row() { return VEC_A != 0 ? (gl_LocalInvocationID.x % (BM / 4)) * 4 : gl_LocalInvocationID.x % BM; }
uint wa_kk(uint t) {
    uint e = gl_LocalInvocationID.x + t * THREADS;
    return VEC_A != 0 ? e / (BM / 4) : e / BM;
}

void tile_begin(uint row0, uint col0, uint k0) {
    if (MODE != WEIGHT) {
        a_k = kpos_at(k0 + a_kk());
        [[unroll]] for (uint t = 0; t < A_LOADS; t++) {
            uint m = row0 + a_row_of(t);
            pixel q = pixel_at(m < m_rows ? m : 0u);
            int y = int(q.a) * origin_step_h + origin_h;
            a_x[t] = int(q.b) * origin_step_w + origin_w;
            a_base[t] = int(p.off[0] + q.n * p.in_sn + grp * channels_k * p.in_sc) + y * int(p.in_sh) +
                        a_x[t] * int(p.in_sw);
            a_y[t] = m < m_rows ? y : -0x40000000;
        }
    } else {
        uint col = col0 + b_col();
        b_col_ok = col < p.n;
        b_k = kpos_at(b_col_ok ? col : 0u);
    }
}

void tile_advance() {
    if (MODE != WEIGHT) kpos_advance(a_k, BK);
}

vec4 load4(uint binding, int index, bool ok) {
    if (!ok || index < 0) return vec4(0.0);
    return binding == 0u ? in0v[uint(index) / 4u] : in1v[uint(index) / 4u];
}
float load1(uint binding, int index, bool ok) {
    if (!ok || index < 0) return 0.0;
    return binding == 0u ? in0[uint(index)] : in1[uint(index)];
}

// Fetch slice k0's A and B entries into registers (the k state is k0's).
void fetch(uint row0, uint col0, uint k0) {
    if (MODE != WEIGHT) {
        // The slice's tap and channel, the same for every row this invocation loads.
        bool k_ok = k0 + a_kk() < k_len;
        int dy = int(a_k.i) * tap_step_h, dx = int(a_k.j) * tap_step_w;
        int k_offset = dy * int(p.in_sh) + dx * int(p.in_sw) + int(a_k.ch * p.in_sc);
        [[unroll]] for (uint t = 0; t < A_LOADS; t++) {
            bool ok = k_ok && uint(a_y[t] + dy) < p.in_h && uint(a_x[t] + dx) < p.in_w;
            int idx = a_base[t] + k_offset;
            if (VEC_A != 0) ra[t] = load4(0u, idx, ok);
            else ra[t].x = load1(0u, idx, ok);
        }
        // B: packed rows k, columns this group's filters (FORWARD) or channels (DATA).
        uint cols = p.n, col = col0 + b_col();
        [[unroll]] for (uint t = 0; t < B_LOADS; t++) {
            uint k = k0 + b_kk(t);
            bool ok = k < k_len && col < cols;
            int idx = int(p.off[1] + packed_base + k * cols + col);
            if (VEC_B != 0) rb[t] = load4(1u, idx, ok);
            else rb[t].x = load1(1u, idx, ok);
        }
    } else {
        uint half_at = ((k0 / BK) & 1u) * BK;
        // A: dy^T, rows this group's filters, k the output pixels.
        uint f = row0 + wa_row();
        bool f_ok = f < p.m;
        [[unroll]] for (uint t = 0; t < A_LOADS; t++) {
            int at = slice_pixels(half_at + wa_kk(t)).w;
            if (VEC_A != 0) ra[t] = load4(0u, at + int(f * p.out_sc), f_ok && at >= 0);
            else ra[t].x = load1(0u, at + int(f * p.out_sc), f_ok && at >= 0);
        }
        // B: x_col, rows the output pixels, columns k = (r, s, c): this
        // invocation's column is one tap and channel, an offset from tap (0, 0).
        int tap_y = int(b_k.i) * tap_step_h, tap_x = int(b_k.j) * tap_step_w;
        int k_offset = tap_y * int(p.in_sh) + tap_x * int(p.in_sw) + int(b_k.ch * p.in_sc);
        [[unroll]] for (uint t = 0; t < B_LOADS; t++) {
            ivec4 q = slice_pixels(half_at + b_kk(t));
            bool ok = b_col_ok && uint(q.y + tap_y) < p.in_h && uint(q.z + tap_x) < p.in_w;
            if (VEC_B != 0) rb[t] = load4(1u, q.x + k_offset, ok);
            else rb[t].x = load1(1u, q.x + k_offset, ok);
        }
    }
}

// ---- the tile's way out ----
// FORWARD, DATA: the output element of channel 0 of this group at output
// row `row` (a pixel of the row space); outputs of column col are at
// + (grp * p.n + col) * p.out_sc.
uint output_row_base(pixel q) {
    return p.off[2] + q.n * p.out_sn + (q.a * out_mul_h + out_add_h) * p.out_sh + (q.b * out_mul_w + out_add_w) * p.out_sw;
}

// WEIGHT: dW[f][c][r][s] of filter row `row`, k = (r, s, c) column q, in split `split`'s partials.
uint weight_index(uint row, kpos q, uint split) {
    uint kh = hi16(p.kernel_hw), kw = lo16(p.kernel_hw);
    return p.off[2] + ((split * p.groups + grp) * p.fg + row) * p.n + (q.ch * kh + q.i) * kw + q.j;
}

// Sum v of output channel `channel` as it is stored: the forward's bias and ReLU.
float forward_epilogue(float v, uint channel) {
    if ((p.epilogue & CONV_BIAS) != 0u) v += bias[p.off[3] + channel];
    if ((p.epilogue & CONV_RELU) != 0u && !(v > 0.0 || isnan(v))) v = 0.0;
    return v;
}

void put(uint idx, float v) { outv[idx] = p.beta == 0.0 ? v : p.beta * outv[idx] + v; }

// ---- the tile kernel's steps (defined by the including shader) ----
void clear_tile(uint row0, uint col0); // the tile's sums before its k loop
void stash(uint buf);     // the fetched slices into shared buffer buf
void multiply(uint buf);  // the tile's sums += the product of the slices in buf
void store(uint row0, uint col0, uint split);

void main() {
    uint z = gl_WorkGroupID.z;
    setup(z);
    uint split = MODE == WEIGHT ? z / p.groups : 0u;
    uint reduced = MODE == WEIGHT ? m_rows : k_len; // the sum's length
    uint slices = (reduced + BK - 1u) / BK;
    uint begin = MODE == WEIGHT ? split * p.split_steps : 0u;
    uint end = MODE == WEIGHT ? min(begin + p.split_steps, slices) : slices;
    uint rows = MODE == WEIGHT ? p.m : m_rows;
    uint col0 = gl_WorkGroupID.x * BN;
    // Row tiles past the dispatch's are walked by its workgroups.
    for (uint row0 = gl_WorkGroupID.y * BM; row0 < rows; row0 += gl_NumWorkGroups.y * BM) {
        clear_tile(row0, col0);
        tile_begin(row0, col0, begin * BK);
        if (MODE == WEIGHT) {
            weight_slice_pixels(begin);
            weight_slice_pixels(begin + 1u);
            barrier();
        }
        if (begin < end) {
            fetch(row0, col0, begin * BK);
            tile_advance();
        }
        if (DB != 0) {
            if (begin < end) stash(0u);
            barrier();
            for (uint s = begin; s < end; s++) {
                uint cur = (s - begin) & 1u;
                if (s + 1u < end) {
                    fetch(row0, col0, (s + 1u) * BK);
                    tile_advance();
                }
                multiply(cur);
                if (s + 1u < end) stash(cur ^ 1u);
                if (MODE == WEIGHT && s + 2u < end) weight_slice_pixels(s + 2u); // fetch(s) read that half
                barrier();
            }
        } else {
            for (uint s = begin; s < end; s++) {
                barrier();
                stash(0u);
                if (MODE == WEIGHT && s + 2u < end) weight_slice_pixels(s + 2u); // fetch(s) read that half
                barrier();
                if (s + 1u < end) {
                    fetch(row0, col0, (s + 1u) * BK);
                    tile_advance();
                }
                multiply(0u);
            }
            barrier();
        }
        store(row0, col0, split);
    }
}
