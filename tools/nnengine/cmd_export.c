/* nnengine export MODEL --weights FILE --onnx OUT [--input-shape N,C,H,W]:
 * the model with saved weights as an ONNX file (opset 17), the saved
 * normalisation in front unless --no-normalize-in-graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "models.h"
#include "nn_io.h"
#include "options.h"
#include "output_paths.h"
#include "setup.h"

typedef struct export_config {
    const char *model, *weights, *onnx, *input_shape;
    int64_t classes;
    bool static_batch;
    bool no_normalize_in_graph;
} export_config;

static int export_model(const export_config *c) {
    if (!model_known(c->model)) {
        char unknown[512];
        fprintf(stderr, "nnengine export: %s\n", model_unknown(c->model, unknown, sizeof unknown));
        return EXIT_BAD_INPUT;
    }
    int64_t shape[4];
    int ndim = options_parse_int_list(c->input_shape, shape, 4);
    bool positive = ndim == 4;
    for (int i = 0; positive && i < 4; i++) positive = shape[i] >= 1 && shape[i] <= 1 << 20;
    if (!positive) {
        fprintf(stderr, "nnengine export: --input-shape takes N,C,H,W (four positive integers), got '%s'\n",
                c->input_shape);
        return EXIT_BAD_INPUT;
    }
    const output_path files[] = {{"--weights", c->weights}, {"--onnx", c->onnx}};
    if (check_writable_outputs("export", files + 1, 1) != EXIT_OK || check_distinct_outputs("export", files, 2) != EXIT_OK)
        return EXIT_BAD_INPUT;
    /* Export runs one forward pass on zeros: the CPU is always there and exact. */
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    char why[512];
    nn_model_info info = {0};
    nn_module *net = ctx ? model_build(ctx, c->model, (int)shape[1], (int)shape[2], (int)shape[3],
                                       (int)c->classes, why, sizeof why)
                         : NULL;
    int status = EXIT_OK;
    if (!ctx) {
        fprintf(stderr, "nnengine export: %s\n", library_error());
        status = EXIT_FAILURE_RUNTIME;
    } else if (!net) {
        fprintf(stderr, "nnengine export: %s\n", why);
        status = EXIT_BAD_INPUT;
    } else if (nn_load_module(net, c->weights) != NN_OK || nn_read_model_info(c->weights, &info) != NN_OK) {
        fprintf(stderr, "nnengine export: %s\n", library_error());
        status = EXIT_BAD_INPUT;
    } else {
        /* The normalisation saved with the weights goes in front of the graph
         * (raw pixels in) unless asked not to; class names go along either way. */
        if (c->no_normalize_in_graph) info.channels = 0;
        nn_module_set_training(net, false); /* an inference graph: BatchNorm's running statistics, no dropout */
        /* The module entry point makes dimension 0 dynamic; a static batch
         * goes through the general one with the module's names. */
        nn_status s;
        if (!c->static_batch) {
            s = nn_onnx_export_module_info(c->onnx, net, shape, 4, &info);
        } else {
            int count = nn_module_param_count(net);
            nn_tensor **params = calloc((size_t)count + 1, sizeof *params);
            const char **names = calloc((size_t)count + 1, sizeof *names);
            for (int i = 0; params && names && i < count; i++) {
                params[i] = nn_module_param(net, i);
                names[i] = nn_module_param_name(net, i);
            }
            nn_tensor *x = params && names ? nn_tensor_new(ctx, NN_F32, 4, shape) : NULL;
            nn_tensor *y = x && nn_tensor_set_requires_grad(x, true) == NN_OK ? nn_module_forward(net, x) : NULL;
            nn_onnx_options o = {.graph_name = c->model, .static_batch = true,
                                 .n_names = count, .named_tensors = params, .names = names, .info = &info};
            s = y ? nn_onnx_export(c->onnx, x, y, &o) : nn_last_status();
            if (s == NN_OK && !y) s = NN_ERR_MEMORY;
            free(params);
            free(names);
            nn_ctx_step_end(ctx);
            nn_tensor_free(x);
        }
        if (s != NN_OK) {
            fprintf(stderr, "nnengine export: %s\n", library_error());
            status = s == NN_ERR_IO || s == NN_ERR_ARGUMENT ? EXIT_BAD_INPUT : EXIT_FAILURE_RUNTIME;
        } else {
            char batch[32];
            snprintf(batch, sizeof batch, "%lld", (long long)shape[0]);
            fprintf(stderr, "wrote %s: %s, input [%s, %lld, %lld, %lld], opset 17\n", c->onnx,
                    c->model, c->static_batch ? batch : "batch", (long long)shape[1],
                    (long long)shape[2], (long long)shape[3]);
            if (info.channels > 0)
                fprintf(stderr, "the graph takes raw pixel values 0..255 and normalises them itself "
                                "(mean %g, std %g%s)\n", (double)info.mean[0], (double)info.std[0],
                        info.channels > 1 ? ", ..." : "");
        }
    }
    nn_model_info_free(&info);
    nn_module_free(net);
    nn_ctx_free(ctx);
    return status;
}

int command_export(int argc, char **argv) {
    export_config c = {.input_shape = "1,1,28,28", .classes = 10};
    const char *positional[1] = {NULL};
    const option_spec options[] = {
        {"--weights", OPTION_STRING, &c.weights, 0, 0, "FILE", "weights written by nnengine train --save"},
        {"--onnx", OPTION_STRING, &c.onnx, 0, 0, "OUT", "the ONNX file to write"},
        {"--input-shape", OPTION_STRING, &c.input_shape, 0, 0, "N,C,H,W", "input of the traced pass (default 1,1,28,28)"},
        {"--classes", OPTION_INT, &c.classes, 1, 1 << 20, "K", "outputs of the model, as trained (default 10)"},
        {"--static-batch", OPTION_SWITCH, &c.static_batch, 0, 0, NULL, "fix the batch at N (default: dynamic)"},
        {"--no-normalize-in-graph", OPTION_SWITCH, &c.no_normalize_in_graph, 0, 0, NULL,
         "leave the saved normalisation out: the graph takes normalised images"},
    };
    static const char *const required[] = {"--weights", "--onnx", NULL};
    const command_spec spec = {
        "export", "export MODEL --weights FILE --onnx OUT [options]",
        "Write a model with saved weights as ONNX (opset 17, weights as initializers).",
        "The graph is recorded from one forward pass on zeros of --input-shape;\n"
        "its batch dimension stays dynamic unless --static-batch. When the weights\n"
        "carry the normalisation train used (train --save writes it), the graph\n"
        "starts with it and takes raw pixel values 0..255 as float; with\n"
        "--no-normalize-in-graph, or weights without it, the graph takes images\n"
        "normalised as train fed them. It returns logits.",
        1, positional, options, (int)(sizeof options / sizeof options[0]), required,
    };
    int status;
    if (options_parse_or_help(&spec, argc, argv, &status)) return status;
    c.model = positional[0];
    return export_model(&c);
}
