/* The fusion pass and fused backward segments (fusion.h). */
#include <stdlib.h>
#include <string.h>

#include "fusion.h"

/* Each pending node's place, and each tensor's pending readers. */
static void index_graph(const nn_fusion_graph *g) {
    for (int64_t i = 0; i < g->count; i++) {
        nn_node *node = g->nodes[i];
        node->pending_index = i;
        node->output->pending_readers = 0;
        for (int k = 0; k < node->input_count; k++)
            if (node->inputs[k]) node->inputs[k]->pending_readers = 0;
    }
    for (int64_t i = 0; i < g->count; i++)
        for (int k = 0; k < g->nodes[i]->input_count; k++) {
            nn_tensor *t = g->nodes[i]->inputs[k];
            if (!t) continue;
            t->pending_readers++;
            t->pending_reader = g->nodes[i];
        }
}

int nn_fusion_readers(const nn_fusion_graph *g, const nn_tensor *t) { return t->pending_readers; }

nn_node *nn_fusion_next_any(const nn_fusion_graph *g, const nn_tensor *t, const nn_op *op) {
    if (t == g->keep || t->pending_readers != 1) return NULL;
    nn_node *reader = t->pending_reader;
    return !op || reader->op == op ? reader : NULL; /* its one reader: t is one of its inputs, once */
}

nn_node *nn_fusion_next(const nn_fusion_graph *g, const nn_tensor *t, const nn_op *op) {
    nn_node *reader = nn_fusion_next_any(g, t, op);
    return reader && reader->inputs[0] == t ? reader : NULL;
}

/* A matched chain: its pattern, members and where it launches. */
typedef struct group {
    const nn_fusion_pattern *pattern;
    nn_node *members[NN_FUSION_MAX_MEMBERS];
    int64_t last; /* the index of its last member in recording order */
} group;

/* Whether pattern p's chain starts at node `first` with none of its
 * members taken yet; fills the group. */
static bool chain_at(const nn_fusion_graph *g, const nn_fusion_pattern *p, nn_node *first, const int *taken,
                     group *out) {
    if (p->ops[0] && first->op != p->ops[0]) return false;
    out->pattern = p;
    out->members[0] = first;
    out->last = first->pending_index;
    for (int k = 1; k < p->length; k++) {
        const nn_tensor *t = out->members[k - 1]->output;
        nn_node *next = p->any_input & (1u << k) ? nn_fusion_next_any(g, t, p->ops[k]) : nn_fusion_next(g, t, p->ops[k]);
        const int64_t at = next ? next->pending_index : -1;
        if (at < 0 || taken[at] >= 0) return false;
        out->members[k] = next;
        if (at > out->last) out->last = at;
    }
    if (!p->any_precision)
        for (int k = 0; k < p->length; k++)
            if (out->members[k]->precision != NN_PRECISION_FP32) return false;
    return p->match(g, out->members);
}

/* Nodes off the tape (no autograd) keep nothing for a backward: what a
 * launch saved goes at once, as the memory of the next launch may need it. */
static void drop_backward_state(nn_node *const *members, int count) {
    for (int i = 0; i < count; i++)
        if (members[i]->tape_index >= 0) return;
    for (int i = 0; i < count; i++) {
        nn_node *m = members[i];
        for (int k = 0; k < m->saved_count; k++) nn_tensor_release(m->saved[k]);
        m->saved_count = 0;
        if (m->segment) nn_segment_forget(m->segment, m);
        m->segment = NULL;
    }
}

