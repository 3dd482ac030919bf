/* The layer sizes the fused Linear -> ReLU -> Linear kernels are tested on
 * (test_linear_head.c, test_head_cross_entropy.c): single features, odd
 * counts, 256 features (the Vulkan kernels' limit), LeNet-5's last two
 * layers, and row counts that leave a partial block of rows. */
#ifndef NN_TESTS_HEAD_CASES_H
#define NN_TESTS_HEAD_CASES_H

typedef struct head_case {
    int rows, in, hidden, out;
} head_case;

static const head_case kCases[] = {
    {1, 1, 1, 1},       {7, 13, 9, 5},   {64, 120, 84, 10}, /* LeNet-5's last two layers */
    {33, 256, 17, 256}, {5, 200, 60, 3}, {130, 50, 256, 7},
};

#endif
