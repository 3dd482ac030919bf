// Winograd's F(4x4, r x r) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016): a 4x4 patch of an r x r
// convolution's output is
//   Y = A^T [(G w G^T) * (B^T d B)] A
// for the ALPHA x ALPHA input patch d (ALPHA = r + 3) and the filter w, *
// elementwise: ALPHA^2 products where direct convolution takes 16 r^2.
//   TRANSFORM 0: r = 3 on the 6x6 transform of the points 0, 1, -1, 2, -2
//                and infinity (36 products for 144);
//   TRANSFORM 1: r = 5 on the 8x8 transform of 0, 1, -1, 2, -2, 1/2, -1/2
//                and infinity (64 products for 400).
// B^T's rows are the coefficients of prod over the other points (x - q),
// G's rows the points' powers over prod (p - q), A^T's the points' powers
// (the construction of Lavin and Gray; row 0 of B^T and G negated in the
// 8x8 pair); the one-dimensional transforms below apply these matrices to a
// vector, and a block is transformed along its columns, then along its
// rows. The weight gradient is this formula's adjoint:
//   dw = G^T [sum over patches of (A dy A^T) * (B^T d B)] G.
// A shader that includes this declares nothing else at constant_id 9: the
// pipeline's variant (vk_conv_winograd.c) sets TRANSFORM there.
//
// 6x6:  B^T = | 4  0 -5  0  1  0 |   G = | 1/4     0     0 |   A^T = | 1  1  1  1  1  0 |
//             | 0 -4 -4  1  1  0 |       | -1/6 -1/6  -1/6 |         | 0  1 -1  2 -2  0 |
//             | 0  4 -4 -1  1  0 |       | -1/6  1/6  -1/6 |         | 0  1  1  4  4  0 |
//             | 0 -2 -1  2  1  0 |       | 1/24 1/12   1/6 |         | 0  1 -1  8 -8  1 |
//             | 0  2 -1 -2  1  0 |       | 1/24 -1/12  1/6 |
//             | 0  4  0 -5  0  1 |       | 0     0     1   |
// 8x8:  B^T = | 1    0  -21/4     0  21/4     0  -1  0 |   G = | 1      0      0      0     0 |
//             | 0    1      1 -17/4 -17/4     1   1  0 |       | -2/9 -2/9   -2/9   -2/9  -2/9 |
//             | 0   -1      1  17/4 -17/4    -1   1  0 |       | -2/9  2/9   -2/9    2/9  -2/9 |
//             | 0  1/2    1/4  -5/2  -5/4     2   1  0 |       | 1/90 1/45   2/45   4/45  8/45 |
//             | 0 -1/2    1/4   5/2  -5/4    -2   1  0 |       | 1/90 -1/45  2/45  -4/45  8/45 |
//             | 0    2      4  -5/2    -5   1/2   1  0 |       | 32/45 16/45 8/45   4/45  2/45 |
//             | 0   -2      4   5/2    -5  -1/2   1  0 |       | 32/45 -16/45 8/45 -4/45  2/45 |
//             | 0   -1      0  21/4     0 -21/4   0  1 |       | 0      0      0      0     1 |
//       A^T = | 1  1  1  1  1    1    1    0 |
//             | 0  1 -1  2 -2  1/2 -1/2    0 |
//             | 0  1  1  4  4  1/4  1/4    0 |
//             | 0  1 -1  8 -8  1/8 -1/8    1 |
layout(constant_id = 9) const uint TRANSFORM = 0;
const uint TAPS = TRANSFORM == 1u ? 5u : 3u;  // r
const uint ALPHA = TRANSFORM == 1u ? 8u : 6u; // the transform's side
const uint M = 4u;                            // outputs per tile and axis: ALPHA + 1 - TAPS
// Arrays below are sized for the larger transform; the smaller uses their front.
const uint MAX_ALPHA = 8u, MAX_TAPS = 5u;

// y = B^T x (ALPHA -> ALPHA)
void winograd_bt(in float x[MAX_ALPHA], out float y[MAX_ALPHA]) {
    if (ALPHA == 6u) {
        y[0] = 4.0 * x[0] - 5.0 * x[2] + x[4];
        y[1] = -4.0 * (x[1] + x[2]) + x[3] + x[4];
        y[2] = 4.0 * (x[1] - x[2]) - x[3] + x[4];
        y[3] = 2.0 * (x[3] - x[1]) - x[2] + x[4];
        y[4] = 2.0 * (x[1] - x[3]) - x[2] + x[4];
        y[5] = 4.0 * x[1] - 5.0 * x[3] + x[5];
        y[6] = 0.0, y[7] = 0.0;
        return;
    }
    y[0] = x[0] - x[6] + 5.25 * (x[4] - x[2]);
    y[7] = x[7] - x[1] + 5.25 * (x[3] - x[5]);
    float s = x[2] + x[6] - 4.25 * x[4], t = x[1] + x[5] - 4.25 * x[3];
    y[1] = s + t, y[2] = s - t;
    s = 0.25 * x[2] - 1.25 * x[4] + x[6], t = 0.5 * x[1] - 2.5 * x[3] + 2.0 * x[5];
    y[3] = s + t, y[4] = s - t;
    s = 4.0 * x[2] - 5.0 * x[4] + x[6], t = 2.0 * x[1] - 2.5 * x[3] + 0.5 * x[5];
    y[5] = s + t, y[6] = s - t;
}

