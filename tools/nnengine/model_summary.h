/* What train prints before it starts (--quiet hides it): the model's layers
 * with their output shapes and parameter counts, the totals, and the memory
 * of parameters, gradients, optimizer state and an estimate of activations. */
#ifndef NNENGINE_MODEL_SUMMARY_H
#define NNENGINE_MODEL_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

#include "nn_engine.h"

/* Layers down to this depth below the model get a row (deeper ones are
 * counted in their parent's). */
#define SUMMARY_DEPTH 2

/* Runs one image (zeros, evaluation mode, no gradients) through `net` to
 * see each layer's output. Returns the library's status. */
nn_status model_summary_print(nn_ctx *ctx, nn_module *net, const char *model, int channels, int height, int width,
                              int64_t batch, const nn_optimizer *opt, const char *optimizer_name, FILE *out);

#endif
