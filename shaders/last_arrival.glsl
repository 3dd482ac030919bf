// Shared by kernels whose workgroups finish a split sum themselves
// (vk_split_work.c): each writes its partials, then counts itself in on a
// counter of the work area, and the last to arrive adds them all.
//
// The includer declares the push constant p.counters (the work area's
// first counter), the coherent buffer work_counters[] and shared bool
// last_arrival.

// Whether this workgroup is the last of `expected` to count itself in on
// counter `slot` (then it resets it, for the next kernel to use). Every
// invocation calls it (it holds barriers).
bool arrives_last(uint slot, uint expected) {
    memoryBarrierBuffer(); // this workgroup's partials before its count
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        last_arrival = atomicAdd(work_counters[p.counters + slot], 1u) == expected - 1u;
        if (last_arrival) work_counters[p.counters + slot] = 0u;
    }
    barrier();
    memoryBarrierBuffer(); // the others' partials after the count
    return last_arrival;
}
