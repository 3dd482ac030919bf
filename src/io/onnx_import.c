/* ONNX import (include/nn_io.h's nn_onnx_import): a file read by
 * onnx_read.c becomes a module whose forward runs the graph's nodes in
 * order (each translated by onnx_import_ops.c into the engine's
 * operations, so it trains, captures and exports as any module). The
 * graph is checked whole before the module is made: every operator known,
 * every value defined once and before it is read (so no cycles), one input
 * and one output. Initializers holding learned state become parameters
 * (BatchNorm's running statistics buffers) under their names, a dotted
 * name ("layer1.0.conv1.weight") making child modules, as PyTorch's
 * state_dict names them; the rest (shapes, axes, the exporter's scalars)
 * stay constants. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context_mismatch.h"
#include "core/ctx_guard.h"
#include "base/error.h"
#include "core/internal.h"
#include "nn_io.h"
#include "onnx_import.h"

#define MIN_OPSET 13
#define MAX_OPSET 21

/* Values by name: an open-addressing table of indices into im->values
 * (-1 empty), at most half full, so a graph of many nodes links in linear time. */
static uint32_t name_hash(const char *name) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = (h ^ *c) * 16777619u;
    return h;
}

static int find_value(const imported *im, const char *name) {
    if (!im->index_size) return -1;
    for (uint32_t at = name_hash(name) & (im->index_size - 1);; at = (at + 1) & (im->index_size - 1)) {
        const int v = im->index[at];
        if (v < 0 || strcmp(im->values[v].name, name) == 0) return v;
    }
}

static nn_status grow_index(imported *im, const char *who) {
    if (2 * (uint32_t)(im->n_values + 1) <= im->index_size) return NN_OK;
    const uint32_t size = im->index_size ? 2 * im->index_size : 64;
    int *index = malloc(size * sizeof *index);
    if (!index) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
    for (uint32_t i = 0; i < size; i++) index[i] = -1;
    for (int v = 0; v < im->n_values; v++) {
        uint32_t at = name_hash(im->values[v].name) & (size - 1);
        while (index[at] >= 0) at = (at + 1) & (size - 1);
        index[at] = v;
    }
    free(im->index);
    im->index = index, im->index_size = size;
    return NN_OK;
}

static nn_status add_value(imported *im, const char *name, value_kind kind, const char *who, int *index) {
    if (!name[0]) return nn_set_error(NN_ERR_IO, "%s: a value without a name", who);
    if (find_value(im, name) >= 0)
        return nn_set_error(NN_ERR_IO, "%s: value '%s' is defined twice (an ONNX graph assigns each value once)", who, name);
    NN_TRY(grow_index(im, who));
    graph_value *bigger = realloc(im->values, (size_t)(im->n_values + 1) * sizeof *bigger);
    if (!bigger) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
    im->values = bigger;
    bigger[im->n_values] = (graph_value){.name = name, .kind = kind};
    uint32_t at = name_hash(name) & (im->index_size - 1);
    while (im->index[at] >= 0) at = (at + 1) & (im->index_size - 1);
    im->index[at] = im->n_values;
    *index = im->n_values++;
    return NN_OK;
}

static void imported_free_contents(imported *im) {
    for (int i = 0; i < im->n_values; i++) {
        nn_tensor_free(im->values[i].state);
        nn_tensor_free(im->values[i].device_constant);
    }
    for (int i = 0; i < im->model.n_nodes; i++) {
        if (im->node_inputs) free(im->node_inputs[i]);
        if (im->node_outputs) free(im->node_outputs[i]);
    }
    free(im->node_inputs), free(im->node_outputs), free(im->values), free(im->gelu_input), free(im->fused_away);
    free(im->index), free(im->inputs), free(im->readers);
    nn_onnx_model_free(&im->model);
}

static void imported_free(void *data) {
    if (!data) return;
    imported_free_contents(data);
    free(data);
}

/* ---- the graph, checked ---- */

static nn_status find_gelus(imported *im, const char *who);

