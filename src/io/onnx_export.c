/* ONNX export from the autograd tape (see nn_io.h for what maps to what).
 *
 * The recorded nodes reachable from the output are replayed in tape order
 * (the order they ran, hence a topological order) and each becomes one or
 * two ONNX nodes. Every value carries one fact beyond its name: whether its
 * dimension 0 is the batch. With a dynamic batch that fact is what keeps the
 * graph honest: an operation that would bake the traced batch size into the
 * graph (a constant of the batch's size added to a batch value, a reshape
 * that moves the batch, a matmul over the batch) is refused, naming the
 * operation, rather than exported to a graph that is only right for one
 * batch size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "model_info.h"
#include "onnx_graph.h"
#include "core/context_mismatch.h"

#define DEFAULT_OPSET 17
#define MIN_OPSET 13 /* Softmax over one axis, ReduceSum with optional axes */
#define IR_VERSION 8 /* the IR of opset 17 */

static value *find_value(exporter *x, const nn_tensor *t) {
    for (int i = 0; i < x->count; i++)
        if (x->values[i]->t == t) return x->values[i];
    return NULL;
}

static const char *user_name(exporter *x, const nn_tensor *t) {
    for (int i = 0; i < x->opt->n_names; i++)
        if (x->opt->named_tensors[i] == t) return x->opt->names[i];
    return NULL;
}

value *nn_onnx_add_value(exporter *x, const nn_tensor *t, const char *name, bool batch) {
    if (x->count == x->capacity) {
        int capacity = x->capacity ? x->capacity * 2 : 32;
        value **grown = realloc(x->values, (size_t)capacity * sizeof *grown);
        if (!grown) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", x->who);
        x->values = grown;
        x->capacity = capacity;
    }
    for (int i = 0; i < x->count; i++)
        if (strcmp(x->values[i]->name, name) == 0)
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: two values of the graph are named '%s'",
                                x->who, name);
    value *v = malloc(sizeof *v);
    char *copy = strdup(name);
    if (!v || !copy) {
        free(v);
        free(copy);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", x->who);
    }
    *v = (value){t, copy, batch};
    x->values[x->count++] = v;
    return v;
}

/* An exporter-made int64 or float constant, as an initializer. */
const char *nn_onnx_add_constant(exporter *x, const char *name, int data_type,
                                 const int64_t *dims, int ndim, const void *data, size_t size) {
    value *v = nn_onnx_add_value(x, NULL, name, false);
    if (!v) return NULL;
    nn_onnx_initializer(&x->graph, v->name, data_type, dims, ndim, data, size);
    return v->name;
}

/* A tensor the graph reads but does not compute: a parameter (initializer).
 * An operation's result that was never recorded cannot be one: it depends on
 * data the graph would not see. */
static value *leaf_value(exporter *x, nn_tensor *t, const char *consumer) {
    value *v = find_value(x, t);
    if (v) return v;
    if (t->is_result || t->step_slot >= 0)
        return NN_FAIL_NULL(NN_ERR_STATE,
                            "%s: an input of %s is the result of an operation that was not "
                            "recorded (grad mode off, none of its inputs required grad, or "
                            "nn_backward already consumed it): run the forward pass with grad "
                            "mode on and requires_grad set on the input, then export before "
                            "backward", x->who, consumer);
    char fallback[32];
    const char *name = user_name(x, t);
    if (!name) {
        snprintf(fallback, sizeof fallback, "param_%d", x->params_made++);
        name = fallback;
    }
    v = nn_onnx_add_value(x, t, name, false);
    if (!v) return NULL;
    size_t bytes = (size_t)t->numel * 4;
    void *host = malloc(bytes);
    if (!host) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory for '%s'", x->who, name);
    if (nn_tensor_read(t, host, bytes) != NN_OK) {
        free(host);
        return NULL;
    }
    nn_onnx_initializer(&x->graph, v->name, t->dtype == NN_F32 ? NN_ONNX_FLOAT : NN_ONNX_INT32,
                        t->shape, t->ndim, host, bytes);
    free(host);
    return v;
}

/* ---- the walk ---- */

