// Winograd's F(m x m, r x r) for r = 3 (m = 4) and r = 5 (m = 2) (Lavin and
// Gray, "Fast Algorithms for Convolutional Neural Networks", 2016), both on
// the 6x6 transform of the interpolation points 0, 1, -1, 2, -2 and
// infinity: an m x m patch of an r x r convolution's output is
//   Y = A^T [(G w G^T) * (B^T d B)] A
// for the 6x6 input patch d and the filter w, * elementwise: 36 products
// where direct convolution takes m^2 r^2 (144 for 3x3, 100 for 5x5). The
// input transform B^T is the same for both; G (6 x r) and A^T (m x 6) are
// the points' powers, G's rows scaled to match B^T. The one-dimensional
// transforms below apply these matrices to a vector; a block is transformed
// along its columns, then along its rows. The weight gradient is this
// formula's adjoint: dw = G^T [sum over patches of (A dy A^T) * (B^T d B)] G.
//
// B^T = | 4  0 -5  0  1  0 |   G (r = 3) = | 1/4     0     0 |   A^T (m = 4) = | 1  1  1  1  1  0 |
//       | 0 -4 -4  1  1  0 |               | -1/6 -1/6  -1/6 |                 | 0  1 -1  2 -2  0 |
//       | 0  4 -4 -1  1  0 |               | -1/6  1/6  -1/6 |                 | 0  1  1  4  4  0 |
//       | 0 -2 -1  2  1  0 |               | 1/24 1/12   1/6 |                 | 0  1 -1  8 -8  1 |
//       | 0  2 -1 -2  1  0 |               | 1/24 -1/12  1/6 |
//       | 0  4  0 -5  0  1 |               | 0     0     1   |
// G (r = 5): rows c p^k for k < 5 with c = 1/4, -1/6, -1/6, 1/24, 1/24 at the
// points 0, 1, -1, 2, -2, and (0 0 0 0 1); A^T (m = 2): (1 1 1 1 1 0) and
// (0 1 -1 2 -2 1).

// y = B^T x (6 -> 6)
void winograd_bt(in float x[6], out float y[6]) {
    y[0] = 4.0 * x[0] - 5.0 * x[2] + x[4];
    y[1] = -4.0 * (x[1] + x[2]) + x[3] + x[4];
    y[2] = 4.0 * (x[1] - x[2]) - x[3] + x[4];
    y[3] = 2.0 * (x[3] - x[1]) - x[2] + x[4];
    y[4] = 2.0 * (x[1] - x[3]) - x[2] + x[4];
    y[5] = 4.0 * x[1] - 5.0 * x[3] + x[5];
}

// y = A^T x (6 -> m)
void winograd_at(in float x[6], uint m, out float y[4]) {
    float s12 = x[1] + x[2], d12 = x[1] - x[2], s34 = x[3] + x[4], d34 = x[3] - x[4];
    y[0] = x[0] + s12 + s34;
    if (m == 2u) {
        y[1] = d12 + 2.0 * d34 + x[5];
        y[2] = 0.0, y[3] = 0.0;
        return;
    }
    y[1] = d12 + 2.0 * d34;
    y[2] = s12 + 4.0 * s34;
    y[3] = d12 + 8.0 * d34 + x[5];
}

// y = A x (m -> 6), the adjoint of winograd_at
void winograd_a(in float x[4], uint m, out float y[6]) {
    if (m == 2u) {
        y[0] = x[0], y[1] = x[0] + x[1], y[2] = x[0] - x[1];
        y[3] = x[0] + 2.0 * x[1], y[4] = x[0] - 2.0 * x[1], y[5] = x[1];
        return;
    }
    float s02 = x[0] + x[2], s13 = x[1] + x[3];
    float q02 = x[0] + 4.0 * x[2], q13 = 2.0 * x[1] + 8.0 * x[3];
    y[0] = x[0];
    y[1] = s02 + s13;
    y[2] = s02 - s13;
    y[3] = q02 + q13;
    y[4] = q02 - q13;
    y[5] = x[3];
}

// y = G x (r -> 6; x[r..4] unused)
void winograd_g(in float x[5], uint r, out float y[6]) {
    if (r == 5u) {
        float even = x[0] + x[2] + x[4], odd = x[1] + x[3];
        float even2 = x[0] + 4.0 * x[2] + 16.0 * x[4], odd2 = 2.0 * x[1] + 8.0 * x[3];
        y[0] = 0.25 * x[0];
        y[1] = -(even + odd) / 6.0;
        y[2] = -(even - odd) / 6.0;
        y[3] = (even2 + odd2) / 24.0;
        y[4] = (even2 - odd2) / 24.0;
        y[5] = x[4];
        return;
    }
    float s02 = x[0] + x[2];
    y[0] = 0.25 * x[0];
    y[1] = -(s02 + x[1]) / 6.0;
    y[2] = -(s02 - x[1]) / 6.0;
    y[3] = x[0] / 24.0 + x[1] / 12.0 + x[2] / 6.0;
    y[4] = x[0] / 24.0 - x[1] / 12.0 + x[2] / 6.0;
    y[5] = x[2];
}

// y = G^T x (6 -> r), the adjoint of winograd_g
void winograd_gt(in float x[6], uint r, out float y[5]) {
    float s12 = x[1] + x[2], d21 = x[2] - x[1], s34 = x[3] + x[4], d34 = x[3] - x[4];
    y[0] = 0.25 * x[0] - s12 / 6.0 + s34 / 24.0;
    y[1] = d21 / 6.0 + d34 / 12.0;
    if (r == 5u) {
        y[2] = -s12 / 6.0 + s34 / 6.0;
        y[3] = d21 / 6.0 + d34 / 3.0;
        y[4] = -s12 / 6.0 + 2.0 * s34 / 3.0 + x[5];
        return;
    }
    y[2] = (s34 - s12) / 6.0 + x[5];
    y[3] = 0.0, y[4] = 0.0;
}
