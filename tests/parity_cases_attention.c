/* The parity cases of attention without the score matrix (kernels.h's
 * nn_attention_params): one row and many, sequences past one tile of 32
 * rows on either side, head sizes of one to four 64-column chunks, causal,
 * k and v shared by the heads, masks shared, per group or per entry with
 * a query that sees no key at all, accumulating gradients, heads read in
 * place from packed rows and written merged (qkv_row, out_row). The
 * backward cases read the CPU forward's output and log-sum-exp. */
#include "parity_cases.h"
#include "parity_harness.h"

typedef struct attention_case {
    int groups, heads, L, S, E, Ev;
    int causal;
    int shared_kv; /* k and v one matrix per group, shared by its heads */
    int mask;      /* 0 none, 1 [L, S] for all, 2 [groups, 1, 1, S], 3 [groups, heads, L, S] */
    int packed;    /* q, k, v (and their gradients) [groups, rows, PAD + heads x width] read in place, out merged */
} attention_case;

enum { PAD = 3 }; /* columns past a packed row's heads, which no kernel may touch */

static const attention_case kCases[] = {
    {1, 1, 1, 1, 1, 1, 0, 0, 0, 0},       {2, 3, 37, 45, 24, 40, 0, 0, 1, 0}, {1, 2, 70, 33, 72, 16, 1, 0, 0, 0},
    {2, 1, 33, 70, 200, 130, 0, 0, 3, 0}, {3, 2, 17, 64, 64, 64, 0, 1, 2, 0}, {1, 1, 65, 65, 8, 256, 1, 0, 1, 0},
    {2, 3, 37, 37, 24, 24, 1, 0, 0, 1}, {1, 2, 33, 40, 16, 40, 0, 0, 1, 1},
};
#define CASES (sizeof kCases / sizeof kCases[0])

typedef struct attention_inputs {
    nn_attention_params p;
    size_t nq, nk, nv, nmask, nout, nlse;
    float *q, *k, *v, *mask;
} attention_inputs;

static attention_inputs inputs_of(const attention_case *c) {
    attention_inputs in = {.p = {.groups = c->groups, .heads = c->heads, .queries = c->L, .keys = c->S,
                                 .head_dim = c->E, .value_dim = c->Ev, .causal = c->causal, .scale = 0.3f}};
    nn_attention_params *p = &in.p;
    const size_t batch = (size_t)c->groups * c->heads;
    p->head_stride[0] = c->L * c->E;
    p->group_stride[0] = c->heads * p->head_stride[0];
    for (int i = 1; i < 3; i++) {
        const int matrix = c->S * (i == 1 ? c->E : c->Ev);
        p->head_stride[i] = c->shared_kv ? 0 : matrix;
        p->group_stride[i] = c->shared_kv ? matrix : c->heads * matrix;
    }
    in.nq = batch * c->L * c->E;
    in.nk = (c->shared_kv ? (size_t)c->groups : batch) * c->S * c->E;
    in.nv = (c->shared_kv ? (size_t)c->groups : batch) * c->S * c->Ev;
    if (c->packed) { /* row (g, i) of each: head h's columns at h x width, then padding */
        p->qkv_row = c->heads * (c->E > c->Ev ? c->E : c->Ev) + PAD;
        p->out_row = c->heads * c->Ev;
        p->group_stride[0] = c->L * p->qkv_row;
        p->group_stride[1] = p->group_stride[2] = c->S * p->qkv_row;
        p->head_stride[0] = p->head_stride[1] = c->E;
        p->head_stride[2] = c->Ev;
        in.nq = (size_t)c->groups * c->L * p->qkv_row;
        in.nk = in.nv = (size_t)c->groups * c->S * p->qkv_row;
    }
    in.nout = batch * c->L * c->Ev;
    in.nlse = batch * c->L;
    in.q = parity_randoms(in.nq, -1, 1);
    in.k = parity_randoms(in.nk, -1, 1);
    in.v = parity_randoms(in.nv, -1, 1);
    if (c->mask) {
        p->mask_col = 1;
        p->mask_row = c->mask == 2 ? 0 : c->S;
        p->head_stride[3] = c->mask == 3 ? c->L * c->S : 0;
        p->group_stride[3] = c->mask == 1 ? 0 : c->mask == 2 ? c->S : c->heads * c->L * c->S;
        in.nmask = c->mask == 1 ? (size_t)c->L * c->S : c->mask == 2 ? (size_t)c->groups * c->S : batch * c->L * c->S;
        in.mask = parity_randoms(in.nmask, -2, 2);
        for (size_t i = 0; i < in.nmask; i += 3) in.mask[i] = -INFINITY;
        if (c->mask != 2)
            for (int j = 0; j < c->S; j++) in.mask[j] = -INFINITY; /* query 0 sees no key */
    }
    return in;
}