static int by_tape_index(const void *a, const void *b) {
    int64_t x = (*(nn_node *const *)a)->tape_index, y = (*(nn_node *const *)b)->tape_index;
    return (x > y) - (x < y);
}

/* The recorded nodes between input and output, in tape order. */
static nn_status collect_nodes(exporter *x, nn_node ***out, int *count) {
    int n = 0, cap = 16, top = 0, stack_cap = 16;
    nn_node **nodes = malloc((size_t)cap * sizeof *nodes);
    nn_tensor **stack = malloc((size_t)stack_cap * sizeof *stack);
    bool reached_input = false;
    nn_status status = nodes && stack ? NN_OK : nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", x->who);
    if (status == NN_OK) stack[top++] = x->output;
    while (status == NN_OK && top > 0) {
        nn_tensor *t = stack[--top];
        if (t == x->input) {
            reached_input = true;
            continue;
        }
        nn_node *node = t->grad_fn;
        if (!node) continue; /* a leaf: an initializer, checked when emitted */
        bool seen = false;
        for (int i = 0; i < n && !seen; i++) seen = nodes[i] == node;
        if (seen) continue;
        if (n == cap || top + NN_NODE_MAX_TENSORS > stack_cap) {
            cap *= 2;
            stack_cap *= 2;
            nn_node **grown_nodes = realloc(nodes, (size_t)cap * sizeof *nodes);
            if (grown_nodes) nodes = grown_nodes;
            nn_tensor **grown_stack = realloc(stack, (size_t)stack_cap * sizeof *stack);
            if (grown_stack) stack = grown_stack;
            if (!grown_nodes || !grown_stack) {
                status = nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", x->who);
                break;
            }
        }
        nodes[n++] = node;
        for (int i = 0; i < node->input_count; i++)
            if (node->inputs[i]) stack[top++] = node->inputs[i];
    }
    free(stack);
    if (status == NN_OK && !reached_input)
        status = nn_set_error(NN_ERR_STATE,
                              "%s: the output does not depend on the input through recorded "
                              "operations: set requires_grad on the input before the forward "
                              "pass (operations on it record only then, unless a parameter is "
                              "involved) and keep grad mode on", x->who);
    if (status != NN_OK) {
        free(nodes);
        return status;
    }
    qsort(nodes, (size_t)n, sizeof *nodes, by_tape_index);
    *out = nodes;
    *count = n;
    return NN_OK;
}

static nn_status emit_node(exporter *x, nn_node *node) {
    if (!node->op->to_onnx && node->op->export_refusal) return node->op->export_refusal(x, node);
    op_io io = {.node = node};
    for (int i = 0; i < node->input_count; i++) {
        if (!node->inputs[i]) continue;
        io.in[i] = leaf_value(x, node->inputs[i], node->op->name);
        if (!io.in[i]) return nn_last_status();
    }
    char fallback[32];
    const char *name = user_name(x, node->output);
    if (!name && node->output == x->output) name = "output";
    if (!name) {
        snprintf(fallback, sizeof fallback, "v%d", x->values_made++);
        name = fallback;
    }
    /* Register the output first (name clashes are refused before emitting). */
    value *out = nn_onnx_add_value(x, node->output, name, false);
    if (!out) return nn_last_status();
    NN_TRY(nn_onnx_emit_op(x, &io, out->name));
    out->batch = io.out_batch;
    return NN_OK;
}

