/* How many device commands one LeNet-5 training step launches: a counting
 * wrapper around the context's backend (run, fill, copy) for one step after
 * a warm-up step. A step of few dependent dispatches is what makes small
 * models fast on a GPU (each costs microseconds with its barrier), so this
 * pins the count: a change that adds kernels to the step fails here and
 * must say why. And the fusion pass must see the same chains in a model
 * written from raw operations as in nn_lenet5: both steps launch the same
 * kernels. Tests may use src/ internals; this one swaps ctx->backend's
 * functions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "reference.h"
#include "test.h"

static struct {
    nn_backend *inner_owner;
    nn_status (*run)(nn_backend *, nn_kernel, const nn_buffer_ref *, int, const void *);
    nn_status (*fill)(nn_backend *, nn_buffer_ref, float, size_t);
    nn_status (*copy)(nn_backend *, nn_buffer_ref, nn_buffer_ref, size_t);
    int runs, fills, copies;
    int per_kernel[NN_KERNEL_COUNT];
} counter;

static nn_status counting_run(nn_backend *self, nn_kernel kernel, const nn_buffer_ref *args, int nargs,
                              const void *params) {
    counter.runs++;
    if ((unsigned)kernel < NN_KERNEL_COUNT) counter.per_kernel[kernel]++;
    return counter.run(self, kernel, args, nargs, params);
}
static nn_status counting_fill(nn_backend *self, nn_buffer_ref dst, float value, size_t count) {
    counter.fills++;
    return counter.fill(self, dst, value, count);
}
static nn_status counting_copy(nn_backend *self, nn_buffer_ref dst, nn_buffer_ref src, size_t bytes) {
    counter.copies++;
    return counter.copy(self, dst, src, bytes);
}

static void counting_begin(nn_ctx *ctx) {
    counter.run = ctx->backend->run;
    counter.fill = ctx->backend->fill;
    counter.copy = ctx->backend->copy;
    ctx->backend->run = counting_run;
    ctx->backend->fill = counting_fill;
    ctx->backend->copy = counting_copy;
    counter.runs = counter.fills = counter.copies = 0;
    memset(counter.per_kernel, 0, sizeof counter.per_kernel);
}

static void counting_end(nn_ctx *ctx) {
    ctx->backend->run = counter.run;
    ctx->backend->fill = counter.fill;
    ctx->backend->copy = counter.copy;
}

static bool g_raw; /* the step writes LeNet-5 from raw operations */

/* One step: forward, loss, zero_grad, backward, SGD update (momentum). */
static void lenet_step(nn_ctx *ctx, nn_module *net, nn_optimizer *opt, nn_tensor *x, nn_tensor *y) {
    nn_tensor *loss = nn_softmax_cross_entropy(g_raw ? ref_lenet5_by_ops(net, x) : nn_module_forward(net, x), y);
    CHECK(loss != NULL);
    CHECK(nn_optimizer_zero_grad(opt) == NN_OK);
    CHECK(nn_backward(loss) == NN_OK);
    CHECK(nn_optimizer_step(opt) == NN_OK);
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
}

/* The launches of one step, printed per kernel (run with
 * NN_TEST_VERBOSE=1 to see the breakdown). Returns runs + fills + copies. */
static int count_lenet_step(const char *device, int batch) {
    nn_ctx_options o = {.device = device, .threads = 1, .seed = 5};
    nn_ctx *ctx = nn_ctx_new(&o);
    if (!ctx) {
        CHECK_MSG(0, "nn_ctx_new(%s): %s", device, nn_last_error());
        return -1;
    }
    nn_module *net = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    nn_tensor *params[16];
    int count = nn_module_param_count(net);
    for (int i = 0; i < count; i++) params[i] = nn_module_param(net, i);
    nn_optimizer *opt = nn_sgd_new(params, count, &(nn_sgd_options){.lr = 0.01f, .momentum = 0.9f});
    int64_t xs[4] = {batch, 1, 28, 28}, ys[1] = {batch};
    float *img = calloc((size_t)batch * 784, sizeof *img);
    int32_t *labels = calloc((size_t)batch, sizeof *labels);
    for (int i = 0; i < batch * 784; i++) img[i] = (float)((i * 7919) % 255) / 255.0f;
    for (int i = 0; i < batch; i++) labels[i] = i % 10;
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, xs, img);
    nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, ys, labels);
    lenet_step(ctx, net, opt, x, y); /* warm-up: first-step allocations */
    counting_begin(ctx);
    lenet_step(ctx, net, opt, x, y);
    counting_end(ctx);
    int total = counter.runs + counter.fills + counter.copies;
    if (getenv("NN_TEST_VERBOSE")) {
        printf("    LeNet-5 step on %s, batch %d: %d kernel runs, %d fills, %d copies\n", device, batch,
               counter.runs, counter.fills, counter.copies);
        for (int k = 0; k < NN_KERNEL_COUNT; k++)
            if (counter.per_kernel[k]) printf("      %-26s %d\n", nn_kernel_name(k), counter.per_kernel[k]);
    }
    CHECK(nn_ctx_sync(ctx) == NN_OK);
    free(img);
    free(labels);
    nn_optimizer_free(opt);
    nn_module_free(net);
    nn_ctx_free(ctx);
    return total;
}