// y = A^T x (ALPHA -> M)
void winograd_at(in float x[MAX_ALPHA], out float y[M]) {
    float s12 = x[1] + x[2], d12 = x[1] - x[2], s34 = x[3] + x[4], d34 = x[3] - x[4];
    if (ALPHA == 6u) {
        y[0] = x[0] + s12 + s34;
        y[1] = d12 + 2.0 * d34;
        y[2] = s12 + 4.0 * s34;
        y[3] = d12 + 8.0 * d34 + x[5];
        return;
    }
    float s56 = x[5] + x[6], d56 = x[5] - x[6];
    y[0] = x[0] + s12 + s34 + s56;
    y[1] = d12 + 2.0 * d34 + 0.5 * d56;
    y[2] = s12 + 4.0 * s34 + 0.25 * s56;
    y[3] = d12 + 8.0 * d34 + 0.125 * d56 + x[7];
}

// y = A x (M -> ALPHA), the adjoint of winograd_at
void winograd_a(in float x[M], out float y[MAX_ALPHA]) {
    float s02 = x[0] + x[2], s13 = x[1] + x[3];
    float q02 = x[0] + 4.0 * x[2], q13 = 2.0 * x[1] + 8.0 * x[3];
    y[0] = x[0];
    y[1] = s02 + s13;
    y[2] = s02 - s13;
    y[3] = q02 + q13;
    y[4] = q02 - q13;
    if (ALPHA == 6u) {
        y[5] = x[3];
        y[6] = 0.0, y[7] = 0.0;
        return;
    }
    float h02 = x[0] + 0.25 * x[2], h13 = 0.5 * x[1] + 0.125 * x[3];
    y[5] = h02 + h13;
    y[6] = h02 - h13;
    y[7] = x[3];
}

// y = G x (TAPS -> ALPHA)
void winograd_g(in float x[MAX_TAPS], out float y[MAX_ALPHA]) {
    if (ALPHA == 6u) {
        float s02 = x[0] + x[2];
        y[0] = 0.25 * x[0];
        y[1] = -(s02 + x[1]) / 6.0;
        y[2] = -(s02 - x[1]) / 6.0;
        y[3] = x[0] / 24.0 + x[1] / 12.0 + x[2] / 6.0;
        y[4] = x[0] / 24.0 - x[1] / 12.0 + x[2] / 6.0;
        y[5] = x[2];
        y[6] = 0.0, y[7] = 0.0;
        return;
    }
    float even = x[0] + x[2] + x[4], odd = x[1] + x[3];
    float even2 = x[0] + 4.0 * x[2] + 16.0 * x[4], odd2 = 2.0 * x[1] + 8.0 * x[3];
    float even3 = 32.0 * x[0] + 8.0 * x[2] + 2.0 * x[4], odd3 = 16.0 * x[1] + 4.0 * x[3];
    y[0] = x[0];
    y[1] = -2.0 / 9.0 * (even + odd);
    y[2] = -2.0 / 9.0 * (even - odd);
    y[3] = (even2 + odd2) / 90.0;
    y[4] = (even2 - odd2) / 90.0;
    y[5] = (even3 + odd3) / 45.0;
    y[6] = (even3 - odd3) / 45.0;
    y[7] = x[4];
}

// y = G^T x (ALPHA -> TAPS), the adjoint of winograd_g
void winograd_gt(in float x[MAX_ALPHA], out float y[MAX_TAPS]) {
    float s12 = x[1] + x[2], d21 = x[2] - x[1], s34 = x[3] + x[4], d34 = x[3] - x[4];
    if (ALPHA == 6u) {
        y[0] = 0.25 * x[0] - s12 / 6.0 + s34 / 24.0;
        y[1] = d21 / 6.0 + d34 / 12.0;
        y[2] = (s34 - s12) / 6.0 + x[5];
        y[3] = 0.0, y[4] = 0.0;
        return;
    }
    float s56 = x[5] + x[6], d56 = x[5] - x[6];
    y[0] = x[0] - 2.0 / 9.0 * s12 + s34 / 90.0 + 32.0 / 45.0 * s56;
    y[1] = 2.0 / 9.0 * d21 + d34 / 45.0 + 16.0 / 45.0 * d56;
    y[2] = -2.0 / 9.0 * s12 + 2.0 / 45.0 * s34 + 8.0 / 45.0 * s56;
    y[3] = 2.0 / 9.0 * d21 + 4.0 / 45.0 * d34 + 4.0 / 45.0 * d56;
    y[4] = -2.0 / 9.0 * s12 + 8.0 / 45.0 * s34 + 2.0 / 45.0 * s56 + x[7];
}
