// A product's operands rounded to the precision the operation was recorded
// with (nn_ctx_set_precision): ROUND 1 = fp16, 2 = bf16, 0 = as they are.
// The same rounding as the CPU's (src/backends/cpu/cpu_precision.c): to
// nearest, ties to even; fp16 keeps its subnormals and overflows to
// infinity. The GEMM-family pipelines take it as specialization constant 9.
layout(constant_id = 9) const uint ROUND = 0;

float round_operand(float x) {
    if (ROUND == 1u) {
        float a = abs(x);
        if (isnan(x) || isinf(x) || a == 0.0) return x;
        if (a >= 65520.0) return uintBitsToFloat(floatBitsToUint(x) & 0x80000000u | 0x7f800000u);
        int e;
        frexp(a, e); // a = f * 2^e, f in [0.5, 1): fp16 keeps 11 bits, no step below 2^-24
        float step = ldexp(1.0, max(e - 11, -24));
        return sign(x) * roundEven(a / step) * step;
    }
    if (ROUND == 2u) {
        uint u = floatBitsToUint(x);
        if ((u & 0x7f800000u) == 0x7f800000u) return x; // infinities and NaNs as they are
        u += 0x7fffu + ((u >> 16) & 1u);
        return uintBitsToFloat(u & 0xffff0000u);
    }
    return x;
}
