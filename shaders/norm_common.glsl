// Shared by the normalisation shaders (kernels.h's nn_norm_params): the
// group and channel of an element, and a workgroup's sums and moments of
// one value per invocation by fixed trees, so a result depends on the
// sizes alone, never on the order workgroups ran in. Needs
// local_size_x = 256 and PUSH_CONSTANTS(PUSH_NORM).
const uint NORM_THREADS = 256u;
// Loads each invocation keeps in flight (and in registers): a PIECE of
// consecutive entries per workgroup step.
const uint NORM_LOADS = 8u;
const uint PIECE = NORM_THREADS * NORM_LOADS;

// Element k (< outer * inner) of group g.
uint group_element(uint g, uint k) {
    uint o = k / p.inner;
    return (o * p.groups + g) * p.inner + (k - o * p.inner);
}

uint group_of(uint e) { return (e / p.inner) % p.groups; }
uint channel_of(uint e) { return (e / p.channel_inner) % p.channels; }

shared float norm_part[NORM_THREADS];
shared float norm_part2[NORM_THREADS];
shared float norm_part3[NORM_THREADS];

// Invocations per group where a workgroup takes several groups of n <=
// PIECE elements (LayerNorm's rows) at once: the fewest, a power of two
// from 32 to NORM_THREADS, whose NORM_LOADS loads each cover the group, so
// a row of 192 takes 32 invocations, not 256 (vk_norm.c's row_threads).
uint row_threads(uint n) {
    uint t = 32u;
    while (t < NORM_THREADS && t * NORM_LOADS < n) t <<= 1;
    return t;
}

// The sums of a and b over each run of `width` invocations (a power of two
// dividing NORM_THREADS), by a fixed tree, at the run's first slot of
// norm_part and norm_part2. Every invocation must call it (it has barriers).
void segment_sum2(float a, float b, uint width) {
    uint tid = gl_LocalInvocationID.x, lane = tid & (width - 1u);
    norm_part[tid] = a;
    norm_part2[tid] = b;
    barrier();
    for (uint s = width / 2u; s > 0u; s >>= 1) {
        if (lane < s) {
            norm_part[tid] += norm_part[tid + s];
            norm_part2[tid] += norm_part2[tid + s];
        }
        barrier();
    }
}

// norm_part[0] and norm_part2[0] = the workgroup's sums of a and b.
void workgroup_sum2(float a, float b) { segment_sum2(a, b, NORM_THREADS); }

// The count, mean and sum of squared deviations (M2) of some values: two
// sets merge by Chan's formula, which never subtracts large squares.
struct Moments { float n; float mean; float m2; };

Moments moments_merge(Moments a, Moments b) {
    float n = a.n + b.n;
    if (b.n == 0.0) return a;
    if (a.n == 0.0) return b;
    float delta = b.mean - a.mean, f = b.n / n;
    return Moments(n, a.mean + delta * f, a.m2 + b.m2 + delta * delta * a.n * f);
}

// Each run of `width` invocations' moments (width as segment_sum2's),
// merged by a fixed tree, in norm_part (n), norm_part2 (mean), norm_part3
// (M2) at the run's first slot. Every invocation must call it.
void segment_moments(Moments m, uint width) {
    uint tid = gl_LocalInvocationID.x, lane = tid & (width - 1u);
    norm_part[tid] = m.n;
    norm_part2[tid] = m.mean;
    norm_part3[tid] = m.m2;
    barrier();
    for (uint s = width / 2u; s > 0u; s >>= 1) {
        if (lane < s) {
            Moments r = moments_merge(Moments(norm_part[tid], norm_part2[tid], norm_part3[tid]),
                                      Moments(norm_part[tid + s], norm_part2[tid + s], norm_part3[tid + s]));
            norm_part[tid] = r.n;
            norm_part2[tid] = r.mean;
            norm_part3[tid] = r.m2;
        }
        barrier();
    }
}

// The workgroup's moments in norm_part, norm_part2, norm_part3 [0].
void workgroup_moments(Moments m) { segment_moments(m, NORM_THREADS); }

// Entries [begin, end) of a chunk of `count`: chunk j of p.chunk entries.
uint chunk_end(uint j, uint count) { return min(count, (j + 1u) * p.chunk); }

// A sum with Kahan's compensation: an invocation's run of thousands of
// terms keeps float precision.
struct Kahan { float sum; float comp; };

void kahan_add(inout Kahan k, float v) {
    precise float y = v - k.comp;
    precise float t = k.sum + y;
    k.comp = (t - k.sum) - y;
    k.sum = t;
}

// Whether four consecutive elements from a multiple of four share their
// group and channel, and the tensors at these element offsets are
// 16-byte aligned: then a pointwise pass reads and writes vec4s.
bool norm_quads(uint off_a, uint off_b, uint off_c) {
    return p.inner % 4u == 0u && p.channel_inner % 4u == 0u && (off_a | off_b | off_c) % 4u == 0u;
}

// Whether x is rows of channels (BatchNorm over channels-last tensors or
// [N, C]: a group per channel, inner 1) with channels in fours and the
// tensors 16-byte aligned: then four consecutive elements from a multiple
// of four are four channels of one row, channel e % channels onwards.
bool norm_column_quads(uint off_a, uint off_b, uint off_c) {
    return p.inner == 1u && p.channel_inner == 1u && p.groups == p.channels && p.channels % 4u == 0u &&
           (off_a | off_b | off_c) % 4u == 0u;
}

// grad_mask (kernels.h): dy through the activation's mask at y, the
// normalised value as norm_apply.comp computes it, (x - mean) (rstd w) + b:
// relu passes dy where y > 0, relu6 where not (y <= 0 or y >= 6) (a NaN passes).
const int MASK_RELU = 1, MASK_RELU6 = 2;
float masked_dy(float dy, float y) {
    bool passes = p.grad_mask == MASK_RELU ? y > 0.0 : !(y <= 0.0 || y >= 6.0);
    return passes ? dy : 0.0;
}
vec4 masked_dy4(vec4 dy, vec4 y) {
    return vec4(masked_dy(dy.x, y.x), masked_dy(dy.y, y.y), masked_dy(dy.z, y.z), masked_dy(dy.w, y.w));
}
