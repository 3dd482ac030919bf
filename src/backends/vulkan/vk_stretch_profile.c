/* GPU time per stretch of a captured step, for finding where a replayed
 * step's time goes: with NN_ENGINE_VULKAN_PROFILE=1 a plan's command buffer
 * writes a timestamp after each of its barriers and at its end, and each
 * replay is submitted alone and waited for, so its stamps can be read
 * before the next replay overwrites them. A stretch's time runs from the
 * barrier before it to the barrier after it: its kernels' launches, their
 * work (together, as in an unprofiled replay) and the drain. When the plan
 * is freed, a table of the stretches (their mean time and their commands)
 * goes to stderr. Waiting after each replay makes an epoch slower, not the
 * stretches: their times are the GPU's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "vk_backend.h"

#define STAMPS 2048   /* a step of up to 2047 stretches (ResNet-50's has about 1,000) is timed whole; the table says what was not */
#define NAMES 192     /* the names of a stretch's commands, cut short past this */

struct vk_stretches {
    VkQueryPool pool;
    uint32_t stamps;          /* written by each replay */
    uint32_t untimed;         /* barriers past STAMPS: the stretches after them are not timed */
    char names[STAMPS][NAMES];
    double ns[STAMPS];
    int64_t samples;
    double period_ns;
};

nn_status vk_stretches_begin(vk_backend *vk, vk_plan *plan) {
    if (!vk->profile) return NN_OK;
    vk_stretches *s = calloc(1, sizeof *s);
    if (!s) return nn_set_error(NN_ERR_MEMORY, "vulkan profile: out of host memory");
    VkQueryPoolCreateInfo info = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                  .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = STAMPS};
    VkResult r = vk->fn.vkCreateQueryPool(vk->device, &info, NULL, &s->pool);
    if (r != VK_SUCCESS) {
        free(s);
        return nn_set_error(NN_ERR_BACKEND, "vulkan profile: vkCreateQueryPool failed (%s)", nn_vk_result_name(r));
    }
    s->period_ns = vk->phys->props.limits.timestampPeriod;
    plan->stretches = s;
    vk->fn.vkCmdResetQueryPool(plan->target.cmd, s->pool, 0, STAMPS);
    return NN_OK;
}

/* After a barrier of the plan being recorded, and at its end: the time the
 * work before it finished. */
void vk_stretches_stamp(vk_backend *vk, VkCommandBuffer cmd) {
    vk_stretches *s = vk->compiling ? vk->compiling->stretches : NULL;
    if (!s) return;
    if (s->stamps >= STAMPS) {
        s->untimed++;
        return;
    }
    vk->fn.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s->pool, s->stamps++);
}

/* A command recorded into the current stretch: its name in the table. */
void vk_stretches_name(vk_backend *vk, const char *label) {
    vk_stretches *s = vk->compiling ? vk->compiling->stretches : NULL;
    if (!s || s->stamps == 0 || s->stamps > STAMPS - 1) return;
    char *names = s->names[s->stamps - 1];
    size_t used = strlen(names);
    snprintf(names + used, NAMES - used, "%s%s", used ? "; " : "", label[0] ? label : "other");
}

/* After a replay has finished: its stamps into the sums. */
void vk_stretches_sample(vk_backend *vk, vk_plan *plan) {
    vk_stretches *s = plan->stretches;
    if (!s || s->stamps < 2) return;
    uint64_t stamps[STAMPS];
    VkResult r = vk->fn.vkGetQueryPoolResults(vk->device, s->pool, 0, s->stamps, sizeof stamps, stamps,
                                              sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) return;
    for (uint32_t i = 0; i + 1 < s->stamps; i++) s->ns[i] += (double)(stamps[i + 1] - stamps[i]) * s->period_ns;
    s->samples++;
}

void vk_stretches_free(vk_backend *vk, vk_plan *plan) {
    vk_stretches *s = plan->stretches;
    if (!s) return;
    if (s->samples > 0) {
        double total = 0;
        for (uint32_t i = 0; i + 1 < s->stamps; i++) total += s->ns[i];
        fprintf(stderr, "nn-engine Vulkan profile: a captured step, %u stretches, %.2f us a replay (mean of %lld)\n",
                s->stamps - 1, total * 1e-3 / (double)s->samples, (long long)s->samples);
        if (s->untimed)
            fprintf(stderr, "  (and %u stretches more, not timed: the profile stamps %d)\n", s->untimed, STAMPS);
        for (uint32_t i = 0; i + 1 < s->stamps; i++)
            fprintf(stderr, "  stretch %2u %8.2f us  %s\n", i + 1, s->ns[i] * 1e-3 / (double)s->samples, s->names[i]);
    }
    vk->fn.vkDestroyQueryPool(vk->device, s->pool, NULL);
    free(s);
    plan->stretches = NULL;
}
