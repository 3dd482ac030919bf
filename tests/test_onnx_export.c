/* ONNX export, checked from C: the structure of an exported LeNet-5 read
 * back with the independent decoder (onnx and onnxruntime check the files
 * end to end in tests/io/), and every refusal. */
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "io_test_util.h"
#include "pb_decode.h"
#include "test.h"

static nn_ctx *cpu_ctx(void) {
    nn_ctx_options o = {.device = "cpu", .threads = 1, .seed = 11};
    return nn_ctx_new(&o);
}

/* The message held by the k-th field `number` of buf. */
static int sub(const uint8_t *buf, size_t len, int number, int k, const uint8_t **out, size_t *out_len) {
    pb_field f;
    if (pb_get(buf, len, number, k, &f) != 0 || f.wire != 2) return -1;
    *out = f.data;
    *out_len = f.size;
    return 0;
}

TEST(onnx_lenet_structure) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "lenet.onnx");
    nn_ctx *ctx = cpu_ctx();
    nn_module *net = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    int64_t shape[4] = {3, 1, 28, 28};
    CHECK_MSG(nn_onnx_export_module(path, net, shape, 4) == NN_OK, "%s", nn_last_error());
    CHECK(nn_ctx_step_tensor_count(ctx) == 0); /* the traced pass was cleaned up */
    CHECK(nn_ctx_grad_enabled(ctx));

    size_t size;
    uint8_t *file = io_test_read_bytes(path, &size);
    CHECK(file != NULL);
    pb_field f;
    CHECK(pb_get(file, size, 1, 0, &f) == 0 && f.value == 8); /* ir_version */
    const uint8_t *opset = NULL, *graph = NULL;
    size_t opset_len = 0, graph_len = 0;
    CHECK(sub(file, size, 8, 0, &opset, &opset_len) == 0);
    CHECK(pb_get(opset, opset_len, 2, 0, &f) == 0 && f.value == 17);
    CHECK(sub(file, size, 7, 0, &graph, &graph_len) == 0);

    const char *ops[] = {"Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool",
                         "Flatten", "Gemm", "Relu", "Gemm", "Relu", "Gemm"};
    CHECK(pb_count(graph, graph_len, 1) == 12);
    for (int i = 0; i < 12; i++) {
        const uint8_t *node = NULL;
        size_t node_len = 0;
        CHECK(sub(graph, graph_len, 1, i, &node, &node_len) == 0);
        CHECK_MSG(pb_string_is(node, node_len, 4, 0, ops[i]), "node %d is not %s", i, ops[i]);
    }
    /* The first node: Conv(input, c1.weight, c1.bias) with a 5x5 kernel. */
    const uint8_t *conv = NULL, *attr = NULL;
    size_t conv_len = 0, attr_len = 0;
    sub(graph, graph_len, 1, 0, &conv, &conv_len);
    CHECK(pb_string_is(conv, conv_len, 1, 0, "input") && pb_string_is(conv, conv_len, 1, 1, "c1.weight") &&
          pb_string_is(conv, conv_len, 1, 2, "c1.bias"));
    CHECK(sub(conv, conv_len, 5, 0, &attr, &attr_len) == 0 &&
          pb_string_is(attr, attr_len, 1, 0, "kernel_shape") && pb_count(attr, attr_len, 8) == 2 &&
          pb_get(attr, attr_len, 8, 1, &f) == 0 && f.value == 5);
    /* The last node writes "output". */
    const uint8_t *last = NULL;
    size_t last_len = 0;
    sub(graph, graph_len, 1, 11, &last, &last_len);
    CHECK(pb_string_is(last, last_len, 2, 0, "output"));

    /* Ten initializers named as the parameters, holding their values. */
    CHECK(pb_count(graph, graph_len, 5) == 10);
    for (int i = 0; i < nn_module_param_count(net); i++) {
        const uint8_t *init = NULL;
        size_t init_len = 0;
        CHECK(sub(graph, graph_len, 5, i, &init, &init_len) == 0);
        CHECK(pb_string_is(init, init_len, 8, 0, nn_module_param_name(net, i)));
        nn_tensor *p = nn_module_param(net, i);
        size_t bytes = (size_t)nn_tensor_numel(p) * 4;
        float *v = malloc(bytes);
        nn_tensor_read(p, v, bytes);
        CHECK(pb_get(init, init_len, 9, 0, &f) == 0 && f.size == bytes && memcmp(f.data, v, bytes) == 0);
        free(v);
    }
    /* Input [batch, 1, 28, 28] with a symbolic batch; output [batch, 10]. */
    const uint8_t *info = NULL, *type = NULL, *tensor = NULL, *shp = NULL, *dim = NULL;
    size_t info_len = 0, type_len = 0, tensor_len = 0, shp_len = 0, dim_len = 0;
    CHECK(sub(graph, graph_len, 11, 0, &info, &info_len) == 0 && pb_string_is(info, info_len, 1, 0, "input"));
    CHECK(sub(info, info_len, 2, 0, &type, &type_len) == 0 && sub(type, type_len, 1, 0, &tensor, &tensor_len) == 0 &&
          sub(tensor, tensor_len, 2, 0, &shp, &shp_len) == 0);
    CHECK(pb_count(shp, shp_len, 1) == 4);
    CHECK(sub(shp, shp_len, 1, 0, &dim, &dim_len) == 0 && pb_string_is(dim, dim_len, 2, 0, "batch"));
    CHECK(sub(shp, shp_len, 1, 3, &dim, &dim_len) == 0 && pb_get(dim, dim_len, 1, 0, &f) == 0 && f.value == 28);
    CHECK(sub(graph, graph_len, 12, 0, &info, &info_len) == 0 && pb_string_is(info, info_len, 1, 0, "output"));
    CHECK(io_test_dir_entries(dir) == 1);
    free(file);
    nn_module_free(net);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}

