/* The module interface (include/nn_module.h) as a user writing a module in
 * C sees it: parameters, buffers and children under PyTorch's names and in
 * its order, lookup by dotted path, training mode, ownership, a module's
 * checkpoint and training state carrying its buffers, and every misuse
 * refused with a message that names it. */
#include <stdlib.h>
#include <string.h>

#include "io_test_util.h"
#include "nn_engine.h"
#include "test.h"

#define CHECK_ERROR(expr, code, text)                                                                    \
    do {                                                                                                  \
        CHECK_MSG(expr, "%s should fail", #expr);                                                       \
        CHECK_MSG(nn_last_status() == (code), "%s: status %d, want %d (%s)", #expr, nn_last_status(), \
                  (int)(code), nn_last_error());                                                         \
        CHECK_MSG(strstr(nn_last_error(), text), "%s: message \"%s\" lacks \"%s\"", #expr,            \
                  nn_last_error(), text);                                                                \
    } while (0)

static nn_ctx *cpu(void) { return nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 5}); }

static nn_tensor *filled(nn_ctx *ctx, int64_t n, float first) {
    float v[64];
    for (int64_t i = 0; i < n; i++) v[i] = first + 0.25f * (float)i;
    return nn_tensor_from_data(ctx, NN_F32, 1, &n, v);
}

/* What the user's block does: y = relu(x + inner(x)) + scale + shift
 * (inner a Linear n->n; scale a parameter; shift a buffer), on [N, n]. */
typedef struct block_data {
    int forwards_in_training, forwards_in_eval;
    int *freed; /* counts free_data calls */
} block_data;

static nn_tensor *block_forward(nn_module *self, nn_tensor *x) {
    block_data *d = nn_module_data(self);
    if (nn_module_is_training(self)) d->forwards_in_training++;
    else d->forwards_in_eval++;
    nn_tensor *h = nn_relu(nn_add(x, nn_module_forward(nn_module_child(self, "inner"), x)));
    return nn_add_bias(nn_add_bias(h, nn_module_get_parameter(self, "scale")), nn_module_get_buffer(self, "shift"));
}

static void free_block_data(void *p) {
    block_data *d = p;
    if (d->freed) (*d->freed)++;
    free(d);
}