static nn_status link_graph(imported *im, const char *who) {
    onnx_model *m = &im->model;
    if (m->opset < MIN_OPSET || m->opset > MAX_OPSET)
        return nn_set_error(NN_ERR_IO, "%s: opset %lld is not supported (opsets %d to %d are)", who,
                            (long long)m->opset, MIN_OPSET, MAX_OPSET);
    for (int i = 0; i < m->n_initializers; i++) {
        int v;
        NN_TRY(add_value(im, m->initializers[i].name, VALUE_CONSTANT, who, &v));
        im->values[v].constant = &m->initializers[i];
    }
    im->input = -1;
    im->inputs = malloc(((size_t)m->n_inputs + 1) * sizeof *im->inputs);
    if (!im->inputs) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
    for (int i = 0; i < m->n_inputs; i++) {
        if (find_value(im, m->inputs[i].name) >= 0) continue; /* an initializer listed as an input (IR < 4) */
        NN_TRY(add_value(im, m->inputs[i].name, VALUE_INPUT, who, &im->inputs[im->n_inputs]));
        if (im->input < 0) im->input = im->inputs[0];
        im->n_inputs++;
        const int type = m->inputs[i].elem_type;
        if (type != ONNX_FLOAT && type != ONNX_INT64 && type != ONNX_INT32)
            return nn_set_error(NN_ERR_IO, "%s: the graph's input '%s' is of type %d; float and integer (token "
                                "indices, given as int32) inputs are supported", who, m->inputs[i].name, type);
    }
    if (im->input < 0) return nn_set_error(NN_ERR_IO, "%s: the graph has no input", who);
    if (m->n_outputs != 1)
        return nn_set_error(NN_ERR_IO, "%s: the graph has %d outputs; one is supported", who, m->n_outputs);
    im->node_inputs = calloc((size_t)m->n_nodes + 1, sizeof *im->node_inputs);
    im->node_outputs = calloc((size_t)m->n_nodes + 1, sizeof *im->node_outputs);
    if (!im->node_inputs || !im->node_outputs) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
    for (int k = 0; k < m->n_nodes; k++) {
        const onnx_node *n = &m->nodes[k];
        const bool default_domain = !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0;
        if (!default_domain || !nn_onnx_known_op(n->op_type))
            return nn_set_error(NN_ERR_IO, "%s: node '%s': operator %s%s%s (opset %lld) is not supported", who, n->name,
                                n->domain, n->domain[0] ? "." : "", n->op_type, (long long)m->opset);
        im->node_inputs[k] = malloc(((size_t)n->n_inputs + 1) * sizeof **im->node_inputs);
        im->node_outputs[k] = malloc(((size_t)n->n_outputs + 1) * sizeof **im->node_outputs);
        if (!im->node_inputs[k] || !im->node_outputs[k]) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
        for (int i = 0; i < n->n_inputs; i++) {
            const int v = n->inputs[i][0] ? find_value(im, n->inputs[i]) : -1;
            if (n->inputs[i][0] && v < 0)
                return nn_set_error(NN_ERR_IO,
                                    "%s: node '%s' (%s) reads '%s', which no initializer, input or earlier node "
                                    "defines (missing, or the nodes are not in order or form a cycle)",
                                    who, n->name, n->op_type, n->inputs[i]);
            im->node_inputs[k][i] = v;
        }
        for (int i = 0; i < n->n_outputs; i++) {
            im->node_outputs[k][i] = -1;
            if (n->outputs[i][0]) NN_TRY(add_value(im, n->outputs[i], VALUE_NODE, who, &im->node_outputs[k][i]));
        }
    }
    im->output = find_value(im, m->outputs[0].name);
    if (im->output < 0)
        return nn_set_error(NN_ERR_IO, "%s: the graph's output '%s' is not computed by any node", who, m->outputs[0].name);
    im->readers = calloc((size_t)im->n_values + 1, sizeof *im->readers);
    if (!im->readers) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
    for (int k = 0; k < m->n_nodes; k++)
        for (int i = 0; i < m->nodes[k].n_inputs; i++)
            if (im->node_inputs[k][i] >= 0) im->readers[im->node_inputs[k][i]]++;
    im->readers[im->output]++;
    return find_gelus(im, who);
}

/* ---- GELU's composition ---- */

/* The node that computes value v, or -1 (an input or initializer). */
static int producer(const imported *im, int v) {
    for (int k = 0; k < im->model.n_nodes; k++)
        for (int i = 0; i < im->model.nodes[k].n_outputs; i++)
            if (im->node_outputs[k][i] == v) return k;
    return -1;
}