TEST(onnx_refusals) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "model.onnx");
    nn_ctx *ctx = cpu_ctx();
    nn_module *mlp = io_test_mlp(ctx);
    int64_t xs[2] = {4, 3}, ys[1] = {4};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 2, xs);
    int32_t labels[4] = {0, 1, 2, 3};
    nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, ys, labels);

    /* A loss has no mapping, and the message names it. */
    nn_tensor *logits = nn_module_forward(mlp, x);
    nn_tensor *loss = nn_softmax_cross_entropy(logits, y);
    CHECK(nn_onnx_export(path, x, loss, NULL) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "nn_softmax_cross_entropy has no ONNX mapping"), "%s", nn_last_error());

    /* Options: opset, names. */
    CHECK(nn_onnx_export(path, x, logits, &(nn_onnx_options){.opset = 12}) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "opset 12 is not supported"), "%s", nn_last_error());
    nn_tensor *stray = nn_tensor_new(ctx, NN_F32, 1, ys);
    nn_tensor *named[2] = {nn_module_param(mlp, 0), stray};
    const char *names[2] = {"w", "nowhere"};
    CHECK(nn_onnx_export(path, x, logits, &(nn_onnx_options){.n_names = 2, .named_tensors = named, .names = names}) ==
          NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "'nowhere' is for a tensor that is not part"), "%s", nn_last_error());
    named[1] = nn_module_param(mlp, 1);
    names[1] = "w";
    CHECK(nn_onnx_export(path, x, logits, &(nn_onnx_options){.n_names = 2, .named_tensors = named, .names = names}) ==
          NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "two values of the graph are named 'w'"), "%s", nn_last_error());
    names[1] = "output"; /* clashes with the default output name */
    CHECK(nn_onnx_export(path, x, logits, &(nn_onnx_options){.n_names = 2, .named_tensors = named, .names = names}) ==
          NN_ERR_ARGUMENT);
    CHECK(io_test_dir_entries(dir) == 0);

    /* An operation not recorded: relu of an input that does not require grad. */
    nn_tensor *r = nn_relu(x);
    nn_tensor *logits2 = nn_module_forward(mlp, r);
    CHECK(nn_onnx_export(path, x, logits2, NULL) == NN_ERR_STATE);
    CHECK_MSG(strstr(nn_last_error(), "does not depend on the input through recorded operations"), "%s",
              nn_last_error());
    /* Grad mode off: nothing recorded at all. */
    nn_ctx_set_grad_enabled(ctx, false);
    nn_tensor *logits3 = nn_module_forward(mlp, x);
    CHECK(nn_onnx_export(path, x, logits3, NULL) == NN_ERR_STATE);
    CHECK_MSG(strstr(nn_last_error(), "not produced by recorded operations"), "%s", nn_last_error());
    nn_ctx_set_grad_enabled(ctx, true);

    /* Dynamic batch: a constant with the batch's shape added to a batch value. */
    nn_tensor *c = nn_tensor_new(ctx, NN_F32, 2, (int64_t[]){4, 7});
    nn_tensor *sum = nn_add(nn_module_forward(mlp, x), c);
    CHECK(nn_onnx_export(path, x, sum, NULL) == NN_ERR_SHAPE);
    CHECK_MSG(strstr(nn_last_error(), "nn_add combines a batch value with a constant") &&
                  strstr(nn_last_error(), "static_batch"), "%s", nn_last_error());
    CHECK_MSG(nn_onnx_export(path, x, sum, &(nn_onnx_options){.static_batch = true}) == NN_OK, "%s",
              nn_last_error());
    /* A reshape that moves the batch. */
    nn_tensor *moved = nn_reshape(nn_module_forward(mlp, x), 2, (int64_t[]){7, 4});
    CHECK(nn_onnx_export(path, x, moved, NULL) == NN_ERR_SHAPE);
    CHECK_MSG(strstr(nn_last_error(), "nn_reshape changes dimension 0"), "%s", nn_last_error());

    /* Token indices as the input (an int32 graph input), but no pixel
     * normalisation in front of them. */
    nn_tensor *table = nn_tensor_new(ctx, NN_F32, 2, (int64_t[]){5, 3});
    nn_tensor_set_requires_grad(table, true);
    nn_tensor *rows = nn_embedding(y, table, -1);
    CHECK_MSG(nn_onnx_export(path, y, rows, NULL) == NN_OK, "%s", nn_last_error());
    const nn_model_info pixels = {.channels = 1, .mean = {0.5f}, .std = {0.25f}};
    CHECK(nn_onnx_export(path, y, rows, &(nn_onnx_options){.info = &pixels}) == NN_ERR_DTYPE);
    CHECK_MSG(strstr(nn_last_error(), "needs a float32 input, and the input is int32"), "%s", nn_last_error());

    /* After backward the recording is gone. */
    nn_tensor *l2 = nn_sum(nn_module_forward(mlp, x));
    CHECK(nn_backward(l2) == NN_OK);
    CHECK(nn_onnx_export(path, x, l2, NULL) == NN_ERR_STATE);

    /* Module convenience: bad shapes are named. */
    CHECK(nn_onnx_export_module(path, mlp, (int64_t[]){1, 4}, 2) == NN_ERR_SHAPE);
    CHECK_MSG(strstr(nn_last_error(), "nn_linear"), "%s", nn_last_error());
    CHECK(nn_onnx_export_module(path, mlp, (int64_t[]){1, 3}, 0) == NN_ERR_SHAPE);
    CHECK(nn_onnx_export_module(NULL, mlp, (int64_t[]){1, 3}, 2) == NN_ERR_ARGUMENT);
    CHECK(nn_onnx_export(path, NULL, logits, NULL) == NN_ERR_ARGUMENT);

    /* A failed write leaves the old file. */
    CHECK(nn_onnx_export_module(path, mlp, (int64_t[]){1, 3}, 2) == NN_OK);
    size_t old_size, new_size;
    uint8_t *old = io_test_read_bytes(path, &old_size);
    nn_atomic_fail_after_bytes = 50;
    CHECK(nn_onnx_export_module(path, mlp, (int64_t[]){2, 3}, 2) == NN_ERR_IO);
    nn_atomic_fail_after_bytes = -1;
    uint8_t *now = io_test_read_bytes(path, &new_size);
    CHECK(new_size == old_size && memcmp(old, now, old_size) == 0);
    CHECK(io_test_dir_entries(dir) == 1);
    const char *missing = io_test_path(dir, "missing/model.onnx");
    CHECK(nn_onnx_export_module(missing, mlp, (int64_t[]){1, 3}, 2) == NN_ERR_IO);
    CHECK_MSG(strstr(nn_last_error(), missing), "%s", nn_last_error());
    free(old);
    free(now);

    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    nn_tensor_free(x);
    nn_tensor_free(y);
    nn_tensor_free(c);
    nn_tensor_free(stray);
    nn_module_free(mlp);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}

