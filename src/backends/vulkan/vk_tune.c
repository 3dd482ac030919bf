/* A kernel's variant chosen by measuring the candidates on this device, as
 * cuDNN's benchmark mode does (vk_tune_choose): the implicit GEMM's tiles
 * for each convolution shape (vk_conv_gemm.c), and the tiled fp32 GEMM's
 * for each large product shape (vk_gemm.c: Winograd's batched products,
 * among others). The candidates run on scratch outputs in a
 * command buffer of their own, each a few times after a warm-up, timed by
 * timestamps; the fastest is kept for the backend's life and written to a
 * cache file named by the device and its driver, so the next process reads
 * it instead of measuring.
 *
 * NN_ENGINE_VULKAN_TUNE (read when the backend opens):
 *   capture (the default)  measure while a step is captured (the kernels
 *                          replayed many times); eager kernels take a
 *                          cached choice or the heuristic;
 *   always                 measure eager kernels too;
 *   off                    the heuristic everywhere, no cache file.
 * NN_ENGINE_VULKAN_TUNE_CACHE=FILE puts the cache there ("off": none);
 * otherwise it lives in $XDG_CACHE_HOME/nn-engine (or ~/.cache/nn-engine,
 * %LOCALAPPDATA%\nn-engine on Windows). A file that does not parse is
 * ignored, said once, and rewritten. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "platform/files.h"
#include "vk_backend.h"

#define ROUNDS 3 /* the first a warm-up; the fastest of the others counts */
#define REPEATS 3
#define MAX_QUERIES (2 * ROUNDS * VK_TUNE_MAX_CANDIDATES)
#define NAME_CHARS 24

typedef struct tune_entry {
    uint32_t key[VK_TUNE_KEY_WORDS];
    char choice[NAME_CHARS];
} tune_entry;

typedef struct vk_tuner {
    vk_tune_mode mode;
    bool cache_read;
    char path[1024]; /* empty: no cache file */
    tune_entry *entries;
    int count, capacity;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool queries;
    vk_target target;
    bool timing_ready;
    int measured; /* kernel shapes measured, for the closing note */
} vk_tuner;

#ifdef _WIN32
#define PATH_SEPARATOR '\\'
#else
#define PATH_SEPARATOR '/'
#endif

static void key_hex(const uint32_t *key, char *out) {
    for (int i = 0; i < VK_TUNE_KEY_WORDS; i++) snprintf(out + 8 * i, 9, "%08x", key[i]);
}

static bool parse_key(const char *text, uint32_t *key) {
    for (int i = 0; i < VK_TUNE_KEY_WORDS; i++) {
        char word[9];
        memcpy(word, text + 8 * i, 8);
        word[8] = '\0';
        char *end;
        errno = 0;
        const unsigned long v = strtoul(word, &end, 16);
        if (errno || end != word + 8) return false;
        key[i] = (uint32_t)v;
    }
    return true;
}

/* The default cache file: the device's PCI id and driver version and its
 * pipeline-cache UUID (which changes with the driver build) in the name. */
static void default_path(const vk_backend *vk, char *out, size_t size) {
    out[0] = '\0';
    const char *base = getenv("XDG_CACHE_HOME");
    char folder[900];
#ifdef _WIN32
    if (!base || !*base) base = getenv("LOCALAPPDATA");
    if (!base || !*base) return;
    snprintf(folder, sizeof folder, "%s\\nn-engine", base);
#else
    if (base && *base) snprintf(folder, sizeof folder, "%s/nn-engine", base);
    else if ((base = getenv("HOME")) && *base) snprintf(folder, sizeof folder, "%s/.cache/nn-engine", base);
    else return;
#endif
    const VkPhysicalDeviceProperties *p = &vk->phys->props;
    char uuid[2 * VK_UUID_SIZE + 1];
    for (int i = 0; i < (int)VK_UUID_SIZE; i++) snprintf(uuid + 2 * i, 3, "%02x", p->pipelineCacheUUID[i]);
    snprintf(out, size, "%s%cvulkan-tiles-%04x-%04x-%08x-%s.txt", folder, PATH_SEPARATOR, p->vendorID, p->deviceID,
             p->driverVersion, uuid);
}