static nn_module *block_new(nn_ctx *ctx, int n, int *freed) {
    block_data *d = calloc(1, sizeof *d);
    d->freed = freed;
    nn_module *m = nn_module_new(ctx, "Block", block_forward, d, free_block_data);
    nn_tensor *scale = filled(ctx, n, 0.5f), *shift = filled(ctx, n, -1.0f);
    CHECK(nn_module_register_parameter(m, "scale", scale) == NN_OK);
    CHECK(nn_module_add_child(m, "inner", nn_linear_layer(ctx, n, n, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_module_register_buffer(m, "shift", shift) == NN_OK);
    nn_tensor_free(scale); /* the module holds its own references */
    nn_tensor_free(shift);
    return m;
}

/* net: Sequential{ "0": Block, "1": Linear n->3 } wrapped in a user module
 * "Net" with a buffer of its own ("steps") and the Sequential as "layers". */
static nn_tensor *net_forward(nn_module *self, nn_tensor *x) {
    return nn_module_forward(nn_module_child(self, "layers"), x);
}

static nn_module *net_new(nn_ctx *ctx, int n, int *freed) {
    nn_module *net = nn_module_new(ctx, "Net", net_forward, NULL, NULL);
    nn_module *layers = nn_sequential(ctx);
    CHECK(nn_sequential_append(layers, "0", block_new(ctx, n, freed)) == NN_OK);
    CHECK(nn_sequential_append(layers, "1", nn_linear_layer(ctx, n, 3, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_module_add_child(net, "layers", layers) == NN_OK);
    nn_tensor *steps = nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){1}, (int32_t[]){0});
    CHECK(nn_module_register_buffer(net, "steps", steps) == NN_OK);
    nn_tensor_free(steps);
    return net;
}

static void check_names(const char *what, int count, const char *(*name)(const nn_module *, int),
                        const nn_module *m, const char *const *want, int want_count) {
    CHECK_MSG(count == want_count, "%s: %d entries, want %d", what, count, want_count);
    for (int i = 0; i < count && i < want_count; i++)
        CHECK_MSG(name(m, i) && strcmp(name(m, i), want[i]) == 0, "%s %d: '%s', want '%s'", what, i,
                  name(m, i) ? name(m, i) : "(null)", want[i]);
    CHECK(name(m, count) == NULL && name(m, -1) == NULL);
}

/* PyTorch's order: a module's own parameters, then its own buffers, then
 * each child's, recursively (named_parameters() and state_dict()). */
TEST(module_lists_parameters_buffers_and_state_under_pytorch_names) {
    nn_ctx *ctx = cpu();
    int freed = 0;
    nn_module *net = net_new(ctx, 6, &freed);
    const char *params[] = {"layers.0.scale", "layers.0.inner.weight", "layers.0.inner.bias", "layers.1.weight",
                            "layers.1.bias"};
    const char *buffers[] = {"steps", "layers.0.shift"};
    const char *state[] = {"steps", "layers.0.scale", "layers.0.shift", "layers.0.inner.weight",
                           "layers.0.inner.bias", "layers.1.weight", "layers.1.bias"};
    check_names("parameters", nn_module_param_count(net), nn_module_param_name, net, params, 5);
    check_names("buffers", nn_module_buffer_count(net), nn_module_buffer_name, net, buffers, 2);
    check_names("state", nn_module_state_count(net), nn_module_state_name, net, state, 7);
    for (int i = 0; i < nn_module_state_count(net); i++) {
        const char *name = nn_module_state_name(net, i);
        nn_tensor *t = nn_module_state(net, i);
        CHECK_MSG(t == nn_module_get_parameter(net, name) || t == nn_module_get_buffer(net, name),
                  "state '%s' is not found by its path", name);
    }
    CHECK(nn_module_param(net, 0) == nn_module_get_parameter(net, "layers.0.scale"));
    CHECK(nn_tensor_requires_grad(nn_module_param(net, 0)));
    CHECK(!nn_tensor_requires_grad(nn_module_buffer(net, 1)));

    /* Lookup: dotted paths through children; absent entries are NULL. */
    nn_module *block = nn_module_child(net, "layers.0");
    CHECK(block && strcmp(nn_module_kind(block), "Block") == 0);
    CHECK(nn_module_child(net, "layers.0.inner") == nn_module_child(block, "inner"));
    CHECK(nn_module_child_count(block) == 1 && strcmp(nn_module_child_name(block, 0), "inner") == 0);
    CHECK(nn_module_child_at(block, 0) == nn_module_child(block, "inner") && !nn_module_child_at(block, 1));
    CHECK(!nn_module_child(net, "layers.7") && !nn_module_child(net, "nope.0") && !nn_module_child(net, ""));
    CHECK(!nn_module_get_parameter(net, "layers.0.shift") && !nn_module_get_buffer(net, "layers.0.scale"));
    CHECK(!nn_module_get_parameter(net, "layers.0.inner") && !nn_module_get_parameter(net, NULL));

    /* A change anywhere in the tree shows in the root's listings. */
    nn_tensor *extra = filled(ctx, 2, 3.0f);
    CHECK(nn_module_register_parameter(nn_module_child(net, "layers.0.inner"), "extra", extra) == NN_OK);
    CHECK(nn_module_param_count(net) == 6);
    CHECK(strcmp(nn_module_param_name(net, 3), "layers.0.inner.extra") == 0);
    nn_tensor_free(extra);

    nn_module_free(net);
    CHECK_MSG(freed == 1, "the block's data was freed %d times", freed);
    nn_ctx_free(ctx);
}

/* A tensor registered in two modules (tied weights) is one parameter for
 * the optimizer, under its first name, and two state_dict entries. */
TEST(module_shared_parameter_is_listed_once_for_training) {
    nn_ctx *ctx = cpu();
    nn_module *a = nn_linear_layer(ctx, 4, 4, NN_INIT_KAIMING_UNIFORM);
    nn_module *root = nn_module_new(ctx, "Tied", net_forward, NULL, NULL);
    CHECK(nn_module_add_child(root, "a", a) == NN_OK);
    CHECK(nn_module_register_parameter(root, "tied", nn_module_get_parameter(a, "weight")) == NN_OK);
    const char *params[] = {"tied", "a.bias"};
    const char *state[] = {"tied", "a.weight", "a.bias"};
    check_names("parameters", nn_module_param_count(root), nn_module_param_name, root, params, 2);
    check_names("state", nn_module_state_count(root), nn_module_state_name, root, state, 3);
    nn_module_free(root);
    nn_ctx_free(ctx);
}

TEST(module_forward_runs_the_users_function_in_its_mode) {
    nn_ctx *ctx = cpu();
    nn_module *net = net_new(ctx, 5, NULL);
    block_data *d = nn_module_data(nn_module_child(net, "layers.0"));
    int64_t shape[2] = {3, 5};
    float xv[15];
    for (int i = 0; i < 15; i++) xv[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 2, shape, xv);
    nn_tensor *y = nn_module_forward(net, x);
    CHECK(y && nn_tensor_dim(y, 0) == 3 && nn_tensor_dim(y, 1) == 3);
    CHECK(d->forwards_in_training == 1 && d->forwards_in_eval == 0);

    /* The block's output, computed here from its parts. */
    nn_module *block = nn_module_child(net, "layers.0"), *inner = nn_module_child(block, "inner");
    float w[25], b[5], scale[5], shift[5], got[15];
    CHECK(nn_tensor_read(nn_module_get_parameter(inner, "weight"), w, sizeof w) == NN_OK);
    CHECK(nn_tensor_read(nn_module_get_parameter(inner, "bias"), b, sizeof b) == NN_OK);
    CHECK(nn_tensor_read(nn_module_get_parameter(block, "scale"), scale, sizeof scale) == NN_OK);
    CHECK(nn_tensor_read(nn_module_get_buffer(block, "shift"), shift, sizeof shift) == NN_OK);
    CHECK(nn_tensor_read(nn_module_forward(block, x), got, sizeof got) == NN_OK);
    for (int r = 0; r < 3; r++)
        for (int o = 0; o < 5; o++) {
            double z = b[o];
            for (int i = 0; i < 5; i++) z += (double)xv[r * 5 + i] * w[o * 5 + i];
            double h = xv[r * 5 + o] + z;
            double want = (h > 0 ? h : 0) + scale[o] + shift[o];
            CHECK_CLOSE(got[r * 5 + o], want, 1e-5);
        }

    CHECK(nn_module_set_training(net, false) == NN_OK);
    CHECK(!nn_module_is_training(block) && !nn_module_is_training(inner));
    CHECK(nn_module_forward(net, x) != NULL);
    CHECK(d->forwards_in_eval == 1);

    /* One SGD step over the listed parameters moves them, not the buffers. */
    CHECK(nn_module_set_training(net, true) == NN_OK);
    int n = nn_module_param_count(net);
    nn_tensor *params[8];
    for (int i = 0; i < n; i++) params[i] = nn_module_param(net, i);
    nn_optimizer *opt = nn_sgd_new(params, n, &(nn_sgd_options){.lr = 0.5f});
    nn_tensor *labels = nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){3}, (int32_t[]){0, 2, 1});
    float shift_after[5], scale_after[5];
    CHECK(nn_backward(nn_module_forward_loss(net, x, labels, NULL)) == NN_OK);
    CHECK(nn_optimizer_step(opt) == NN_OK);
    CHECK(nn_tensor_read(nn_module_get_parameter(block, "scale"), scale_after, sizeof scale_after) == NN_OK);
    CHECK(nn_tensor_read(nn_module_get_buffer(block, "shift"), shift_after, sizeof shift_after) == NN_OK);
    CHECK(memcmp(shift, shift_after, sizeof shift) == 0);
    CHECK(memcmp(scale, scale_after, sizeof scale) != 0);
    nn_ctx_step_end(ctx);
    nn_optimizer_free(opt);
    nn_tensor_free(x);
    nn_tensor_free(labels);
    nn_module_free(net);
    nn_ctx_free(ctx);
}

