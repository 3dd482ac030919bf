/* The C side of the Python interop tests (tests/io/test_*.py): saves, loads,
 * exports and runs models so that PyTorch, safetensors, onnx and
 * onnxruntime can be compared with nn-engine without the Python package.
 * Tensors cross as raw little-endian float32 files.
 *
 *   nn_io_fixture save    MODEL SEED WEIGHTS            initial weights (ctx seed)
 *   nn_io_fixture state   MODEL SEED STATE              one SGD step, then the training state
 *   nn_io_fixture forward MODEL WEIGHTS IN BATCH OUT    logits of IN ([BATCH, input shape])
 *   nn_io_fixture export  MODEL WEIGHTS ONNX [static]   ONNX export of the model
 *   nn_io_fixture grad    MODEL WEIGHTS IN BATCH LABELS OUT
 *       softmax-CE loss of IN against LABELS (int32), then every parameter's
 *       gradient, concatenated in parameter order, into OUT (loss first)
 *   nn_io_fixture import  ONNX IN OUT N C H W [train | fit STEPS LABELS LR EXPORT]
 *       nn_onnx_import of ONNX run on IN ([N, C, H, W], trailing 0s dropping
 *       dimensions; int32 values when IN is int32:PATH; in evaluation mode
 *       unless `train`) into OUT; prints each state entry of the module,
 *       "name: shape". `fit`: STEPS SGD steps (lr LR) in training mode on IN
 *       against LABELS (int32) minimising the softmax cross-entropy, each
 *       step's loss into OUT, then the module in evaluation mode exported to
 *       EXPORT and its output for IN written to EXPORT.out
 *
 * alexnet | alexnet-tv: nn_alexnet with 3 classes and nn_alexnet_tv with 10,
 * input [N, 3, 224, 224]; `forward` runs them in evaluation mode (no dropout).
 * MODEL: lenet | mlp | residual | norm (modules, input [N, 1, 28, 28]; residual is
 * written as a user's module with nn_module.h: a parameter and a buffer of
 * its own and three children, see residual_forward); ops | reduce (graphs
 * built from single operations, input [N, 2, 7, 9], exported with
 * nn_onnx_export and named parameters; their WEIGHTS are a safetensors file
 * too); convx-* (a grouped, depthwise or transposed convolution or a
 * resampling alone, seeded parameters, input [N, 6, 11, 10]: see kConvx);
 * pool-* (one pooling operation alone, no parameters, input
 * [N, 3, 11, 10]: see kPools); tensor-* (broadcasting, reductions and
 * rearrangements on [N, 2, 7, 9]: see kTensorGraphs); attention (batched
 * matmul, embedding, linear of rank 4, causal attention: see
 * attention_forward; input [N, 2, 7, 9]); fn-NAME: one elementwise function
 * of kFunctions applied to the input [N, 2, 7, 9] (no parameters).
 * NN_IO_FIXTURE_DEVICE=vulkan runs on
 * the GPU (default: the CPU); NN_IO_FIXTURE_OPSET sets the opset graphs
 * export with (default 17).
 * Exit status 0 on success; errors go to stderr. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"

#define MAX_PARAMS 32

typedef struct model {
    nn_module *module; /* lenet, mlp */
    /* ops, reduce: parameters held here, in a sequential-free list */
    int count;
    nn_tensor *params[MAX_PARAMS];
    const char *names[MAX_PARAMS];
    const char *kind;
    int64_t input[3]; /* one image's shape */
} model;

/* The fn-NAME models: every row of shaders/unary_ops.h, the ones with
 * parameters with values that take each export path (softplus's lone
 * Softplus and its composition, clamp with one side absent). */
static nn_tensor *fn_gelu(nn_tensor *x) { return nn_gelu(x, false); }
static nn_tensor *fn_gelu_tanh(nn_tensor *x) { return nn_gelu(x, true); }
static nn_tensor *fn_leaky_relu(nn_tensor *x) { return nn_leaky_relu(x, 0.2f); }
static nn_tensor *fn_elu(nn_tensor *x) { return nn_elu(x, 0.7f); }
static nn_tensor *fn_softplus(nn_tensor *x) { return nn_softplus(x, 1.0f, 20.0f); }
static nn_tensor *fn_softplus_beta(nn_tensor *x) { return nn_softplus(x, 2.0f, 3.0f); }
static nn_tensor *fn_softplus_threshold(nn_tensor *x) { return nn_softplus(x, 1.0f, 2.0f); }
static nn_tensor *fn_clamp(nn_tensor *x) { return nn_clamp(x, -0.5f, 1.25f); }
static nn_tensor *fn_clamp_max(nn_tensor *x) { return nn_clamp(x, -INFINITY, 0.75f); }
static nn_tensor *fn_clamp_min(nn_tensor *x) { return nn_clamp(x, -1.0f, INFINITY); }
static nn_tensor *fn_pow2(nn_tensor *x) { return nn_pow_scalar(x, 2.0f); }
static nn_tensor *fn_pow3(nn_tensor *x) { return nn_pow_scalar(x, 3.0f); }
static nn_tensor *fn_pow_half(nn_tensor *x) { return nn_pow_scalar(x, 0.5f); }
static nn_tensor *fn_add_scalar(nn_tensor *x) { return nn_add_scalar(x, 1.5f); }
static nn_tensor *fn_mul_scalar(nn_tensor *x) { return nn_mul_scalar(x, -2.5f); }
static nn_tensor *fn_rsub_scalar(nn_tensor *x) { return nn_rsub_scalar(x, 3.0f); }
static nn_tensor *fn_rdiv_scalar(nn_tensor *x) { return nn_rdiv_scalar(x, 2.0f); }

/* Softmax along a dimension and the losses, on x [N, 2, 7, 9] read as 2
 * classes over 7 x 9 positions: class targets (n * 7 + h * 3 + w) % 3,
 * where 2 is the ignore_index; float targets sin(i); class weights
 * {0.7, 1.6}. The constants live until the model closes. */
