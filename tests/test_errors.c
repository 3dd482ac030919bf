/* Every public function, given a bad shape or argument, returns an error
 * status with a message naming the problem, and leaves nothing half-made. */
#include <stdint.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"

/* The call failed with `status` and the message mentions each fragment. */
#define CHECK_ERROR(failed, status, ...)                                                  \
    do {                                                                                  \
        const char *fragments_[] = {__VA_ARGS__};                                         \
        CHECK_MSG(failed, "call succeeded, expected %s", nn_status_name(status));         \
        CHECK_MSG(nn_last_status() == (status), "status %s, want %s (message: %s)",       \
                  nn_status_name(nn_last_status()), nn_status_name(status), nn_last_error()); \
        for (size_t i_ = 0; i_ < sizeof fragments_ / sizeof *fragments_; i_++)            \
            CHECK_MSG(strstr(nn_last_error(), fragments_[i_]) != NULL,                     \
                      "message \"%s\" lacks \"%s\"", nn_last_error(), fragments_[i_]);     \
        nn_clear_error();                                                                 \
    } while (0)

static nn_ctx *open_cpu(void) {
    nn_ctx_options o = {.device = "cpu", .threads = 1, .seed = 3};
    return nn_ctx_new(&o);
}

static nn_tensor *filled(nn_ctx *ctx, int ndim, const int64_t *shape, float value) {
    nn_tensor *t = nn_tensor_new(ctx, NN_F32, ndim, shape);
    nn_tensor_fill(t, value);
    return t;
}

TEST(errors_context) {
    nn_ctx_options bad_device = {.device = "tpu"};
    CHECK_ERROR(nn_ctx_new(&bad_device) == NULL, NN_ERR_ARGUMENT, "nn_ctx_new", "'tpu'");
    nn_ctx_options bad_threads = {.device = "cpu", .threads = -2};
    CHECK_ERROR(nn_ctx_new(&bad_threads) == NULL, NN_ERR_ARGUMENT, "threads", "-2");
    CHECK_ERROR(nn_ctx_sync(NULL) != NN_OK, NN_ERR_ARGUMENT, "nn_ctx_sync");
    CHECK_ERROR(nn_ctx_step_end(NULL) != NN_OK, NN_ERR_ARGUMENT, "nn_ctx_step_end");
    CHECK_ERROR(nn_ctx_manual_seed(NULL, 1) != NN_OK, NN_ERR_ARGUMENT, "nn_ctx_manual_seed");
    nn_ctx_free(NULL); /* allowed */
    nn_clear_error();
    CHECK(strcmp(nn_last_error(), "") == 0 && nn_last_status() == NN_OK);
    CHECK(strcmp(nn_status_name(NN_ERR_SHAPE), "shape error") == 0);
}

TEST(errors_tensor_creation) {
    nn_ctx *ctx = open_cpu();
    int64_t good[2] = {2, 3}, zero[2] = {2, 0}, negative[2] = {-1, 3};
    int64_t huge[4] = {INT64_MAX / 2, 4, 4, 4};
    float data[6] = {0};
    CHECK_ERROR(nn_tensor_new(NULL, NN_F32, 2, good) == NULL, NN_ERR_ARGUMENT, "ctx is NULL");
    CHECK_ERROR(nn_tensor_new(ctx, NN_F32, 0, good) == NULL, NN_ERR_SHAPE, "ndim", "got 0");
    CHECK_ERROR(nn_tensor_new(ctx, NN_F32, NN_MAX_DIMS + 1, good) == NULL, NN_ERR_SHAPE, "ndim", "got 7");
    CHECK_ERROR(nn_tensor_new(ctx, NN_F32, 2, zero) == NULL, NN_ERR_SHAPE, "[2, 0]");
    CHECK_ERROR(nn_tensor_new(ctx, NN_F32, 2, negative) == NULL, NN_ERR_SHAPE, "[-1, 3]");
    CHECK_ERROR(nn_tensor_new(ctx, NN_F32, 2, NULL) == NULL, NN_ERR_ARGUMENT, "shape is NULL");
    CHECK_ERROR(nn_tensor_new(ctx, NN_F32, 4, huge) == NULL, NN_ERR_SHAPE, "too large");
    CHECK_ERROR(nn_tensor_new(ctx, (nn_dtype)7, 2, good) == NULL, NN_ERR_DTYPE, "dtype 7");
    CHECK_ERROR(nn_tensor_from_data(ctx, NN_F32, 2, good, NULL) == NULL, NN_ERR_ARGUMENT,
                "data is NULL");
    CHECK_ERROR(nn_tensor_from_data(NULL, NN_F32, 2, good, data) == NULL, NN_ERR_ARGUMENT,
                "ctx is NULL");
    CHECK(nn_ctx_step_tensor_count(ctx) == 0);
    nn_ctx_free(ctx);
}

