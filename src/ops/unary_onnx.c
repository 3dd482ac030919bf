/* ONNX export (opset 17) of the rows of shaders/unary_ops.h: one function
 * per value of the rows' `export` column. Rows opset 17 has no operator for
 * (gelu, silu, softplus with PyTorch's beta and threshold) are written as
 * the standard operators that compute the same formula. Only x carries the
 * batch; the parameters become scalar constants or attributes. */
#include <math.h>
#include <stdio.h>

#include "unary.h"

/* A float scalar constant named after the node ("Mul_3_alpha"). */
static const char *scalar(exporter *x, const op_io *io, const char *what, float v) {
    char name[96];
    snprintf(name, sizeof name, "%s_%s", io->name, what);
    return nn_onnx_add_constant(x, name, NN_ONNX_FLOAT, NULL, 0, &v, sizeof v);
}

/* The name of the node's intermediate value (and the node computing it) number k ("Erf_3_2"). */
static void part(char *buf, size_t size, const op_io *io, int k) { snprintf(buf, size, "%s_%d", io->name, k); }

/* The last node of a composition, named after the first ("Erf_3_last"), writing out. */
static void last_pair(exporter *x, const op_io *io, const char *op_type, const char *a, const char *b,
                      const char *out) {
    char name[64];
    snprintf(name, sizeof name, "%s_last", io->name);
    nn_onnx_pair(x, op_type, name, a, b, out);
}

static void single(exporter *x, const char *op_type, const char *name, const char *in, const char *out) {
    nn_onnx_node n;
    nn_onnx_node_begin(&n, op_type, name);
    nn_onnx_node_input(&n, in);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
}

/* Starts an export: the batch check and the first node's name. */
static nn_status begin(exporter *x, op_io *io, const char *op_type) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    nn_onnx_reserve_name(x, op_type, io);
    return NN_OK;
}

nn_status unary_onnx_operator(exporter *x, op_io *io, const char *out, const char *Onnx, const nn_unary_node *u) {
    return nn_onnx_elementwise(x, io, out, Onnx);
}

nn_status unary_onnx_alpha_attribute(exporter *x, op_io *io, const char *out, const char *Onnx,
                                     const nn_unary_node *u) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    nn_onnx_node n;
    nn_onnx_begin(x, &n, Onnx, io);
    nn_onnx_inputs(&n, io, 1);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_float(&n, "alpha", u->alpha);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

nn_status unary_onnx_scalar_after(exporter *x, op_io *io, const char *out, const char *Onnx, const nn_unary_node *u) {
    NN_TRY(begin(x, io, Onnx));
    const char *c = scalar(x, io, "alpha", u->alpha);
    if (!c) return nn_last_status();
    nn_onnx_pair(x, Onnx, io->name, io->in[0]->name, c, out);
    return NN_OK;
}

nn_status unary_onnx_scalar_before(exporter *x, op_io *io, const char *out, const char *Onnx,
                                   const nn_unary_node *u) {
    NN_TRY(begin(x, io, Onnx));
    const char *c = scalar(x, io, "alpha", u->alpha);
    if (!c) return nn_last_status();
    nn_onnx_pair(x, Onnx, io->name, c, io->in[0]->name, out);
    return NN_OK;
}

/* x * 0.5 * (1 + Erf(x / sqrt 2)). */
nn_status unary_onnx_gelu(exporter *x, op_io *io, const char *out, const char *Onnx, const nn_unary_node *u) {
    NN_TRY(begin(x, io, Onnx));
    const char *in = io->in[0]->name, *root_half = scalar(x, io, "root_half", 0.70710678118654752f);
    const char *one = scalar(x, io, "one", 1.0f), *half = scalar(x, io, "half", 0.5f);
    if (!root_half || !one || !half) return nn_last_status();
    char v[4][64];
    for (int k = 0; k < 4; k++) part(v[k], sizeof v[k], io, k);
    nn_onnx_pair(x, "Mul", v[0], in, root_half, v[0]);
    single(x, "Erf", io->name, v[0], v[1]);
    nn_onnx_pair(x, "Add", v[2], v[1], one, v[2]);
    nn_onnx_pair(x, "Mul", v[3], in, v[2], v[3]);
    last_pair(x, io, "Mul", v[3], half, out);
    return NN_OK;
}

/* x * Sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), PyTorch's 0.5 x (1 + tanh(u)). */
nn_status unary_onnx_gelu_tanh(exporter *x, op_io *io, const char *out, const char *Onnx, const nn_unary_node *u) {
    NN_TRY(begin(x, io, "Sigmoid"));
    const char *in = io->in[0]->name, *kappa = scalar(x, io, "kappa", 0.044715f);
    const char *two_root = scalar(x, io, "two_root_two_over_pi", 1.5957691216057308f);
    if (!kappa || !two_root) return nn_last_status();
    char v[6][64];
    for (int k = 0; k < 6; k++) part(v[k], sizeof v[k], io, k);
    nn_onnx_pair(x, "Mul", v[0], in, in, v[0]);
    nn_onnx_pair(x, "Mul", v[1], v[0], in, v[1]);
    nn_onnx_pair(x, "Mul", v[2], v[1], kappa, v[2]);
    nn_onnx_pair(x, "Add", v[3], in, v[2], v[3]);
    nn_onnx_pair(x, "Mul", v[4], v[3], two_root, v[4]);
    single(x, "Sigmoid", io->name, v[4], v[5]);
    last_pair(x, io, "Mul", in, v[5], out);
    return NN_OK;
}