static nn_status check_options(const char *who, nn_tensor *input, nn_tensor *output,
                               const nn_onnx_options *o) {
    if (!input || !output)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s is NULL", who, !input ? "input" : "output");
    if (input->ctx != output->ctx)
        return nn_error_other_context(NN_ERR_STATE, who, "input", input->ctx, "output", output->ctx);
    if (input->dtype != NN_F32 && input->dtype != NN_I32)
        return nn_set_error(NN_ERR_DTYPE, "%s: the input must be float32 or int32 (indices)", who);
    if (input->dtype != NN_F32 && o->info && o->info->channels > 0)
        return nn_set_error(NN_ERR_DTYPE, "%s: the input normalisation of the model's info needs a float32 input, "
                                          "and the input is int32", who);
    if (o->opset != 0 && (o->opset < MIN_OPSET || o->opset > DEFAULT_OPSET))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: opset %d is not supported (%d..%d)", who,
                            o->opset, MIN_OPSET, DEFAULT_OPSET);
    if (o->n_names < 0 || (o->n_names > 0 && (!o->named_tensors || !o->names)))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: n_names is %d but named_tensors or names is NULL",
                            who, o->n_names);
    for (int i = 0; i < o->n_names; i++) {
        if (!o->named_tensors[i] || !o->names[i] || !*o->names[i])
            return nn_set_error(NN_ERR_ARGUMENT, "%s: name %d: the tensor or its name is NULL or empty",
                                who, i);
        for (int j = 0; j < i; j++)
            if (o->named_tensors[j] == o->named_tensors[i])
                return nn_set_error(NN_ERR_ARGUMENT, "%s: names %d and %d ('%s', '%s') name the same tensor",
                                    who, j, i, o->names[j], o->names[i]);
    }
    if (!output->grad_fn && output != input)
        return nn_set_error(NN_ERR_STATE, "%s: the output was not produced by recorded operations "
                                          "(grad mode off, none of the inputs required grad, or "
                                          "nn_backward already consumed them)", who);
    if (output == input)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: the output is the input: nothing to export", who);
    return NN_OK;
}