/* A user's module checkpoints with its buffers; a file without them is
 * refused naming the missing entry, and nothing is loaded. */
TEST(module_checkpoint_and_training_state_carry_buffers) {
    const char *dir = io_test_dir();
    const char *weights = io_test_path(dir, "net.safetensors");
    nn_ctx *ctx = cpu();
    nn_module *saved = net_new(ctx, 4, NULL), *loaded = net_new(ctx, 4, NULL);
    nn_tensor *shift = nn_module_get_buffer(saved, "layers.0.shift");
    CHECK(nn_tensor_write(shift, (float[]){7, 8, 9, 10}, 16) == NN_OK);
    CHECK(nn_save_module(saved, weights) == NN_OK);
    CHECK(nn_load_module(loaded, weights) == NN_OK);
    float got[4];
    CHECK(nn_tensor_read(nn_module_get_buffer(loaded, "layers.0.shift"), got, sizeof got) == NN_OK);
    CHECK(got[0] == 7 && got[3] == 10);
    CHECK(io_test_same_params(saved, loaded));

    /* The same tensors under the generic entry points, minus the buffer. */
    int n = nn_module_param_count(saved);
    nn_tensor *tensors[8];
    const char *names[8];
    for (int i = 0; i < n; i++) {
        tensors[i] = nn_module_param(saved, i);
        names[i] = nn_module_param_name(saved, i);
    }
    const char *params_only = io_test_path(dir, "params.safetensors");
    CHECK(nn_save_tensors(params_only, n, tensors, names) == NN_OK);
    CHECK(nn_tensor_write(nn_module_get_buffer(loaded, "layers.0.shift"), (float[]){1, 1, 1, 1}, 16) == NN_OK);
    CHECK_ERROR(nn_load_module(loaded, params_only) != NN_OK, NN_ERR_ARGUMENT, "'steps' is missing");
    CHECK(nn_tensor_read(nn_module_get_buffer(loaded, "layers.0.shift"), got, sizeof got) == NN_OK);
    CHECK(got[0] == 1);
    for (int i = 0; i < n; i++) tensors[i] = nn_module_param(loaded, i);
    CHECK(nn_load_tensors(params_only, n, tensors, names) == NN_OK);
    CHECK_ERROR(nn_load_tensors(params_only, n - 1, tensors, names) != NN_OK, NN_ERR_ARGUMENT, names[n - 1]);
    CHECK_ERROR(nn_save_tensors(params_only, 1, tensors, (const char *[]){""}) != NN_OK, NN_ERR_ARGUMENT,
                "name is NULL or empty");

    /* The training state holds the buffers beside parameters and momentum. */
    const char *state = io_test_path(dir, "state.safetensors");
    for (int i = 0; i < n; i++) tensors[i] = nn_module_param(saved, i);
    nn_optimizer *opt = nn_sgd_new(tensors, n, &(nn_sgd_options){.lr = 0.1f, .momentum = 0.9f});
    for (int i = 0; i < n; i++) tensors[i] = nn_module_param(loaded, i);
    nn_optimizer *opt2 = nn_sgd_new(tensors, n, &(nn_sgd_options){.lr = 0.1f, .momentum = 0.9f});
    nn_train_progress progress = {.epoch = 2, .step = 9, .seed = 5}, back;
    CHECK(nn_save_train_state(state, saved, opt, &progress) == NN_OK);
    CHECK(nn_load_train_state(state, loaded, opt2, &back) == NN_OK);
    CHECK(nn_tensor_read(nn_module_get_buffer(loaded, "layers.0.shift"), got, sizeof got) == NN_OK);
    CHECK(got[0] == 7 && back.step == 9);
    nn_optimizer_free(opt);
    nn_optimizer_free(opt2);
    nn_module_free(saved);
    nn_module_free(loaded);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}