/* x * Sigmoid(x). */
nn_status unary_onnx_silu(exporter *x, op_io *io, const char *out, const char *Onnx, const nn_unary_node *u) {
    NN_TRY(begin(x, io, Onnx));
    char s[64];
    part(s, sizeof s, io, 0);
    single(x, Onnx, io->name, io->in[0]->name, s);
    last_pair(x, io, "Mul", io->in[0]->name, s, out);
    return NN_OK;
}

/* Clip(x, min, max) with its bounds as inputs ("" for an absent one). */
static nn_status clip(exporter *x, op_io *io, const char *out, float min, float max) {
    NN_TRY(begin(x, io, "Clip"));
    const bool has_min = min != -INFINITY, has_max = max != INFINITY;
    const char *lo = has_min ? scalar(x, io, "min", min) : "", *hi = has_max ? scalar(x, io, "max", max) : "";
    if (!lo || !hi) return nn_last_status();
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Clip", io->name);
    nn_onnx_node_input(&n, io->in[0]->name);
    if (has_min || has_max) nn_onnx_node_input(&n, lo);
    if (has_max) nn_onnx_node_input(&n, hi);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

nn_status unary_onnx_clip(exporter *x, op_io *io, const char *out, const char *Onnx, const nn_unary_node *u) {
    return clip(x, io, out, u->alpha, u->beta);
}

nn_status unary_onnx_relu6(exporter *x, op_io *io, const char *out, const char *Onnx, const nn_unary_node *u) {
    return clip(x, io, out, 0.0f, 6.0f);
}

/* A HardSigmoid node `name` with PyTorch's slope: x / 6 + 1/2 clipped to
 * [0, 1] (ONNX's defaults are 0.2 and 0.5). */
static void hardsigmoid_node(exporter *x, const char *name, const char *in, const char *out) {
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "HardSigmoid", name);
    nn_onnx_node_input(&n, in);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_float(&n, "alpha", 1.0f / 6.0f);
    nn_onnx_attr_float(&n, "beta", 0.5f);
    nn_onnx_node_end(&n, &x->graph);
}

nn_status unary_onnx_hardsigmoid(exporter *x, op_io *io, const char *out, const char *Onnx,
                                 const nn_unary_node *u) {
    NN_TRY(begin(x, io, Onnx));
    hardsigmoid_node(x, io->name, io->in[0]->name, out);
    return NN_OK;
}

/* HardSwish came with opset 14; before it, x * HardSigmoid(x). */
nn_status unary_onnx_hardswish(exporter *x, op_io *io, const char *out, const char *Onnx, const nn_unary_node *u) {
    if (x->opt->opset == 0 || x->opt->opset >= 14) return nn_onnx_elementwise(x, io, out, Onnx);
    NN_TRY(begin(x, io, "HardSigmoid"));
    char gate[64];
    part(gate, sizeof gate, io, 0);
    hardsigmoid_node(x, io->name, io->in[0]->name, gate);
    last_pair(x, io, "Mul", io->in[0]->name, gate, out);
    return NN_OK;
}

/* PyTorch's softplus(x, beta, threshold): x where beta x > threshold, else
 * Softplus(beta x) / beta. With beta 1 and a threshold of 15 or more the
 * switch changes no float (log(1 + e^-z) < e^-15 is below half an ulp of
 * z > 15), so a lone Softplus is exact. */
nn_status unary_onnx_softplus(exporter *x, op_io *io, const char *out, const char *Onnx, const nn_unary_node *u) {
    const float beta = u->alpha, threshold = u->beta;
    if (beta == 1.0f && threshold >= 15.0f) return nn_onnx_elementwise(x, io, out, Onnx);
    NN_TRY(begin(x, io, Onnx));
    const char *in = io->in[0]->name, *b = scalar(x, io, "beta", beta), *t = scalar(x, io, "threshold", threshold);
    if (!b || !t) return nn_last_status();
    char v[4][64];
    for (int k = 0; k < 4; k++) part(v[k], sizeof v[k], io, k);
    nn_onnx_pair(x, "Mul", v[0], in, b, v[0]);
    single(x, Onnx, io->name, v[0], v[1]);
    nn_onnx_pair(x, "Div", v[2], v[1], b, v[2]);
    nn_onnx_pair(x, "Greater", v[3], v[0], t, v[3]);
    nn_onnx_node n;
    char name[64];
    snprintf(name, sizeof name, "%s_last", io->name);
    nn_onnx_node_begin(&n, "Where", name);
    nn_onnx_node_input(&n, v[3]);
    nn_onnx_node_input(&n, in);
    nn_onnx_node_input(&n, v[2]);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}