/* The one node reading v (and v not the graph's output), or -1. */
static int only_reader(const imported *im, int v) {
    if (v < 0 || v == im->output || im->readers[v] != 1) return -1;
    for (int k = 0; k < im->model.n_nodes; k++)
        for (int i = 0; i < im->model.nodes[k].n_inputs; i++)
            if (im->node_inputs[k][i] == v) return k;
    return -1;
}

/* Node k's value when it has exactly one output, else -1 (k -1 too). */
static int only_output(const imported *im, int k) {
    return k >= 0 && im->model.nodes[k].n_outputs == 1 ? im->node_outputs[k][0] : -1;
}

/* Whether value v is a constant holding the one number `want`. */
static bool constant_is(const imported *im, int v, double want) {
    const onnx_tensor *t = NULL;
    if (v < 0) return false;
    if (im->values[v].kind == VALUE_CONSTANT) {
        t = im->values[v].constant;
    } else {
        const int k = producer(im, v);
        const onnx_attr *a = k >= 0 && strcmp(im->model.nodes[k].op_type, "Constant") == 0
                                 ? nn_onnx_attr(&im->model.nodes[k], "value")
                                 : NULL;
        t = a ? a->t : NULL;
    }
    if (!t || t->numel != 1) return false;
    const double value = t->floats ? t->floats[0] : (double)t->ints[0];
    return fabs(value - want) <= 1e-6 * fabs(want);
}

/* Node k is `op` with one input `x` (or any value when x < 0) and the other
 * a constant `c` (or any value when c is NaN): the other input's value,
 * else -2. */
static int binary_with(const imported *im, int k, const char *op, int x, double c) {
    const onnx_node *n = k >= 0 ? &im->model.nodes[k] : NULL;
    if (!n || strcmp(n->op_type, op) != 0 || n->n_inputs != 2) return -2;
    for (int side = 0; side < 2; side++) {
        const int a = im->node_inputs[k][side], b = im->node_inputs[k][1 - side];
        if ((x < 0 || a == x) && (isnan(c) ? true : constant_is(im, b, c))) return isnan(c) ? b : a;
        if (x >= 0 && a == x && isnan(c)) return b;
    }
    return -2;
}

/* Finds every Erf's GELU: Div(x, sqrt 2) or Mul(x, 1 / sqrt 2) -> Erf ->
 * Add(1) -> Mul(x) -> Mul(0.5), each intermediate read by the next alone.
 * An Erf outside that form is refused. */
static nn_status find_gelus(imported *im, const char *who) {
    const int n = im->model.n_nodes;
    im->gelu_input = malloc(((size_t)n + 1) * sizeof *im->gelu_input);
    im->fused_away = calloc((size_t)n + 1, sizeof *im->fused_away);
    if (!im->gelu_input || !im->fused_away) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
    for (int k = 0; k < n; k++) im->gelu_input[k] = -1;
    for (int erf = 0; erf < n; erf++) {
        const onnx_node *e = &im->model.nodes[erf];
        if (strcmp(e->op_type, "Erf") != 0) continue;
        /* Each step's node and output are -1 once a step fails to match. */
        const int scaled = e->n_inputs == 1 ? im->node_inputs[erf][0] : -1;
        const int div = scaled >= 0 ? producer(im, scaled) : -1;
        int x = binary_with(im, div, "Div", -1, 1.4142135623730951);
        if (x < 0) x = binary_with(im, div, "Mul", -1, 0.7071067811865476);
        const int erf_out = only_output(im, erf), add = only_reader(im, erf_out);
        const int add_out = binary_with(im, add, "Add", erf_out, 1.0) >= 0 ? only_output(im, add) : -1;
        const int mul = only_reader(im, add_out);
        const int mul_out = x >= 0 && binary_with(im, mul, "Mul", add_out, NAN) == x ? only_output(im, mul) : -1;
        const int half = only_reader(im, mul_out);
        const bool halved = mul_out >= 0 && binary_with(im, half, "Mul", mul_out, 0.5) >= 0;
        if (x < 0 || only_reader(im, scaled) != erf || !halved)
            return nn_set_error(NN_ERR_IO,
                                "%s: node '%s': operator Erf (opset %lld) is supported only in GELU's form "
                                "x * 0.5 * (1 + erf(x / sqrt(2)))",
                                who, e->name, (long long)im->model.opset);
        im->fused_away[div] = im->fused_away[erf] = im->fused_away[add] = im->fused_away[mul] = true;
        im->gelu_input[half] = x;
    }
    return NN_OK;
}