static nn_tensor *g_constants[4];
static int g_constant_count;

static nn_tensor *kept(nn_tensor *t) {
    if (t && g_constant_count < 4) g_constants[g_constant_count++] = t;
    return t;
}

static nn_tensor *class_targets(nn_tensor *x) {
    const int64_t n = nn_tensor_dim(x, 0), shape[3] = {n, 7, 9};
    int32_t *t = malloc((size_t)(n * 63) * sizeof *t);
    for (int64_t i = 0; i < n * 63; i++) t[i] = (int32_t)(((i / 63) * 7 + (i / 9 % 7) * 3 + i % 9) % 3);
    nn_tensor *made = kept(nn_tensor_from_data(nn_tensor_ctx(x), NN_I32, 3, shape, t));
    free(t);
    return made;
}

static nn_tensor *float_targets(nn_tensor *x) {
    const int64_t n = nn_tensor_dim(x, 0), shape[4] = {n, 2, 7, 9};
    float *t = malloc((size_t)(n * 126) * sizeof *t);
    for (int64_t i = 0; i < n * 126; i++) t[i] = (float)sin((double)i);
    nn_tensor *made = kept(nn_tensor_from_data(nn_tensor_ctx(x), NN_F32, 4, shape, t));
    free(t);
    return made;
}

static nn_tensor *class_weights(nn_tensor *x) {
    const int64_t two = 2;
    return kept(nn_tensor_from_data(nn_tensor_ctx(x), NN_F32, 1, &two, (float[]){0.7f, 1.6f}));
}

static nn_tensor *fn_softmax_dim1(nn_tensor *x) { return nn_softmax_dim(x, 1); }
static nn_tensor *fn_log_softmax1(nn_tensor *x) { return nn_log_softmax(x, 1); }
static nn_tensor *fn_log_softmax_neg2(nn_tensor *x) { return nn_log_softmax(x, -2); }
static nn_tensor *fn_nll_mean(nn_tensor *x) {
    return nn_nll_loss(nn_log_softmax(x, 1), class_targets(x), NULL, NN_REDUCTION_MEAN, 2);
}
static nn_tensor *fn_nll_none_weighted(nn_tensor *x) {
    return nn_nll_loss(nn_log_softmax(x, 1), class_targets(x), class_weights(x), NN_REDUCTION_NONE, 2);
}
static nn_tensor *fn_cross_entropy_mean_weighted(nn_tensor *x) {
    return nn_cross_entropy(x, class_targets(x), class_weights(x), NN_REDUCTION_MEAN, 2, 0.0f);
}
static nn_tensor *fn_cross_entropy_smoothing_mean(nn_tensor *x) {
    return nn_cross_entropy(x, class_targets(x), class_weights(x), NN_REDUCTION_MEAN, 2, 0.1f);
}
static nn_tensor *fn_cross_entropy_smoothing_sum(nn_tensor *x) {
    return nn_cross_entropy(x, class_targets(x), NULL, NN_REDUCTION_SUM, 2, 0.1f);
}
static nn_tensor *fn_cross_entropy_smoothing_none(nn_tensor *x) {
    return nn_cross_entropy(x, class_targets(x), class_weights(x), NN_REDUCTION_NONE, 2, 0.1f);
}
static nn_tensor *fn_mse_loss(nn_tensor *x) { return nn_mse_loss(x, float_targets(x), NN_REDUCTION_MEAN); }
static nn_tensor *fn_l1_loss(nn_tensor *x) { return nn_l1_loss(x, float_targets(x), NN_REDUCTION_SUM); }
static nn_tensor *fn_smooth_l1_loss(nn_tensor *x) {
    return nn_smooth_l1_loss(x, float_targets(x), NN_REDUCTION_NONE, 0.5f);
}
static const struct {
    const char *name;
    nn_tensor *(*apply)(nn_tensor *x);
} kFunctions[] = {
    {"sigmoid", nn_sigmoid},
    {"tanh", nn_tanh},
    {"neg", nn_neg},
    {"exp", nn_exp},
    {"log", nn_log},
    {"sqrt", nn_sqrt},
    {"abs", nn_abs},
    {"gelu", fn_gelu},
    {"gelu_tanh", fn_gelu_tanh},
    {"silu", nn_silu},
    {"relu6", nn_relu6},
    {"hardswish", nn_hardswish},
    {"hardsigmoid", nn_hardsigmoid},
    {"softsign", nn_softsign},
    {"leaky_relu", fn_leaky_relu},
    {"elu", fn_elu},
    {"softplus", fn_softplus},
    {"softplus_beta", fn_softplus_beta},
    {"softplus_threshold", fn_softplus_threshold},
    {"clamp", fn_clamp},
    {"clamp_max", fn_clamp_max},
    {"clamp_min", fn_clamp_min},
    {"pow2", fn_pow2},
    {"pow3", fn_pow3},
    {"pow_half", fn_pow_half},
    {"add_scalar", fn_add_scalar},
    {"mul_scalar", fn_mul_scalar},
    {"rsub_scalar", fn_rsub_scalar},
    {"rdiv_scalar", fn_rdiv_scalar},
    {"softmax_dim1", fn_softmax_dim1},
    {"log_softmax1", fn_log_softmax1},
    {"log_softmax_neg2", fn_log_softmax_neg2},
    {"nll_mean", fn_nll_mean},
    {"nll_none_weighted", fn_nll_none_weighted},
    {"cross_entropy_mean_weighted", fn_cross_entropy_mean_weighted},
    {"cross_entropy_smoothing_mean", fn_cross_entropy_smoothing_mean},
    {"cross_entropy_smoothing_sum", fn_cross_entropy_smoothing_sum},
    {"cross_entropy_smoothing_none", fn_cross_entropy_smoothing_none},
    {"mse_loss", fn_mse_loss},
    {"l1_loss", fn_l1_loss},
    {"smooth_l1_loss", fn_smooth_l1_loss},
};

