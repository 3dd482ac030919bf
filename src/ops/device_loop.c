/* The step counter, table lookups and metric sums of device-side training
 * loops (nn_device_loop.h). No autograd: these move data, they compute
 * nothing a gradient flows through. */
#include "op_common.h"

nn_status nn_check_counter(const char *op, const nn_tensor *counter) {
    if (!counter) return NN_OK;
    NN_TRY(nn_check_tensor(op, "counter", counter, NN_I32));
    if (counter->numel != 1) {
        char buf[96];
        return nn_set_error(NN_ERR_SHAPE, "%s: counter must have one element, got shape %s", op,
                            nn_format_shape(counter->ndim, counter->shape, buf, sizeof buf));
    }
    return NN_OK;
}

nn_status nn_counter_add(nn_tensor *counter, int32_t delta) {
    if (!counter) return nn_set_error(NN_ERR_ARGUMENT, "nn_counter_add: counter is NULL");
    NN_TRY(nn_check_counter("nn_counter_add", counter));
    nn_counter_params p = {.delta = delta};
    nn_buffer_ref args[2] = {nn_tensor_ref(counter), {0}};
    return nn_ctx_run(counter->ctx, NN_KERNEL_COUNTER_ADD, args, 2, &p);
}

nn_status nn_table_lookup(nn_tensor *table, nn_tensor *counter, int64_t first, nn_tensor *out) {
    const char *op = "nn_table_lookup";
    if (!table || !out) return nn_set_error(NN_ERR_ARGUMENT, "%s: table and out must not be NULL", op);
    NN_TRY(nn_check_tensor(op, "out", out, table->dtype));
    NN_TRY(nn_check_counter(op, counter));
    NN_TRY(nn_check_same_ctx(op, "table", table, "out", out));
    NN_TRY(nn_check_same_ctx(op, "table", table, "counter", counter));
    NN_TRY(nn_check_int32(op, "table elements", table->numel));
    NN_TRY(nn_check_int32(op, "out elements", out->numel));
    if (first < 0 || first > INT32_MAX)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: first = %lld is outside [0, 2^31)", op, (long long)first);
    nn_gather_params p = {.rows = (int32_t)out->numel, .row_elems = 1, .first = (int32_t)first,
                          .stride = (int32_t)out->numel, .positions = (int32_t)table->numel,
                          .table_rows = (int32_t)table->numel, .plane = 1};
    nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref args[4] = {nn_tensor_ref(table), none, nn_optional_ref(counter), nn_tensor_ref(out)};
    return nn_ctx_run(table->ctx, NN_KERNEL_GATHER_ROWS, args, 4, &p);
}

nn_status nn_accumulate_metrics(nn_tensor *logits, nn_tensor *labels, nn_tensor *loss, nn_tensor *sums) {
    const char *op = "nn_accumulate_metrics";
    NN_TRY(nn_check_tensor_ndim(op, "logits", logits, NN_F32, 2));
    NN_TRY(nn_check_tensor_ndim(op, "labels", labels, NN_I32, 1));
    NN_TRY(nn_check_tensor(op, "loss", loss, NN_F32));
    NN_TRY(nn_check_tensor(op, "sums", sums, NN_F32));
    NN_TRY(nn_check_same_ctx(op, "logits", logits, "labels", labels));
    NN_TRY(nn_check_same_ctx(op, "logits", logits, "loss", loss));
    NN_TRY(nn_check_same_ctx(op, "logits", logits, "sums", sums));
    char a[96], b[96];
    if (labels->shape[0] != logits->shape[0] || loss->numel != 1 || sums->numel != 2)
        return nn_set_error(NN_ERR_SHAPE, "%s: logits %s and labels %s must have the same rows, loss one element "
                                          "and sums two (got %lld and %lld)", op,
                            nn_format_shape(logits->ndim, logits->shape, a, sizeof a),
                            nn_format_shape(labels->ndim, labels->shape, b, sizeof b), (long long)loss->numel,
                            (long long)sums->numel);
    NN_TRY(nn_check_int32(op, "logits elements", logits->numel));
    nn_metrics_params p = {.rows = (int32_t)logits->shape[0], .cols = (int32_t)logits->shape[1]};
    nn_buffer_ref args[4] = {nn_tensor_ref(logits), nn_tensor_ref(labels), nn_tensor_ref(loss), nn_tensor_ref(sums)};
    return nn_ctx_run(logits->ctx, NN_KERNEL_METRICS_ACCUMULATE, args, 4, &p);
}
