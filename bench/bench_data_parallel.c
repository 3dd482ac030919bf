/* A data-parallel training step under mpirun (bench/README.md, issue 24):
 * each rank takes the GPU of its node-local rank, times a captured step
 * alone (no averaging: what one GPU does while the others run too), then
 * with nn_dist_data_parallel, and the parts of an average on their own:
 * the gradients' bytes read from the device, all-reduced in host memory
 * through MPI, written back. Rank 0 prints the medians of --steps.
 *
 *   mpirun -n 2 build/bench/bench_data_parallel [--model resnet18-cifar|alexnet|lenet5|... (bench_step.h)]
 *                                               [--batch 128] [--size 28] [--channels 1] [--steps 20]
 *                                               [--device vulkan|cpu] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_step.h"
#include "bench_timing.h"
#include "nn_capture.h"
#include "nn_dist.h"
#include "nn_engine.h"

static void die(const char *what) {
    fprintf(stderr, "bench_data_parallel (rank %d): %s: %s\n", nn_dist_rank(), what, nn_last_error());
    nn_dist_abort(1);
    exit(1);
}

/* The median over the ranks' medians would hide a slow rank: the slowest
 * (each rank's time in its own slot of a sum). */
static double slowest(double ms) {
    double *all = calloc((size_t)nn_dist_size(), sizeof *all);
    if (!all) die("out of host memory");
    all[nn_dist_rank()] = ms;
    if (nn_dist_all_reduce_host(all, nn_dist_size(), NN_DIST_SUM) != NN_OK) die("reducing the times");
    double worst = 0;
    for (int r = 0; r < nn_dist_size(); r++) worst = all[r] > worst ? all[r] : worst;
    free(all);
    return worst;
}

static double time_replays(nn_capture *captured, nn_ctx *ctx, double *times, int steps) {
    for (int i = 0; i < steps + 2; i++) {
        nn_dist_barrier();
        const double t0 = now_ms();
        if (nn_replay(captured, 1) != NN_OK || nn_ctx_sync(ctx) != NN_OK) die("replay");
        if (i >= 2) times[i - 2] = now_ms() - t0;
    }
    return slowest(median(times, steps));
}

static nn_capture *capture_step(nn_ctx *ctx, nn_module *net, nn_optimizer *opt, nn_tensor *x, nn_tensor *y) {
    for (int i = 0; i < 2; i++)
        if (bench_step(net, opt, x, y, false) != NN_OK || nn_ctx_sync(ctx) != NN_OK || nn_ctx_step_end(ctx) != NN_OK)
            die("eager step");
    if (nn_capture_begin(ctx) != NN_OK) die("capture begin");
    nn_status st = bench_step(net, opt, x, y, false);
    nn_ctx_step_end(ctx);
    nn_capture *captured = nn_capture_end(ctx);
    if (st != NN_OK || !captured) die("capturing the step");
    return captured;
}