/* ---- a new classifier (nn_onnx_import_options.classes) ---- */

/* Initializer value v as a float matrix or vector: its tensor, else NULL. */
static onnx_tensor *float_initializer(imported *im, int v, int ndim) {
    if (v < 0 || im->values[v].kind != VALUE_CONSTANT) return NULL;
    onnx_tensor *t = (onnx_tensor *)im->values[v].constant;
    return t->floats && t->ndim == ndim ? t : NULL;
}

/* Gives `t`'s dimension `d` the size `size` (values left for the caller to draw). */
static nn_status resize(onnx_tensor *t, int d, int64_t size, const char *who) {
    const int64_t numel = t->numel / t->dims[d] * size;
    float *values = realloc(t->floats, ((size_t)numel + 1) * sizeof *values);
    if (!values) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
    t->floats = values, t->dims[d] = size, t->numel = numel;
    return NN_OK;
}

/* Finds the classifier computing the graph's output (Gemm with learned B
 * and C, MatMul by a learned matrix, or that MatMul followed by Add of a
 * learned vector), resizes its weight and bias to `classes` outputs and
 * returns their values (*bias -1 when it has none) and its input count. */
static nn_status new_classifier(imported *im, int classes, const char *who, int *weight, int *bias, int64_t *inputs) {
    int k = producer(im, im->output);
    const onnx_node *n = k >= 0 ? &im->model.nodes[k] : NULL;
    onnx_tensor *w = NULL, *b = NULL;
    int out_dim = 1;
    *bias = -1;
    if (n && strcmp(n->op_type, "Add") == 0) { /* MatMul, then the bias */
        for (int side = 0; side < 2 && !w; side++) {
            const int m = producer(im, im->node_inputs[k][side]);
            b = float_initializer(im, im->node_inputs[k][1 - side], 1);
            if (m >= 0 && b && strcmp(im->model.nodes[m].op_type, "MatMul") == 0 && only_reader(im, im->node_inputs[k][side]) == k) {
                w = float_initializer(im, im->node_inputs[m][1], 2);
                *weight = im->node_inputs[m][1], *bias = im->node_inputs[k][1 - side];
            }
        }
    } else if (n && strcmp(n->op_type, "MatMul") == 0) {
        w = float_initializer(im, im->node_inputs[k][1], 2);
        *weight = im->node_inputs[k][1];
    } else if (n && strcmp(n->op_type, "Gemm") == 0) {
        const onnx_attr *t = nn_onnx_attr(n, "transB");
        out_dim = t && t->i ? 0 : 1;
        w = float_initializer(im, im->node_inputs[k][1], 2);
        *weight = im->node_inputs[k][1];
        if (n->n_inputs > 2 && im->node_inputs[k][2] >= 0) {
            b = float_initializer(im, im->node_inputs[k][2], 1);
            *bias = b ? im->node_inputs[k][2] : -2;
        }
    }
    if (!w || *bias == -2 || (b && b->dims[0] != w->dims[out_dim]))
        return nn_set_error(NN_ERR_IO, "%s: no classifier to give %d classes: the output '%s' is computed by %s%s%s, not "
                            "a Gemm or MatMul (and Add) of learned weights", who, classes, im->values[im->output].name,
                            n ? "node '" : "the graph's input", n ? n->name : "", n ? "'" : "");
    *inputs = w->dims[1 - out_dim];
    im->values[*weight].learned = true;
    if (*bias >= 0) im->values[*bias].learned = true;
    NN_TRY(resize(w, out_dim, classes, who));
    if (b) NN_TRY(resize(b, 0, classes, who));
    onnx_value_info *declared = &im->model.outputs[0];
    if (declared->ndim > 0) declared->dims[declared->ndim - 1] = classes;
    return NN_OK;
}

/* ---- learned state ---- */

