// Shared by the fused Linear -> ReLU -> Linear kernels (linear_head_*.comp,
// kernels.h nn_linear_head_params). A workgroup takes ROWS rows through
// both layers; what passes between the layers stays in shared memory. The
// kernels are bound by latency, so every weight a layer needs is loaded
// into registers before any is used (the loads all in flight), and the
// next layer's weights are loaded before this layer's sums are finished.
// The register arrays' lengths are specialization constants
// (vk_linear_head.c builds a pipeline per head shape).
const uint THREADS = 256u;
const uint ROWS = 1u; // rows per workgroup (vk_linear_head.c says why one)
const uint MAX_FEATURES = 256u; // per layer (vk_linear_head.c keeps to it)

#ifndef HEAD_PUSH // the kernel's push constants (push_constants.h)
#define HEAD_PUSH PUSH_LINEAR_HEAD
#endif
PUSH_CONSTANTS(HEAD_PUSH)

shared float first_rows[ROWS * MAX_FEATURES];  // the layer's input rows
shared float second_rows[ROWS * MAX_FEATURES]; // between the layers
shared float partials[ROWS * THREADS];

// Layers y = a W^T (W [outputs, inputs], Linear's layout): LANES
// invocations share an output, each summing every LANES-th input, so a
// warp reads 4 outputs' rows LANES floats at a time (coalesced). Pass q
// takes outputs q * THREADS / LANES + tid / LANES.
const uint LANES = 8u;
const uint PER_PASS = THREADS / LANES;

// Layers y = a W (W [inputs, outputs]): invocation (column c, part) with
// parts = THREADS / outputs sums inputs part, part + parts, ...; loads of
// one input row are contiguous across c (coalesced).
