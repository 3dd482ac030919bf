// Shared by the fused conv + pool kernels (conv_pool_*.comp): staging in
// shared memory. These kernels are bound by latency, and a loop that
// stores each global load before it issues the next waits one round trip
// per element; so a staging loop issues LOADS loads per invocation, then
// stores them (stage_images). The includer declares THREADS, the
// specialization constant PADDED, the push constants p (with channels,
// height, width, pad_h, pad_w, padded_h, padded_w), the input x[] and
// shared float xs[].
const uint LOADS = 8u;

// Entry i of zero-padded images [image][channel][padded_h][padded_w] whose
// first image starts at x[first]; 0 in the padding and at i >= count (a
// valid address is read and discarded there). Without padding the staged
// images are x's own layout and entry i is x[first + i].
float padded_x(uint first, uint i, uint count) {
    if (!PADDED) return x[first + min(i, count - 1u)];
    uint plane = p.padded_h * p.padded_w;
    uint ic = i / plane, r = i - ic * plane; // ic: image * channels + channel
    uint ph = r / p.padded_w;
    int h = int(ph) - p.pad_h, wc = int(r - ph * p.padded_w) - p.pad_w;
    bool inside = i < count && h >= 0 && h < int(p.height) && wc >= 0 && wc < int(p.width);
    float v = x[inside ? first + (ic * p.height + uint(h)) * p.width + uint(wc) : first];
    return inside ? v : 0.0;
}

// Where entry i goes in xs: by default at i; an includer whose reads would
// meet in the same shared-memory banks defines STAGED_AT to leave gaps.
#ifndef STAGED_AT
#define STAGED_AT(i) (i)
#endif

// xs[STAGED_AT(i)] for i in [0, count) = the padded images from x[first] on.
void stage_images(uint first, uint count) {
    const uint tid = gl_LocalInvocationID.x;
    for (uint i0 = tid; i0 < count; i0 += LOADS * THREADS) {
        float v[LOADS];
        for (uint k = 0u; k < LOADS; k++) v[k] = padded_x(first, i0 + k * THREADS, count);
        for (uint k = 0u; k < LOADS; k++)
            if (i0 + k * THREADS < count) xs[STAGED_AT(i0 + k * THREADS)] = v[k];
    }
}