static nn_tensor *returns_nothing(nn_module *self, nn_tensor *x) {
    (void)self;
    (void)x;
    return NULL;
}

TEST(module_misuse_is_refused_with_its_name) {
    nn_ctx *ctx = cpu(), *other = cpu();
    int freed = 0;
    nn_module *m = block_new(ctx, 3, &freed);
    nn_tensor *t = filled(ctx, 3, 0.0f);

    CHECK_ERROR(!nn_module_new(NULL, "X", net_forward, NULL, NULL), NN_ERR_ARGUMENT, "ctx is NULL");
    CHECK_ERROR(!nn_module_new(ctx, "", net_forward, NULL, NULL), NN_ERR_ARGUMENT, "kind");
    block_data *orphan = calloc(1, sizeof *orphan);
    orphan->freed = &freed;
    CHECK_ERROR(!nn_module_new(ctx, "X", NULL, orphan, free_block_data), NN_ERR_ARGUMENT, "no forward function");
    CHECK_MSG(freed == 1, "data of a module that failed to be made: freed %d times", freed);

    CHECK_ERROR(nn_module_register_parameter(m, "scale", t) != NN_OK, NN_ERR_ARGUMENT,
                "Block has a parameter named 'scale' already");
    CHECK_ERROR(nn_module_register_buffer(m, "inner", t) != NN_OK, NN_ERR_ARGUMENT, "a child named 'inner'");
    CHECK_ERROR(nn_module_register_parameter(m, "shift", t) != NN_OK, NN_ERR_ARGUMENT, "a buffer named 'shift'");
    CHECK_ERROR(nn_module_register_parameter(m, "a.b", t) != NN_OK, NN_ERR_ARGUMENT, "'a.b'");
    CHECK_ERROR(nn_module_register_parameter(m, "ok", NULL) != NN_OK, NN_ERR_ARGUMENT, "'ok' is NULL");
    nn_tensor *sum = nn_add(t, t);
    CHECK_ERROR(nn_module_register_parameter(m, "sum", sum) != NN_OK, NN_ERR_ARGUMENT, "an operation's result");
    nn_tensor *foreign = filled(other, 3, 0.0f);
    CHECK_ERROR(nn_module_register_buffer(m, "f", foreign) != NN_OK, NN_ERR_ARGUMENT,
                "tensor 'f' and the Block belong to two different contexts");
    nn_tensor *ints = nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){1}, (int32_t[]){4});
    CHECK_ERROR(nn_module_register_parameter(m, "count", ints) != NN_OK, NN_ERR_ARGUMENT, "float32");
    CHECK(nn_tensor_set_requires_grad(t, true) == NN_OK);
    CHECK_ERROR(nn_module_register_buffer(m, "trained", t) != NN_OK, NN_ERR_ARGUMENT, "requires grad");
    CHECK(nn_module_state_count(m) == 4); /* nothing was added */

    /* Children: one parent each, no cycles, the constructor's error kept. */
    nn_module *root = nn_module_new(ctx, "Root", net_forward, NULL, NULL);
    CHECK(nn_module_add_child(root, "block", m) == NN_OK);
    nn_module *root2 = nn_module_new(ctx, "Root2", net_forward, NULL, NULL);
    CHECK_ERROR(nn_module_add_child(root2, "block", m) != NN_OK, NN_ERR_ARGUMENT, "a part of a Root already");
    CHECK_ERROR(nn_module_add_child(m, "up", root) != NN_OK, NN_ERR_ARGUMENT, "contains it");
    CHECK_ERROR(nn_module_add_child(root, "bad", nn_linear_layer(ctx, 0, 1, NN_INIT_KAIMING_UNIFORM)) != NN_OK,
                NN_ERR_ARGUMENT, "nn_linear_layer");
    CHECK_ERROR(nn_module_add_child(root, "x", nn_relu_layer(other)) != NN_OK, NN_ERR_ARGUMENT,
                "child 'x' and the Root belong to two different contexts");
    CHECK(nn_module_child(root, "block") == m && freed == 1);

    /* A forward function that fails without saying why is still reported. */
    nn_module *silent = nn_module_new(ctx, "Silent", returns_nothing, NULL, NULL);
    nn_clear_error();
    CHECK_ERROR(!nn_module_forward(silent, t), NN_ERR_STATE, "Silent returned no output");

    /* Freeing a child detaches it from its parent. */
    nn_module_free(m);
    CHECK(freed == 2 && nn_module_child_count(root) == 0 && nn_module_state_count(root) == 0);
    nn_module_free(silent);
    nn_module_free(root);
    nn_module_free(root2);
    nn_ctx_step_end(ctx);
    nn_tensor_free(t);
    nn_tensor_free(ints);
    nn_tensor_free(foreign);
    nn_ctx_free(ctx);
    nn_ctx_free(other);
}
