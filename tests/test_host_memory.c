/* Host memory used in place (nn_tensor_over_host, the backends'
 * import_host): what a device copy or kernel writes is in the host memory
 * when the context has synchronised, and what the host writes there is what
 * the device reads next; a piece not aligned is refused with the alignment
 * named; freeing the tensor leaves the memory to its owner. The
 * data-parallel optimizer's shared-memory route stands on this. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "nn_engine.h"
#include "platform/aligned_memory.h"
#include "test.h"

static const char *devices[] = {"cpu", "vulkan"};

TEST(host_memory_in_place_on_every_backend) {
    for (int d = 0; d < 2; d++) {
        if (d == 1 && getenv("NN_ENGINE_TEST_VULKAN") && strcmp(getenv("NN_ENGINE_TEST_VULKAN"), "0") == 0) break;
        nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = devices[d], .threads = 1, .seed = 7});
        CHECK_MSG(ctx != NULL, "%s: %s", devices[d], nn_last_error());
        if (!ctx) continue;
        const size_t align = nn_ctx_host_import_alignment(ctx);
        CHECK_MSG(align > 0, "%s cannot use host memory in place", devices[d]);
        if (align == 0) {
            nn_ctx_free(ctx);
            continue;
        }
        /* 1,031 values (prime) in a piece rounded up to the alignment. */
        const int64_t n = 1031;
        const size_t bytes = ((size_t)n * 4 + align - 1) / align * align;
        float *host = nn_aligned_alloc(align, bytes);
        CHECK(host != NULL);
        for (int64_t i = 0; i < n; i++) host[i] = (float)i * 0.5f - 7.0f;
        nn_tensor *shared = nn_tensor_over_host(ctx, host, (int64_t)(bytes / 4));
        CHECK_MSG(shared != NULL, "%s: %s", devices[d], nn_last_error());

        /* The device reads what the host wrote: y = x + shared. */
        nn_tensor *x = nn_tensor_new(ctx, NN_F32, 1, &n);
        CHECK(nn_init_uniform(x, -1, 1) == NN_OK);
        float *xs = malloc(sizeof *xs * (size_t)n), *got = malloc(sizeof *got * (size_t)n);
        CHECK(nn_tensor_read(x, xs, sizeof *xs * (size_t)n) == NN_OK);
        nn_tensor *view = nn_tensor_view_at(shared, 0, 1, &n);
        nn_tensor *y = nn_add(x, view);
        CHECK(y && nn_tensor_read(y, got, sizeof *got * (size_t)n) == NN_OK);
        for (int64_t i = 0; i < n; i++) CHECK_CLOSE(got[i], (double)xs[i] + (double)(i * 0.5 - 7.0), 1e-5);

        /* A device copy into it lands in the host memory. */
        CHECK(nn_ctx_copy(ctx, nn_tensor_ref(view), nn_tensor_ref(x), sizeof(float) * (size_t)n) == NN_OK);
        CHECK(nn_ctx_sync(ctx) == NN_OK);
        for (int64_t i = 0; i < n; i++) CHECK(host[i] == xs[i]);

        /* Host changes after that are seen by the next kernel. */
        for (int64_t i = 0; i < n; i++) host[i] = 3.0f;
        nn_tensor *z = nn_scale(view, 2.0f);
        CHECK(z && nn_tensor_read(z, got, sizeof *got * (size_t)n) == NN_OK);
        for (int64_t i = 0; i < n; i++) CHECK(got[i] == 6.0f);

        /* Not aligned: refused, naming the alignment. */
        {
            nn_tensor *bad = nn_tensor_over_host(ctx, (char *)host + 4, (int64_t)(bytes / 4) - 1);
            CHECK(bad == NULL);
            if (bad == NULL) CHECK_MSG(strstr(nn_last_error(), "aligned") != NULL, "%s", nn_last_error());
            nn_tensor_free(bad);
        }
        nn_tensor_free(z);
        nn_tensor_free(y);
        nn_tensor_free(view);
        nn_tensor_free(x);
        nn_tensor_free(shared);
        host[0] = 1.0f; /* still the caller's */
        nn_ctx_free(ctx);
        nn_aligned_free(host);
        free(xs);
        free(got);
    }
}
