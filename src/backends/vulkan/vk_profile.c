/* GPU time per kernel, for finding where a step's time goes: with
 * NN_ENGINE_VULKAN_PROFILE=1 every eager command is fenced by a full barrier
 * (so commands do not overlap and each time is its own) and bracketed by
 * timestamps; when the backend closes, a table of the kernels (GEMMs by
 * shape) with their count, total and mean time goes to stderr. Captured
 * steps are timed per stretch instead, as they run (vk_stretch_profile.c);
 * --no-capture times their kernels one by one. The barriers make the total
 * larger than an unprofiled run's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "vk_backend.h"

#define SLOTS (VK_PROFILE_MAX_COMMANDS * 2)

typedef struct profile_entry {
    char label[VK_PROFILE_LABEL];
    double ns;
    int64_t count;
} profile_entry;

struct vk_profile {
    VkQueryPool pools[VK_FRAMES];
    char labels[VK_FRAMES][VK_PROFILE_MAX_COMMANDS][VK_PROFILE_LABEL];
    int used[VK_FRAMES];
    double period_ns;
    profile_entry *entries;
    int entry_count, entry_capacity;
};

nn_status vk_profile_init(vk_backend *vk) {
    const char *trace = getenv("NN_ENGINE_VULKAN_TRACE");
    vk->trace = trace && strcmp(trace, "1") == 0;
    const char *skip = getenv("NN_ENGINE_VULKAN_SKIP");
    snprintf(vk->skip, sizeof vk->skip, "%s", skip ? skip : "");
    if (vk->skip[0])
        fprintf(stderr, "nn-engine: NN_ENGINE_VULKAN_SKIP=%s: those commands do nothing; results are wrong\n",
                vk->skip);
    vk->labels = vk->trace || vk->skip[0];
    const char *env = getenv("NN_ENGINE_VULKAN_PROFILE");
    if (!env || strcmp(env, "1") != 0) return NN_OK;
    vk->labels = true;
    vk_profile *p = calloc(1, sizeof *p);
    if (!p) return nn_set_error(NN_ERR_MEMORY, "vulkan profile: out of host memory");
    p->period_ns = vk->phys->props.limits.timestampPeriod;
    for (int i = 0; i < VK_FRAMES; i++) {
        VkQueryPoolCreateInfo info = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                      .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = SLOTS};
        VkResult r = vk->fn.vkCreateQueryPool(vk->device, &info, NULL, &p->pools[i]);
        if (r != VK_SUCCESS) {
            vk->profile = p;
            return nn_set_error(NN_ERR_BACKEND, "vulkan profile: vkCreateQueryPool failed (%s)", nn_vk_result_name(r));
        }
    }
    vk->profile = p;
    fprintf(stderr, "nn-engine: NN_ENGINE_VULKAN_PROFILE=1: timing every eager command (serialised)\n");
    return NN_OK;
}

void vk_profile_frame_begin(vk_backend *vk, int frame, VkCommandBuffer cmd) {
    vk_profile *p = vk->profile;
    if (!p) return;
    vk->fn.vkCmdResetQueryPool(cmd, p->pools[frame], 0, SLOTS);
    p->used[frame] = 0;
}

void vk_profile_command_begin(vk_backend *vk, int frame, VkCommandBuffer cmd) {
    vk_profile *p = vk->profile;
    if (!p || p->used[frame] >= VK_PROFILE_MAX_COMMANDS) return;
    int slot = p->used[frame];
    snprintf(p->labels[frame][slot], VK_PROFILE_LABEL, "%s", vk->profile_label[0] ? vk->profile_label : "other");
    vk->fn.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, p->pools[frame], (uint32_t)(2 * slot));
}

void vk_profile_command_end(vk_backend *vk, int frame, VkCommandBuffer cmd) {
    vk_profile *p = vk->profile;
    vk->profile_label[0] = '\0';
    if (!p || p->used[frame] >= VK_PROFILE_MAX_COMMANDS) return;
    int slot = p->used[frame]++;
    vk->fn.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->pools[frame], (uint32_t)(2 * slot + 1));
}

static void add(vk_profile *p, const char *label, double ns) {
    for (int i = 0; i < p->entry_count; i++)
        if (strcmp(p->entries[i].label, label) == 0) {
            p->entries[i].ns += ns;
            p->entries[i].count++;
            return;
        }
    if (p->entry_count == p->entry_capacity) {
        int capacity = p->entry_capacity ? p->entry_capacity * 2 : 64;
        profile_entry *grown = realloc(p->entries, sizeof *grown * (size_t)capacity);
        if (!grown) return;
        p->entries = grown;
        p->entry_capacity = capacity;
    }
    profile_entry *e = &p->entries[p->entry_count++];
    snprintf(e->label, sizeof e->label, "%s", label);
    e->ns = ns;
    e->count = 1;
}

void vk_profile_frame_done(vk_backend *vk, int frame) {
    vk_profile *p = vk->profile;
    if (!p || p->used[frame] == 0) return;
    uint64_t stamps[SLOTS];
    VkResult r = vk->fn.vkGetQueryPoolResults(vk->device, p->pools[frame], 0, (uint32_t)(2 * p->used[frame]),
                                              sizeof stamps, stamps, sizeof(uint64_t),
                                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r == VK_SUCCESS)
        for (int i = 0; i < p->used[frame]; i++)
            add(p, p->labels[frame][i], (double)(stamps[2 * i + 1] - stamps[2 * i]) * p->period_ns);
    p->used[frame] = 0;
}

static int by_time(const void *a, const void *b) {
    double x = ((const profile_entry *)a)->ns, y = ((const profile_entry *)b)->ns;
    return x < y ? 1 : x > y ? -1 : 0;
}

void vk_profile_destroy(vk_backend *vk) {
    vk_profile *p = vk->profile;
    if (!p) return;
    double total = 0;
    for (int i = 0; i < p->entry_count; i++) total += p->entries[i].ns;
    qsort(p->entries, (size_t)p->entry_count, sizeof *p->entries, by_time);
    fprintf(stderr, "nn-engine Vulkan profile: %.3f ms of GPU time in %d kinds of command\n", total * 1e-6,
            p->entry_count);
    fprintf(stderr, "  %-52s %10s %12s %10s %6s\n", "command", "count", "total ms", "mean us", "share");
    for (int i = 0; i < p->entry_count; i++) {
        profile_entry *e = &p->entries[i];
        fprintf(stderr, "  %-52s %10lld %12.3f %10.2f %5.1f%%\n", e->label, (long long)e->count, e->ns * 1e-6,
                e->ns * 1e-3 / (double)e->count, total > 0 ? 100.0 * e->ns / total : 0.0);
    }
    for (int i = 0; i < VK_FRAMES; i++)
        if (p->pools[i]) vk->fn.vkDestroyQueryPool(vk->device, p->pools[i], NULL);
    free(p->entries);
    free(p);
    vk->profile = NULL;
}

void vk_pipeline_stats_print(vk_backend *vk, VkPipeline pipeline, const char *shader, const uint32_t *constants,
                             uint32_t count) {
    if (!vk->pipeline_statistics) return; /* a compute pipeline has one executable, index 0 */
    char line[1024];
    int at = snprintf(line, sizeof line, "nn-engine pipeline %s", shader);
    for (uint32_t i = 0; i < count && at < (int)sizeof line; i++)
        at += snprintf(line + at, sizeof line - (size_t)at, "%s%u", i ? "," : " [", constants[i]);
    if (count && at < (int)sizeof line) at += snprintf(line + at, sizeof line - (size_t)at, "]");
    VkPipelineExecutableInfoKHR exec = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                        .pipeline = pipeline, .executableIndex = 0};
    VkPipelineExecutableStatisticKHR stats[32];
    uint32_t n = 32;
    for (uint32_t i = 0; i < n; i++) stats[i] = (VkPipelineExecutableStatisticKHR){
        .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
    VkResult r = vk->pipeline_statistics(vk->device, &exec, &n, stats);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) n = 0;
    for (uint32_t i = 0; i < n && at < (int)sizeof line; i++) {
        const VkPipelineExecutableStatisticKHR *s = &stats[i];
        at += snprintf(line + at, sizeof line - (size_t)at, "; %s=", s->name);
        if (at >= (int)sizeof line) break;
        switch (s->format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
            at += snprintf(line + at, sizeof line - (size_t)at, "%s", s->value.b32 ? "yes" : "no");
            break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
            at += snprintf(line + at, sizeof line - (size_t)at, "%lld", (long long)s->value.i64);
            break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
            at += snprintf(line + at, sizeof line - (size_t)at, "%llu", (unsigned long long)s->value.u64);
            break;
        default: at += snprintf(line + at, sizeof line - (size_t)at, "%g", s->value.f64); break;
        }
    }
    fprintf(stderr, "%s\n", line);
}