static bool state_name(const char *name) {
    if (!name[0] || name[0] == '.') return false;
    for (const char *c = name; *c; c++) {
        const bool word = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_';
        if (!word && !(*c == '.' && c[1] && c[1] != '.')) return false;
    }
    return true;
}

/* How initializer value v is used: as learned state (and whether a
 * buffer), as a constant. */
static bool is_state(const imported *im, int v, bool *buffer) {
    const onnx_tensor *t = im->values[v].constant;
    *buffer = false;
    if (t->data_type != ONNX_FLOAT && t->data_type != ONNX_DOUBLE && t->data_type != ONNX_FLOAT16) return false;
    if (im->values[v].learned) return true;
    bool state = false, device = false, host = false;
    for (int k = 0; k < im->model.n_nodes; k++) {
        const onnx_node *n = &im->model.nodes[k];
        for (int i = 0; i < n->n_inputs; i++) {
            if (im->node_inputs[k][i] != v) continue;
            bool b = false;
            if (nn_onnx_state_input(n->op_type, i, &b)) state = true, *buffer = *buffer || b;
            else if (nn_onnx_host_input(n->op_type, i)) host = true;
            else device = true;
        }
    }
    /* Operands of arithmetic are state only under a state_dict name (a
     * user's nn.Parameter), not the exporter's ("onnx::Mul_12"), and never
     * when a node also reads them as constants (a Clip bound). */
    return state || (device && !host && state_name(t->name));
}

/* The module that holds `name`: a child per dotted prefix (made as needed);
 * *leaf is the last part. A name that is not state_dict-like is held by
 * the root, its characters outside [A-Za-z0-9_] made '_'. */
static nn_tensor *namespace_forward(nn_module *self, nn_tensor *x) {
    (void)x;
    return NN_FAIL_NULL(NN_ERR_STATE, "nn_module_forward: an imported ONNX graph's %s holds parameters only and "
                                      "does not run on its own; run the imported module", nn_module_kind(self));
}

static nn_module *holder(nn_module *root, char *name, char **leaf) {
    if (!state_name(name)) {
        for (char *c = name; *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) *c = '_';
        *leaf = name;
        return root;
    }
    nn_module *m = root;
    char *part = name, *dot;
    while ((dot = strchr(part, '.'))) {
        *dot = '\0';
        nn_module *child = nn_module_child(m, part);
        if (!child) {
            child = nn_module_new(nn_module_ctx(root), "ONNXInitializers", namespace_forward, NULL, NULL);
            if (nn_module_add_child(m, part, child) != NN_OK) return NULL;
        }
        m = child, part = dot + 1;
    }
    *leaf = part;
    return m;
}

static nn_status register_state(nn_module *root, imported *im, const char *who) {
    nn_ctx *ctx = nn_module_ctx(root);
    for (int v = 0; v < im->n_values; v++) {
        bool buffer;
        if (im->values[v].kind != VALUE_CONSTANT || !is_state(im, v, &buffer)) continue;
        const onnx_tensor *t = im->values[v].constant;
        char *name = strdup(t->name), *leaf;
        if (!name) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
        nn_module *m = holder(root, name, &leaf);
        const int64_t one = 1; /* a scalar is stored as one element */
        nn_tensor *tensor = m ? nn_tensor_from_data(ctx, NN_F32, t->ndim ? t->ndim : 1, t->ndim ? t->dims : &one,
                                                    t->floats)
                              : NULL;
        nn_status st = !tensor ? nn_last_status()
                       : buffer ? nn_module_register_buffer(m, leaf, tensor)
                                : nn_module_register_parameter(m, leaf, tensor);
        free(name);
        if (st != NN_OK) {
            nn_tensor_free(tensor);
            return nn_set_error(st, "%s: initializer '%s': %s", who, t->name, nn_last_error());
        }
        im->values[v].kind = VALUE_STATE;
        im->values[v].state = tensor; /* the module holds its own reference too */
    }
    return NN_OK;
}

/* ---- running ---- */

slot *nn_onnx_in(node_run *r, int i) {
    if (i >= r->n_in) return NULL;
    const int v = r->im->node_inputs[r->node - r->im->model.nodes][i];
    return v < 0 ? NULL : &r->slots[v];
}