nn_status vk_tune_init(vk_backend *vk) {
    vk_tuner *t = calloc(1, sizeof *t);
    if (!t) return nn_set_error(NN_ERR_MEMORY, "vulkan: out of host memory");
    vk->tuner = t;
    const char *mode = getenv("NN_ENGINE_VULKAN_TUNE");
    t->mode = VK_TUNE_CAPTURE;
    if (mode && *mode) {
        if (!strcmp(mode, "off") || !strcmp(mode, "0")) t->mode = VK_TUNE_OFF;
        else if (!strcmp(mode, "always")) t->mode = VK_TUNE_ALWAYS;
        else if (strcmp(mode, "capture") != 0)
            fprintf(stderr, "nn-engine: NN_ENGINE_VULKAN_TUNE=%s is not off, capture or always; measuring tiles "
                    "when a step is captured\n", mode);
    }
    const char *file = getenv("NN_ENGINE_VULKAN_TUNE_CACHE");
    if (t->mode == VK_TUNE_OFF || (file && !strcmp(file, "off"))) t->path[0] = '\0';
    else if (file && *file) snprintf(t->path, sizeof t->path, "%s", file);
    else default_path(vk, t->path, sizeof t->path);
    return NN_OK;
}

static nn_status remember(vk_tuner *t, const uint32_t *key, const char *choice) {
    if (t->count == t->capacity) {
        const int capacity = t->capacity ? 2 * t->capacity : 64;
        tune_entry *grown = realloc(t->entries, sizeof *grown * (size_t)capacity);
        if (!grown) return nn_set_error(NN_ERR_MEMORY, "vulkan: out of host memory");
        t->entries = grown;
        t->capacity = capacity;
    }
    tune_entry *e = &t->entries[t->count++];
    memcpy(e->key, key, sizeof e->key);
    snprintf(e->choice, sizeof e->choice, "%s", choice);
    return NN_OK;
}

static const tune_entry *find(const vk_tuner *t, const uint32_t *key) {
    for (int i = t->count - 1; i >= 0; i--)
        if (!memcmp(t->entries[i].key, key, sizeof t->entries[i].key)) return &t->entries[i];
    return NULL;
}

/* Lines "<key in hex> <choice>"; '#' starts a comment. A line that does
 * not parse makes the whole file suspect: it is ignored and rewritten. */
static void read_cache(vk_tuner *t) {
    t->cache_read = true;
    if (!t->path[0]) return;
    FILE *f = nn_file_fopen(t->path, "r");
    if (!f) return;
    char line[512];
    int number = 0;
    bool bad = false;
    while (!bad && fgets(line, sizeof line, f)) {
        number++;
        if (line[0] == '#' || line[0] == '\n') continue;
        uint32_t key[VK_TUNE_KEY_WORDS];
        char choice[NAME_CHARS];
        const size_t hex = 8 * VK_TUNE_KEY_WORDS;
        bad = strlen(line) < hex + 2 || line[hex] != ' ' || !parse_key(line, key) ||
              sscanf(line + hex + 1, "%23s", choice) != 1 || remember(t, key, choice) != NN_OK;
    }
    fclose(f);
    if (!bad) return;
    fprintf(stderr, "nn-engine: the tile cache %s does not parse at line %d; measuring again and rewriting it\n",
            t->path, number);
    t->count = 0;
    if (nn_file_remove(t->path) != 0) t->path[0] = '\0';
}

