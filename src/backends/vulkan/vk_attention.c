/* Attention without the score matrix on Vulkan (shaders/attention_*.comp):
 * workgroups of 64 rows (32 for heads wider than 64) by batch entry, the
 * pipeline variant chosen by the widest of E and Ev (attention_tiles.glsl's
 * EXTRA_CHUNKS: up to 64, 128, 192 or 256 columns). */
#include "base/error.h"
#include "vk_backend.h"

enum { CHUNK = 64, MAX_CHUNKS = 4 };

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
    const int64_t per_group = widest > CHUNK ? 32 : 64; /* the shader's OWN */
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