nn_status nn_fusion_run(nn_ctx *ctx, nn_node *const *nodes, int64_t count, const nn_tensor *keep) {
    const nn_fusion_graph g = {ctx, nodes, count, keep};
    int *taken = malloc((size_t)(count ? count : 1) * sizeof *taken); /* the group of each node, or -1 */
    group *groups = malloc((size_t)(count ? count : 1) * sizeof *groups);
    if (!taken || !groups) {
        free(taken);
        free(groups);
        return nn_set_error(NN_ERR_MEMORY, "fusion: out of host memory");
    }
    for (int64_t i = 0; i < count; i++) taken[i] = -1;
    index_graph(&g);
    int group_count = 0;
    for (int64_t i = 0; i < count && !ctx->fusion_off; i++) {
        if (taken[i] >= 0) continue;
        for (int p = 0; p < nn_fusion_pattern_count; p++) {
            group *grp = &groups[group_count];
            if (!chain_at(&g, nn_fusion_patterns[p], nodes[i], taken, grp)) continue;
            for (int k = 0; k < grp->pattern->length; k++) taken[grp->members[k]->pending_index] = group_count;
            group_count++;
            break;
        }
    }
    nn_status st = NN_OK;
    for (int64_t i = 0; i < count && st == NN_OK; i++) {
        if (taken[i] < 0) {
            st = nn_node_launch(nodes[i]);
            drop_backward_state(&nodes[i], 1);
        } else if (groups[taken[i]].last == i) {
            const group *grp = &groups[taken[i]];
            st = grp->pattern->launch(&g, grp->members);
            drop_backward_state(grp->members, grp->pattern->length);
        }
    }
    free(taken);
    free(groups);
    return st;
}

/* ---- segments ---- */

nn_segment *nn_segment_new(nn_node *const *members, int count, nn_status (*backward)(nn_segment *s)) {
    nn_segment *s = calloc(1, sizeof *s);
    if (!s) return NN_FAIL_NULL(NN_ERR_MEMORY, "fusion: out of host memory");
    s->backward = backward;
    s->count = count;
    for (int i = 0; i < count; i++) {
        s->members[i] = members[i];
        nn_segment_release(members[i]->segment);
        members[i]->segment = s;
        s->refs++;
    }
    return s;
}

nn_status nn_segment_save(nn_segment *s, nn_tensor *t) {
    if (s->saved_count == NN_SEGMENT_MAX_SAVED)
        return nn_set_error(NN_ERR_STATE, "fusion: more saved tensors than a segment holds");
    s->saved[s->saved_count++] = nn_tensor_retain(t);
    return NN_OK;
}

void nn_segment_release(nn_segment *s) {
    if (!s || --s->refs > 0) return;
    for (int i = 0; i < s->saved_count; i++) nn_tensor_release(s->saved[i]);
    free(s);
}

void nn_segment_forget(nn_segment *s, const nn_node *node) {
    for (int i = 0; i < s->count; i++)
        if (s->members[i] == node) s->members[i] = NULL;
    nn_segment_release(s);
}

/* Interior members whose outputs received gradients from elsewhere, up to
 * member `top`: their own forward gives the unwritten outputs (and their
 * saved tensors), then their own backward runs, last first. */
static nn_status interior_backward(nn_segment *s, int top) {
    for (int j = 0; j <= top; j++) {
        nn_node *m = s->members[j];
        if (!m || m->output->storage) continue;
        if (m->output->recipe) {
            nn_node_release(m->output->recipe);
            m->output->recipe = NULL;
        }
        NN_TRY(nn_node_launch(m));
    }
    for (int j = top; j >= 0; j--) {
        nn_node *m = s->members[j];
        if (!m || !m->output->grad_written) continue;
        m->output->ctx->launch_precision = m->precision;
        NN_TRY(m->op->backward(m));
    }
    return NN_OK;
}

nn_status nn_segment_backward(nn_node *node) {
    nn_segment *s = node->segment;
    if (s->done) return NN_OK;
    s->done = true;
    const nn_node *last = s->members[s->count - 1];
    if (last && last->output->grad_written) NN_TRY(s->backward(s));
    int top = -1;
    for (int j = s->count - 2; j >= 0 && top < 0; j--)
        if (s->members[j] && s->members[j]->output->grad_written) top = j;
    return top >= 0 ? interior_backward(s, top) : NN_OK;
}
