/* matmul with torch.matmul's rules: a 1-D a is a row [1, K] and a 1-D b a
 * column [K, 1] (that dimension dropped from the result); the dimensions
 * before the last two are batch dimensions that broadcast (NumPy's rule).
 * Everything runs as batched GEMMs: an operand whose batch is the whole
 * broadcast batch walks it with its matrix stride, one with a batch of one
 * element repeats with stride 0 (and its gradient is the summed batch,
 * stride_c 0), and one broadcast along only some batch dimensions is
 * expanded into a temporary (its gradient summed back to its shape). */
#include <string.h>

#include "io/onnx_graph.h"
#include "ops.h"
#include "strided.h"

/* How an operand's batch meets the broadcast batch. */
typedef enum batch_mode {
    BATCH_FULL,    /* the same batch: stride one matrix */
    BATCH_SHARED,  /* one matrix for every batch entry: stride 0 */
    BATCH_PARTIAL  /* repeated along some batch dimensions: expanded */
} batch_mode;

typedef struct matmul_batched_node {
    int32_t m, n, k;
    int32_t batch;      /* GEMM batch (1 when a's batch was folded into m) */
    int32_t batch_ndim; /* the broadcast batch: the output's leading dimensions */
    int32_t mode_a, mode_b;
} matmul_batched_node;

/* The operand's matrix [rows, cols] for every entry of the broadcast batch,
 * dense in a temporary the caller releases. */
static nn_tensor *expand_operand(nn_tensor *t, const nn_tensor *out, int batch_ndim, int64_t rows, int64_t cols) {
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, out->shape, sizeof(int64_t) * (size_t)batch_ndim);
    shape[batch_ndim] = rows;
    shape[batch_ndim + 1] = cols;
    nn_tensor *dense = nn_op_scratch(t->ctx, NN_F32, batch_ndim + 2, shape);
    if (!dense) return NULL;
    nn_strided_view from = nn_dense_view(dense), to = nn_dense_view(dense);
    const nn_strided_view own = nn_dense_view(t);
    const int skipped = batch_ndim - (t->ndim - 2); /* broadcast dimensions t lacks */
    for (int d = 0; d < batch_ndim; d++)
        from.stride[d] = d < skipped || t->shape[d - skipped] == 1 ? 0 : own.stride[d - skipped];
    if (nn_run_strided_copy(t->ctx, t, &from, dense, &to, 0) != NN_OK) {
        nn_tensor_release(dense);
        return NULL;
    }
    return dense;
}

/* The operand as the GEMM reads it: itself, or its expansion (*temp). */
static nn_tensor *operand(nn_tensor *t, int mode, const nn_tensor *out, int batch_ndim, int64_t rows, int64_t cols,
                          nn_tensor **temp) {
    *temp = NULL;
    if (mode != BATCH_PARTIAL) return t;
    *temp = expand_operand(t, out, batch_ndim, rows, cols);
    return *temp;
}

static int64_t stride_of(int mode, int64_t matrix) { return mode == BATCH_SHARED ? 0 : matrix; }

static nn_status run_gemm(nn_ctx *ctx, nn_tensor *a, nn_tensor *b, nn_tensor *c, const nn_gemm_params *p) {
    nn_buffer_ref args[3] = {nn_tensor_ref(a), nn_tensor_ref(b), nn_tensor_ref(c)};
    nn_gemm_params g = *p;
    g.precision = ctx->launch_precision;
    return nn_ctx_run(ctx, NN_KERNEL_GEMM, args, 3, &g);
}

static nn_status matmul_batched_forward(nn_node *node) {
    const matmul_batched_node *p = NN_NODE_PARAMS(node, matmul_batched_node);
    nn_tensor *out = node->output, *ta, *tb;
    nn_tensor *a = operand(node->inputs[0], p->mode_a, out, p->batch_ndim, p->m, p->k, &ta);
    nn_tensor *b = a ? operand(node->inputs[1], p->mode_b, out, p->batch_ndim, p->k, p->n, &tb) : NULL;
    nn_status st = nn_last_status();
    if (a && b) {
        const nn_gemm_params g = {.m = p->m, .n = p->n, .k = p->k, .lda = p->k, .ldb = p->n, .ldc = p->n,
                                  .batch = p->batch, .stride_a = stride_of(p->mode_a, (int64_t)p->m * p->k),
                                  .stride_b = stride_of(p->mode_b, (int64_t)p->k * p->n),
                                  .stride_c = (int64_t)p->m * p->n, .alpha = 1.0f};
        st = run_gemm(out->ctx, a, b, out, &g);
    }
    if (ta) nn_tensor_release(ta);
    if (a && tb) nn_tensor_release(tb);
    return st;
}

