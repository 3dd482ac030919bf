/* Max pooling with AlexNet's overlapping windows (kernel 3, stride 2) at
 * AlexNet's sizes (55 -> 27, 27 -> 13, 13 -> 6) and awkward ones, forward
 * and backward, on the CPU and on Vulkan, each against the double-precision
 * reference (tests/reference.c): the max is exact, and each input's
 * gradient is the sum of dy over the windows it wins. */
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "vulkan_harness.h"

static void check_pool_on(const char *device, const ref_pool *g, uint64_t seed) {
    char what[128];
    snprintf(what, sizeof what, "%s maxpool k%d s%d p%d x[%d,%d,%d,%d]", device, g->k, g->s, g->p, g->n, g->c,
             g->h, g->w);
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 1});
    CHECK_MSG(ctx, "%s: %s", what, nn_last_error());
    if (!ctx) return;
    int64_t sx[4] = {g->n, g->c, g->h, g->w}, sy[4] = {g->n, g->c, ref_pool_oh(g), ref_pool_ow(g)};
    int64_t nx = ref_numel(4, sx), ny = ref_numel(4, sy);
    ref_rng r = ref_rng_new(seed);
    ref_data x = ref_data_uniform(&r, nx, -1, 1), dy = ref_data_uniform(&r, ny, -1, 1);
    double *want_y = ref_alloc_d(ny), *want_dx = ref_alloc_d(nx), *got = ref_alloc_d(nx);
    int64_t *argmax = malloc(sizeof(int64_t) * (size_t)ny);
    ref_maxpool2d(x.d, want_y, argmax, g);
    memset(want_dx, 0, sizeof(double) * (size_t)nx);
    for (int64_t o = 0; o < ny; o++) want_dx[argmax[o]] += dy.d[o];

    nn_tensor *xt = ref_tensor_f32(ctx, 4, sx, x.f), *dyt = ref_tensor_f32(ctx, 4, sy, dy.f);
    bool ok = xt && dyt && nn_tensor_set_requires_grad(xt, true) == NN_OK;
    nn_tensor *y = ok ? (g->p ? nn_maxpool2d_ex(xt, g->k, g->s, g->p) : nn_maxpool2d(xt, g->k, g->s)) : NULL;
    if (y && ref_check_shape(y, 4, sy, what) && ref_read_tensor(y, got, ny, what))
        CHECK_ALL_CLOSE(what, got, want_y, ny, 0, 0);
    /* loss = sum(y * dy): its gradient at y is dy. */
    nn_tensor *loss = y ? nn_sum(nn_mul(y, dyt)) : NULL;
    ok = loss && nn_backward(loss) == NN_OK;
    CHECK_MSG(ok, "%s backward: %s", what, nn_last_error());
    if (ok && ref_read_tensor(nn_tensor_grad(xt), got, nx, what))
        CHECK_ALL_CLOSE(what, got, want_dx, nx, 1e-6, 1e-7); /* a sum of at most 4 terms */
    nn_ctx_step_end(ctx);
    nn_tensor_free(xt);
    nn_tensor_free(dyt);
    nn_ctx_free(ctx);
    ref_data_free(&x);
    ref_data_free(&dy);
    free(want_y), free(want_dx), free(got), free(argmax);
}

static const ref_pool alexnet_cases[] = {
    {2, 64, 55, 55, 3, 2, 0},  /* after conv1 */
    {1, 192, 27, 27, 3, 2, 0}, /* after conv2 */
    {2, 256, 13, 13, 3, 2, 0}, /* after conv5 */
    {1, 5, 56, 54, 3, 2, 0},   /* even sides: the last row and column are unused */
    {3, 7, 15, 16, 3, 2, 1},   /* padding */
    {1, 1, 3, 3, 3, 2, 0},     /* one window */
    {2, 3, 4, 9, 3, 2, 0},
};
#define CASES ((int)(sizeof alexnet_cases / sizeof alexnet_cases[0]))

TEST(maxpool_k3s2_alexnet_sizes_cpu) {
    for (int i = 0; i < CASES; i++) check_pool_on("cpu", &alexnet_cases[i], 3100 + (uint64_t)i);
}

TEST(maxpool_k3s2_alexnet_sizes_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    for (int i = 0; i < CASES; i++) check_pool_on("vulkan", &alexnet_cases[i], 3200 + (uint64_t)i);
}
