// Winograd's F(4x4, 3x3) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016; interpolation points 0, 1, -1, 2,
// -2 and infinity): a 4x4 patch of a 3x3 convolution's output is
//   Y = A^T [(G w G^T) * (B^T d B)] A
// for the 6x6 input patch d and the filter w, * elementwise: 36 products
// where direct convolution takes 144. The one-dimensional transforms below
// apply these matrices to a vector; a 6x6 (or 4x4, 3x3) block is
// transformed along its columns, then along its rows. The weight gradient
// is this formula's adjoint: dw = G^T [sum over patches of (A dy A^T) *
// (B^T d B)] G.
//
// B^T = | 4  0 -5  0  1  0 |   G = | 1/4     0     0 |   A^T = | 1  1  1  1  1  0 |
//       | 0 -4 -4  1  1  0 |       | -1/6 -1/6  -1/6 |         | 0  1 -1  2 -2  0 |
//       | 0  4 -4 -1  1  0 |       | -1/6  1/6  -1/6 |         | 0  1  1  4  4  0 |
//       | 0 -2 -1  2  1  0 |       | 1/24 1/12   1/6 |         | 0  1 -1  8 -8  1 |
//       | 0  2 -1 -2  1  0 |       | 1/24 -1/12  1/6 |
//       | 0  4  0 -5  0  1 |       | 0     0     1   |

// y = B^T x (6 -> 6)
void winograd_bt(in float x[6], out float y[6]) {
    y[0] = 4.0 * x[0] - 5.0 * x[2] + x[4];
    y[1] = -4.0 * (x[1] + x[2]) + x[3] + x[4];
    y[2] = 4.0 * (x[1] - x[2]) - x[3] + x[4];
    y[3] = 2.0 * (x[3] - x[1]) - x[2] + x[4];
    y[4] = 2.0 * (x[1] - x[3]) - x[2] + x[4];
    y[5] = 4.0 * x[1] - 5.0 * x[3] + x[5];
}

// y = A^T x (6 -> 4)
void winograd_at(in float x[6], out float y[4]) {
    float s12 = x[1] + x[2], d12 = x[1] - x[2], s34 = x[3] + x[4], d34 = x[3] - x[4];
    y[0] = x[0] + s12 + s34;
    y[1] = d12 + 2.0 * d34;
    y[2] = s12 + 4.0 * s34;
    y[3] = d12 + 8.0 * d34 + x[5];
}

// y = A x (4 -> 6), the adjoint of winograd_at
void winograd_a(in float x[4], out float y[6]) {
    float s02 = x[0] + x[2], s13 = x[1] + x[3];
    float q02 = x[0] + 4.0 * x[2], q13 = 2.0 * x[1] + 8.0 * x[3];
    y[0] = x[0];
    y[1] = s02 + s13;
    y[2] = s02 - s13;
    y[3] = q02 + q13;
    y[4] = q02 - q13;
    y[5] = x[3];
}

// y = G x (3 -> 6)
void winograd_g(in float x[3], out float y[6]) {
    float s02 = x[0] + x[2];
    y[0] = 0.25 * x[0];
    y[1] = -(s02 + x[1]) / 6.0;
    y[2] = -(s02 - x[1]) / 6.0;
    y[3] = x[0] / 24.0 + x[1] / 12.0 + x[2] / 6.0;
    y[4] = x[0] / 24.0 - x[1] / 12.0 + x[2] / 6.0;
    y[5] = x[2];
}

// y = G^T x (6 -> 3), the adjoint of winograd_g
void winograd_gt(in float x[6], out float y[3]) {
    y[0] = 0.25 * x[0] - (x[1] + x[2]) / 6.0 + (x[3] + x[4]) / 24.0;
    y[1] = (x[2] - x[1]) / 6.0 + (x[3] - x[4]) / 12.0;
    y[2] = (x[3] + x[4] - x[1] - x[2]) / 6.0 + x[5];
}