/* The element type of a graph input (11) or output (12): ValueInfoProto's
 * type (2), its tensor_type (1), its elem_type (1). */
static int64_t value_elem_type(const uint8_t *graph, size_t graph_len, int field) {
    const uint8_t *info = NULL, *type = NULL, *tensor = NULL;
    size_t info_len = 0, type_len = 0, tensor_len = 0;
    pb_field f;
    if (sub(graph, graph_len, field, 0, &info, &info_len) || sub(info, info_len, 2, 0, &type, &type_len) ||
        sub(type, type_len, 1, 0, &tensor, &tensor_len) || pb_get(tensor, tensor_len, 1, 0, &f))
        return -1;
    return (int64_t)f.value;
}

/* Comparisons, casts and integer sums (the accuracy count's operations):
 * NE as Equal then Not, each comparison's bool cast to int32; the
 * float-to-int cast as the kernel's rule in standard operators (NaN to 0,
 * saturated: ONNX's Cast leaves both undefined); ReduceSum on int32; the
 * int32 results typed as such at the graph's output. */
TEST(onnx_compare_cast_int_sum_structure) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "compare.onnx");
    nn_ctx *ctx = cpu_ctx();
    const int64_t xs[2] = {3, 5}, ts[1] = {5};
    const float threshold[5] = {0.5f, -1.0f, 2.0f, 0.0f, 7.0f};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 2, xs), *t = nn_tensor_from_data(ctx, NN_F32, 1, ts, threshold);
    nn_tensor_set_requires_grad(x, true);
    const int dim1 = 1;
    nn_tensor *differs = nn_compare(x, t, NN_COMPARE_NE), *truncated = nn_cast(x, NN_I32);
    nn_tensor *counts = nn_sum_dims(nn_compare(truncated, differs, NN_COMPARE_GE), &dim1, 1, false);
    nn_tensor *as_float = nn_cast(counts, NN_F32);
    CHECK_MSG(as_float && !nn_tensor_requires_grad(as_float), "%s", nn_last_error());
    CHECK_MSG(nn_onnx_export(path, x, as_float, NULL) == NN_OK, "%s", nn_last_error());
    size_t size;
    uint8_t *file = io_test_read_bytes(path, &size);
    const uint8_t *graph = NULL;
    size_t graph_len = 0;
    CHECK(file && sub(file, size, 7, 0, &graph, &graph_len) == 0);
    const char *ops[] = {"Equal", "Not", "Cast", "IsNaN", "Where", "Clip", "Cast", "Clip", "Cast",
                         "GreaterOrEqual", "Cast", "ReduceSum", "Cast"};
    /* the element type each Cast converts to: INT32 (6), INT64 (7), FLOAT (1) */
    const int64_t cast_to[] = {6, 7, 6, 6, 1};
    enum { NODES = sizeof ops / sizeof ops[0] };
    CHECK_MSG(pb_count(graph, graph_len, 1) == NODES, "%d nodes", pb_count(graph, graph_len, 1));
    for (int i = 0, casts = 0; i < NODES && graph; i++) {
        const uint8_t *node = NULL, *attr = NULL;
        size_t node_len = 0, attr_len = 0;
        CHECK(sub(graph, graph_len, 1, i, &node, &node_len) == 0);
        CHECK_MSG(pb_string_is(node, node_len, 4, 0, ops[i]), "node %d is not %s", i, ops[i]);
        if (strcmp(ops[i], "Cast") != 0) continue;
        pb_field f;
        CHECK(sub(node, node_len, 5, 0, &attr, &attr_len) == 0 && pb_string_is(attr, attr_len, 1, 0, "to"));
        CHECK_MSG(pb_get(attr, attr_len, 3, 0, &f) == 0 && (int64_t)f.value == cast_to[casts], "cast %d to %lld",
                  casts, (long long)f.value);
        casts++;
    }
    CHECK(value_elem_type(graph, graph_len, 11) == 1 && value_elem_type(graph, graph_len, 12) == 1);
    free(file);

    /* an int32 result as the graph's output, typed INT32 */
    CHECK_MSG(nn_onnx_export(path, x, counts, NULL) == NN_OK, "%s", nn_last_error());
    file = io_test_read_bytes(path, &size);
    CHECK(file && sub(file, size, 7, 0, &graph, &graph_len) == 0);
    CHECK(pb_count(graph, graph_len, 1) == NODES - 1 && value_elem_type(graph, graph_len, 12) == 6);
    free(file);
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    nn_tensor_free(x);
    nn_tensor_free(t);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}
