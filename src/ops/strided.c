/* Launching the strided kernels on tensors (strided.h). */
#include <string.h>

#include "base/error.h"
#include "strided.h"

nn_status nn_broadcast_shapes(const char *op, int a_ndim, const int64_t *a_shape, int b_ndim,
                              const int64_t *b_shape, int *ndim, int64_t *shape) {
    const int n = a_ndim > b_ndim ? a_ndim : b_ndim;
    for (int i = 0; i < n; i++) {
        const int da = a_ndim - n + i, db = b_ndim - n + i;
        const int64_t sa = da >= 0 ? a_shape[da] : 1, sb = db >= 0 ? b_shape[db] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            char fa[96], fb[96];
            return nn_set_error(NN_ERR_SHAPE, "%s: shapes %s and %s do not broadcast (dimension %d: %lld and %lld)",
                                op, nn_format_shape(a_ndim, a_shape, fa, sizeof fa),
                                nn_format_shape(b_ndim, b_shape, fb, sizeof fb), i - n, (long long)sa,
                                (long long)sb);
        }
        shape[i] = sa == 1 ? sb : sa;
    }
    *ndim = n;
    return NN_OK;
}

/* An index space with the strides of up to four operands, simplified:
 * sizes of 1 dropped, neighbours merged where every operand walks them as
 * one dimension. */
typedef struct space {
    int ndim, operands;
    int64_t shape[NN_MAX_DIMS];
    int64_t stride[4][NN_MAX_DIMS];
} space;

static void space_simplify(space *s) {
    int n = 0;
    for (int d = 0; d < s->ndim; d++) {
        if (s->shape[d] == 1) continue;
        bool merge = n > 0;
        for (int k = 0; k < s->operands && merge; k++)
            merge = s->stride[k][n - 1] == s->stride[k][d] * s->shape[d];
        if (merge) {
            s->shape[n - 1] *= s->shape[d];
            for (int k = 0; k < s->operands; k++) s->stride[k][n - 1] = s->stride[k][d];
            continue;
        }
        s->shape[n] = s->shape[d];
        for (int k = 0; k < s->operands; k++) s->stride[k][n] = s->stride[k][d];
        n++;
    }
    s->ndim = n;
}

static nn_status fits32(const char *what, const int64_t *values, int count) {
    for (int i = 0; i < count; i++)
        if (values[i] > INT32_MAX || values[i] < INT32_MIN)
            return nn_set_error(NN_ERR_SHAPE, "%s: %lld exceeds the strided kernels' 32-bit sizes", what,
                                (long long)values[i]);
    return NN_OK;
}

static void narrow(int32_t *to, const int64_t *from, int count) {
    for (int i = 0; i < count; i++) to[i] = (int32_t)from[i];
}

/* Strides of a dense operand of shape `shape` read over `ndim` output
 * dimensions (aligned at the last): 0 where it broadcasts. */
static void broadcast_strides(int ndim, const int64_t *out_shape, int op_ndim, const int64_t *shape, int64_t *stride) {
    int64_t step = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        const int od = op_ndim - ndim + d;
        const int64_t size = od >= 0 ? shape[od] : 1;
        stride[d] = size == 1 && out_shape[d] != 1 ? 0 : step;
        step *= size;
    }
}

nn_status nn_run_broadcast(nn_ctx *ctx, nn_broadcast_op op, float alpha, int32_t accumulate, nn_tensor *out,
                           const nn_tensor *a, const nn_tensor *b, const nn_tensor *c) {
    const nn_tensor *operands[3] = {a, b, c};
    space s = {.ndim = out->ndim, .operands = 3};
    memcpy(s.shape, out->shape, sizeof(int64_t) * (size_t)out->ndim);
    for (int k = 0; k < 3; k++)
        if (operands[k]) broadcast_strides(out->ndim, out->shape, operands[k]->ndim, operands[k]->shape, s.stride[k]);
    space_simplify(&s);
    NN_TRY(fits32("broadcast", s.shape, s.ndim));
    nn_broadcast_params p = {.ndim = s.ndim, .op = op, .accumulate = accumulate, .alpha = alpha};
    narrow(p.shape, s.shape, s.ndim);
    for (int k = 0; k < 3; k++) {
        NN_TRY(fits32("broadcast", s.stride[k], s.ndim));
        narrow(p.stride[k], s.stride[k], s.ndim);
    }
    nn_buffer_ref args[4] = {nn_optional_ref(a), nn_optional_ref(b), nn_optional_ref(c), nn_tensor_ref(out)};
    return nn_ctx_run(ctx, NN_KERNEL_BROADCAST, args, 4, &p);
}

nn_status nn_run_compare(nn_ctx *ctx, nn_compare_op op, nn_tensor *out, const nn_tensor *a, const nn_tensor *b) {
    const nn_tensor *operands[2] = {a, b};
    space s = {.ndim = out->ndim, .operands = 2};
    memcpy(s.shape, out->shape, sizeof(int64_t) * (size_t)out->ndim);
    for (int k = 0; k < 2; k++)
        broadcast_strides(out->ndim, out->shape, operands[k]->ndim, operands[k]->shape, s.stride[k]);
    space_simplify(&s);
    NN_TRY(fits32("compare", s.shape, s.ndim));
    nn_compare_params p = {.ndim = s.ndim, .op = op, .integer = a->dtype == NN_I32};
    narrow(p.shape, s.shape, s.ndim);
    for (int k = 0; k < 2; k++) {
        NN_TRY(fits32("compare", s.stride[k], s.ndim));
        narrow(p.stride[k], s.stride[k], s.ndim);
    }
    nn_buffer_ref args[3] = {nn_tensor_ref(a), nn_tensor_ref(b), nn_tensor_ref(out)};
    return nn_ctx_run(ctx, NN_KERNEL_COMPARE, args, 3, &p);
}