int main(int argc, char **argv) {
    bench_model_args m = {.model = "resnet18-cifar", .device = "vulkan", .batch = 128, .size = 28, .channels = 1,
                          .classes = 10};
    int steps = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (bench_model_arg(&m, a, v)) continue;
        if (strcmp(a, "--steps") == 0) steps = atoi(v);
        else {
            fprintf(stderr, "usage: %s [--model M] [--device D] [--batch B] [--size S] [--channels C] [--classes K] "
                            "[--steps N]\n", argv[0]);
            return 2;
        }
    }
    const char *name = m.model, *device = m.device;
    const int batch = m.batch, size = m.size, channels = m.channels, classes = m.classes;
    if (batch < 1 || size < 1 || channels < 1 || classes < 1 || steps < 1) {
        fprintf(stderr, "bench_data_parallel: --batch, --size, --channels, --classes and --steps must be positive\n");
        return 2;
    }
    if (nn_dist_init() != NN_OK) die("nn_dist_init");
    if (strcmp(device, "vulkan") == 0 && !getenv("NN_ENGINE_VULKAN_DEVICE")) {
        char index[16];
        snprintf(index, sizeof index, "%d", nn_dist_local_rank());
        setenv("NN_ENGINE_VULKAN_DEVICE", index, 1);
    }
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .seed = 1});
    if (!ctx) die("context");
    /* Two copies of the model: an optimizer owns its parameters' flat buffers. */
    nn_module *net = bench_model(ctx, name, channels, classes, "bench_data_parallel"),
              *net2 = bench_model(ctx, name, channels, classes, "bench_data_parallel");
    if (!net || !net2) die(name);
    nn_tensor *params[512], *params2[512];
    const int count = nn_module_param_count(net);
    if (count > 512) die("too many parameters");
    int64_t numel = 0;
    for (int i = 0; i < count; i++) {
        params[i] = nn_module_param(net, i);
        params2[i] = nn_module_param(net2, i);
        numel += nn_tensor_numel(params[i]);
    }
    const nn_sgd_options sgd = {.lr = 0.01f, .momentum = 0.9f, .weight_decay = 5e-4f, .nesterov = true};
    nn_optimizer *alone = nn_sgd_new(params, count, &sgd), *averaged = nn_sgd_new(params2, count, &sgd);
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, (int64_t[]){batch, channels, size, size});
    nn_tensor *y = nn_tensor_new(ctx, NN_I32, 1, (int64_t[]){batch});
    int32_t *labels = malloc(sizeof *labels * (size_t)batch);
    double *times = malloc(sizeof(double) * (size_t)steps);
    for (int i = 0; i < batch; i++) labels[i] = (i * 7) % classes;
    if (!alone || !averaged || !x || !y || !labels || !times || nn_init_uniform(x, -1, 1) != NN_OK ||
        nn_tensor_write(y, labels, sizeof *labels * (size_t)batch) != NN_OK ||
        nn_dist_broadcast_module(net2, 0) != NN_OK || nn_dist_data_parallel(averaged) != NN_OK)
        die("setup");

    nn_capture *one = capture_step(ctx, net, alone, x, y);
    const double alone_ms = time_replays(one, ctx, times, steps);
    nn_capture_free(one);
    nn_capture *both = capture_step(ctx, net2, averaged, x, y);
    const double averaged_ms = time_replays(both, ctx, times, steps);
    nn_capture_free(both);

    /* The parts: the same bytes through the device, MPI and back. */
    nn_tensor *grads = nn_tensor_new(ctx, NN_F32, 1, &numel);
    nn_ctx *host_ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    nn_tensor *host_tensor = host_ctx ? nn_tensor_new(host_ctx, NN_F32, 1, &numel) : NULL;
    float *host = malloc(sizeof *host * (size_t)numel);
    if (!grads || !host_tensor || !host || nn_init_uniform(grads, -1, 1) != NN_OK) die("the parts' buffers");
    double parts[3];
    for (int part = 0; part < 3; part++) {
        for (int i = 0; i < steps + 2; i++) {
            nn_dist_barrier();
            const double t0 = now_ms();
            nn_status st = part == 0   ? nn_tensor_read(grads, host, sizeof *host * (size_t)numel)
                           : part == 1 ? nn_dist_all_reduce(host_tensor, NN_DIST_AVG)
                                       : nn_tensor_write(grads, host, sizeof *host * (size_t)numel);
            if (st != NN_OK || nn_ctx_sync(ctx) != NN_OK) die("a part");
            if (i >= 2) times[i - 2] = now_ms() - t0;
        }
        parts[part] = slowest(median(times, steps));
    }
    if (nn_dist_rank() == 0) {
        const int n = nn_dist_size();
        printf("nn-engine data parallel, %s batch %d per rank, %d ranks, %s, %lld gradient values (%.1f MB):\n"
               "  captured step alone %.2f ms (%.0f images/s per GPU), data-parallel %.2f ms (%.0f images/s over "
               "%d ranks, %.2fx one)\n"
               "  parts: device to host %.2f ms (%.1f GB/s), MPI all-reduce %.2f ms, host to device %.2f ms "
               "(%.1f GB/s)\n",
               name, batch, n, nn_ctx_device_name(ctx), (long long)numel, numel * 4e-6, alone_ms,
               batch / alone_ms * 1e3, averaged_ms, n * batch / averaged_ms * 1e3, n, alone_ms / averaged_ms * n,
               parts[0], numel * 4e-6 / parts[0], parts[1], parts[2], numel * 4e-6 / parts[2]);
    }
    free(host);
    free(times);
    free(labels);
    nn_tensor_free(host_tensor);
    nn_ctx_free(host_ctx);
    nn_tensor_free(grads);
    nn_tensor_free(x);
    nn_tensor_free(y);
    nn_optimizer_free(alone);
    nn_optimizer_free(averaged);
    nn_module_free(net);
    nn_module_free(net2);
    nn_ctx_free(ctx);
    nn_dist_finalize();
    return 0;
}
