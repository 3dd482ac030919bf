/* gpt-mini, the command line's language model (nn_gpt over bytes): its
 * shape, kept in the saved weights' metadata as "nn_engine.gpt" so that
 * `nnengine generate` rebuilds the model a file was trained as, and
 * sampling text from it. */
#ifndef NNENGINE_TEXT_MODEL_H
#define NNENGINE_TEXT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nn_engine.h"

#define TEXT_MODEL_KEY "nn_engine.gpt"

/* The defaults are nn_gpt_mini's: bytes, width 384, 6 layers, 6 heads, context 256. */
typedef struct text_model {
    int64_t context, width, depth, heads;
} text_model;

/* {"vocab_size": 256, "context": ..., "width": ..., "depth": ..., "heads": ...} */
void text_model_format(const text_model *m, char *out, size_t size);
/* The reverse; false when a key is missing, the vocabulary is not 256 or
 * a value is out of range (why says which). */
bool text_model_parse(const char *text, text_model *m, char *why, size_t why_size);

/* nn_gpt of m's shape over bytes (NULL with nn_last_error()). */
nn_module *text_model_build(nn_ctx *ctx, const text_model *m);
/* The weights (every state_dict name, the tied head's too) with m's shape
 * in the metadata. */
nn_status text_model_save(nn_module *net, const text_model *m, const char *path);
/* Reads the shape a file saved by text_model_save holds. EXIT_OK, or an
 * exit status after printing why as "nnengine COMMAND: ...". */
int text_model_read(const char *command, const char *path, text_model *m);

typedef struct text_sampling {
    int64_t bytes;       /* to generate */
    double temperature;  /* > 0: logits divided by it */
    int64_t top_k;       /* 0: every byte; else the k likeliest */
    uint64_t seed;
} text_sampling;

/* Continues `prompt` (prompt_size >= 1 bytes) by s->bytes bytes drawn one
 * at a time from the model's distribution of the next byte given the last
 * `context` ones, writing each to out as it comes. */
nn_status text_model_sample(nn_ctx *ctx, nn_module *net, int64_t context, const uint8_t *prompt, int64_t prompt_size,
                            const text_sampling *s, FILE *out);

#endif