static void append_cache(vk_backend *vk, vk_tuner *t, const uint32_t *key, const char *choice) {
    if (!t->path[0]) return;
    nn_file_status st;
    const bool fresh = nn_file_stat(t->path, &st) != 0;
    if (fresh) { /* its folder, once (~/.cache may not exist yet); the open below says if it cannot be made */
        char folder[1024];
        snprintf(folder, sizeof folder, "%s", t->path);
        char *last = (char *)nn_file_last_separator(folder);
        if (last && last != folder) {
            *last = '\0';
            nn_file_make_folders(folder);
        }
    }
    FILE *f = nn_file_fopen(t->path, "a");
    if (!f) {
        fprintf(stderr, "nn-engine: cannot write the tile cache %s (%s); tiles are measured again next time\n",
                t->path, strerror(errno));
        t->path[0] = '\0';
        return;
    }
    if (fresh)
        fprintf(f, "# nn-engine: kernel variants measured on %s, driver %u (NN_ENGINE_VULKAN_TUNE); delete the "
                "file to measure again\n", vk->phys->props.deviceName, vk->phys->props.driverVersion);
    char hex[8 * VK_TUNE_KEY_WORDS + 1];
    key_hex(key, hex);
    fprintf(f, "%s %s\n", hex, choice);
    fclose(f);
}

static nn_status timing_init(vk_backend *vk, vk_tuner *t) {
    if (t->timing_ready) return NN_OK;
    VkCommandPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                    .queueFamilyIndex = vk->phys->queue_family};
    VkResult r = vk->fn.vkCreateCommandPool(vk->device, &pool, NULL, &t->pool);
    if (r == VK_SUCCESS) {
        VkCommandBufferAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                             .commandPool = t->pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                             .commandBufferCount = 1};
        r = vk->fn.vkAllocateCommandBuffers(vk->device, &alloc, &t->cmd);
    }
    if (r == VK_SUCCESS) {
        VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        r = vk->fn.vkCreateFence(vk->device, &fence, NULL, &t->fence);
    }
    if (r == VK_SUCCESS) {
        VkQueryPoolCreateInfo info = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                      .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = MAX_QUERIES};
        r = vk->fn.vkCreateQueryPool(vk->device, &info, NULL, &t->queries);
    }
    if (r != VK_SUCCESS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: creating the tile tuner's command buffer failed (%s)",
                            nn_vk_result_name(r));
    t->target.cmd = t->cmd;
    t->timing_ready = true;
    return NN_OK;
}

/* Every candidate timed: ROUNDS rounds of each in turn, REPEATS runs each,
 * a barrier and a timestamp around each candidate's runs. ms[c] is the
 * fastest round's time per run. */
