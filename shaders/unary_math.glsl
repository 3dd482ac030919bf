// The helpers the rows of unary_ops.h call, in GLSL, which has none of them
// built in; src/backends/cpu/cpu_unary.c gives C the same names (mostly
// math.h's). Each is accurate to a few float roundings over its whole range.

float quiet_nan() { return uintBitsToFloat(0x7fc00000u); }
float positive_infinity() { return uintBitsToFloat(0x7f800000u); }

// 1 / (1 + exp(-v)); exp(-v) overflows to infinity for v < -88, giving 0.
float logistic(float v) { return 1.0 / (1.0 + exp(-v)); }

// The gate of gelu's tanh approximation: (1 + tanh(u)) / 2 = logistic(2u),
// u = sqrt(2/pi) (x + 0.044715 x^3).
float tanh_gate(float x) { return logistic(1.5957691216057308 * (x + 0.044715 * x * x * x)); }

// The complementary error function with a relative error below 1.2e-7 for
// every argument (Numerical Recipes' erfcc, a Chebyshev fit of erfc(z)
// exp(z^2)): relative accuracy is kept in the tail, where 1 - erf cancels.
float erfc(float x) {
    float z = abs(x);
    float t = 1.0 / (1.0 + 0.5 * z);
    float poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
                 t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    float tail = t * exp(-z * z + poly);
    return x >= 0.0 ? tail : 2.0 - tail;
}

float erf(float x) { return 1.0 - erfc(x); }

// log(1 + v) without losing v's digits near 0 (Goldberg: the rounding of
// 1 + v is divided out).
float log1p(float v) {
    float u = 1.0 + v;
    return u == 1.0 ? v : log(u) * (v / (u - 1.0));
}

// exp(v) - 1 without cancellation near 0 (Kahan's correction).
float expm1(float v) {
    float u = exp(v);
    if (u == 1.0) return v;
    float um1 = u - 1.0;
    if (um1 == -1.0) return -1.0;
    return um1 * v / log(u);
}

// log(1 + exp(z)) for any z, never overflowing.
float softplus_of(float z) { return max(z, 0.0) + log1p(exp(-abs(z))); }

// x ** e as PyTorch (C's pow) computes it: integer exponents by repeated
// squaring (exact to a few roundings, any sign of x), others through
// pow(|x|, e), NaN for a finite negative x with a non-integer e; x ** 0 is 1,
// even for NaN.
float power(float x, float e) {
    if (e == 0.0) return 1.0;
    if (isnan(x)) return x;
    bool integer = floor(e) == e;
    if (x < 0.0 && !integer && !isinf(x)) return quiet_nan(); // C's pow(-inf, e) is +-0 or +-inf
    bool odd = integer && floor(e * 0.5) != e * 0.5;
    float m = abs(x);
    float r;
    if (integer && abs(e) <= 64.0) {
        r = 1.0;
        float base = m;
        for (uint k = uint(abs(e)); k != 0u; k >>= 1) {
            if ((k & 1u) != 0u) r *= base;
            base *= base;
        }
        if (e < 0.0) r = 1.0 / r;
    } else {
        // pow(0 or infinity, e) is not defined in GLSL: PyTorch's (C's) values
        if (m == 0.0 || isinf(m)) r = (m == 0.0) == (e > 0.0) ? 0.0 : positive_infinity();
        else r = pow(m, e);
    }
    return odd && (x < 0.0 || (x == 0.0 && floatBitsToUint(x) != 0u)) ? -r : r;
}
