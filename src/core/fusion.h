/* The fusion pass (fusion.c) and what a fused pattern is. At each flush
 * the pass walks the pending nodes in order and, at each node, tries the
 * pattern table (src/fusion/patterns.c) longest first: a pattern is a chain
 * of operations, each consuming the previous one's output as its first
 * input (or any input, where the pattern says so: an add's either side),
 * where every output but the last has that one reader among the
 * pending nodes (and is not a tensor the flush was asked to keep), and
 * whose match function accepts the members (sizes, the backend's
 * capability query nn_ctx_supports). A matched chain runs as the
 * pattern's launch, at the place of its last member; every other node as
 * its own operation.
 *
 * A launch writes the outputs its kernels write (they get storage), leaves
 * the others unwritten (nn_node_elide: they get a recipe) and may give
 * consecutive members one fused backward (a segment). Members without a
 * segment keep their own backward, which must then find what it reads:
 * their saved tensors, which the launch makes as their own forward would. */
#ifndef NN_CORE_FUSION_H
#define NN_CORE_FUSION_H

#include "graph.h"

#define NN_FUSION_MAX_MEMBERS 6

/* The pending nodes the pass looks at. */
typedef struct nn_fusion_graph {
    nn_ctx *ctx;
    nn_node *const *nodes;
    int64_t count;
    const nn_tensor *keep;
} nn_fusion_graph;

/* How many pending nodes read t (an input given twice counts twice). */
int nn_fusion_readers(const nn_fusion_graph *g, const nn_tensor *t);
/* The pending node that reads t as its first input and is t's only
 * reader, when it runs operation `op` (NULL: any); else NULL. */
nn_node *nn_fusion_next(const nn_fusion_graph *g, const nn_tensor *t, const nn_op *op);
/* The same, t read as any one of the node's inputs. */
nn_node *nn_fusion_next_any(const nn_fusion_graph *g, const nn_tensor *t, const nn_op *op);

typedef struct nn_fusion_pattern {
    const char *name;
    int length;
    const nn_op *ops[NN_FUSION_MAX_MEMBERS]; /* NULL: any operation, which match then checks */
    bool (*match)(const nn_fusion_graph *g, nn_node *const *members);
    nn_status (*launch)(const nn_fusion_graph *g, nn_node *const *members);
    /* Its launch passes the members' precision on to their products; the
     * others' fused kernels multiply in fp32, so they take fp32 nodes only. */
    bool any_precision;
    /* Bit k: member k may read member k - 1's output as any of its inputs. */
    unsigned any_input;
} nn_fusion_pattern;

/* The table, longest and most specific first (src/fusion/patterns.c). */
extern const nn_fusion_pattern *const nn_fusion_patterns[];
extern const int nn_fusion_pattern_count;

/* Run the pass over `nodes` (in recording order) and launch them. */
nn_status nn_fusion_run(nn_ctx *ctx, nn_node *const *nodes, int64_t count, const nn_tensor *keep);

/* ---- segments: one fused backward for consecutive members ---- */

#define NN_SEGMENT_MAX_SAVED 4

typedef struct nn_segment nn_segment;
struct nn_segment {
    int refs;
    /* The gradients of the members' inputs from the last member's output
     * gradient (and the interior outputs' unwritten ones). */
    nn_status (*backward)(nn_segment *s);
    nn_node *members[NN_FUSION_MAX_MEMBERS]; /* not held: each member holds the segment */
    int count;
    nn_tensor *saved[NN_SEGMENT_MAX_SAVED]; /* held */
    int saved_count;
    bool done; /* ran in the current backward pass */
    _Alignas(8) unsigned char params[NN_NODE_MAX_PARAMS];
};

/* A segment over members[0..count-1] (each takes a reference). */
nn_segment *nn_segment_new(nn_node *const *members, int count, nn_status (*backward)(nn_segment *s));
nn_status nn_segment_save(nn_segment *s, nn_tensor *t);
void nn_segment_release(nn_segment *s);
/* A member node going away (graph.c): it drops out of the segment. */
void nn_segment_forget(nn_segment *s, const nn_node *node);
/* Backward of a member whose node has a segment: the segment's backward
 * runs once, at its last member, and then covers the others; an interior
 * member whose output received a gradient from elsewhere (it was read
 * after the fused kernels ran) is taken back through the members' own
 * backward, after their own forward has run again. */
nn_status nn_segment_backward(nn_node *node);

#endif