/* The function of a model fn-NAME, or NULL. */
static nn_tensor *(*function_of(const char *kind))(nn_tensor *) {
    if (strncmp(kind, "fn-", 3) != 0) return NULL;
    for (size_t i = 0; i < sizeof kFunctions / sizeof kFunctions[0]; i++)
        if (strcmp(kind + 3, kFunctions[i].name) == 0) return kFunctions[i].apply;
    return NULL;
}

static int tensor_graph(const char *kind);

static bool is_graph(const char *kind) {
    return strcmp(kind, "ops") == 0 || strcmp(kind, "reduce") == 0 || function_of(kind) ||
           tensor_graph(kind) >= 0 || strcmp(kind, "attention") == 0;
}

static int fail(const char *what) {
    fprintf(stderr, "nn_io_fixture: %s: %s\n", what, nn_last_error());
    return 1;
}

static void input_shape(const model *m, int64_t batch, int64_t shape[4]) {
    shape[0] = batch;
    memcpy(shape + 1, m->input, sizeof m->input);
}

static nn_tensor *add_param(nn_ctx *ctx, model *m, const char *name, int ndim, const int64_t *shape) {
    nn_tensor *t = nn_tensor_new(ctx, NN_F32, ndim, shape);
    if (!t) return NULL;
    nn_init_uniform(t, -0.5f, 0.5f);
    nn_tensor_set_requires_grad(t, true);
    m->params[m->count] = t;
    m->names[m->count++] = name;
    return t;
}

/* The tensor-* graphs (tests/io/test_tensor_ops_onnx.py), input [N, 2, 7, 9]:
 * broadcast: add, sub, mul, div, maximum and minimum with parameters row
 * [9], col [2, 1, 1] and divisor [7, 1]; reduce: sum, mean, max, min and
 * var over inner dimensions with keepdim, added back by broadcasting;
 * rearrange: permute, transpose, slice, select, cat, stack, unsqueeze,
 * expand, squeeze; argmax, argmin-all: int32 positions. */
static const char *const kTensorGraphs[] = {"tensor-broadcast", "tensor-reduce", "tensor-rearrange", "tensor-argmax",
                                            "tensor-argmin-all"};
#define TENSOR_GRAPHS (int)(sizeof kTensorGraphs / sizeof kTensorGraphs[0])

static int tensor_graph(const char *kind) {
    for (int i = 0; i < TENSOR_GRAPHS; i++)
        if (strcmp(kind, kTensorGraphs[i]) == 0) return i;
    return -1;
}

static nn_tensor *tensor_graph_forward(const char *kind, nn_tensor *x, nn_tensor *const *p) {
    switch (tensor_graph(kind)) {
    case 0: {
        nn_tensor *divisor = nn_add_scalar(nn_abs(p[2]), 0.5f);
        nn_tensor *h = nn_div(nn_mul(nn_sub(nn_add(x, p[0]), p[1]), p[0]), divisor);
        return nn_minimum(nn_maximum(h, p[1]), nn_add(x, p[1]));
    }
    case 1: {
        const int d1[1] = {1}, d3[1] = {3}, d23[2] = {2, 3}, dm2[1] = {-2};
        nn_tensor *sum = nn_sum_dims(x, d23, 2, true), *mean = nn_mean_dims(x, d1, 1, true);
        nn_tensor *max = nn_max_dims(x, d3, 1, true), *min = nn_min_dims(x, dm2, 1, true);
        nn_tensor *var = nn_var_dims(x, d3, 1, 1.0, true);
        return nn_add(nn_add(nn_add(sum, mean), max), nn_add(min, var));
    }
    case 2: {
        nn_tensor *h = nn_transpose(nn_permute(x, (int[]){0, 2, 3, 1}, 4), 1, 2); /* [N, 9, 7, 2] */
        h = nn_select(nn_slice(h, 1, 1, 8, 2), 3, 1);                             /* [N, 4, 7] */
        nn_tensor *twice[2] = {h, nn_mul_scalar(h, 2.0f)};
        h = nn_cat(twice, 2, 1); /* [N, 8, 7] */
        nn_tensor *pair[2] = {h, nn_neg(h)};
        h = nn_unsqueeze(nn_stack(pair, 2, 2), 1); /* [N, 1, 8, 2, 7] */
        h = nn_expand(h, 5, (int64_t[]){-1, 3, 8, 2, 7});
        return nn_squeeze(nn_unsqueeze(h, -1), -1);
    }
    case 3: return nn_argmax_dims(x, (int[]){3}, 1, false);
    case 4: return nn_argmin_dims(x, NULL, 0, true);
    default: return NULL;
    }
}

/* stem conv 1->4 k3 p1; h = relu(h + body(h)), body = conv, relu, conv
 * (4->4 k3 p1); h + scale + shift per channel (scale a parameter, shift a
 * buffer); maxpool 4; flatten; head linear 196->10. As conftest's
 * TorchResidual. */
static nn_tensor *residual_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *h = nn_module_forward(nn_module_child(self, "stem"), x);
    h = nn_relu(nn_add(h, nn_module_forward(nn_module_child(self, "body"), h)));
    h = nn_add_bias(nn_add_bias(h, nn_module_get_parameter(self, "scale")), nn_module_get_buffer(self, "shift"));
    return nn_module_forward(nn_module_child(self, "head"), nn_flatten(nn_maxpool2d(h, 4, 4)));
}