TEST(errors_tensor_access) {
    nn_ctx *ctx = open_cpu();
    int64_t shape[2] = {2, 3};
    float data[6] = {0};
    nn_tensor *t = nn_tensor_new(ctx, NN_F32, 2, shape);
    nn_tensor *labels = nn_tensor_new(ctx, NN_I32, 2, shape);
    CHECK_ERROR(nn_tensor_write(t, data, 20) != NN_OK, NN_ERR_ARGUMENT, "20 bytes", "[2, 3]", "24");
    CHECK_ERROR(nn_tensor_read(t, data, 28) != NN_OK, NN_ERR_ARGUMENT, "28 bytes");
    CHECK_ERROR(nn_tensor_read(t, NULL, 24) != NN_OK, NN_ERR_ARGUMENT, "data is NULL");
    CHECK_ERROR(nn_tensor_write(NULL, data, 24) != NN_OK, NN_ERR_ARGUMENT, "tensor is NULL");
    CHECK_ERROR(nn_tensor_fill(labels, 1.0f) != NN_OK, NN_ERR_DTYPE, "int32");
    CHECK_ERROR(nn_tensor_fill(NULL, 1.0f) != NN_OK, NN_ERR_ARGUMENT, "NULL");
    CHECK_ERROR(nn_tensor_set_requires_grad(labels, true) != NN_OK, NN_ERR_DTYPE, "float32");
    CHECK_ERROR(nn_tensor_set_requires_grad(NULL, true) != NN_OK, NN_ERR_ARGUMENT, "NULL");
    CHECK_ERROR(nn_tensor_persist(t) != NN_OK, NN_ERR_STATE, "not owned by the step");
    CHECK_ERROR(nn_tensor_persist(NULL) != NN_OK, NN_ERR_ARGUMENT, "NULL");
    CHECK_ERROR(nn_tensor_zero_grad(NULL) != NN_OK, NN_ERR_ARGUMENT, "NULL");
    /* Queries on NULL or out of range answer harmlessly. */
    int64_t dims[NN_MAX_DIMS];
    CHECK(nn_tensor_ndim(NULL) == 0 && nn_tensor_numel(NULL) == 0 && nn_tensor_grad(NULL) == NULL);
    CHECK(nn_tensor_dim(t, 5) == 0 && nn_tensor_dim(t, -1) == 3 && nn_tensor_shape(NULL, dims) == 0);
    char buf[32];
    CHECK(strcmp(nn_tensor_shape_str(t, buf, sizeof buf), "[2, 3]") == 0);
    nn_tensor_free(t);
    nn_tensor_free(labels);
    nn_ctx_free(ctx);
}