nn_status nn_reduce_dims_plan(const nn_tensor *x, uint32_t reduced, nn_reduce_op op, float alpha,
                              nn_reduce_dims_params *p) {
    int64_t stride[NN_MAX_DIMS], step = 1;
    for (int d = x->ndim - 1; d >= 0; d--) stride[d] = step, step *= x->shape[d];
    space kept = {.operands = 1}, summed = {.operands = 1};
    for (int d = 0; d < x->ndim; d++) {
        space *s = reduced & (1u << d) ? &summed : &kept;
        s->shape[s->ndim] = x->shape[d];
        s->stride[0][s->ndim++] = stride[d];
    }
    space_simplify(&kept);
    space_simplify(&summed);
    NN_TRY(fits32("reduction", kept.shape, kept.ndim));
    NN_TRY(fits32("reduction", summed.shape, summed.ndim));
    NN_TRY(fits32("reduction", kept.stride[0], kept.ndim));
    NN_TRY(fits32("reduction", summed.stride[0], summed.ndim));
    *p = (nn_reduce_dims_params){.op = op, .kept = kept.ndim, .reduced = summed.ndim, .alpha = alpha};
    narrow(p->shape, kept.shape, kept.ndim);
    narrow(p->stride, kept.stride[0], kept.ndim);
    narrow(p->shape + kept.ndim, summed.shape, summed.ndim);
    narrow(p->stride + kept.ndim, summed.stride[0], summed.ndim);
    return NN_OK;
}

nn_status nn_run_sum_to(nn_ctx *ctx, const nn_tensor *src, nn_tensor *dst, int32_t accumulate) {
    if (dst->numel == src->numel) return nn_run_scale(ctx, nn_tensor_ref(src), nn_tensor_ref(dst), src->numel, 1.0f, accumulate);
    uint32_t reduced = 0;
    for (int d = 0; d < src->ndim; d++) {
        const int dd = dst->ndim - src->ndim + d;
        if (dd < 0 || dst->shape[dd] != src->shape[d]) reduced |= 1u << d;
    }
    nn_reduce_dims_params p;
    NN_TRY(nn_reduce_dims_plan(src, reduced, NN_REDUCE_SUM, 1.0f, &p));
    p.accumulate = accumulate;
    nn_buffer_ref args[3] = {nn_tensor_ref(src), nn_tensor_ref(dst), {NULL, 0, 0}};
    return nn_ctx_run(ctx, NN_KERNEL_REDUCE_DIMS, args, 3, &p);
}

nn_status nn_run_broadcast_grad(nn_ctx *ctx, nn_broadcast_op op, float alpha, const nn_tensor *like,
                                nn_tensor *grad, int32_t accumulate, const nn_tensor *a, const nn_tensor *b,
                                const nn_tensor *c) {
    if (nn_same_shape(grad, like)) return nn_run_broadcast(ctx, op, alpha, accumulate, grad, a, b, c);
    nn_tensor *full = nn_op_scratch(ctx, NN_F32, like->ndim, like->shape);
    if (!full) return nn_last_status();
    nn_status st = nn_run_broadcast(ctx, op, alpha, 0, full, a, b, c);
    if (st == NN_OK) st = nn_run_sum_to(ctx, full, grad, accumulate);
    nn_tensor_release(full);
    return st;
}

nn_strided_view nn_dense_view(const nn_tensor *t) {
    nn_strided_view v = {.ndim = t->ndim};
    int64_t step = 1;
    for (int d = t->ndim - 1; d >= 0; d--) v.shape[d] = t->shape[d], v.stride[d] = step, step *= t->shape[d];
    return v;
}

nn_status nn_run_strided_copy(nn_ctx *ctx, const nn_tensor *src, const nn_strided_view *from, nn_tensor *dst,
                              const nn_strided_view *to, int32_t accumulate) {
    space s = {.ndim = from->ndim, .operands = 2};
    memcpy(s.shape, from->shape, sizeof(int64_t) * (size_t)from->ndim);
    memcpy(s.stride[0], from->stride, sizeof(int64_t) * (size_t)from->ndim);
    memcpy(s.stride[1], to->stride, sizeof(int64_t) * (size_t)from->ndim);
    space_simplify(&s);
    NN_TRY(fits32("copy", s.shape, s.ndim));
    NN_TRY(fits32("copy", s.stride[0], s.ndim));
    NN_TRY(fits32("copy", s.stride[1], s.ndim));
    nn_strided_copy_params p = {.ndim = s.ndim, .accumulate = accumulate};
    narrow(p.shape, s.shape, s.ndim);
    narrow(p.src_stride, s.stride[0], s.ndim);
    narrow(p.dst_stride, s.stride[1], s.ndim);
    nn_buffer_ref args[2] = {nn_tensor_ref(src), nn_tensor_ref(dst)};
    /* each view starts at its first element; its range runs to its tensor's end */
    args[0].offset += (size_t)from->offset * sizeof(float), args[0].bytes -= (size_t)from->offset * sizeof(float);
    args[1].offset += (size_t)to->offset * sizeof(float), args[1].bytes -= (size_t)to->offset * sizeof(float);
    return nn_ctx_run(ctx, NN_KERNEL_STRIDED_COPY, args, 2, &p);
}