static nn_module *residual_open(nn_ctx *ctx) {
    const nn_init init = NN_INIT_KAIMING_UNIFORM;
    nn_module *net = nn_module_new(ctx, "Residual", residual_forward, NULL, NULL);
    nn_module *body = nn_sequential(ctx);
    nn_status st = nn_module_add_child(net, "stem", nn_conv2d_layer(ctx, 1, 4, 3, 1, 1, init));
    if (st == NN_OK) st = nn_sequential_append(body, "0", nn_conv2d_layer(ctx, 4, 4, 3, 1, 1, init));
    if (st == NN_OK) st = nn_sequential_append(body, "1", nn_relu_layer(ctx));
    if (st == NN_OK) st = nn_sequential_append(body, "2", nn_conv2d_layer(ctx, 4, 4, 3, 1, 1, init));
    if (st == NN_OK) st = nn_module_add_child(net, "body", body);
    if (st == NN_OK) st = nn_module_add_child(net, "head", nn_linear_layer(ctx, 4 * 7 * 7, 10, init));
    nn_tensor *scale = nn_tensor_new(ctx, NN_F32, 1, (int64_t[]){4});
    nn_tensor *shift = nn_tensor_new(ctx, NN_F32, 1, (int64_t[]){4});
    if (st == NN_OK && (!scale || !shift)) st = nn_last_status();
    if (st == NN_OK) st = nn_init_uniform(scale, -0.5f, 0.5f);
    if (st == NN_OK) st = nn_init_uniform(shift, -0.5f, 0.5f);
    if (st == NN_OK) st = nn_module_register_parameter(net, "scale", scale);
    if (st == NN_OK) st = nn_module_register_buffer(net, "shift", shift);
    nn_tensor_free(scale);
    nn_tensor_free(shift);
    if (st != NN_OK) {
        nn_module_free(net);
        return NULL;
    }
    return net;
}

/* norm: conv 1->6 k3 p1, bn BatchNorm2d(6), relu, gn GroupNorm(3, 6),
 * pool 4, flatten, ln LayerNorm(294), head linear 294->10. As conftest's
 * TorchNorm. */
static nn_module *norm_open(nn_ctx *ctx) {
    nn_module *net = nn_sequential(ctx);
    const int64_t features = 294;
    nn_status st = nn_sequential_append(net, "conv", nn_conv2d_layer(ctx, 1, 6, 3, 1, 1, NN_INIT_KAIMING_UNIFORM));
    if (st == NN_OK) st = nn_sequential_append(net, "bn", nn_batchnorm2d(ctx, 6, 1e-5f, 0.1f, true, true));
    if (st == NN_OK) st = nn_sequential_append(net, "relu", nn_relu_layer(ctx));
    if (st == NN_OK) st = nn_sequential_append(net, "gn", nn_groupnorm(ctx, 3, 6, 1e-5f, true));
    if (st == NN_OK) st = nn_sequential_append(net, "pool", nn_maxpool2d_layer(ctx, 4, 4));
    if (st == NN_OK) st = nn_sequential_append(net, "flatten", nn_flatten_layer(ctx));
    if (st == NN_OK) st = nn_sequential_append(net, "ln", nn_layernorm(ctx, 1, &features, 1e-5f, true, true));
    if (st == NN_OK) st = nn_sequential_append(net, "head", nn_linear_layer(ctx, 294, 10, NN_INIT_KAIMING_UNIFORM));
    if (st != NN_OK) {
        nn_module_free(net);
        return NULL;
    }
    return net;
}

/* norm's running statistics moved off their initial values by two
 * training batches of uniform inputs, and its affine parameters off 1 and
 * 0, so a checkpoint or export that dropped them would show. */
static nn_status norm_warm(nn_ctx *ctx, model *m) {
    static const char *const affine[] = {"bn.weight", "bn.bias", "gn.weight", "gn.bias", "ln.weight", "ln.bias"};
    nn_status st = NN_OK;
    for (int i = 0; i < 6 && st == NN_OK; i++)
        st = nn_init_uniform(nn_module_get_parameter(m->module, affine[i]), 0.5f, 1.5f);
    const int64_t shape[4] = {3, 1, 28, 28};
    for (int step = 0; step < 2 && st == NN_OK; step++) {
        nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, shape);
        st = x ? nn_init_uniform(x, -1.0f, 2.0f + step) : nn_last_status();
        if (st == NN_OK && !nn_module_forward(m->module, x)) st = nn_last_status();
        nn_tensor_free(x);
        if (st == NN_OK) st = nn_ctx_step_end(ctx);
    }
    return st;
}

/* pool-*: each a pooling operation with PyTorch's arguments
 * (tests/io/test_pooling_onnx.py); the last two have no ONNX form. */
static const char *const kPools[] = {"pool-max", "pool-max-ceil", "pool-avg", "pool-avg-exclude", "pool-avg-ceil",
                                     "pool-avg-ceil-exclude", "pool-global-avg", "pool-global-max",
                                     "pool-adaptive-avg", "pool-adaptive-max", "pool-adaptive-uneven",
                                     "pool-divisor"};
#define POOLS (int)(sizeof kPools / sizeof kPools[0])

static int pool_index(const char *kind) {
    for (int i = 0; i < POOLS; i++)
        if (strcmp(kind, kPools[i]) == 0) return i;
    return -1;
}

static nn_tensor *pool_forward(const char *kind, nn_tensor *x) {
    /* kernel h w, stride h w, padding h w, dilation h w, ceil_mode */
    const nn_pool2d_params dilated = {3, 2, 2, 3, 1, 1, 2, 1, false}, dilated_ceil = {3, 3, 2, 2, 1, 0, 1, 2, true};
    const nn_pool2d_params padded = {3, 2, 2, 1, 1, 1, 1, 1, false};
    const nn_pool2d_params past_edge = {3, 3, 2, 2, 1, 1, 1, 1, true}; /* the last column window ends past 10 + 1 */
    switch (pool_index(kind)) {
    case 0: return nn_maxpool2d_window(x, &dilated);
    case 1: return nn_maxpool2d_window(x, &dilated_ceil);
    case 2: return nn_avgpool2d(x, &padded, true, 0);
    case 3: return nn_avgpool2d(x, &padded, false, 0);
    case 4: return nn_avgpool2d(x, &past_edge, true, 0);
    case 5: return nn_avgpool2d(x, &past_edge, false, 0);
    case 6: return nn_adaptive_avgpool2d(x, 1, 1);
    case 7: return nn_adaptive_maxpool2d(x, 1, 1);
    case 8: return nn_adaptive_avgpool2d(x, 1, 5);
    case 9: return nn_adaptive_maxpool2d(x, 11, 2);
    case 10: return nn_adaptive_avgpool2d(x, 3, 4);
    case 11: return nn_avgpool2d(x, &padded, true, 3);
    }
    return NULL;
}