/* Unfused, a step was 52 kernel runs and 11 fills (63). On the CPU it is
 * 25 runs and 2 fills: forward 8 (a kernel per convolution with its bias
 * and ReLU, one GEMM per Linear with its bias and ReLU, two pools, the
 * softmax-CE that also writes the logits' gradient), backward 16 (the
 * Linear and pool backward apply the ReLU masks; the first convolution's
 * input wants no gradient), the loss seed and zero_grad fills, one SGD
 * kernel. On Vulkan, 14 runs and 2 fills: forward 4 (the first
 * Conv2d + ReLU + MaxPool2d; the second with Flatten, the first Linear and
 * its ReLU; the Linear, ReLU, Linear head with the loss and its gradient
 * back to the head's input; the sum of the rows' losses), backward 9 (the
 * head's weight GEMMs and bias gradients, the first Linear's data and
 * weight GEMMs and bias gradient, the second convolution's weight and bias
 * gradient, and one kernel for its data gradient and the first
 * convolution's weight and bias gradients), one SGD kernel. */
#define CPU_STEP_COMMANDS 27
#define VULKAN_STEP_COMMANDS 16

/* The module's step, then the raw operations' step, which must launch the
 * same kernels. Returns the module's total. */
static int count_both(const char *device, int batch) {
    g_raw = false;
    const int total = count_lenet_step(device, batch);
    int per_kernel[NN_KERNEL_COUNT];
    memcpy(per_kernel, counter.per_kernel, sizeof per_kernel);
    g_raw = true;
    const int raw = count_lenet_step(device, batch);
    g_raw = false;
    CHECK_MSG(raw == total, "%s: raw operations launch %d commands, nn_lenet5 %d", device, raw, total);
    for (int k = 0; k < NN_KERNEL_COUNT; k++)
        CHECK_MSG(counter.per_kernel[k] == per_kernel[k], "%s: %s ran %d times from raw operations, %d from nn_lenet5",
                  device, nn_kernel_name((nn_kernel)k), counter.per_kernel[k], per_kernel[k]);
    return total;
}

TEST(kernel_count_lenet5_step_cpu) {
    int total = count_both("cpu", 3);
    printf("    LeNet-5 training step (cpu): %d device commands (kernel runs + fills + copies)\n", total);
    CHECK_MSG(total == CPU_STEP_COMMANDS, "%d commands, want %d", total, CPU_STEP_COMMANDS);
}

TEST(kernel_count_lenet5_step_vulkan) {
    const char *v = getenv("NN_ENGINE_TEST_VULKAN");
    if (v && strcmp(v, "0") == 0) return;
    int total = count_both("vulkan", 64);
    printf("    LeNet-5 training step (vulkan, batch 64): %d device commands\n", total);
    CHECK_MSG(total == VULKAN_STEP_COMMANDS, "%d commands, want %d", total, VULKAN_STEP_COMMANDS);
    CHECK_MSG(counter.per_kernel[NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT] == 1 &&
                  counter.per_kernel[NN_KERNEL_CONV2D_POOL_BACKWARD_DATA] == 0 &&
                  counter.per_kernel[NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY] == 1 &&
                  counter.per_kernel[NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD] == 1,
              "the fused kernels ran %d chained, %d data-gradient, %d head + loss and %d conv + linear times, "
              "want 1, 0, 1 and 1",
              counter.per_kernel[NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT],
              counter.per_kernel[NN_KERNEL_CONV2D_POOL_BACKWARD_DATA],
              counter.per_kernel[NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY],
              counter.per_kernel[NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD]);
}
