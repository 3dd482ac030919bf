/* Operations as they are recorded and run. An operation is a descriptor
 * (nn_op: its forward, backward and ONNX emitter, in one file under
 * src/ops/); each call makes a node (nn_node: the descriptor, its inputs,
 * output and parameters). The node goes on the autograd tape when autograd
 * needs it, and on the context's pending list: its kernels run at the next
 * flush, when whatever reads the results needs them (a host read, backward,
 * a kernel launched by something that is not an operation, the end of the
 * step). Before launching, the fusion pass (core/fusion.c) looks at the
 * pending nodes and runs chains of them as fused kernels where the backend
 * says so. An output the fused kernels never write (a convolution's output
 * before its ReLU) has no storage; reading it or using it later recomputes
 * it from its own operation (its recipe). Included by src/ only. */
#ifndef NN_CORE_GRAPH_H
#define NN_CORE_GRAPH_H

#include "internal.h"

struct exporter;
struct op_io;

/* An operation. */
struct nn_op {
    const char *name; /* "nn_conv2d": the tape's, messages' and ONNX node names' */
    /* Run the node's kernels into its output (storage made) and keep in
     * node->saved what backward needs. View operations (view) have none:
     * their output shares input 0's storage. */
    nn_status (*forward)(nn_node *node);
    /* Write the gradients of the inputs that want one from the output's
     * (node->output->grad). NULL: the operation is not differentiable. */
    nn_status (*backward)(nn_node *node);
    /* The ONNX node(s) for the node (io/onnx_graph.h); NULL: refused,
     * naming the operation. */
    nn_status (*to_onnx)(struct exporter *x, struct op_io *io, const char *out);
    /* Without to_onnx: why its node has no ONNX form, naming what the user
     * knows it by (a custom kernel's or function's name); NULL: the export
     * names the operation. Asked before the node's inputs are looked at. */
    nn_status (*export_refusal)(struct exporter *x, const nn_node *node);
    bool view;
    /* The layouts (core/layout.h) for a call on these inputs and params
     * with an output of ndim/shape: input_layouts[i] (preset to dense) is
     * the layout the forward and backward read input i in, where recording
     * converts it first if it has another; returns the output's. NULL:
     * every input and the output are dense. */
    nn_layout (*layouts)(nn_tensor *const *inputs, int count, const void *params, int ndim, const int64_t *shape,
                         nn_layout *input_layouts);
};

/* The most inputs or saved tensors any operation has. */
#define NN_NODE_MAX_TENSORS 8
/* The largest parameter struct of any operation. */
#define NN_NODE_MAX_PARAMS 128

typedef struct nn_segment nn_segment;

/* One call of an operation. Holds references to its output, inputs and
 * saved tensors; itself held by the tape, the pending list and recipes. */
struct nn_node {
    const nn_op *op;
    nn_tensor *output;
    nn_tensor *inputs[NN_NODE_MAX_TENSORS]; /* NULL for an absent optional input (a bias) */
    int input_count;
    uint64_t input_versions[NN_NODE_MAX_TENSORS]; /* their storage's version when recorded (0: none yet) */
    nn_tensor *saved[NN_NODE_MAX_TENSORS];
    int saved_count;
    int64_t tape_index; /* -1: not on the tape */
    int64_t pending_index; /* its place in a flush (core/fusion.c) */
    int refs;
    bool launched;
    bool walked;        /* the current backward pass ran its backward (or its segment's) */
    bool premasked;     /* a ReLU whose output's reader wrote that gradient masked already (ops/relu.c) */
    int8_t grad_mask;   /* a BatchNorm whose output's one reader, an activation, left its mask to this
                           node's backward (nn_norm_mask, ops/normalization.c) */
    bool leaves_told;   /* the current backward pass has counted it off its leaf inputs' readers */
    /* A fused backward that covers this node (core/fusion.h), or NULL: the
     * node's own backward runs. */
    nn_segment *segment;
    int32_t precision; /* the context's nn_precision when it was recorded: its products' */
    _Alignas(8) unsigned char params[NN_NODE_MAX_PARAMS];
};

/* The node's parameters as the operation's struct. */
#define NN_NODE_PARAMS(node, type) ((type *)(void *)(node)->params)

/* ---- recording (graph.c) ---- */

/* Record a call of `op` on inputs (NULL entries allowed) with `params`
 * (copied; params_size <= NN_NODE_MAX_PARAMS): a step-owned output of
 * dtype and shape, whose kernels run at the next flush. The node goes on
 * the tape when autograd needs it. NULL on failure. */
nn_tensor *nn_op_record(const nn_op *op, nn_tensor *const *inputs, int input_count, const void *params,
                        size_t params_size, nn_dtype dtype, int ndim, const int64_t *shape);
/* The tensor a forward keeps for backward (a column matrix, an argmax):
 * a new scratch tensor in node->saved. NULL on failure. */
nn_tensor *nn_node_save_new(nn_node *node, nn_dtype dtype, int ndim, const int64_t *shape);
/* Keep an existing tensor in node->saved (a reference is taken). */
nn_status nn_node_save(nn_node *node, nn_tensor *t);
void nn_node_retain(nn_node *node);
/* Append node to a growable list (the tape, the pending list), taking a
 * reference; `what` names the list in the out-of-memory message. */
nn_status nn_node_list_push(nn_node ***list, int64_t *count, int64_t *capacity, nn_node *node, const char *what);
void nn_node_release(nn_node *node);

/* ---- running (graph.c) ---- */

/* Run every pending node (after the fusion pass); `keep` (may be NULL) is
 * a tensor the caller needs, which the pass must not leave unwritten. */
nn_status nn_ctx_flush(nn_ctx *ctx, const nn_tensor *keep);
/* Give t storage and its value: flush if its operation is pending (or an
 * operation that writes it in place: pending_writer), or run its recipe if
 * fused kernels left it unwritten. */
nn_status nn_tensor_materialize(nn_tensor *t);
/* Give the output of a node storage of its own (a launch does this before
 * its kernels write it). */
nn_status nn_tensor_attach_storage(nn_tensor *t);
/* Launch one node as its own operation (not fused). */
nn_status nn_node_launch(nn_node *node);
/* The tensors it marked as its in-place writes (inputs or saved tensors
 * whose pending_writer it is) are no longer pending: it ran or was dropped. */
void nn_node_forget_writes(nn_node *node);
/* A node whose output the fused kernels leave unwritten: the output keeps
 * a recipe (the operation and its inputs) to compute it when needed. */
nn_status nn_node_elide(nn_node *node);
/* Drop every pending node without running it (nn_ctx_free). */
void nn_ctx_drop_pending(nn_ctx *ctx);

#endif
