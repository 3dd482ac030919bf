// Shared by every kernel shader. Each shader's push-constant block is
// declared by PUSH_CONSTANTS from its layout in push_constants.h, which the
// host's C code shares: the element offsets of the buffer arguments come
// first (p.off[i]: each binding is a whole memory block of the
// sub-allocator, and a tensor lives at an offset in it), then the kernel's
// parameters. Binding 8 is the status buffer (device-side errors);
// arguments past the eighth are at bindings 9 and up (argument i at
// binding i + 1).
#include "push_constants.h"
#define PUSH_FIELD(type, name) type name;
#define PUSH_CONSTANTS(BLOCK) layout(push_constant) uniform Params { BLOCK(PUSH_FIELD) } p;

// One-dimensional kernels run 256 invocations per workgroup and stride over
// the whole range, so any size fits in the device's workgroup-count limit.
#define GRID_STRIDE_LOOP(i, n) \
    for (uint i = gl_GlobalInvocationID.x; i < (n); i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)

// Pointwise kernels read and write four floats at a time where every
// argument's element offset is a multiple of 4 (16-byte aligned): i walks
// the n / 4 quads, then the last n % 4 elements one by one.
#define QUADS_ALIGNED(offsets) (((offsets) & 3u) == 0u)
#define TAIL_LOOP(i, n) \
    for (uint i = ((n) & ~3u) + gl_GlobalInvocationID.x; i < (n); i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)
