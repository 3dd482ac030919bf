/* Attention without the score matrix on Vulkan (shaders/attention_*.comp):
 * workgroups of 64 rows (32 for heads wider than 64) by batch entry, the
 * pipeline variant chosen by the widest of E and Ev (attention_tiles.glsl's
 * EXTRA_CHUNKS: up to 64, 128, 192 or 256 columns). fp16 attention on a
 * device with matrix cores runs attention_*_coopmat.comp (64 rows a
 * workgroup, heads up to 128 wide); where those kernels cannot take a case
 * (wider heads, a library built without their shaders) the fp32 kernels
 * run it, unrounded: within the fp16 contract of nn_attention_params.
 * NN_ENGINE_VULKAN_ATTENTION=fp32 forces the fp32 kernels, =forward the
 * matrix cores for the forward only (for timing). */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "vk_backend.h"

enum { CHUNK = 64, MAX_CHUNKS = 4 };

static vk_pipeline_id on_cores(vk_pipeline_id pipe) {
    const char *force = getenv("NN_ENGINE_VULKAN_ATTENTION");
    if (force && strcmp(force, "fp32") == 0) return VK_PIPE_COUNT;
    if (pipe == VK_PIPE_ATTENTION_FORWARD) return VK_PIPE_ATTENTION_FORWARD_COOPMAT;
    if (force && strcmp(force, "forward") == 0) return VK_PIPE_COUNT;
    return pipe == VK_PIPE_ATTENTION_BACKWARD_QUERY ? VK_PIPE_ATTENTION_BACKWARD_QUERY_COOPMAT
                                                    : VK_PIPE_ATTENTION_BACKWARD_KEYS_COOPMAT;
}
static const char *shader_of(vk_pipeline_id pipe) {
    return pipe == VK_PIPE_ATTENTION_FORWARD_COOPMAT          ? "attention_forward_coopmat"
           : pipe == VK_PIPE_ATTENTION_BACKWARD_QUERY_COOPMAT ? "attention_backward_query_coopmat"
                                                              : "attention_backward_keys_coopmat";
}

enum { COOPMAT_WIDEST = 128, COOPMAT_QUERIES = 64, COOPMAT_SHARED = 46592 /* bytes: the keys' kernel at 64 columns */ };

static nn_status attention(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_attention_params *p,
                           const nn_buffer_ref *a, int64_t rows) {
    const char *name = nn_kernel_name(kernel);
    if (p->groups < 0 || p->heads <= 0 || p->queries <= 0 || p->keys <= 0 || p->head_dim <= 0 || p->value_dim <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: groups=%d heads=%d L=%d S=%d E=%d Ev=%d", name, p->groups,
                            p->heads, p->queries, p->keys, p->head_dim, p->value_dim);
    const int32_t widest = p->head_dim > p->value_dim ? p->head_dim : p->value_dim;
    if (widest > CHUNK * MAX_CHUNKS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: head size %d; the kernel takes up to %d", name, widest,
                            CHUNK * MAX_CHUNKS);
    const vk_pipeline_id cores_pipe = vk_on_matrix_cores(vk, p->precision) ? on_cores(pipe) : VK_PIPE_COUNT;
    const bool cores = cores_pipe != VK_PIPE_COUNT && widest <= COOPMAT_WIDEST && vk_shader_built(shader_of(cores_pipe)) &&
                       vk->phys->props.limits.maxComputeSharedMemorySize >= COOPMAT_SHARED;
    if (cores) pipe = cores_pipe;
    /* the shader's OWN, or BQ */
    const int64_t per_group = cores ? COOPMAT_QUERIES : widest > CHUNK ? 32 : 64;
    const int64_t batch = (int64_t)p->groups * p->heads, blocks = (rows + per_group - 1) / per_group;
    /* the batch over y, and z where it has more entries than y takes */
    const int64_t layers = (batch + VK_MAX_GROUPS - 1) / VK_MAX_GROUPS;
    const int64_t per_layer = batch < VK_MAX_GROUPS ? batch : VK_MAX_GROUPS;
    if (blocks > VK_MAX_GROUPS || layers > VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: %lld batch entries of %lld rows; the kernel takes up to "
                            "%u blocks of rows", name, (long long)batch, (long long)rows, VK_MAX_GROUPS);
    NN_TRY(vk_fits32(kernel, "elements", batch * (int64_t)p->queries * widest));
    NN_TRY(vk_fits32(kernel, "elements", batch * (int64_t)p->keys * widest));
    const int64_t longest = p->queries > p->keys ? p->queries : p->keys;
    NN_TRY(vk_fits32(kernel, "packed rows' elements", (int64_t)p->groups * longest * p->qkv_row));
    NN_TRY(vk_fits32(kernel, "merged rows' elements", (int64_t)p->groups * p->queries * p->out_row));
    if (batch == 0) return NN_OK;
    VK_PUSH(ATTENTION) push = {.groups = p->groups, .heads = p->heads, .queries = p->queries, .keys = p->keys,
                               .head_dim = p->head_dim, .value_dim = p->value_dim, .causal = p->causal,
                               .accumulate = p->accumulate, .accumulate_v = p->accumulate_v, .scale = p->scale,
                               .mask_row = p->mask_row, .mask_col = p->mask_col, .masked = a[3].buffer != NULL,
                               .qkv_row = p->qkv_row, .out_row = p->out_row};
    for (int i = 0; i < 4; i++) {
        push.group_stride[i] = (uint32_t)p->group_stride[i];
        push.head_stride[i] = (uint32_t)p->head_stride[i];
    }
    const int variant = ((widest + CHUNK - 1) / CHUNK - 1) << 2; /* the shader's EXTRA_CHUNKS */
    return vk_record(vk, kernel, pipe, variant, a, nn_kernel_arg_count(kernel), VK_PUSH_REF(push), (uint32_t)blocks,
                     (uint32_t)per_layer, (uint32_t)layers);
}

nn_status vk_run_attention_forward(vk_backend *vk, const nn_attention_params *p, const nn_buffer_ref *a) {
    return attention(vk, NN_KERNEL_ATTENTION_FORWARD, VK_PIPE_ATTENTION_FORWARD, p, a, p->queries);
}

nn_status vk_run_attention_backward_query(vk_backend *vk, const nn_attention_params *p, const nn_buffer_ref *a) {
    return attention(vk, NN_KERNEL_ATTENTION_BACKWARD_QUERY, VK_PIPE_ATTENTION_BACKWARD_QUERY, p, a, p->queries);
}

nn_status vk_run_attention_backward_keys(vk_backend *vk, const nn_attention_params *p, const nn_buffer_ref *a) {
    return attention(vk, NN_KERNEL_ATTENTION_BACKWARD_KEYS, VK_PIPE_ATTENTION_BACKWARD_KEYS, p, a, p->keys);
}
