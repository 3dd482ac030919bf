/* ONNX for the class-target negative log-likelihood (nll_loss.c):
 * NegativeLogLikelihoodLoss on the targets cast to int64; with label
 * smoothing, its per-position losses mixed with the smoothing term
 * -sum_c w[c] x[c] of the kept positions, summed and divided by the kept
 * targets' total weight as the kernel does. A reduced loss is reshaped
 * from ONNX's scalar to nn-engine's [1]. The targets are a constant of the
 * traced batch, so the batch must be static. */
#include <stdio.h>

#include "io/onnx_graph.h"
#include "ops.h"

enum { IN_INPUT, IN_TARGET, IN_WEIGHT };

static const char *kReductions[] = {"none", "mean", "sum"};

/* A constant `<io->name>_<what>` of 4-byte (float, int32) or 8-byte (int64) elements. */
static const char *constant(exporter *x, const op_io *io, const char *what, int type, const int64_t *dims, int ndim,
                            const void *data) {
    char name[96];
    snprintf(name, sizeof name, "%s_%s", io->name, what);
    int64_t count = 1;
    for (int d = 0; d < ndim; d++) count *= dims[d];
    return nn_onnx_add_constant(x, name, type, dims, ndim, data, (size_t)count * (type == NN_ONNX_INT64 ? 8 : 4));
}

static const char *scalar_constant(exporter *x, const op_io *io, const char *what, int type, const void *data) {
    return constant(x, io, what, type, NULL, 0, data);
}

static void unary(exporter *x, const char *op_type, const char *name, const char *in, const char *out) {
    nn_onnx_node n;
    nn_onnx_node_begin(&n, op_type, name);
    nn_onnx_node_input(&n, in);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
}

static void cast(exporter *x, const char *name, const char *in, int to, const char *out) {
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Cast", name);
    nn_onnx_node_input(&n, in);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_int(&n, "to", to);
    nn_onnx_node_end(&n, &x->graph);
}

static void nll_node(exporter *x, const op_io *io, const char *name, const char *targets, int reduction,
                     const char *out) {
    const nn_nll_params *p = NN_NODE_PARAMS(io->node, nn_nll_params);
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "NegativeLogLikelihoodLoss", name);
    nn_onnx_node_input(&n, io->in[IN_INPUT]->name);
    nn_onnx_node_input(&n, targets);
    if (io->in[IN_WEIGHT]) nn_onnx_node_input(&n, io->in[IN_WEIGHT]->name);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_string(&n, "reduction", kReductions[reduction]);
    nn_onnx_attr_int(&n, "ignore_index", p->ignore_index);
    nn_onnx_node_end(&n, &x->graph);
}

/* ReduceSum of every element to a scalar. */
static void sum_all(exporter *x, const char *name, const char *in, const char *out) {
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "ReduceSum", name);
    nn_onnx_node_input(&n, in);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_int(&n, "keepdims", 0);
    nn_onnx_node_end(&n, &x->graph);
}

/* The label smoothing's loss per position (into `out`) and, for the mean,
 * the kept targets' total weight (into `total`). */
