/* Tensors of two contexts meeting in one call: the error names the call,
 * both arguments and both devices (CPU and Vulkan), and says how to move
 * one; two contexts of one device are told apart as contexts. */
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

static nn_tensor *ones(nn_ctx *ctx, int ndim, const int64_t *shape) {
    nn_tensor *t = nn_tensor_new(ctx, NN_F32, ndim, shape);
    if (t) nn_tensor_fill(t, 1.0f);
    return t;
}

/* The last error has each of the (NULL-terminated) fragments. */
static bool says(const char *const *fragments) {
    bool all = true;
    for (; *fragments; fragments++) {
        bool found = strstr(nn_last_error(), *fragments) != NULL;
        CHECK_MSG(found, "message \"%s\" lacks \"%s\"", nn_last_error(), *fragments);
        all = all && found;
    }
    return all;
}

TEST(context_mismatch_names_both_devices) {
    if (vkt_skipped()) return;
    nn_ctx *cpu = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    nn_ctx *gpu = nn_ctx_new(&(nn_ctx_options){.device = "vulkan"});
    CHECK_MSG(gpu != NULL, "vulkan: %s", nn_last_error());
    if (!gpu) {
        nn_ctx_free(cpu);
        return;
    }
    const char *cpu_name = nn_ctx_device_name(cpu), *gpu_name = nn_ctx_device_name(gpu);
    int64_t s35[2] = {3, 5}, s57[2] = {5, 7}, img[4] = {1, 2, 6, 6}, w_shape[4] = {4, 2, 3, 3};
    nn_tensor *a = ones(cpu, 2, s35), *b = ones(gpu, 2, s57);
    CHECK(!nn_matmul(a, b, false, false) && nn_last_status() == NN_ERR_STATE);
    says((const char *[]){"nn_matmul: b is on ", gpu_name, ", a on ", cpu_name, "move one to the other's device",
                          ".to()", NULL});
    CHECK_MSG(strncmp(gpu_name, "vulkan", 6) == 0 && strncmp(cpu_name, "cpu", 3) == 0, "%s / %s", gpu_name, cpu_name);

    /* A convolution's weight on the GPU, its input on the CPU. */
    nn_tensor *x = ones(cpu, 4, img), *w = ones(gpu, 4, w_shape);
    CHECK(!nn_conv2d(x, w, NULL, 1, 0) && nn_last_status() == NN_ERR_STATE);
    says((const char *[]){"nn_conv2d: weight is on ", gpu_name, ", x on ", cpu_name, NULL});

    /* A layer's parameters on the CPU, its input on the GPU. */
    nn_module *fc = nn_linear_layer(cpu, 5, 2, NN_INIT_KAIMING_UNIFORM);
    nn_tensor *g = ones(gpu, 2, s35);
    CHECK(fc && !nn_module_forward(fc, g) && nn_last_status() == NN_ERR_STATE);
    says((const char *[]){"nn_module_forward: its input is on ", gpu_name, "Linear's parameters on ", cpu_name, NULL});

    /* A copy across devices. */
    nn_tensor *c = ones(gpu, 2, s35);
    CHECK(nn_tensor_copy(a, c) == NN_ERR_STATE);
    says((const char *[]){"nn_tensor_copy: src is on ", gpu_name, ", dst on ", cpu_name, NULL});

    nn_module_free(fc);
    nn_ctx_free(gpu);
    nn_ctx_free(cpu);
}