/* convx-*: convolution with groups and dilation, depthwise, transposed,
 * and resampling, each alone on [N, 6, 11, 10] with seeded parameters
 * (tests/io/test_convolution_onnx.py). */
static const char *const kConvx[] = {"convx-grouped", "convx-depthwise", "convx-transpose", "convx-nearest",
                                     "convx-nearest-size", "convx-bilinear", "convx-bilinear-corners",
                                     "convx-bilinear-scale"};

static int convx_index(const char *kind) {
    for (size_t i = 0; i < sizeof kConvx / sizeof kConvx[0]; i++)
        if (strcmp(kind, kConvx[i]) == 0) return (int)i;
    return -1;
}

static int convx_open(nn_ctx *ctx, model *m) {
    memcpy(m->input, (int64_t[]){6, 11, 10}, sizeof m->input);
    switch (convx_index(m->kind)) {
    case 0: add_param(ctx, m, "weight", 4, (int64_t[]){6, 3, 3, 2}); break;
    case 1: add_param(ctx, m, "weight", 4, (int64_t[]){12, 1, 3, 3}); break;
    case 2: add_param(ctx, m, "weight", 4, (int64_t[]){6, 2, 3, 3}); break;
    default: return 0;
    }
    add_param(ctx, m, "bias", 1, (int64_t[]){convx_index(m->kind) == 2 ? 4 : nn_tensor_dim(m->params[0], 0)});
    return m->count == 2 ? 0 : fail("parameters");
}

static nn_tensor *convx_forward(model *m, nn_tensor *x) {
    nn_tensor **p = m->params;
    const nn_conv2d_params grouped = {.stride_h = 2, .stride_w = 1, .pad_h = 1, .dilation_h = 2, .groups = 2};
    const nn_conv2d_params depthwise = {.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 6};
    const nn_conv_transpose2d_params transposed = {.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1,
                                                   .output_pad_h = 1, .groups = 2};
    switch (convx_index(m->kind)) {
    case 0: return nn_conv2d_ex(x, p[0], p[1], &grouped);
    case 1: return nn_conv2d_ex(x, p[0], p[1], &depthwise);
    case 2: return nn_conv_transpose2d(x, p[0], p[1], &transposed);
    case 3: return nn_interpolate(x, 0, 0, 2.0, 2.0, NN_INTERPOLATE_NEAREST, false);
    case 4: return nn_interpolate(x, 7, 15, 0, 0, NN_INTERPOLATE_NEAREST, false);
    case 5: return nn_interpolate(x, 15, 13, 0, 0, NN_INTERPOLATE_BILINEAR, false);
    case 6: return nn_interpolate(x, 0, 0, 2.0, 2.0, NN_INTERPOLATE_BILINEAR, true);
    case 7: return nn_interpolate(x, 0, 0, 1.5, 1.5, NN_INTERPOLATE_BILINEAR, false);
    }
    return NULL;
}

static int model_open(nn_ctx *ctx, const char *kind, model *m) {
    memset(m, 0, sizeof *m);
    m->kind = kind;
    bool alexnet = strncmp(kind, "alexnet", 7) == 0, graph = is_graph(kind);
    memcpy(m->input, alexnet ? (int64_t[]){3, 224, 224} : graph ? (int64_t[]){2, 7, 9} : (int64_t[]){1, 28, 28},
           sizeof m->input);
    if (strcmp(kind, "alexnet") == 0) {
        m->module = nn_alexnet(ctx, 3, NN_INIT_KAIMING_UNIFORM);
    } else if (strcmp(kind, "alexnet-tv") == 0) {
        m->module = nn_alexnet_tv(ctx, 10, NN_INIT_KAIMING_UNIFORM);
    } else if (strcmp(kind, "lenet") == 0) {
        m->module = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    } else if (strcmp(kind, "residual") == 0) {
        m->module = residual_open(ctx);
    } else if (strcmp(kind, "norm") == 0) {
        m->module = norm_open(ctx);
        if (m->module && norm_warm(ctx, m) != NN_OK) return fail("norm statistics");
    } else if (strcmp(kind, "mlp") == 0) {
        m->module = nn_sequential(ctx);
        nn_sequential_append(m->module, "flatten", nn_flatten_layer(ctx));
        nn_sequential_append(m->module, "fc1", nn_linear_layer(ctx, 784, 50, NN_INIT_KAIMING_UNIFORM));
        nn_sequential_append(m->module, "relu", nn_relu_layer(ctx));
        nn_sequential_append(m->module, "fc2", nn_linear_layer(ctx, 50, 10, NN_INIT_KAIMING_UNIFORM));
    } else if (pool_index(kind) >= 0) {
        memcpy(m->input, (int64_t[]){3, 11, 10}, sizeof m->input);
        return 0;
    } else if (strcmp(kind, "ops") == 0 || strcmp(kind, "reduce") == 0) {
        add_param(ctx, m, "conv.weight", 4, (int64_t[]){4, 2, 3, 3});
        add_param(ctx, m, "conv.bias", 1, (int64_t[]){4});
        add_param(ctx, m, "channel_bias", 1, (int64_t[]){4});
        add_param(ctx, m, "w1", 2, (int64_t[]){24, 5});
        add_param(ctx, m, "b1", 1, (int64_t[]){5});
        add_param(ctx, m, "w2", 2, (int64_t[]){5, 5});
        return m->count == 6 ? 0 : fail("parameters");
    } else if (function_of(kind)) {
        return 0;
    } else if (tensor_graph(kind) >= 0) {
        if (strcmp(kind, "tensor-broadcast") != 0) return 0; /* the others have no parameters */
        add_param(ctx, m, "row", 1, (int64_t[]){9});
        add_param(ctx, m, "col", 3, (int64_t[]){2, 1, 1});
        add_param(ctx, m, "divisor", 2, (int64_t[]){7, 1});
        return m->count == 3 ? 0 : fail("parameters");
    } else if (strcmp(kind, "attention") == 0) {
        add_param(ctx, m, "w1", 2, (int64_t[]){9, 6});
        add_param(ctx, m, "emb.weight", 2, (int64_t[]){11, 6});
        add_param(ctx, m, "proj.weight", 2, (int64_t[]){5, 6});
        add_param(ctx, m, "proj.bias", 1, (int64_t[]){5});
        add_param(ctx, m, "readout", 1, (int64_t[]){5});
        m->params[m->count] = nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){7}, (int32_t[]){3, 0, 10, 3, 7, 1, 3});
        m->names[m->count++] = "positions";
        return m->count == 6 && m->params[5] ? 0 : fail("parameters");
    } else if (convx_index(kind) >= 0) {
        return convx_open(ctx, m);
    } else {
        fprintf(stderr, "nn_io_fixture: unknown model %s\n", kind);
        return 1;
    }
    return m->module ? 0 : fail(kind);
}