/* The gradient of input `which` from the product GEMM `g` (batched over the
 * broadcast batch): written straight into its gradient (summed over the
 * batch when it is shared), or through a temporary summed to its shape. */
static nn_status gradient_into(nn_node *node, int which, nn_tensor *x, nn_tensor *y, nn_gemm_params g,
                               int64_t rows, int64_t cols) {
    const matmul_batched_node *p = NN_NODE_PARAMS(node, matmul_batched_node);
    nn_tensor *input = node->inputs[which], *grad;
    const int mode = which == 0 ? p->mode_a : p->mode_b;
    int32_t acc;
    NN_TRY(nn_grad_target(input, &grad, &acc));
    if (mode != BATCH_PARTIAL) {
        g.stride_c = mode == BATCH_SHARED ? 0 : rows * cols;
        g.beta = acc ? 1.0f : 0.0f;
        return run_gemm(input->ctx, x, y, grad, &g);
    }
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, node->output->shape, sizeof(int64_t) * (size_t)p->batch_ndim);
    shape[p->batch_ndim] = rows;
    shape[p->batch_ndim + 1] = cols;
    nn_tensor *full = nn_op_scratch(input->ctx, NN_F32, p->batch_ndim + 2, shape);
    if (!full) return nn_last_status();
    g.stride_c = rows * cols;
    nn_status st = run_gemm(input->ctx, x, y, full, &g);
    if (st == NN_OK) st = nn_run_sum_to(input->ctx, full, grad, acc);
    nn_tensor_release(full);
    return st;
}

/* dA = dC B^T and dB = A^T dC, entry by entry of the broadcast batch. */
static nn_status matmul_batched_backward(nn_node *node) {
    const matmul_batched_node *p = NN_NODE_PARAMS(node, matmul_batched_node);
    nn_tensor *out = node->output, *dc = out->grad;
    const int64_t m = p->m, n = p->n, k = p->k;
    nn_status st = NN_OK;
    if (nn_wants_grad(node->inputs[0])) {
        nn_tensor *temp, *b = operand(node->inputs[1], p->mode_b, out, p->batch_ndim, k, n, &temp);
        if (!b) return nn_last_status();
        const nn_gemm_params g = {.m = p->m, .n = p->k, .k = p->n, .trans_b = 1, .lda = p->n, .ldb = p->n,
                                  .ldc = p->k, .batch = p->batch, .stride_a = m * n,
                                  .stride_b = stride_of(p->mode_b, k * n), .alpha = 1.0f};
        st = gradient_into(node, 0, dc, b, g, m, k);
        if (temp) nn_tensor_release(temp);
    }
    if (st == NN_OK && nn_wants_grad(node->inputs[1])) {
        nn_tensor *temp, *a = operand(node->inputs[0], p->mode_a, out, p->batch_ndim, m, k, &temp);
        if (!a) return nn_last_status();
        const nn_gemm_params g = {.m = p->k, .n = p->n, .k = p->m, .trans_a = 1, .lda = p->k, .ldb = p->n,
                                  .ldc = p->n, .batch = p->batch, .stride_a = stride_of(p->mode_a, m * k),
                                  .stride_b = m * n, .alpha = 1.0f};
        st = gradient_into(node, 1, a, dc, g, k, n);
        if (temp) nn_tensor_release(temp);
    }
    return st;
}

/* ONNX MatMul has torch.matmul's rules. With a dynamic batch (dimension 0
 * of a value), that dimension must stay a batch or row dimension of the
 * product: never contracted, never met by a constant's dimension other
 * than 1. */
static bool batch_kept(const nn_tensor *batched, const nn_tensor *other, bool batched_is_a, bool both) {
    if (both) return batched->ndim == other->ndim && batched->ndim >= 3;
    if (batched->ndim < (batched_is_a ? 2 : 3)) return false;
    if (batched->ndim < 3 || other->ndim < batched->ndim) return true;
    return other->shape[other->ndim - batched->ndim] == 1;
}

static nn_status matmul_batched_onnx(exporter *x, op_io *io, const char *out) {
    const bool ba = io->in[0]->batch, bb = io->in[1]->batch;
    const nn_tensor *a = io->node->inputs[0], *b = io->node->inputs[1];
    if (x->dynamic && (ba || bb) && !batch_kept(ba ? a : b, ba ? b : a, ba, ba && bb))
        return nn_onnx_refuse_batch(x, io, "contracts the batch dimension or pairs it with a constant's");
    io->out_batch = ba || bb;
    return nn_onnx_simple(x, io, out, "MatMul");
}

