// part[0] = the workgroup's sum of v (max with take_max), by a fixed tree,
// so the result depends on the sizes alone. Included where THREADS (the
// workgroup's invocations, a power of two) and shared float part[THREADS]
// are declared.
void tree(float v, bool take_max) {
    uint tid = gl_LocalInvocationID.x;
    barrier(); // earlier readers of part[0] are done
    part[tid] = v;
    barrier();
    for (uint s = THREADS / 2u; s > 0u; s >>= 1) {
        if (tid < s) part[tid] = take_max ? max(part[tid], part[tid + s]) : part[tid] + part[tid + s];
        barrier();
    }
}