static void model_close(model *m) {
    for (int i = 0; i < g_constant_count; i++) nn_tensor_free(g_constants[i]);
    g_constant_count = 0;
    nn_module_free(m->module);
    for (int i = 0; i < m->count; i++) nn_tensor_free(m->params[i]);
}

/* ops: conv (stride 2, pad 1) -> maxpool (3, stride 2, pad 1) -> add_bias
 * on 4-D -> scale -> relu -> reshape [N, 24] -> matmul -> add_bias -> tanh
 * -> matmul (transposed b) -> mul by its sigmoid -> add -> softmax. reduce:
 * mean + sum of parts. */
/* attention: x [N, 2, 7, 9] @ w1 [9, 6] (batched matmul) + embedding of
 * the constant positions (padding_idx 3) -> linear of rank 4 (proj) ->
 * causal self-attention -> @ readout [5] (a 1-D b): [N, 2, 7]. */
static nn_tensor *attention_forward(model *m, nn_tensor *x) {
    nn_tensor **p = m->params;
    nn_tensor *h = nn_add(nn_matmul_batched(x, p[0]), nn_embedding(p[5], p[1], 3));
    nn_tensor *g = nn_linear(h, p[2], p[3]);
    return nn_matmul_batched(nn_scaled_dot_product_attention(g, g, g, NULL, true, 0.0f), p[4]);
}

static nn_tensor *model_forward(model *m, nn_tensor *x) {
    if (m->module) return nn_module_forward(m->module, x);
    if (strcmp(m->kind, "attention") == 0) return attention_forward(m, x);
    if (pool_index(m->kind) >= 0) return pool_forward(m->kind, x);
    if (function_of(m->kind)) return function_of(m->kind)(x);
    if (tensor_graph(m->kind) >= 0) return tensor_graph_forward(m->kind, x, m->params);
    if (convx_index(m->kind) >= 0) return convx_forward(m, x);
    nn_tensor **p = m->params;
    nn_tensor *h = nn_conv2d(x, p[0], p[1], 2, 1);
    h = nn_maxpool2d_ex(h, 3, 2, 1);
    h = nn_add_bias(h, p[2]);
    h = nn_relu(nn_scale(h, 0.5f));
    h = nn_reshape(h, 2, (int64_t[]){nn_tensor_dim(x, 0), 24});
    h = nn_add_bias(nn_matmul(h, p[3], false, false), p[4]);
    nn_tensor *g = nn_matmul(nn_tanh(h), p[5], false, true);
    nn_tensor *a = nn_add(nn_mul(g, nn_sigmoid(h)), g);
    if (strcmp(m->kind, "ops") == 0) return nn_softmax(a);
    return nn_add(nn_mean(a), nn_sum(nn_scale(h, 0.25f)));
}

static int save_weights(model *m, const char *path) {
    if (m->module) return nn_save_module(m->module, path) == NN_OK ? 0 : fail("save");
    fprintf(stderr, "nn_io_fixture: %s is a graph, not a module: nothing to save\n", m->kind);
    return 1;
}

static int load_weights(model *m, const char *path) {
    if (!m->module) return 0; /* graphs use their seeded parameters */
    return nn_load_module(m->module, path) == NN_OK ? 0 : fail("load");
}

static float *read_floats(const char *path, size_t count) {
    FILE *f = fopen(path, "rb");
    float *v = malloc(count * sizeof *v + 1);
    size_t got = f && v ? fread(v, sizeof *v, count, f) : 0;
    if (f) fclose(f);
    if (got != count) {
        fprintf(stderr, "nn_io_fixture: %s: expected %zu floats\n", path, count);
        free(v);
        return NULL;
    }
    return v;
}

static int write_gradients(nn_ctx *ctx, model *m, const char *weights, const char *in_path, int64_t batch,
                           const char *labels_path, const char *out_path) {
    int64_t shape[4];
    input_shape(m, batch, shape);
    float *in = read_floats(in_path, (size_t)(shape[0] * shape[1] * shape[2] * shape[3]));
    float *labels = read_floats(labels_path, (size_t)batch); /* int32 bits, same size */
    int rc = in && labels ? load_weights(m, weights) : 1;
    nn_tensor *x = rc == 0 ? nn_tensor_from_data(ctx, NN_F32, 4, shape, in) : NULL;
    nn_tensor *y = x ? nn_tensor_from_data(ctx, NN_I32, 1, &batch, labels) : NULL;
    nn_tensor *loss = y ? nn_softmax_cross_entropy(model_forward(m, x), y) : NULL;
    FILE *f = loss && nn_backward(loss) == NN_OK ? fopen(out_path, "wb") : NULL;
    if (rc == 0 && !f) rc = fail("grad");
    float value = 0;
    if (f && nn_tensor_read(loss, &value, sizeof value) == NN_OK && fwrite(&value, 4, 1, f) == 1) {
        for (int i = 0; rc == 0 && i < nn_module_param_count(m->module); i++) {
            nn_tensor *g = nn_tensor_grad(nn_module_param(m->module, i));
            size_t n = (size_t)nn_tensor_numel(g);
            float *host = malloc(n * sizeof *host);
            if (!host || nn_tensor_read(g, host, n * sizeof *host) != NN_OK || fwrite(host, 4, n, f) != n) rc = 1;
            free(host);
        }
    }
    if (f) fclose(f);
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_tensor_free(y);
    free(in);
    free(labels);
    return rc;
}

