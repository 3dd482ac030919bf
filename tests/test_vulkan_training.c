/* Whole-engine Vulkan tests: contexts and device choice, and a LeNet-5
 * training run whose losses match the CPU's step by step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

#define NEED_VULKAN()                               \
    do {                                            \
        if (vkt_skipped() || !vkt_vulkan()) return; \
    } while (0)

#define BATCH 32
#define STEPS 20
#define SIDE 28

/* Loss per step of LeNet-5 on fixed random batches (images with a class-
 * dependent bright square, so the loss moves), on one device. */
static bool train(const char *device, float *losses, float *logits_out) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 77});
    CHECK_MSG(ctx, "%s: %s", device, nn_last_error());
    if (!ctx) return false;
    nn_module *net = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    int count = nn_module_param_count(net);
    nn_tensor *params[16];
    for (int i = 0; i < count; i++) params[i] = nn_module_param(net, i);
    /* Momentum, weight decay and global-norm clipping: every optimizer kernel. */
    nn_optimizer *opt = nn_sgd_new(params, count, &(nn_sgd_options){.lr = 0.05f, .momentum = 0.9f,
                                                               .weight_decay = 5e-4f, .max_grad_norm = 5.0f});
    CHECK(net && opt);
    static float images[BATCH * SIDE * SIDE];
    int32_t labels[BATCH];
    int64_t x_shape[4] = {BATCH, 1, SIDE, SIDE}, y_shape[1] = {BATCH};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, x_shape), *y = nn_tensor_new(ctx, NN_I32, 1, y_shape);
    bool ok = opt != NULL;
    for (int step = 0; step < STEPS && ok; step++) {
        vkt_fill(images, BATCH * SIDE * SIDE, 0, 0.5f, 1000 + step);
        for (int n = 0; n < BATCH; n++) {
            labels[n] = (n * 7 + step) % 10;
            int r0 = 2 + 2 * labels[n];
            for (int r = r0; r < r0 + 5; r++)
                for (int c = r0; c < r0 + 5; c++) images[n * SIDE * SIDE + r * SIDE + c] += 1.0f;
        }
        ok &= nn_tensor_write(x, images, sizeof images) == NN_OK;
        ok &= nn_tensor_write(y, labels, sizeof labels) == NN_OK;
        nn_tensor *loss = nn_softmax_cross_entropy(nn_module_forward(net, x), y);
        ok &= loss && nn_optimizer_zero_grad(opt) == NN_OK && nn_backward(loss) == NN_OK && nn_optimizer_step(opt) == NN_OK;
        ok &= nn_tensor_read(loss, &losses[step], sizeof(float)) == NN_OK;
        ok &= nn_ctx_step_end(ctx) == NN_OK;
        CHECK_MSG(ok, "%s step %d: %s", device, step, nn_last_error());
    }
    /* Evaluation logits after training (no-grad mode). */
    nn_ctx_set_grad_enabled(ctx, false);
    nn_tensor *out = ok ? nn_module_forward(net, x) : NULL;
    ok &= out && nn_tensor_read(out, logits_out, BATCH * 10 * sizeof(float)) == NN_OK;
    nn_optimizer_free(opt);
    nn_module_free(net);
    nn_ctx_free(ctx);
    return ok;
}

TEST(vulkan_lenet5_training_matches_cpu) {
    NEED_VULKAN();
    float cpu[STEPS], gpu[STEPS], cpu_logits[BATCH * 10], gpu_logits[BATCH * 10];
    if (!train("cpu", cpu, cpu_logits) || !train("vulkan", gpu, gpu_logits)) return;
    for (int s = 0; s < STEPS; s++) CHECK_CLOSE(gpu[s], cpu[s], 1e-4);
    CHECK_MSG(cpu[STEPS - 1] < cpu[0] - 0.03f, "the loss should fall: %g -> %g", cpu[0], cpu[STEPS - 1]);
    for (int i = 0; i < BATCH * 10; i++) CHECK_CLOSE(gpu_logits[i], cpu_logits[i], 1e-3);
    if (getenv("NN_TEST_VERBOSE"))
        for (int s = 0; s < STEPS; s++) printf("    step %2d cpu %.6f vulkan %.6f\n", s, cpu[s], gpu[s]);
}

TEST(vulkan_devices_listed_and_auto_takes_only_hardware) {
    NEED_VULKAN();
    nn_device_info info[16];
    int n = nn_list_devices(info, 16);
    bool hardware = false, listed = false;
    for (int i = 0; i < n && i < 16; i++) {
        if (strcmp(info[i].backend, "vulkan") != 0) continue;
        CHECK_MSG(info[i].index >= 0 && info[i].name[0] && info[i].detail[0], "entry %d: %s %s", i, info[i].name,
                  info[i].reason);
        listed |= info[i].usable;
        hardware |= info[i].usable && strcmp(info[i].kind, "software") != 0 && strcmp(info[i].kind, "other") != 0;
    }
    CHECK(listed);
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "auto"});
    CHECK(ctx);
    if (!ctx) return;
    const char *name = nn_ctx_device_name(ctx);
    /* lavapipe is slower than our CPU backend: "auto" takes it only when asked by name. */
    if (!getenv("NN_ENGINE_VULKAN_DEVICE"))
        CHECK_MSG(strncmp(name, hardware ? "vulkan" : "cpu", hardware ? 6 : 3) == 0, "auto chose %s", name);
    nn_ctx_free(ctx);
}

TEST(vulkan_device_override_by_env) {
    NEED_VULKAN();
    const char *saved = getenv("NN_ENGINE_VULKAN_DEVICE");
    char *copy = saved ? strdup(saved) : NULL;
    setenv("NN_ENGINE_VULKAN_DEVICE", "no-such-gpu-xyz", 1);
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "vulkan"});
    CHECK(!ctx && nn_last_status() == NN_ERR_BACKEND);
    CHECK_MSG(strstr(nn_last_error(), "NN_ENGINE_VULKAN_DEVICE=no-such-gpu-xyz matches none"), "%s",
              nn_last_error());
    nn_ctx_free(ctx);
    /* "auto" does not quietly ignore a device the user named. */
    ctx = nn_ctx_new(&(nn_ctx_options){.device = "auto"});
    CHECK(!ctx);
    nn_ctx_free(ctx);
    setenv("NN_ENGINE_VULKAN_DEVICE", "0", 1);
    ctx = nn_ctx_new(&(nn_ctx_options){.device = "vulkan"});
    CHECK_MSG(ctx && strncmp(nn_ctx_device_name(ctx), "vulkan 0:", 9) == 0, "%s",
              ctx ? nn_ctx_device_name(ctx) : nn_last_error());
    nn_ctx_free(ctx);
    if (copy) setenv("NN_ENGINE_VULKAN_DEVICE", copy, 1);
    else unsetenv("NN_ENGINE_VULKAN_DEVICE");
    free(copy);
}
