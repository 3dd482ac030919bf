#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// CAST (kernels.h): float32 <-> int32, element by element, as the CPU's
// cpu_cast.c. Buffers are read and written as words: the int32 side never
// passes through a float.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_CAST)
layout(std430, binding = 0) readonly buffer X { uint xs[]; };
layout(std430, binding = 1) writeonly buffer Y { uint ys[]; };

const int FLOAT_TO_INT = 0; // nn_cast_op; the host refuses any but it and INT_TO_FLOAT (1)

// Truncated toward zero; NaN 0; saturated explicitly, since GLSL's int() of a
// float beyond int32's range is undefined.
int float_to_int(float x) {
    if (isnan(x)) return 0;
    if (x >= 2147483648.0) return 2147483647;
    if (x <= -2147483648.0) return int(0x80000000u);
    return int(x);
}

// Rounded to nearest, ties to even, spelled out: Vulkan leaves the rounding
// of an int-to-float conversion to the device.
float int_to_float(int i) {
    const uint m = i < 0 ? uint(-i) : uint(i); // INT32_MIN's magnitude too: -i wraps to itself, 2^31 as uint
    if (m < 0x1000000u) return float(i);     // exact below 2^24
    const int drop = findMSB(m) - 23;         // low bits beyond float's 24 significant ones (1 to 8)
    const uint kept = m >> drop, rest = m & ((1u << drop) - 1u), halfway = 1u << (drop - 1);
    const uint rounded = kept + ((rest > halfway || (rest == halfway && (kept & 1u) != 0u)) ? 1u : 0u);
    const float f = ldexp(float(rounded), drop); // rounded <= 2^24: exact, as is the power of 2
    return i < 0 ? -f : f;
}

void main() {
    GRID_STRIDE_LOOP(i, p.n) {
        const uint x = xs[p.off[0] + i];
        ys[p.off[1] + i] = p.op == FLOAT_TO_INT ? uint(float_to_int(uintBitsToFloat(x)))
                                                : floatBitsToUint(int_to_float(int(x)));
    }
}