/* Writes y's values to path; 0 on success. */
static int write_tensor(nn_tensor *y, const char *path) {
    size_t n = (size_t)nn_tensor_numel(y);
    float *out = malloc(n * sizeof *out);
    FILE *f = out && nn_tensor_read(y, out, n * sizeof *out) == NN_OK ? fopen(path, "wb") : NULL;
    int rc = f && fwrite(out, sizeof *out, n, f) == n ? 0 : 1;
    if (f) fclose(f);
    free(out);
    return rc;
}

/* `import ... fit`: SGD steps on one batch, the losses, then the export. */
static int import_fit(nn_ctx *ctx, nn_module *m, nn_tensor *x, char **argv) {
    const int steps = atoi(argv[10]);
    int64_t batch = nn_tensor_dim(x, 0);
    float *labels = read_floats(argv[11], (size_t)batch); /* int32 bits, same size */
    nn_tensor *y = labels ? nn_tensor_from_data(ctx, NN_I32, 1, &batch, labels) : NULL;
    nn_tensor *params[256];
    const int n = nn_module_param_count(m);
    for (int i = 0; i < n && i < 256; i++) params[i] = nn_module_param(m, i);
    nn_optimizer *opt = y && n <= 256 ? nn_sgd_new(params, n, &(nn_sgd_options){.lr = (float)atof(argv[12])}) : NULL;
    float *losses = calloc((size_t)steps + 1, sizeof *losses);
    int rc = opt && losses ? 0 : fail("fit setup");
    nn_module_set_training(m, true);
    for (int s = 0; rc == 0 && s < steps; s++) {
        nn_tensor *loss = nn_module_forward_loss(m, x, y, NULL);
        if (!loss || nn_tensor_read(loss, &losses[s], sizeof *losses) != NN_OK || nn_backward(loss) != NN_OK ||
            nn_optimizer_step(opt) != NN_OK || nn_optimizer_zero_grad(opt) != NN_OK)
            rc = fail("fit step");
        nn_ctx_step_end(ctx);
    }
    FILE *f = rc == 0 ? fopen(argv[4], "wb") : NULL;
    if (rc == 0 && (!f || fwrite(losses, sizeof *losses, (size_t)steps, f) != (size_t)steps)) rc = fail("fit losses");
    if (f) fclose(f);
    int64_t shape[NN_MAX_DIMS];
    const int ndim = nn_tensor_shape(x, shape);
    nn_module_set_training(m, false);
    if (rc == 0 && nn_onnx_export_module(argv[13], m, shape, ndim) != NN_OK) rc = fail("fit export");
    nn_ctx_set_grad_enabled(ctx, false);
    nn_tensor *out = rc == 0 ? nn_module_forward(m, x) : NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s.out", argv[13]);
    if (rc == 0 && (!out || write_tensor(out, path) != 0)) rc = fail("fit output");
    nn_ctx_step_end(ctx);
    nn_optimizer_free(opt);
    nn_tensor_free(y);
    free(labels);
    free(losses);
    return rc;
}

