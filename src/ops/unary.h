/* The operations of shaders/unary_ops.h's rows, shared by the files that
 * define them: unary.c (descriptors, kernels, nn_<name>(x)), unary_scalars.c
 * (the public functions of rows with parameters) and unary_onnx.c (export). */
#ifndef NN_OPS_UNARY_H
#define NN_OPS_UNARY_H

#include "io/onnx_graph.h"
#include "ops.h"

/* A row's node: its code and its parameters (unary_ops.h names them alpha
 * and beta; zero for rows without). */
typedef struct nn_unary_node {
    int32_t op; /* nn_unary_op */
    float alpha, beta;
} nn_unary_node;

/* Records row `code` on x with its parameters, checked by the caller; the
 * messages name the row's public function. */
nn_tensor *nn_unary_record(nn_unary_op code, nn_tensor *x, float alpha, float beta);

/* Each row's exporter (its `export` column): the node(s) computing the row
 * on io->in[0] into `out`, with Onnx its operator column. */
#define NN_UNARY_ONNX_DECLARE(export)                                                                          \
    nn_status unary_onnx_##export(exporter *x, op_io *io, const char *out, const char *Onnx,                   \
                                  const nn_unary_node *node);
NN_UNARY_ONNX_DECLARE(operator)
NN_UNARY_ONNX_DECLARE(alpha_attribute)
NN_UNARY_ONNX_DECLARE(scalar_after)
NN_UNARY_ONNX_DECLARE(scalar_before)
NN_UNARY_ONNX_DECLARE(gelu)
NN_UNARY_ONNX_DECLARE(gelu_tanh)
NN_UNARY_ONNX_DECLARE(silu)
NN_UNARY_ONNX_DECLARE(relu6)
NN_UNARY_ONNX_DECLARE(hardsigmoid)
NN_UNARY_ONNX_DECLARE(hardswish)
NN_UNARY_ONNX_DECLARE(softplus)
NN_UNARY_ONNX_DECLARE(clip)
#undef NN_UNARY_ONNX_DECLARE

#endif