static nn_status export_graph(const char *who, const char *path, nn_tensor *input,
                              nn_tensor *output, const nn_onnx_options *options) {
    if (!path || !*path) return nn_set_error(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    nn_onnx_options defaults = {0};
    const nn_onnx_options *o = options ? options : &defaults;
    NN_TRY(check_options(who, input, output, o));
    exporter x = {.who = who, .path = path, .input = input, .output = output, .opt = o,
                  .dynamic = !o->static_batch};
    nn_node **nodes = NULL;
    int count = 0;
    nn_status status = collect_nodes(&x, &nodes, &count);
    const char *input_name = user_name(&x, input) ? user_name(&x, input) : "input";
    const bool preprocess = o->info && o->info->channels > 0;
    if (status == NN_OK && o->info) status = nn_model_info_check(who, o->info);
    if (status == NN_OK && preprocess) {
        /* The graph reads raw pixels; the traced input is their normalised form. */
        if (!nn_onnx_add_value(&x, NULL, input_name, true) ||
            !nn_onnx_add_value(&x, input, "input_normalized", true))
            status = nn_last_status();
        else
            status = nn_onnx_emit_preprocess(&x, input_name, "input_normalized");
    } else if (status == NN_OK && !nn_onnx_add_value(&x, input, input_name, true)) {
        status = nn_last_status();
    }
    for (int i = 0; i < count && status == NN_OK; i++) status = emit_node(&x, nodes[i]);
    /* Every name given must have named something in the graph. */
    for (int i = 0; i < o->n_names && status == NN_OK; i++)
        if (!find_value(&x, o->named_tensors[i]))
            status = nn_set_error(NN_ERR_ARGUMENT, "%s: name '%s' is for a tensor that is not part "
                                                   "of the exported graph", who, o->names[i]);
    nn_pb model = {0};
    if (status == NN_OK) {
        value *out = find_value(&x, output);
        nn_pb_string(&x.graph, 2, o->graph_name ? o->graph_name : "nn_engine");
        nn_onnx_value_info(&x.graph, NN_ONNX_GRAPH_INPUT, input_name,
                           input->dtype == NN_F32 ? NN_ONNX_FLOAT : NN_ONNX_INT32, input->shape,
                           input->ndim, x.dynamic ? "batch" : NULL);
        nn_onnx_value_info(&x.graph, NN_ONNX_GRAPH_OUTPUT, out->name,
                           output->dtype == NN_F32 ? NN_ONNX_FLOAT : NN_ONNX_INT32, output->shape,
                           output->ndim, x.dynamic && out->batch ? "batch" : NULL);
        nn_onnx_model(&model, &x.graph, IR_VERSION, o->opset ? o->opset : DEFAULT_OPSET,
                      NN_ENGINE_VERSION);
        if (o->info && o->info->class_count > 0) {
            char *classes = nn_model_info_classes_json(o->info);
            if (classes) nn_onnx_model_metadata(&model, NN_INFO_CLASSES_KEY, classes);
            else model.failed = true;
            free(classes);
        }
        if (x.graph.failed || model.failed)
            status = nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory", who, path);
    }
    if (status == NN_OK) {
        nn_atomic_file *f = nn_atomic_open(who, path);
        if (!f) status = nn_last_status();
        if (f && (status = nn_atomic_write(f, model.data, model.len)) != NN_OK) nn_atomic_abort(f);
        else if (f) status = nn_atomic_commit(f);
    }
    nn_pb_free(&model);
    nn_pb_free(&x.graph);
    for (int i = 0; i < x.count; i++) {
        free(x.values[i]->name);
        free(x.values[i]);
    }
    free(x.values);
    free(nodes);
    return status;
}

nn_status nn_onnx_export(const char *path, nn_tensor *input, nn_tensor *output,
                         const nn_onnx_options *options) {
    return export_graph("nn_onnx_export", path, input, output, options);
}

static nn_status export_module(const char *who, const char *path, nn_module *module, const int64_t *input_shape,
                               int ndim, const nn_model_info *info) {
    if (!module) return nn_set_error(NN_ERR_ARGUMENT, "%s: module is NULL", who);
    if (!input_shape) return nn_set_error(NN_ERR_ARGUMENT, "%s: input_shape is NULL", who);
    if (!path || !*path) return nn_set_error(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    nn_ctx *ctx = nn_module_ctx(module);
    bool empty_step = nn_ctx_step_tensor_count(ctx) == 0 && ctx->tape_count == 0;
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, ndim, input_shape);
    if (!x) return nn_set_error(nn_last_status(), "%s: input_shape: %s", who, nn_last_error());
    bool was_enabled = nn_ctx_set_grad_enabled(ctx, true);
    nn_status status = nn_tensor_set_requires_grad(x, true);
    ctx->tracing_export = true;
    nn_tensor *y = status == NN_OK ? nn_module_forward(module, x) : NULL;
    ctx->tracing_export = false;
    if (status == NN_OK && !y) status = nn_last_status();
    const int named = nn_module_state_count(module);
    nn_tensor **tensors = status == NN_OK ? calloc((size_t)named + 1, sizeof *tensors) : NULL;
    const char **names = tensors ? calloc((size_t)named + 1, sizeof *names) : NULL;
    if (status == NN_OK && !names) status = nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
    int kept = 0;
    if (status == NN_OK) {
        /* int32 state counts training batches (BatchNorm's num_batches_tracked):
         * no inference graph reads it, and torch.onnx leaves it out too. */
        for (int i = 0; i < named; i++) {
            if (nn_tensor_dtype(nn_module_state(module, i)) == NN_I32) continue;
            bool named_before = false; /* a tied tensor: its first name is the initializer's */
            for (int j = 0; j < kept; j++) named_before |= tensors[j] == nn_module_state(module, i);
            if (named_before) continue;
            tensors[kept] = nn_module_state(module, i);
            names[kept++] = nn_module_state_name(module, i);
        }
        nn_onnx_options o = {.n_names = kept, .named_tensors = tensors, .names = names, .info = info};
        status = export_graph(who, path, x, y, &o);
    }
    free(tensors);
    free(names);
    nn_ctx_set_grad_enabled(ctx, was_enabled);
    nn_tensor_free(x);
    if (empty_step) {
        /* Keep the error message of a failed export over step_end's. */
        char message[1024];
        snprintf(message, sizeof message, "%s", nn_last_error());
        nn_status last = nn_last_status();
        nn_ctx_step_end(ctx);
        if (status != NN_OK) nn_set_error(last, "%s", message);
    }
    return status;
}

nn_status nn_onnx_export_module(const char *path, nn_module *module, const int64_t *input_shape, int ndim) {
    return export_module("nn_onnx_export_module", path, module, input_shape, ndim, NULL);
}

nn_status nn_onnx_export_module_info(const char *path, nn_module *module, const int64_t *input_shape, int ndim,
                                     const nn_model_info *info) {
    return export_module("nn_onnx_export_module_info", path, module, input_shape, ndim, info);
}