nn_tensor *nn_onnx_device_in(node_run *r, int i) {
    slot *s = nn_onnx_in(r, i);
    if (!s) {
        nn_onnx_refuse(r, "input %d is missing", i);
        return NULL;
    }
    if (s->t) return s->t;
    const onnx_tensor *h = s->host;
    if (!h) {
        nn_onnx_refuse(r, "input %d ('%s') is an output this importer does not compute", i, r->node->inputs[i]);
        return NULL;
    }
    if (!h->floats) {
        nn_onnx_refuse(r, "input %d ('%s') holds integers where a float tensor is needed", i,
                       r->node->inputs[i]);
        return NULL;
    }
    const int v = r->im->node_inputs[r->node - r->im->model.nodes][i];
    graph_value *g = &r->im->values[v];
    const int64_t one = 1;
    if (g->kind == VALUE_CONSTANT && g->device_constant) return s->t = g->device_constant;
    nn_tensor *t = nn_tensor_from_data(nn_module_ctx(r->module), NN_F32, h->ndim ? h->ndim : 1, h->ndim ? h->dims : &one,
                                       h->floats);
    if (!t) return NULL;
    if (g->kind == VALUE_CONSTANT) g->device_constant = t; /* kept for every later forward */
    else if (nn_ctx_track_step_tensor(nn_module_ctx(r->module), t) != NN_OK) { /* computed this forward: the step's */
        nn_tensor_free(t);
        return NULL;
    }
    return s->t = t;
}

nn_status nn_onnx_set_out(node_run *r, int i, nn_tensor *t) {
    if (!t) return nn_last_status();
    if (i < r->node->n_outputs) {
        const int v = r->im->node_outputs[r->node - r->im->model.nodes][i];
        if (v >= 0) r->slots[v].t = t;
    }
    return NN_OK;
}

nn_status nn_onnx_refuse(const node_run *r, const char *fmt, ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return nn_set_error(NN_ERR_ARGUMENT, "imported ONNX graph: node '%s' (%s, opset %lld): %s", r->node->name,
                        r->node->op_type, (long long)r->im->model.opset, what);
}

/* The graph run on its inputs (count of them, in the graph's order). */
static nn_tensor *run_graph(nn_module *self, nn_tensor *const *xs) {
    imported *im = nn_module_data(self);
    slot *slots = calloc((size_t)im->n_values, sizeof *slots);
    if (!slots) return NN_FAIL_NULL(NN_ERR_MEMORY, "imported ONNX graph: out of host memory");
    for (int v = 0; v < im->n_values; v++) {
        const graph_value *g = &im->values[v];
        if (g->kind == VALUE_STATE) slots[v].t = g->state;
        if (g->kind == VALUE_CONSTANT) slots[v].host = g->constant, slots[v].t = g->device_constant;
    }
    for (int i = 0; i < im->n_inputs; i++) slots[im->inputs[i]].t = xs[i];
    nn_status st = NN_OK;
    for (int k = 0; k < im->model.n_nodes && st == NN_OK; k++) {
        if (im->fused_away[k]) continue;
        node_run r = {.module = self, .im = im, .node = &im->model.nodes[k], .slots = slots,
                      .n_in = im->model.nodes[k].n_inputs};
        if (im->gelu_input[k] < 0) {
            st = nn_onnx_run_node(&r);
        } else {
            nn_tensor *gx = slots[im->gelu_input[k]].t;
            st = gx ? nn_onnx_set_out(&r, 0, nn_gelu(gx, false))
                    : nn_onnx_refuse(&r, "GELU's input '%s' is not a tensor computed from the input",
                                     im->values[im->gelu_input[k]].name);
        }
    }
    nn_tensor *y = st == NN_OK ? slots[im->output].t : NULL;
    if (st == NN_OK && !y)
        nn_set_error(NN_ERR_ARGUMENT, "imported ONNX graph: the output '%s' is a constant, not computed from the input",
                     im->values[im->output].name);
    for (int v = 0; v < im->n_values; v++) {
        free(slots[v].owned.name), free(slots[v].owned.floats), free(slots[v].owned.ints);
    }
    free(slots);
    return y;
}

