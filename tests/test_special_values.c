/* NaN, infinities and ties: what a diverging run feeds the kernels. NaN
 * propagates through relu and max pooling (as in PyTorch) instead of being
 * hidden; ties in pooling go to the first maximum in row-major order. */
#include <math.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"

TEST(special_relu_and_pool_propagate_nan) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    /* A 1x1x4x6 image; 2x2 pooling, stride 2 gives a 2x3 output. NaN sits in
     * the top-middle window, an infinity in the bottom-left one. */
    float image[24] = {1, 2, 3, NAN, 5, 6,  7, 8, 9, 1, 2, 3,
                       -INFINITY, 0, 4, 4, -1, -2,  0, INFINITY, 4, 4, -3, -4};
    int64_t shape[4] = {1, 1, 4, 6};
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, shape, image);
    float pooled[6], relu[24];
    CHECK(nn_tensor_read(nn_maxpool2d(x, 2, 2), pooled, sizeof pooled) == NN_OK);
    CHECK(pooled[0] == 8 && isnan(pooled[1]) && pooled[2] == 6);
    CHECK(isinf(pooled[3]) && pooled[3] > 0 && pooled[4] == 4 && pooled[5] == -1);
    CHECK(nn_tensor_read(nn_relu(x), relu, sizeof relu) == NN_OK);
    CHECK(isnan(relu[3]) && relu[12] == 0 && isinf(relu[19]) && relu[0] == 1 && relu[16] == 0);

    /* Ties: the gradient goes to the first of the equal values (row-major). */
    nn_tensor_set_requires_grad(x, true);
    nn_tensor *loss = nn_sum(nn_maxpool2d(x, 2, 2));
    CHECK(nn_backward(loss) == NN_OK);
    float grad[24];
    nn_tensor_read(nn_tensor_grad(x), grad, sizeof grad);
    CHECK(grad[14] == 1 && grad[15] == 0 && grad[20] == 0 && grad[21] == 0); /* the 4s */
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_ctx_free(ctx);
}