TEST(errors_backward) {
    nn_ctx *ctx = open_cpu();
    int64_t shape[2] = {2, 3};
    nn_tensor *x = filled(ctx, 2, shape, 1.0f);
    CHECK_ERROR(nn_backward(NULL) != NN_OK, NN_ERR_ARGUMENT, "nn_backward");
    CHECK_ERROR(nn_backward(x) != NN_OK, NN_ERR_SHAPE, "one element", "[2, 3]");
    nn_tensor *plain = nn_sum(x);
    CHECK_ERROR(nn_backward(plain) != NN_OK, NN_ERR_STATE, "does not require grad");
    nn_tensor_set_requires_grad(x, true);
    nn_tensor *loss = nn_sum(x);
    CHECK(nn_backward(loss) == NN_OK);
    CHECK_ERROR(nn_backward(loss) != NN_OK, NN_ERR_STATE, "already");
    CHECK_ERROR(nn_tensor_set_requires_grad(nn_sum(x), false) != NN_OK, NN_ERR_STATE,
                "recorded operation");
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_ctx_free(ctx);
}

TEST(errors_ops_shapes) {
    nn_ctx *ctx = open_cpu();
    nn_ctx *other = open_cpu();
    int64_t s23[2] = {2, 3}, s45[2] = {4, 5}, s3[1] = {3}, s4[1] = {4}, s2[1] = {2};
    int64_t img[4] = {2, 3, 8, 8}, w_bad[4] = {4, 2, 3, 3}, w_big[4] = {4, 3, 9, 9};
    int64_t w_ok[4] = {4, 3, 3, 3};
    nn_tensor *a = filled(ctx, 2, s23, 1.0f), *b = filled(ctx, 2, s45, 1.0f);
    nn_tensor *v3 = filled(ctx, 1, s3, 1.0f), *v4 = filled(ctx, 1, s4, 1.0f);
    nn_tensor *x = filled(ctx, 4, img, 1.0f), *wb = filled(ctx, 4, w_bad, 1.0f);
    nn_tensor *wbig = filled(ctx, 4, w_big, 1.0f), *w = filled(ctx, 4, w_ok, 1.0f);
    nn_tensor *labels_f = filled(ctx, 1, s2, 0.0f);
    nn_tensor *labels_short = nn_tensor_new(ctx, NN_I32, 1, s3);
    nn_tensor *foreign = filled(other, 2, s45, 1.0f);
    int32_t bad_label_values[2] = {1, 10};
    int64_t s2x10[2] = {2, 10};
    nn_tensor *logits = filled(ctx, 2, s2x10, 0.5f);
    nn_tensor *bad_labels = nn_tensor_from_data(ctx, NN_I32, 1, s2, bad_label_values);

    CHECK_ERROR(!nn_matmul(a, b, false, false), NN_ERR_SHAPE, "nn_matmul", "[2, 3]", "[4, 5]");
    CHECK_ERROR(!nn_matmul(a, v3, false, false), NN_ERR_SHAPE, "nn_matmul", "2-D");
    CHECK_ERROR(!nn_matmul(NULL, b, false, false), NN_ERR_ARGUMENT, "nn_matmul", "a is NULL");
    CHECK_ERROR(!nn_matmul(b, foreign, true, false), NN_ERR_STATE,
                "nn_matmul: b and a belong to two different contexts, both on cpu");
    CHECK_ERROR(!nn_add_bias(a, v4), NN_ERR_SHAPE, "nn_add_bias", "[4]", "[2, 3]");
    CHECK_ERROR(!nn_add_bias(v3, v3), NN_ERR_SHAPE, "nn_add_bias");
    CHECK_ERROR(!nn_linear(a, b, NULL), NN_ERR_SHAPE, "nn_linear", "3 features", "[4, 5]");
    CHECK_ERROR(!nn_linear(b, b, v3), NN_ERR_SHAPE, "nn_linear", "bias [3]");
    CHECK_ERROR(!nn_conv2d(x, wb, NULL, 1, 0), NN_ERR_SHAPE, "nn_conv2d", "3 channels", "[4, 2, 3, 3]");
    CHECK_ERROR(!nn_conv2d(x, wbig, NULL, 1, 0), NN_ERR_SHAPE, "nn_conv2d", "larger");
    CHECK_ERROR(!nn_conv2d(x, w, NULL, 0, 0), NN_ERR_ARGUMENT, "nn_conv2d", "stride");
    CHECK_ERROR(!nn_conv2d(x, w, NULL, 1, -1), NN_ERR_ARGUMENT, "nn_conv2d", "padding");
    CHECK_ERROR(!nn_conv2d(x, w, v3, 1, 0), NN_ERR_SHAPE, "nn_conv2d", "bias [3]");
    CHECK_ERROR(!nn_conv2d(a, w, NULL, 1, 0), NN_ERR_SHAPE, "nn_conv2d", "4-D", "[2, 3]");
    CHECK_ERROR(!nn_conv2d_ex(x, w, NULL, NULL), NN_ERR_ARGUMENT, "params is NULL");
    CHECK_ERROR(!nn_maxpool2d(x, 0, 2), NN_ERR_ARGUMENT, "nn_maxpool2d", "kernel");
    CHECK_ERROR(!nn_maxpool2d(x, 9, 1), NN_ERR_SHAPE, "nn_maxpool2d", "larger");
    CHECK_ERROR(!nn_maxpool2d_ex(x, 3, 2, 2), NN_ERR_ARGUMENT, "nn_maxpool2d", "padding");
    CHECK_ERROR(!nn_maxpool2d(a, 2, 2), NN_ERR_SHAPE, "nn_maxpool2d", "4-D");
    int64_t bad_view[2] = {5, -1}, two_free[2] = {-1, -1}, zero_dim[2] = {0, 6};
    int64_t too_big[3] = {INT64_MAX / 2, 4, 2};
    CHECK_ERROR(!nn_reshape(a, 2, bad_view), NN_ERR_SHAPE, "nn_reshape", "[5, -1]", "6 elements");
    CHECK_ERROR(!nn_reshape(a, 2, two_free), NN_ERR_SHAPE, "only one dimension");
    CHECK_ERROR(!nn_reshape(a, 2, zero_dim), NN_ERR_SHAPE, "nn_reshape");
    CHECK_ERROR(!nn_reshape(a, 3, too_big), NN_ERR_SHAPE, "cannot view");
    CHECK_ERROR(!nn_reshape(a, 0, s2), NN_ERR_SHAPE, "ndim");
    CHECK_ERROR(!nn_flatten(NULL), NN_ERR_ARGUMENT, "nn_flatten");
    CHECK_ERROR(!nn_relu(labels_short), NN_ERR_DTYPE, "nn_relu", "float32");
    CHECK_ERROR(!nn_softmax(NULL), NN_ERR_ARGUMENT, "nn_softmax");
    CHECK_ERROR(!nn_softmax_cross_entropy(a, labels_f), NN_ERR_DTYPE, "labels", "int32");
    CHECK_ERROR(!nn_softmax_cross_entropy(a, labels_short), NN_ERR_SHAPE, "3 labels", "2 rows");
    CHECK_ERROR(!nn_add(a, b), NN_ERR_SHAPE, "nn_add", "[2, 3]", "[4, 5]");
    CHECK_ERROR(!nn_mul(a, foreign), NN_ERR_STATE, "nn_mul");
    CHECK_ERROR(!nn_scale(NULL, 2.0f), NN_ERR_ARGUMENT, "nn_scale");
    CHECK_ERROR(!nn_sum(NULL), NN_ERR_ARGUMENT, "nn_sum");
    CHECK_ERROR(!nn_mean(labels_short), NN_ERR_DTYPE, "nn_mean", "float32"); /* int32 sums only */
    CHECK_ERROR(!nn_mean(NULL), NN_ERR_ARGUMENT, "nn_mean");
    /* Failed ops leave no tensors behind in the step. */
    CHECK(nn_ctx_step_tensor_count(ctx) == 0);
    /* A label out of range is found by the kernel: reported by whatever
     * runs it (here the read), as a device reports it. */
    nn_tensor *bad_loss = nn_softmax_cross_entropy(logits, bad_labels);
    float bad_value;
    CHECK_ERROR(nn_tensor_read(bad_loss, &bad_value, sizeof bad_value) != NN_OK, NN_ERR_ARGUMENT, "label 10",
                "row 1", "[0, 10)");
    CHECK(nn_ctx_step_end(ctx) == NN_OK);

    nn_tensor *all[] = {a, b, v3, v4, x, wb, wbig, w, labels_f, labels_short, logits, bad_labels};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) nn_tensor_free(all[i]);
    nn_tensor_free(foreign);
    nn_ctx_free(other);
    nn_ctx_free(ctx);
}

