// Shared by every kernel shader. Push constants start with the element
// offsets of the buffer arguments (four words for kernels of at most four
// arguments, PC_OFFSETS; eight for at most eight, PC_OFFSETS8; sixteen for
// the rest, PC_OFFSETS16): each binding is
// a whole memory block of the sub-allocator, and a tensor lives at an
// offset in it. The rest of the block is the kernel's parameter struct
// (kernels.h) with sizes narrowed to 32 bits (the host checks they fit).
// Binding 8 is the status buffer (device-side errors); arguments past the
// eighth are at bindings 9 and up (argument i at binding i + 1).
#define PC_OFFSETS uint off0; uint off1; uint off2; uint off3;
#define PC_OFFSETS8 PC_OFFSETS uint off4; uint off5; uint off6; uint off7;
#define PC_OFFSETS16 PC_OFFSETS8 uint off8; uint off9; uint off10; uint off11; \
    uint off12; uint off13; uint off14; uint off15;

// One-dimensional kernels run 256 invocations per workgroup and stride over
// the whole range, so any size fits in the device's workgroup-count limit.
#define GRID_STRIDE_LOOP(i, n) \
    for (uint i = gl_GlobalInvocationID.x; i < (n); i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)
