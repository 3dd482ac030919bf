/* gpt-mini's shape, weights and sampling (text_model.h). */
#include "text_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

void text_model_format(const text_model *m, char *out, size_t size) {
    snprintf(out, size, "{\"vocab_size\": 256, \"context\": %lld, \"width\": %lld, \"depth\": %lld, \"heads\": %lld}",
             (long long)m->context, (long long)m->width, (long long)m->depth, (long long)m->heads);
}

/* The integer after "key": in text, within [1, max]. */
static bool read_field(const char *text, const char *key, int64_t max, int64_t *value, char *why, size_t why_size) {
    char quoted[32];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *at = strstr(text, quoted);
    char *end = NULL;
    long long v = 0;
    if (at) {
        at += strlen(quoted);
        while (*at == ' ') at++;
        if (*at == ':') v = strtoll(at + 1, &end, 10);
    }
    if (!at || !end || end == at + 1 || v < 1 || v > max) {
        snprintf(why, why_size, "its \"%s\" is missing or outside [1, %lld]", key, (long long)max);
        return false;
    }
    *value = v;
    return true;
}

bool text_model_parse(const char *text, text_model *m, char *why, size_t why_size) {
    int64_t vocab = 0;
    if (!read_field(text, "vocab_size", 1 << 20, &vocab, why, why_size) ||
        !read_field(text, "context", 1 << 20, &m->context, why, why_size) ||
        !read_field(text, "width", 1 << 16, &m->width, why, why_size) ||
        !read_field(text, "depth", 1 << 10, &m->depth, why, why_size) ||
        !read_field(text, "heads", 1 << 10, &m->heads, why, why_size))
        return false;
    if (vocab != 256) {
        snprintf(why, why_size, "its vocabulary has %lld tokens; generate takes models of bytes (256)",
                 (long long)vocab);
        return false;
    }
    return true;
}

nn_module *text_model_build(nn_ctx *ctx, const text_model *m) {
    const nn_gpt_options o = {.vocab_size = 256, .context = (int)m->context, .width = (int)m->width,
                              .depth = (int)m->depth, .heads = (int)m->heads};
    return nn_gpt(ctx, &o);
}

nn_status text_model_save(nn_module *net, const text_model *m, const char *path) {
    const int count = nn_module_state_count(net);
    nn_tensor **tensors = malloc(sizeof *tensors * (size_t)count);
    const char **names = malloc(sizeof *names * (size_t)count);
    if (!tensors || !names) {
        free(tensors), free(names);
        return NN_ERR_MEMORY;
    }
    for (int i = 0; i < count; i++) tensors[i] = nn_module_state(net, i), names[i] = nn_module_state_name(net, i);
    char shape[256];
    text_model_format(m, shape, sizeof shape);
    nn_status st = nn_save_tensors_meta(path, count, tensors, names, TEXT_MODEL_KEY, shape);
    free(tensors);
    free(names);
    return st;
}

int text_model_read(const char *command, const char *path, text_model *m) {
    nn_tensor_listing listing;
    if (nn_list_tensors(path, TEXT_MODEL_KEY, &listing) != NN_OK) {
        fprintf(stderr, "nnengine %s: %s\n", command, nn_last_error());
        nn_tensor_listing_free(&listing);
        return EXIT_BAD_INPUT;
    }
    char why[160];
    int status = EXIT_OK;
    bool training_state = false;
    for (int i = 0; i < listing.count && !training_state; i++)
        training_state = strncmp(listing.names[i], "optimizer.", 10) == 0;
    if (!listing.value) {
        fprintf(stderr, "nnengine %s: %s has no \"%s\" in its metadata: it was not saved by nnengine train "
                        "gpt-mini --save%s\n", command, path, TEXT_MODEL_KEY,
                training_state ? " (a --checkpoint file holds the training state; generate takes the weights --save writes)"
                    : "");
        status = EXIT_BAD_INPUT;
    } else if (!text_model_parse(listing.value, m, why, sizeof why)) {
        fprintf(stderr, "nnengine %s: %s's \"%s\" metadata (%s): %s\n", command, path, TEXT_MODEL_KEY, listing.value,
                why);
        status = EXIT_BAD_INPUT;
    }
    nn_tensor_listing_free(&listing);
    return status;
}