const nn_op nn_op_matmul_batched = {.name = "nn_matmul_batched",
                                    .forward = matmul_batched_forward,
                                    .backward = matmul_batched_backward,
                                    .to_onnx = matmul_batched_onnx};

static int64_t batch_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

static int batch_mode_of(int64_t numel, int64_t full) {
    return numel == full ? BATCH_FULL : numel == 1 ? BATCH_SHARED : BATCH_PARTIAL;
}

nn_tensor *nn_matmul_batched(nn_tensor *a, nn_tensor *b) {
    const char *op = "nn_matmul_batched";
    if (nn_check_tensor(op, "a", a, NN_F32) || nn_check_tensor(op, "b", b, NN_F32) || nn_check_same_ctx(op, "a", a, "b", b))
        return NULL;
    const bool row = a->ndim == 1, column = b->ndim == 1;
    /* Matrix sizes (a 1-D a is [1, K], a 1-D b is [K, 1]); the rest is batch. */
    const int64_t m = row ? 1 : a->shape[a->ndim - 2], k = a->shape[a->ndim - 1];
    const int64_t kb = column ? b->shape[0] : b->shape[b->ndim - 2], n = column ? 1 : b->shape[b->ndim - 1];
    const int a_batch = row ? 0 : a->ndim - 2, b_batch = column ? 0 : b->ndim - 2;
    char sa[96], sb[96];
    if (k != kb)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: a %s has %lld columns, b %s has %lld rows", op,
                            nn_format_shape(a->ndim, a->shape, sa, sizeof sa), (long long)k,
                            nn_format_shape(b->ndim, b->shape, sb, sizeof sb), (long long)kb);
    /* Operands within 32 bits first: the broadcast batch is then at most the
     * product of their batches, below 2^62, so no size below overflows. */
    if (nn_check_int32(op, "elements of a", a->numel) || nn_check_int32(op, "elements of b", b->numel)) return NULL;
    int batch_ndim;
    int64_t shape[NN_MAX_DIMS + 2];
    if (nn_broadcast_shapes(op, a_batch, a->shape, b_batch, b->shape, &batch_ndim, shape)) {
        nn_set_error(NN_ERR_SHAPE, "%s: the batch dimensions of a %s and b %s do not broadcast", op,
                     nn_format_shape(a->ndim, a->shape, sa, sizeof sa),
                     nn_format_shape(b->ndim, b->shape, sb, sizeof sb));
        return NULL;
    }
    const int64_t batch = batch_numel(batch_ndim, shape);
    matmul_batched_node p = {.batch_ndim = batch_ndim,
                             .mode_a = batch_mode_of(batch_numel(a_batch, a->shape), batch),
                             .mode_b = batch_mode_of(batch_numel(b_batch, b->shape), batch)};
    int64_t rows = m, gemm_batch = batch;
    if (p.mode_a == BATCH_FULL && p.mode_b == BATCH_SHARED) {
        /* One matrix b for a whole dense batch of a: a single tall GEMM. */
        rows = m * batch;
        gemm_batch = 1;
        p.mode_a = BATCH_SHARED;
    }
    /* An operand repeated along some batch dimensions is expanded to the
     * whole batch (and so is its gradient): that copy must fit too. */
    const int64_t expanded_a = p.mode_a == BATCH_PARTIAL ? batch * m * k : 0;
    const int64_t expanded_b = p.mode_b == BATCH_PARTIAL ? batch * k * n : 0;
    if (nn_check_int32(op, "rows", rows) || nn_check_int32(op, "columns", n) || nn_check_int32(op, "inner", k) ||
        nn_check_int32(op, "batch", gemm_batch) || nn_check_int32(op, "elements of the result", batch * m * n) ||
        nn_check_int32(op, "elements of a expanded to the batch", expanded_a) ||
        nn_check_int32(op, "elements of b expanded to the batch", expanded_b))
        return NULL;
    p.m = (int32_t)rows;
    p.n = (int32_t)n;
    p.k = (int32_t)k;
    p.batch = (int32_t)gemm_batch;
    int ndim = batch_ndim;
    if (!row) shape[ndim++] = m;
    if (!column) shape[ndim++] = n;
    if (ndim == 0) shape[ndim++] = 1; /* a dot product: one element */
    nn_tensor *inputs[2] = {a, b};
    return nn_op_result(&nn_op_matmul_batched, inputs, 2, &p, sizeof p, ndim, shape);
}