/* `import`: an ONNX file imported, run once (or fitted), its state listed. */
static int import_forward(int argc, char **argv) {
    const bool fit = argc == 14 && strcmp(argv[9], "fit") == 0;
    if (argc != 9 && argc != 10 && !fit) return fail("import: ONNX IN OUT N C H W [train | fit STEPS LABELS LR EXPORT]");
    const bool train = argc == 10 && strcmp(argv[9], "train") == 0;
    const char *device = getenv("NN_IO_FIXTURE_DEVICE");
    nn_ctx_options o = {.device = device && *device ? device : "cpu", .threads = 1};
    nn_ctx *ctx = nn_ctx_new(&o);
    nn_module *m = ctx ? nn_onnx_import(ctx, argv[2]) : NULL;
    if (!m) {
        nn_ctx_free(ctx);
        return fail("import");
    }
    /* Trailing sizes of 0 drop their dimensions ([N, S]: N S 0 0); IN
     * named int32:PATH holds int32 values (token indices). */
    int64_t shape[4];
    int ndim = 0;
    for (int d = 0; d < 4; d++) shape[d] = strtoll(argv[5 + d], NULL, 10);
    while (ndim < 4 && shape[ndim] > 0) ndim++;
    const bool ints = strncmp(argv[3], "int32:", 6) == 0;
    int64_t count = 1;
    for (int d = 0; d < ndim; d++) count *= shape[d];
    float *in = read_floats(argv[3] + (ints ? 6 : 0), (size_t)count); /* int32 bits read as they are */
    nn_module_set_training(m, train);
    nn_ctx_set_grad_enabled(ctx, train);
    nn_tensor *x = in ? nn_tensor_from_data(ctx, ints ? NN_I32 : NN_F32, ndim, shape, in) : NULL;
    int rc;
    if (fit) {
        nn_ctx_set_grad_enabled(ctx, true);
        rc = x ? import_fit(ctx, m, x, argv) : fail("import input");
    } else {
        nn_tensor *y = x ? nn_module_forward(m, x) : NULL;
        rc = y ? (write_tensor(y, argv[4]) == 0 ? 0 : fail("import output")) : fail("import forward");
    }
    for (int i = 0; rc == 0 && i < nn_module_state_count(m); i++) {
        char buf[96];
        printf("%s: %s\n", nn_module_state_name(m, i), nn_tensor_shape_str(nn_module_state(m, i), buf, sizeof buf));
    }
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    free(in);
    nn_module_free(m);
    nn_ctx_free(ctx);
    return rc;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "import") == 0) return import_forward(argc, argv);
    if (argc < 4) {
        fprintf(stderr, "usage: see the comment at the top of tests/io/nn_io_fixture.c\n");
        return 2;
    }
    const char *cmd = argv[1], *kind = argv[2];
    bool graph_model = is_graph(kind) || pool_index(kind) >= 0 || convx_index(kind) >= 0;
    /* Graph models take their parameters from the seed in argv[3] for every command. */
    uint64_t seed = strcmp(cmd, "save") == 0 || strcmp(cmd, "state") == 0 || graph_model
                        ? strtoull(argv[3], NULL, 10) : 0;
    /* NN_IO_FIXTURE_DEVICE picks the device (default the CPU): on Vulkan,
     * LeNet's convolution, ReLU and pooling run fused and export so. */
    const char *device = getenv("NN_IO_FIXTURE_DEVICE");
    nn_ctx_options o = {.device = device && *device ? device : "cpu", .threads = 1, .seed = seed};
    nn_ctx *ctx = nn_ctx_new(&o);
    if (!ctx) return fail("context");
    model m;
    int rc = model_open(ctx, kind, &m);
    if (rc == 0 && strcmp(cmd, "save") == 0 && argc == 5) {
        rc = save_weights(&m, argv[4]);
    } else if (rc == 0 && strcmp(cmd, "state") == 0 && argc == 5 && m.module) {
        int n = nn_module_param_count(m.module);
        nn_tensor *params[MAX_PARAMS];
        for (int i = 0; i < n; i++) params[i] = nn_module_param(m.module, i);
        nn_optimizer *opt = nn_sgd_new(params, n, &(nn_sgd_options){.lr = 0.01f, .momentum = 0.9f});
        int64_t shape[4];
        input_shape(&m, 3, shape);
        nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, shape);
        nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){3}, (int32_t[]){1, 2, 3});
        nn_init_uniform(x, 0.0f, 1.0f);
        nn_tensor *loss = nn_softmax_cross_entropy(model_forward(&m, x), y);
        nn_train_progress progress = {.epoch = 1, .step = 1, .seed = seed};
        if (!opt || !loss || nn_backward(loss) != NN_OK || nn_optimizer_step(opt) != NN_OK ||
            nn_save_train_state(argv[4], m.module, opt, &progress) != NN_OK)
            rc = fail("state");
        nn_ctx_step_end(ctx);
        nn_tensor_free(x);
        nn_tensor_free(y);
        nn_optimizer_free(opt);
    } else if (rc == 0 && strcmp(cmd, "forward") == 0 && argc == 7) {
        int64_t batch = strtoll(argv[5], NULL, 10), shape[4];
        input_shape(&m, batch, shape);
        float *in = read_floats(argv[4], (size_t)(shape[0] * shape[1] * shape[2] * shape[3]));
        rc = in ? load_weights(&m, argv[3]) : 1;
        if (rc == 0) {
            nn_ctx_set_grad_enabled(ctx, false);
            if (m.module) nn_module_set_training(m.module, false);
            nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, shape, in);
            nn_tensor *y = x ? model_forward(&m, x) : NULL;
            if (!y) {
                rc = fail("forward");
            } else {
                size_t n = (size_t)nn_tensor_numel(y);
                float *out = malloc(n * sizeof *out);
                nn_tensor_read(y, out, n * sizeof *out);
                FILE *f = fopen(argv[6], "wb");
                rc = f && fwrite(out, sizeof *out, n, f) == n ? 0 : 1;
                if (f) fclose(f);
                free(out);
            }
            nn_tensor_free(x);
        }
        free(in);
    } else if (rc == 0 && strcmp(cmd, "export") == 0 && (argc == 5 || argc == 6)) {
        bool static_batch = argc == 6 && strcmp(argv[5], "static") == 0;
        int64_t shape[4];
        input_shape(&m, static_batch ? 3 : 1, shape);
        rc = load_weights(&m, argv[3]);
        if (m.module) nn_module_set_training(m.module, false); /* as torch.onnx exports: BatchNorm's running statistics */
        if (rc == 0 && m.module && !static_batch) {
            if (nn_onnx_export_module(argv[4], m.module, shape, 4) != NN_OK) rc = fail("export");
        } else if (rc == 0) {
            nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, shape);
            nn_tensor_set_requires_grad(x, true);
            nn_tensor *y = model_forward(&m, x);
            const char *opset = getenv("NN_IO_FIXTURE_OPSET"); /* default: the exporter's (17) */
            nn_onnx_options eo = {.graph_name = kind, .opset = opset ? atoi(opset) : 0, .static_batch = static_batch,
                                  .n_names = m.count, .named_tensors = m.params, .names = m.names};
            nn_tensor *module_params[MAX_PARAMS];
            const char *module_names[MAX_PARAMS];
            if (m.module) { /* a module exported through the general entry point */
                eo.n_names = nn_module_state_count(m.module);
                for (int i = 0; i < eo.n_names; i++) {
                    module_params[i] = nn_module_state(m.module, i);
                    module_names[i] = nn_module_state_name(m.module, i);
                }
                eo.named_tensors = module_params;
                eo.names = module_names;
            }
            if (!y || nn_onnx_export(argv[4], x, y, &eo) != NN_OK) rc = fail("export");
            nn_ctx_step_end(ctx);
            nn_tensor_free(x);
        }
    } else if (rc == 0 && strcmp(cmd, "grad") == 0 && argc == 8 && m.module) {
        rc = write_gradients(ctx, &m, argv[3], argv[4], strtoll(argv[5], NULL, 10), argv[6], argv[7]);
    } else if (rc == 0) {
        fprintf(stderr, "nn_io_fixture: bad command line\n");
        rc = 2;
    }
    model_close(&m);
    nn_ctx_free(ctx);
    return rc;
}
