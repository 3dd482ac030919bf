/* nn_ctx_memory_stats on both backends: a tensor's bytes show in `current`
 * while it lives and leave when it is freed; `peak` keeps the high mark. */
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

static void check_memory_stats(const char *device) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 1});
    CHECK_MSG(ctx, "%s: %s", device, nn_last_error());
    if (!ctx) return;
    uint64_t before, peak0, after, peak1, reserved, end, peak2;
    CHECK(nn_ctx_memory_stats(ctx, &before, &peak0, NULL) == NN_OK);
    int64_t shape[2] = {1001, 999}; /* 3,999,996 bytes */
    nn_tensor *t = nn_tensor_new(ctx, NN_F32, 2, shape);
    CHECK(t && nn_ctx_memory_stats(ctx, &after, &peak1, &reserved) == NN_OK);
    CHECK_MSG(after - before >= 3999996 && after - before < 3999996 + 4096, "%s: +%llu bytes", device,
              (unsigned long long)(after - before));
    CHECK(peak1 >= after && reserved >= after);
    nn_tensor_free(t);
    CHECK(nn_ctx_memory_stats(ctx, &end, &peak2, NULL) == NN_OK);
    CHECK_MSG(end == before, "%s: %llu bytes before, %llu after freeing", device, (unsigned long long)before,
              (unsigned long long)end);
    CHECK(peak2 == peak1);
    CHECK(nn_ctx_memory_stats(NULL, &end, NULL, NULL) == NN_ERR_ARGUMENT);
    nn_ctx_free(ctx);
}

TEST(memory_stats_cpu) { check_memory_stats("cpu"); }
TEST(memory_stats_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    check_memory_stats("vulkan");
}