TEST(errors_layers) {
    nn_ctx *ctx = open_cpu();
    CHECK_ERROR(!nn_linear_layer(ctx, 0, 3, NN_INIT_KAIMING_UNIFORM), NN_ERR_ARGUMENT,
                "nn_linear_layer", "in 0");
    CHECK_ERROR(!nn_linear_layer(NULL, 2, 3, NN_INIT_KAIMING_UNIFORM), NN_ERR_ARGUMENT, "ctx");
    CHECK_ERROR(!nn_linear_layer(ctx, 2, 3, (nn_init)9), NN_ERR_ARGUMENT, "initialiser 9");
    CHECK_ERROR(!nn_conv2d_layer(ctx, 1, 6, 0, 1, 0, NN_INIT_KAIMING_UNIFORM), NN_ERR_ARGUMENT,
                "nn_conv2d_layer", "kernel 0");
    CHECK_ERROR(!nn_maxpool2d_layer(ctx, 2, 0), NN_ERR_ARGUMENT, "nn_maxpool2d_layer");
    CHECK_ERROR(!nn_flatten_layer(NULL), NN_ERR_ARGUMENT, "nn_flatten_layer");
    CHECK_ERROR(!nn_relu_layer(NULL), NN_ERR_ARGUMENT, "nn_relu_layer");
    CHECK_ERROR(!nn_sequential(NULL), NN_ERR_ARGUMENT, "nn_sequential");

    nn_module *seq = nn_sequential(ctx);
    CHECK_ERROR(nn_sequential_append(seq, "fc", nn_linear_layer(ctx, -1, 2, NN_INIT_KAIMING_UNIFORM)) != NN_OK,
                NN_ERR_ARGUMENT, "child 'fc' is NULL", "nn_linear_layer");
    CHECK(nn_sequential_append(seq, "fc", nn_linear_layer(ctx, 4, 2, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK_ERROR(nn_sequential_append(seq, "fc", nn_relu_layer(ctx)) != NN_OK, NN_ERR_ARGUMENT,
                "child named 'fc' already");
    CHECK_ERROR(nn_sequential_append(seq, "a.b", nn_relu_layer(ctx)) != NN_OK, NN_ERR_ARGUMENT,
                "'a.b'");
    nn_module *relu = nn_relu_layer(ctx);
    CHECK_ERROR(nn_sequential_append(relu, "x", nn_relu_layer(ctx)) != NN_OK, NN_ERR_ARGUMENT,
                "not a Sequential");
    CHECK(nn_module_param_count(seq) == 2);

    int64_t wrong[2] = {3, 5};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 2, wrong);
    CHECK_ERROR(!nn_module_forward(seq, x), NN_ERR_SHAPE, "nn_linear", "[3, 5]", "5 features");
    CHECK_ERROR(!nn_module_forward(NULL, x), NN_ERR_ARGUMENT, "module is NULL");
    CHECK_ERROR(!nn_module_forward(seq, NULL), NN_ERR_ARGUMENT, "input is NULL");
    CHECK(nn_module_param(seq, 7) == NULL && nn_module_param_name(seq, -1) == NULL);

    int64_t flat[1] = {4};
    nn_tensor *vec = nn_tensor_new(ctx, NN_F32, 1, flat);
    CHECK_ERROR(nn_init_xavier_uniform(vec, 1.0f) != NN_OK, NN_ERR_SHAPE, "nn_init_xavier_uniform", "[4]");
    CHECK_ERROR(nn_init_kaiming_uniform(NULL, 0.0f) != NN_OK, NN_ERR_ARGUMENT, "NULL");
    CHECK_ERROR(nn_init_uniform(vec, 1.0f, -1.0f) != NN_OK, NN_ERR_ARGUMENT, "low <= high");
    nn_tensor_free(vec);
    nn_tensor_free(x);
    nn_module_free(relu);
    nn_module_free(seq);
    nn_ctx_free(ctx);
}

TEST(errors_sgd) {
    nn_ctx *ctx = open_cpu();
    int64_t shape[1] = {3};
    nn_tensor *p = nn_tensor_new(ctx, NN_F32, 1, shape), *frozen = nn_tensor_new(ctx, NN_F32, 1, shape);
    nn_tensor_set_requires_grad(p, true);
    nn_sgd_options o = {.lr = 0.1f};
    nn_tensor *dup[2] = {p, p}, *with_frozen[2] = {p, frozen}, *with_null[2] = {p, NULL};
    CHECK_ERROR(!nn_sgd_new(NULL, 1, &o), NN_ERR_ARGUMENT, "nn_sgd_new", "params is NULL");
    CHECK_ERROR(!nn_sgd_new(&p, 0, &o), NN_ERR_ARGUMENT, "at least one");
    CHECK_ERROR(!nn_sgd_new(&p, 1, NULL), NN_ERR_ARGUMENT, "options is NULL");
    CHECK_ERROR(!nn_sgd_new(dup, 2, &o), NN_ERR_ARGUMENT, "appears twice");
    CHECK_ERROR(!nn_sgd_new(with_frozen, 2, &o), NN_ERR_ARGUMENT, "parameter 1", "require grad");
    CHECK_ERROR(!nn_sgd_new(with_null, 2, &o), NN_ERR_ARGUMENT, "parameter 1 is NULL");
    nn_sgd_options bad = {.lr = -1.0f};
    CHECK_ERROR(!nn_sgd_new(&p, 1, &bad), NN_ERR_ARGUMENT, "lr", "-1");
    nn_sgd_options nesterov = {.lr = 0.1f, .nesterov = true};
    CHECK_ERROR(!nn_sgd_new(&p, 1, &nesterov), NN_ERR_ARGUMENT, "nesterov");
    nn_sgd_options neg_clip = {.lr = 0.1f, .clip_value = -1.0f};
    CHECK_ERROR(!nn_sgd_new(&p, 1, &neg_clip), NN_ERR_ARGUMENT, "clip_value");
    nn_optimizer *opt = nn_sgd_new(&p, 1, &o);
    CHECK(opt != NULL);
    CHECK_ERROR(nn_optimizer_set_lr(opt, -0.5f) != NN_OK, NN_ERR_ARGUMENT, "nn_optimizer_set_lr", "lr");
    CHECK(nn_sgd_get_options(opt)->lr == 0.1f); /* unchanged after a refused setting */
    CHECK_ERROR(nn_sgd_set_max_grad_norm(opt, -2.0f) != NN_OK, NN_ERR_ARGUMENT, "max_grad_norm");
    CHECK_ERROR(nn_sgd_set_clip_value(NULL, 1.0f) != NN_OK, NN_ERR_ARGUMENT, "optimizer is NULL");
    CHECK_ERROR(nn_optimizer_step(NULL) != NN_OK, NN_ERR_ARGUMENT, "nn_optimizer_step");
    CHECK_ERROR(nn_optimizer_zero_grad(NULL) != NN_OK, NN_ERR_ARGUMENT, "nn_optimizer_zero_grad");
    CHECK(nn_optimizer_lr(opt) == 0.1f && strcmp(nn_optimizer_name(opt), "sgd") == 0);
    CHECK(nn_optimizer_state_count(opt) == 0 && nn_optimizer_state(opt, 0, 0) == NULL); /* no momentum */
    CHECK(nn_optimizer_step(opt) == NN_OK); /* no gradient yet: nothing to do */
    nn_optimizer_free(opt);
    nn_tensor_free(p);
    nn_tensor_free(frozen);
    nn_ctx_free(ctx);
}