/* The CPU forward's out and lse, for the backward cases. */
static void forward_on_cpu(const attention_inputs *in, float *out, float *lse) {
    parity_arg a[6] = {arg_in(in->q, in->nq, 0), arg_in(in->k, in->nk, 0), arg_in(in->v, in->nv, 0),
                       given(in->mask != NULL, arg_in(in->mask, in->nmask, 0)),
                       with_cpu_after(arg_near(out, in->nout, 0, 0.0), out),
                       with_cpu_after(arg_near(lse, in->nlse, 0, 0.0), lse)};
    parity_cpu_outputs(NN_KERNEL_ATTENTION_FORWARD, a, 6, &in->p, "the forward a backward case reads");
}

void parity_attention_forward_case(nn_backend *o) {
    for (size_t s = 0; s < CASES; s++) {
        const attention_inputs in = inputs_of(&kCases[s]);
        const double tol = sums_tol(in.p.keys * (double)in.p.head_dim);
        parity_arg a[6] = {arg_in(in.q, in.nq, 4), arg_in(in.k, in.nk, 0), arg_in(in.v, in.nv, 8),
                           given(in.mask != NULL, arg_in(in.mask, in.nmask, 4)),
                           arg_near(parity_array(in.nout * 4), in.nout, 4, tol),
                           arg_near(parity_array(in.nlse * 4), in.nlse, 0, tol)};
        parity_check(o, NN_KERNEL_ATTENTION_FORWARD, a, 6, &in.p, "case %zu", s);
    }
}

void parity_attention_backward_query_case(nn_backend *o) {
    for (size_t s = 0; s < CASES; s++)
        for (int acc = 0; acc < 2; acc++) {
            attention_inputs in = inputs_of(&kCases[s]);
            in.p.accumulate = acc;
            float *out = parity_array(in.nout * 4), *lse = parity_array(in.nlse * 4);
            forward_on_cpu(&in, out, lse);
            const double tol = sums_tol(in.p.keys * (double)(in.p.head_dim + in.p.value_dim));
            parity_arg a[9] = {arg_in(in.q, in.nq, 0), arg_in(in.k, in.nk, 4), arg_in(in.v, in.nv, 0),
                               given(in.mask != NULL, arg_in(in.mask, in.nmask, 0)), arg_in(out, in.nout, 0),
                               arg_in(parity_randoms(in.nout, -1, 1), in.nout, 8), arg_in(lse, in.nlse, 0),
                               arg_near(parity_array(in.nlse * 4), in.nlse, 4, sums_tol(in.p.value_dim)),
                               arg_near(parity_randoms(in.nq, -1, 1), in.nq, 0, tol)};
            parity_check(o, NN_KERNEL_ATTENTION_BACKWARD_QUERY, a, 9, &in.p, "case %zu accumulate %d", s, acc);
        }
}

void parity_attention_backward_keys_case(nn_backend *o) {
    for (size_t s = 0; s < CASES; s++)
        for (int acc = 0; acc < 2; acc++) {
            const attention_case *c = &kCases[s];
            attention_inputs in = inputs_of(c);
            in.p.accumulate = acc;
            in.p.accumulate_v = !acc;
            float *out = parity_array(in.nout * 4), *lse = parity_array(in.nlse * 4);
            forward_on_cpu(&in, out, lse);
            float *delta = parity_randoms(in.nlse, -1, 1);
            /* the kernel writes every entry's gradient: a shared k or v is summed after it; packed, k's and v's layouts */
            const size_t batch = (size_t)c->groups * c->heads;
            const size_t nk = c->packed ? in.nk : batch * c->S * c->E, nv = c->packed ? in.nv : batch * c->S * c->Ev;
            const double tol = sums_tol(in.p.queries * (double)(in.p.head_dim + in.p.value_dim));
            parity_arg a[9] = {arg_in(in.q, in.nq, 0), arg_in(in.k, in.nk, 0), arg_in(in.v, in.nv, 4),
                               given(in.mask != NULL, arg_in(in.mask, in.nmask, 8)),
                               arg_in(parity_randoms(in.nout, -1, 1), in.nout, 0), arg_in(lse, in.nlse, 4),
                               arg_in(delta, in.nlse, 0), arg_near(parity_randoms(nk, -1, 1), nk, 4, tol),
                               arg_near(parity_randoms(nv, -1, 1), nv, 0, tol)};
            parity_check(o, NN_KERNEL_ATTENTION_BACKWARD_KEYS, a, 9, &in.p, "case %zu accumulate %d", s, acc);
        }
}