static nn_tensor *imported_forward(nn_module *self, nn_tensor *x) {
    const imported *im = nn_module_data(self);
    if (im->n_inputs != 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "imported ONNX graph: it has %d inputs ('%s', '%s'%s); give them all "
                            "with nn_onnx_run", im->n_inputs, im->values[im->inputs[0]].name,
                            im->values[im->inputs[1]].name, im->n_inputs > 2 ? ", ..." : "");
    return run_graph(self, &x);
}

nn_tensor *nn_onnx_run(nn_module *m, nn_tensor *const *inputs, int count) {
    if (!m || strcmp(nn_module_kind(m), "ONNXGraph") != 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_onnx_run: %s is not a module nn_onnx_import made",
                            m ? nn_module_kind(m) : "NULL");
    const imported *im = nn_module_data(m);
    if (!inputs || count != im->n_inputs)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_onnx_run: the graph takes %d inputs, given %d", im->n_inputs,
                            inputs ? count : 0);
    for (int i = 0; i < count; i++) {
        if (!inputs[i])
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_onnx_run: input %d ('%s') is NULL", i, im->values[im->inputs[i]].name);
        if (inputs[i]->ctx != nn_module_ctx(m)) {
            nn_error_other_context(NN_ERR_STATE, "nn_onnx_run", "the graph's parameters", nn_module_ctx(m),
                                   "an input", inputs[i]->ctx);
            return NULL;
        }
    }
    if (nn_ctx_enter(nn_module_ctx(m), "nn_onnx_run") != NN_OK) return NULL;
    nn_tensor *y = run_graph(m, inputs);
    nn_ctx_leave(nn_module_ctx(m));
    return y;
}

nn_module *nn_onnx_import(nn_ctx *ctx, const char *path) { return nn_onnx_import_with(ctx, path, NULL); }

nn_module *nn_onnx_import_with(nn_ctx *ctx, const char *path, const nn_onnx_import_options *options) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_onnx_import: ctx is NULL");
    const int classes = options ? options->classes : 0;
    if (classes < 0) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_onnx_import: classes %d is negative", classes);
    imported *im = calloc(1, sizeof *im);
    if (!im) return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_onnx_import: out of host memory");
    if (nn_onnx_read(path, &im->model) != NN_OK) {
        free(im);
        return NULL;
    }
    char who[512];
    snprintf(who, sizeof who, "nn_onnx_import: '%s'", path);
    int weight = -1, bias = -1;
    int64_t inputs = 0;
    if (link_graph(im, who) != NN_OK || (classes && new_classifier(im, classes, who, &weight, &bias, &inputs) != NN_OK)) {
        imported_free(im);
        return NULL;
    }
    nn_module *m = nn_module_new(ctx, "ONNXGraph", imported_forward, im, imported_free);
    if (!m) return NULL; /* im freed by nn_module_new */
    const float bound = classes ? 1.0f / sqrtf((float)inputs) : 0.0f; /* PyTorch's Linear */
    if (register_state(m, im, who) != NN_OK ||
        (classes && nn_init_uniform(im->values[weight].state, -bound, bound) != NN_OK) ||
        (classes && bias >= 0 && nn_init_uniform(im->values[bias].state, -bound, bound) != NN_OK)) {
        nn_module_free(m);
        return NULL;
    }
    return m;
}

nn_status nn_onnx_io_shapes(const char *path, int64_t *input, int *input_ndim, int64_t *output, int *output_ndim) {
    if (!input || !input_ndim || !output || !output_ndim)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_onnx_io_shapes: an output argument is NULL");
    imported im = {0};
    NN_TRY(nn_onnx_read(path, &im.model));
    char who[512];
    snprintf(who, sizeof who, "nn_onnx_io_shapes: '%s'", path);
    nn_status st = link_graph(&im, who);
    if (st == NN_OK) {
        const onnx_value_info *in = NULL, *out = &im.model.outputs[0];
        for (int i = 0; i < im.model.n_inputs; i++)
            if (strcmp(im.model.inputs[i].name, im.values[im.input].name) == 0) in = &im.model.inputs[i];
        *input_ndim = in->ndim, *output_ndim = out->ndim;
        for (int d = 0; d < in->ndim; d++) input[d] = in->dims[d];
        for (int d = 0; d < out->ndim; d++) output[d] = out->dims[d];
    }
    imported_free_contents(&im);
    return st;
}
