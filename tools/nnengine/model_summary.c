#include "model_summary.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct summary_row {
    nn_module *module;
    char name[256];
    int depth;
    bool called;
    char shape[64];   /* the last output, without the batch dimension */
} summary_row;

typedef struct summary {
    summary_row *rows;
    int count, capacity;
    nn_module **hooked; /* every module, hooks to remove afterwards */
    int hooked_count, hooked_capacity;
    int64_t leaf_outputs; /* values per image the leaves (layers without children) output */
    bool failed;          /* out of host memory */
} summary;

static void output_seen(nn_module *m, nn_tensor *input, nn_tensor *output, void *user) {
    summary *s = user;
    int64_t batch = nn_tensor_ndim(output) > 0 ? nn_tensor_dim(output, 0) : 1;
    if (nn_module_child_count(m) == 0 && batch > 0) s->leaf_outputs += nn_tensor_numel(output) / batch;
    for (int i = 0; i < s->count; i++) {
        if (s->rows[i].module != m) continue;
        summary_row *r = &s->rows[i];
        r->called = true;
        size_t used = 0;
        r->shape[0] = '\0';
        for (int d = 1; d < nn_tensor_ndim(output) && used < sizeof r->shape; d++)
            used += (size_t)snprintf(r->shape + used, sizeof r->shape - used, "%s%lld", d > 1 ? "x" : "",
                                     (long long)nn_tensor_dim(output, d));
        if (nn_tensor_ndim(output) <= 1) snprintf(r->shape, sizeof r->shape, "scalar");
    }
}

static bool grow(void **items, int *capacity, int count, size_t size) {
    if (count < *capacity) return true;
    int next = *capacity ? 2 * *capacity : 32;
    void *p = realloc(*items, (size_t)next * size);
    if (!p) return false;
    *items = p;
    *capacity = next;
    return true;
}

/* Every module hooked; rows for those down to SUMMARY_DEPTH, in the
 * state_dict's order (a module before its children). */
static void walk(summary *s, nn_module *m, const char *name, int depth) {
    if (!grow((void **)&s->hooked, &s->hooked_capacity, s->hooked_count, sizeof *s->hooked)) {
        s->failed = true;
        return;
    }
    s->hooked[s->hooked_count++] = m;
    nn_module_set_forward_hook(m, output_seen, s);
    if (depth >= 1 && depth <= SUMMARY_DEPTH) {
        if (!grow((void **)&s->rows, &s->capacity, s->count, sizeof *s->rows)) {
            s->failed = true;
            return;
        }
        summary_row *r = &s->rows[s->count++];
        memset(r, 0, sizeof *r);
        r->module = m;
        r->depth = depth;
        snprintf(r->name, sizeof r->name, "%s", name);
    }
    for (int i = 0; i < nn_module_child_count(m); i++) {
        char child[256];
        snprintf(child, sizeof child, "%.120s%s%.120s", name, *name ? "." : "", nn_module_child_name(m, i));
        walk(s, nn_module_child_at(m, i), child, depth + 1);
    }
}

static int64_t parameters_of(const nn_module *m, bool trainable_only) {
    int64_t total = 0;
    for (int i = 0; i < nn_module_param_count(m); i++) {
        nn_tensor *p = nn_module_param(m, i);
        if (!trainable_only || nn_tensor_requires_grad(p)) total += nn_tensor_numel(p);
    }
    return total;
}

/* 1234567 -> "1,234,567" */
static const char *grouped(int64_t v, char *out, size_t size) {
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", (long long)v);
    size_t used = 0;
    for (int i = 0; i < n && used + 2 < size; i++) {
        if (i > 0 && (n - i) % 3 == 0) out[used++] = ',';
        out[used++] = digits[i];
    }
    out[used] = '\0';
    return out;
}

static nn_status trace(nn_ctx *ctx, nn_module *net, int channels, int height, int width) {
    int64_t shape[4] = {1, channels, height, width};
    float *zeros = calloc((size_t)channels * height * width, sizeof *zeros);
    if (!zeros) return NN_ERR_MEMORY;
    bool was_enabled = nn_ctx_set_grad_enabled(ctx, false);
    bool was_training = nn_module_is_training(net);
    nn_module_set_training(net, false);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, shape, zeros);
    nn_status st = x && nn_module_forward(net, x) ? NN_OK : nn_last_status();
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_module_set_training(net, was_training);
    nn_ctx_set_grad_enabled(ctx, was_enabled);
    free(zeros);
    return st;
}

nn_status model_summary_print(nn_ctx *ctx, nn_module *net, const char *model, int channels, int height, int width,
                              int64_t batch, const nn_optimizer *opt, const char *optimizer_name, FILE *out) {
    summary s = {0};
    walk(&s, net, "", 0);
    nn_status st = s.failed ? NN_ERR_MEMORY : trace(ctx, net, channels, height, width);
    for (int i = 0; i < s.hooked_count; i++) nn_module_set_forward_hook(s.hooked[i], NULL, NULL);
    char a[32], b[32];
    if (st == NN_OK) {
        fprintf(out, "model %s (input %dx%dx%d; output shapes per image):\n  %-36s %-20s %-14s %12s\n", model,
                channels, height, width, "layer", "kind", "output", "parameters");
        for (int i = 0; i < s.count; i++) {
            const summary_row *r = &s.rows[i];
            char indented[300];
            snprintf(indented, sizeof indented, "%*s%s", 2 * (r->depth - 1), "", r->name);
            fprintf(out, "  %-36s %-20s %-14s %12s\n", indented, nn_module_kind(r->module),
                    r->called ? r->shape : "(not run)", grouped(parameters_of(r->module, false), a, sizeof a));
        }
        int64_t total = parameters_of(net, false), trainable = parameters_of(net, true), state = 0;
        for (int p = 0; opt && p < nn_optimizer_param_count(opt); p++)
            for (int k = 0; k < nn_optimizer_state_count(opt); k++)
                state += nn_tensor_numel(nn_optimizer_state(opt, p, k));
        const double mib = 1.0 / 1048576.0;
        fprintf(out, "total %s parameters (%s trainable): parameters %.2f MiB, gradients %.2f MiB, %s state %.2f MiB, "
                     "activations about %.1f MiB per batch of %lld (the layers' outputs, kept for the backward pass; "
                     "workspace such as convolutions' column matrices comes on top: the run's peak is printed at "
                     "its end)\n",
                grouped(total, a, sizeof a), grouped(trainable, b, sizeof b), 4.0 * total * mib, 4.0 * trainable * mib,
                optimizer_name, 4.0 * state * mib, 4.0 * s.leaf_outputs * batch * mib, (long long)batch);
    }
    free(s.rows);
    free(s.hooked);
    return st;
}