static nn_status smoothed(exporter *x, op_io *io, const char *targets, const char *per_position, const char *total) {
    const nn_nll_params *p = NN_NODE_PARAMS(io->node, nn_nll_params);
    const nn_tensor *input = io->node->inputs[IN_INPUT];
    char nll[96], weighted[96], wshape[96], sums[96], equal[96], valid[96], mask[96], kept[96], gathered[96],
        safe[96], weights[96], a[96], b[96];
    const char *ignore = scalar_constant(x, io, "ignore_index", NN_ONNX_INT32, &p->ignore_index);
    const int64_t axis = 1, zero = 0;
    const char *axes = constant(x, io, "axes", NN_ONNX_INT64, &axis, 1, &axis);
    const float keep = 1.0f - p->smoothing, spread = p->smoothing / (float)p->classes;
    const char *keep_c = scalar_constant(x, io, "keep", NN_ONNX_FLOAT, &keep);
    const char *spread_c = scalar_constant(x, io, "spread", NN_ONNX_FLOAT, &spread);
    if (!ignore || !axes || !keep_c || !spread_c || !nn_onnx_fresh_value(x, io, "nll", nll, sizeof nll) ||
        !nn_onnx_fresh_value(x, io, "sums", sums, sizeof sums) || !nn_onnx_fresh_value(x, io, "equal", equal, sizeof equal) ||
        !nn_onnx_fresh_value(x, io, "valid", valid, sizeof valid) || !nn_onnx_fresh_value(x, io, "mask", mask, sizeof mask) ||
        !nn_onnx_fresh_value(x, io, "kept", kept, sizeof kept) || !nn_onnx_fresh_value(x, io, "a", a, sizeof a) || !nn_onnx_fresh_value(x, io, "b", b, sizeof b))
        return nn_last_status();
    nll_node(x, io, nll, targets, 0, nll);
    const char *terms = io->in[IN_INPUT]->name;
    if (io->in[IN_WEIGHT]) {
        int64_t shape[NN_MAX_DIMS];
        for (int d = 0; d < input->ndim; d++) shape[d] = d == 1 ? p->classes : 1;
        if (!nn_onnx_fresh_value(x, io, "weight_b", wshape, sizeof wshape) || !nn_onnx_fresh_value(x, io, "weighted", weighted, sizeof weighted))
            return nn_last_status();
        NN_TRY(nn_onnx_reshape_to(x, wshape, io->in[IN_WEIGHT]->name, shape, input->ndim, wshape));
        nn_onnx_pair(x, "Mul", weighted, terms, wshape, weighted);
        terms = weighted;
    }
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "ReduceSum", sums);
    nn_onnx_node_input(&n, terms);
    nn_onnx_node_input(&n, axes);
    nn_onnx_node_output(&n, sums);
    nn_onnx_attr_int(&n, "keepdims", 0);
    nn_onnx_node_end(&n, &x->graph);
    nn_onnx_pair(x, "Equal", equal, io->in[IN_TARGET]->name, ignore, equal);
    unary(x, "Not", valid, equal, valid);
    cast(x, mask, valid, NN_ONNX_FLOAT, mask);
    nn_onnx_pair(x, "Mul", kept, sums, mask, kept);
    nn_onnx_pair(x, "Mul", a, nll, keep_c, a);
    nn_onnx_pair(x, "Mul", b, kept, spread_c, b);
    nn_onnx_pair(x, "Sub", per_position, a, b, per_position);
    if (!total) return NN_OK;
    const char *target_weight = mask;
    if (io->in[IN_WEIGHT]) {
        const char *zero_c = scalar_constant(x, io, "zero", NN_ONNX_INT64, &zero);
        if (!zero_c || !nn_onnx_fresh_value(x, io, "safe", safe, sizeof safe) || !nn_onnx_fresh_value(x, io, "gathered", gathered, sizeof gathered) ||
            !nn_onnx_fresh_value(x, io, "weights", weights, sizeof weights))
            return nn_last_status();
        nn_onnx_node_begin(&n, "Where", safe);
        nn_onnx_node_input(&n, valid);
        nn_onnx_node_input(&n, targets);
        nn_onnx_node_input(&n, zero_c);
        nn_onnx_node_output(&n, safe);
        nn_onnx_node_end(&n, &x->graph);
        nn_onnx_pair(x, "Gather", gathered, io->in[IN_WEIGHT]->name, safe, gathered);
        nn_onnx_pair(x, "Mul", weights, gathered, mask, weights);
        target_weight = weights;
    }
    sum_all(x, total, target_weight, total);
    return NN_OK;
}

nn_status nn_nll_loss_onnx(exporter *x, op_io *io, const char *out) {
    const nn_nll_params *p = NN_NODE_PARAMS(io->node, nn_nll_params);
    if (x->dynamic && io->in[IN_INPUT]->batch)
        return nn_onnx_refuse_batch(x, io, "compares it with targets of the traced batch (export with a static batch)");
    if (io->in[IN_WEIGHT] && io->in[IN_WEIGHT]->batch && x->dynamic)
        return nn_onnx_refuse_batch(x, io, "takes a batch-dependent value as a weight");
    nn_onnx_reserve_name(x, "NegativeLogLikelihoodLoss", io);
    io->out_batch = p->reduction == NN_REDUCTION_NONE && io->in[IN_INPUT]->batch;
    char targets[96], loss[96], total[96], sum[96];
    if (!nn_onnx_fresh_value(x, io, "targets", targets, sizeof targets)) return nn_last_status();
    cast(x, targets, io->in[IN_TARGET]->name, NN_ONNX_INT64, targets);
    const bool reduced = p->reduction != NN_REDUCTION_NONE;
    const char *scalar = reduced ? nn_onnx_fresh_value(x, io, "scalar", loss, sizeof loss) : out;
    if (!scalar) return nn_last_status();
    if (p->smoothing == 0.0f) {
        nll_node(x, io, io->name, targets, p->reduction, scalar);
    } else if (!reduced) {
        NN_TRY(smoothed(x, io, targets, out, NULL));
    } else {
        char per[96];
        if (!nn_onnx_fresh_value(x, io, "per_position", per, sizeof per) || !nn_onnx_fresh_value(x, io, "sum", sum, sizeof sum) ||
            (p->reduction == NN_REDUCTION_MEAN && !nn_onnx_fresh_value(x, io, "total", total, sizeof total)))
            return nn_last_status();
        NN_TRY(smoothed(x, io, targets, per, p->reduction == NN_REDUCTION_MEAN ? total : NULL));
        if (p->reduction == NN_REDUCTION_SUM) {
            sum_all(x, scalar, per, scalar);
        } else {
            sum_all(x, sum, per, sum);
            nn_onnx_pair(x, "Div", scalar, sum, total, scalar);
        }
    }
    if (!reduced) return NN_OK;
    const int64_t one = 1;
    char reshape[96];
    snprintf(reshape, sizeof reshape, "%s_shape", io->name);
    return nn_onnx_reshape_to(x, reshape, scalar, &one, 1, out);
}