/* xorshift64*: the sampler's own generator, seeded by --seed. */
static double next_uniform(uint64_t *state) {
    *state ^= *state >> 12, *state ^= *state << 25, *state ^= *state >> 27;
    return (double)((*state * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53;
}

/* A byte drawn from softmax(logits / temperature) over the top_k likeliest. */
static int draw_byte(const float *logits, const text_sampling *s, uint64_t *state) {
    double p[256];
    float cut = -INFINITY;
    if (s->top_k > 0 && s->top_k < 256) { /* the k-th largest logit: bytes below it are left out */
        float sorted[256];
        memcpy(sorted, logits, sizeof sorted);
        for (int64_t i = 0; i < s->top_k; i++) /* a partial selection sort: k passes */
            for (int j = (int)i + 1; j < 256; j++)
                if (sorted[j] > sorted[i]) {
                    float t = sorted[i];
                    sorted[i] = sorted[j], sorted[j] = t;
                }
        cut = sorted[s->top_k - 1];
    }
    float top = -INFINITY;
    for (int b = 0; b < 256; b++)
        if (logits[b] > top) top = logits[b];
    double total = 0;
    for (int b = 0; b < 256; b++) total += p[b] = logits[b] >= cut ? exp((logits[b] - top) / s->temperature) : 0.0;
    double u = next_uniform(state) * total;
    for (int b = 0; b < 256; b++) {
        if (u < p[b]) return b;
        u -= p[b];
    }
    for (int b = 255; b >= 0; b--) /* rounding left u past the last: the last byte with any weight */
        if (p[b] > 0) return b;
    return 0;
}

nn_status text_model_sample(nn_ctx *ctx, nn_module *net, int64_t context, const uint8_t *prompt, int64_t prompt_size,
                            const text_sampling *s, FILE *out) {
    const int64_t total = prompt_size + s->bytes;
    int32_t *tokens = malloc(sizeof *tokens * (size_t)total);
    float *logits = malloc(sizeof *logits * 256 * (size_t)context);
    if (!tokens || !logits) {
        free(tokens), free(logits);
        return NN_ERR_MEMORY;
    }
    for (int64_t i = 0; i < prompt_size; i++) tokens[i] = prompt[i];
    uint64_t state = s->seed * 0x9e3779b97f4a7c15ull + 1; /* never 0, which xorshift keeps */
    const bool was_enabled = nn_ctx_set_grad_enabled(ctx, false);
    const bool was_training = nn_module_is_training(net);
    nn_module_set_training(net, false);
    nn_status st = NN_OK;
    for (int64_t n = prompt_size; st == NN_OK && n < total; n++) {
        const int64_t seen = n < context ? n : context; /* the last `context` bytes */
        nn_tensor *x = nn_tensor_from_data(ctx, NN_I32, 2, (const int64_t[]){1, seen}, tokens + n - seen);
        nn_tensor *y = x ? nn_module_forward(net, x) : NULL;
        st = y ? nn_tensor_read(y, logits, sizeof *logits * 256 * (size_t)seen) : nn_last_status();
        nn_tensor_free(x);
        nn_ctx_step_end(ctx);
        if (st != NN_OK) break;
        tokens[n] = draw_byte(logits + 256 * (seen - 1), s, &state);
        fputc(tokens[n], out);
        fflush(out);
    }
    nn_module_set_training(net, was_training);
    nn_ctx_set_grad_enabled(ctx, was_enabled);
    free(tokens);
    free(logits);
    return st;
}
