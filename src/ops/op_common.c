#include "op_common.h"

#include <limits.h>

#include "core/context_mismatch.h"

static const char *dtype_name(nn_dtype dtype) { return dtype == NN_F32 ? "float32" : "int32"; }

nn_status nn_check_tensor(const char *op, const char *what, const nn_tensor *t, nn_dtype dtype) {
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "%s: %s is NULL", op, what);
    if (t->dtype != dtype)
        return nn_set_error(NN_ERR_DTYPE, "%s: %s must be %s, got %s", op, what, dtype_name(dtype),
                            dtype_name(t->dtype));
    return NN_OK;
}

nn_status nn_check_tensor_ndim(const char *op, const char *what, const nn_tensor *t,
                               nn_dtype dtype, int ndim) {
    NN_TRY(nn_check_tensor(op, what, t, dtype));
    if (t->ndim != ndim) {
        char buf[96];
        return nn_set_error(NN_ERR_SHAPE, "%s: %s must be %d-D, got shape %s", op, what, ndim,
                            nn_format_shape(t->ndim, t->shape, buf, sizeof buf));
    }
    return NN_OK;
}

nn_status nn_check_same_ctx(const char *op, const char *a_name, const nn_tensor *a, const char *b_name,
                            const nn_tensor *b) {
    if (a && b && a->ctx != b->ctx) return nn_error_other_context(NN_ERR_STATE, op, a_name, a->ctx, b_name, b->ctx);
    return NN_OK;
}

bool nn_same_shape(const nn_tensor *a, const nn_tensor *b) {
    bool same = a->ndim == b->ndim;
    for (int i = 0; same && i < a->ndim; i++) same = a->shape[i] == b->shape[i];
    return same;
}

nn_status nn_check_same_shape(const char *op, const nn_tensor *a, const nn_tensor *b) {
    if (nn_same_shape(a, b)) return NN_OK;
    char sa[96], sb[96];
    return nn_set_error(NN_ERR_SHAPE, "%s: shapes %s and %s differ", op,
                        nn_format_shape(a->ndim, a->shape, sa, sizeof sa),
                        nn_format_shape(b->ndim, b->shape, sb, sizeof sb));
}

nn_status nn_check_int32(const char *op, const char *what, int64_t value) {
    if (value > INT32_MAX)
        return nn_set_error(NN_ERR_SHAPE, "%s: %s = %lld exceeds the kernels' 32-bit sizes", op,
                            what, (long long)value);
    return NN_OK;
}

nn_status nn_check_padded(const char *op, const char *axis, int64_t size, int64_t pad) {
    const int64_t padded = size + 2 * pad; /* size and pad are below 2^31: no overflow in 64 bits */
    if (padded > INT32_MAX)
        return nn_set_error(NN_ERR_SHAPE, "%s: the padded %s %lld + 2 x %lld (padding) = %lld exceeds the kernels' "
                            "32-bit sizes", op, axis, (long long)size, (long long)pad, (long long)padded);
    return NN_OK;
}

nn_status nn_no_gradient(nn_node *node) {
    (void)node;
    return NN_OK;
}

nn_tensor *nn_op_scratch(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape) {
    return nn_tensor_alloc(ctx, dtype, ndim, shape, false);
}

nn_tensor *nn_op_result(const nn_op *op, nn_tensor *const *inputs, int input_count, const void *params,
                        size_t params_size, int ndim, const int64_t *shape) {
    return nn_op_record(op, inputs, input_count, params, params_size, NN_F32, ndim, shape);
}

nn_status nn_run_gemm(nn_ctx *ctx, nn_buffer_ref a, nn_buffer_ref b, nn_buffer_ref c, int m, int n,
                      int k, bool trans_a, bool trans_b, int32_t accumulate) {
    nn_gemm_params p = {
        .m = m, .n = n, .k = k,
        .trans_a = trans_a, .trans_b = trans_b,
        .lda = trans_a ? m : k, .ldb = trans_b ? k : n, .ldc = n,
        .batch = 1,
        .alpha = 1.0f, .beta = accumulate ? 1.0f : 0.0f,
        .precision = ctx->launch_precision,
    };
    nn_buffer_ref args[3] = {a, b, c};
    return nn_ctx_run(ctx, NN_KERNEL_GEMM, args, 3, &p);
}

nn_status nn_run_scalar_times(nn_ctx *ctx, nn_tensor *s, nn_tensor *x, nn_tensor *out, int32_t accumulate) {
    nn_tensor *broadcast = nn_op_scratch(ctx, NN_F32, x->ndim, x->shape);
    if (!broadcast) return nn_last_status();
    nn_pointwise_params b = {.n = x->numel, .alpha = 1.0f};
    nn_buffer_ref bargs[2] = {nn_tensor_ref(s), nn_tensor_ref(broadcast)};
    nn_status status = nn_ctx_run(ctx, NN_KERNEL_BROADCAST_SCALAR, bargs, 2, &b);
    if (status == NN_OK) {
        nn_pointwise_params m = {.n = x->numel, .op = NN_EW_MUL, .accumulate = accumulate};
        nn_buffer_ref margs[3] = {nn_tensor_ref(broadcast), nn_tensor_ref(x), nn_tensor_ref(out)};
        status = nn_ctx_run(ctx, NN_KERNEL_ELEMENTWISE, margs, 3, &m);
    }
    nn_tensor_release(broadcast);
    return status;
}

nn_status nn_grad_hand_on(nn_tensor *t, nn_tensor *g) {
    if (t->layout != g->layout)
        return nn_set_error(NN_ERR_STATE, "a gradient handed on in another layout than its tensor's");
    if (!t->grad && t->grad_fn) t->grad = nn_tensor_retain(g);
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(t, &grad, &acc));
    if (grad == g && !acc) return NN_OK;
    return nn_run_scale(t->ctx, nn_tensor_ref(g), nn_tensor_ref(grad), t->numel, 1.0f, acc);
}

nn_status nn_grad_share(nn_tensor *x, nn_tensor *dy, bool *shared) {
    *shared = x->grad_fn && !x->grad && x->numel == dy->numel && x->layout == dy->layout;
    if (!*shared) return NN_OK;
    x->grad = nn_tensor_view_at(dy, 0, x->ndim, x->shape);
    if (!x->grad) return nn_last_status();
    x->grad->layout = dy->layout;
    x->grad_written = true;
    return NN_OK;
}

nn_status nn_run_scale(nn_ctx *ctx, nn_buffer_ref a, nn_buffer_ref out, int64_t n, float alpha,
                       int32_t accumulate) {
    nn_pointwise_params p = {.n = n, .op = NN_EW_SCALE, .accumulate = accumulate, .alpha = alpha};
    nn_buffer_ref args[3] = {a, a, out};
    return nn_ctx_run(ctx, NN_KERNEL_ELEMENTWISE, args, 3, &p);
}

nn_status nn_run_forward(nn_node *node, nn_kernel kernel, const void *params) {
    nn_tensor *x = node->inputs[0];
    nn_buffer_ref args[2] = {nn_tensor_ref(x), nn_tensor_ref(node->output)};
    return nn_ctx_run(x->ctx, kernel, args, 2, params);
}