static nn_status measure(vk_backend *vk, vk_tuner *t, int count, vk_tune_record_fn record, void *ctx, double *ms) {
    NN_TRY(timing_init(vk, t));
    /* Everything recorded before goes first: the scratch outputs may reuse memory those commands read. */
    NN_TRY(vk_submit_pending(vk));
    vk->fn.vkResetCommandPool(vk->device, t->pool, 0);
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = vk->fn.vkBeginCommandBuffer(t->cmd, &begin);
    if (r != VK_SUCCESS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: vkBeginCommandBuffer failed (%s)", nn_vk_result_name(r));
    vk->fn.vkCmdResetQueryPool(t->cmd, t->queries, 0, (uint32_t)(2 * ROUNDS * count));
    vk_target_begin(vk, &t->target);
    vk->tuning = &t->target;
    nn_status st = NN_OK;
    for (int round = 0; round < ROUNDS && st == NN_OK; round++)
        for (int c = 0; c < count && st == NN_OK; c++) {
            const uint32_t q = (uint32_t)(2 * (round * count + c));
            vk_target_barrier(vk, &t->target);
            vk->fn.vkCmdWriteTimestamp(t->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, t->queries, q);
            for (int i = 0; i < REPEATS && st == NN_OK; i++) st = record(vk, ctx, c);
            vk_target_barrier(vk, &t->target);
            vk->fn.vkCmdWriteTimestamp(t->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, t->queries, q + 1);
        }
    vk->tuning = NULL;
    r = vk->fn.vkEndCommandBuffer(t->cmd);
    NN_TRY(st);
    if (r == VK_SUCCESS) {
        VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                               .pCommandBuffers = &t->cmd};
        vk->fn.vkResetFences(vk->device, 1, &t->fence);
        r = vk->fn.vkQueueSubmit(vk->queue, 1, &submit, t->fence);
    }
    if (r == VK_SUCCESS) r = vk->fn.vkWaitForFences(vk->device, 1, &t->fence, VK_TRUE, UINT64_MAX);
    uint64_t stamps[MAX_QUERIES];
    if (r == VK_SUCCESS)
        r = vk->fn.vkGetQueryPoolResults(vk->device, t->queries, 0, (uint32_t)(2 * ROUNDS * count), sizeof stamps,
                                         stamps, sizeof stamps[0], VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: timing the tile candidates failed (%s)", nn_vk_result_name(r));
    const double period_ms = vk->phys->props.limits.timestampPeriod * 1e-6;
    for (int c = 0; c < count; c++) {
        ms[c] = -1.0;
        for (int round = 1; round < ROUNDS; round++) {
            const int q = 2 * (round * count + c);
            const double run = (double)(stamps[q + 1] - stamps[q]) * period_ms / REPEATS;
            if (ms[c] < 0 || run < ms[c]) ms[c] = run;
        }
    }
    return NN_OK;
}

/* Whether this queue can time kernels (timestamps on compute queues). */
static bool can_time(const vk_backend *vk) {
    return vk->phys->props.limits.timestampComputeAndGraphics && vk->phys->props.limits.timestampPeriod > 0;
}

/* The cached choice for the request's key among its candidates, or -1. */
static int cached(vk_tuner *t, const vk_tune_request *req) {
    if (!t->cache_read) read_cache(t);
    const tune_entry *known = find(t, req->key);
    for (int c = 0; known && c < req->count; c++)
        if (!strcmp(known->choice, req->names[c])) return c;
    return -1;
}

bool vk_tune_will_measure(vk_backend *vk, const vk_tune_request *req) {
    vk_tuner *t = vk->tuner;
    if (!t || t->mode == VK_TUNE_OFF || req->count < 2 || req->count > VK_TUNE_MAX_CANDIDATES) return false;
    if (cached(t, req) >= 0) return false;
    return (t->mode == VK_TUNE_ALWAYS || vk->compiling) && can_time(vk);
}

nn_status vk_tune_choose(vk_backend *vk, const vk_tune_request *req, int *choice, vk_tune_source *source) {
    vk_tuner *t = vk->tuner;
    *choice = req->heuristic;
    *source = VK_TUNE_FROM_HEURISTIC;
    if (!t || t->mode == VK_TUNE_OFF || req->count < 2) return NN_OK;
    const int known = cached(t, req);
    if (known >= 0) {
        *choice = known;
        *source = VK_TUNE_FROM_CACHE;
        return NN_OK;
    }
    if (!vk_tune_will_measure(vk, req)) return NN_OK;
    double ms[VK_TUNE_MAX_CANDIDATES];
    NN_TRY(measure(vk, t, req->count, req->record, req->ctx, ms));
    int best = req->heuristic;
    for (int c = 0; c < req->count; c++)
        if (ms[c] >= 0 && ms[c] < ms[best]) best = c;
    t->measured++;
    NN_TRY(remember(t, req->key, req->names[best]));
    append_cache(vk, t, req->key, req->names[best]);
    *choice = best;
    *source = VK_TUNE_MEASURED;
    return NN_OK;
}

const char *vk_tune_source_name(vk_tune_source source) {
    return source == VK_TUNE_MEASURED ? "measured" : source == VK_TUNE_FROM_CACHE ? "cached" : "heuristic";
}

void vk_tune_destroy(vk_backend *vk) {
    vk_tuner *t = vk->tuner;
    if (!t) return;
    if (t->measured)
        fprintf(stderr, "nn-engine: measured the tiles of %d kernel shapes (NN_ENGINE_VULKAN_TUNE)%s%s\n",
                t->measured, t->path[0] ? "; remembered in " : "", t->path);
    if (t->queries) vk->fn.vkDestroyQueryPool(vk->device, t->queries, NULL);
    if (t->fence) vk->fn.vkDestroyFence(vk->device, t->fence, NULL);
    if (t->pool) vk->fn.vkDestroyCommandPool(vk->device, t->pool, NULL);
    vk_hazards_free(&t->target.hazards);
    free(t->entries);
    free(t);
    vk->tuner = NULL;
}
