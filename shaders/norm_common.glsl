// Shared by the normalisation shaders (kernels.h's nn_norm_params): the
// group and channel of an element, and a workgroup's sum of one value per
// invocation by a fixed tree (each invocation's own run summed with
// Kahan's compensation, so a group of millions of elements keeps float
// precision). Needs local_size_x = 256 and PUSH_CONSTANTS(PUSH_NORM).
const uint NORM_THREADS = 256u;

// Element k (< outer * inner) of group g.
uint group_element(uint g, uint k) {
    uint o = k / p.inner;
    return (o * p.groups + g) * p.inner + (k - o * p.inner);
}

uint group_of(uint e) { return (e / p.inner) % p.groups; }
uint channel_of(uint e) { return (e / p.channel_inner) % p.channels; }

shared float norm_part[NORM_THREADS];
shared float norm_part2[NORM_THREADS];

struct Kahan { float sum; float comp; };

void kahan_add(inout Kahan k, float v) {
    precise float y = v - k.comp;
    precise float t = k.sum + y;
    k.comp = (t - k.sum) - y;
    k.sum = t;
}

// norm_part[0] and norm_part2[0] = the workgroup's sums of a and b. Every
// invocation must call it (it has barriers).
void workgroup_sum2(float a, float b) {
    uint tid = gl_LocalInvocationID.x;
    norm_part[tid] = a;
    norm_part2[tid] = b;
    barrier();
    for (uint s = NORM_THREADS / 2u; s > 0u; s >>= 1) {
        if (tid < s) {
            norm_part[tid] += norm_part[tid + s];
            norm_part2[tid] += norm_part2[tid + s];
        }
        barrier();
    }
}
