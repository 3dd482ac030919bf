/* nnengine: train, evaluate and inspect neural networks with nn-engine.
 * Each sub-command lives in its own cmd_*.c file. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "models.h"
#include "nn_engine.h"
#include "options.h"
#include "platform/arguments.h"
#include "standard_output.h"

typedef struct command_entry {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command_entry;

static const command_entry commands[] = {
    {"train", command_train, "train a model on a dataset folder"},
    {"eval", command_eval, "evaluate saved weights on a dataset's test set"},
    {"devices", command_devices, "list the CPU and GPUs nn-engine can use"},
    {"export", command_export, "write a model with saved weights as ONNX"},
    {"generate", command_generate, "sample text from a gpt-mini trained with train gpt-mini --text"},
};
#define COMMAND_COUNT ((int)(sizeof commands / sizeof commands[0]))

static void print_usage(FILE *out) {
    fprintf(out,
            "nnengine %s: train neural networks on the CPU or any Vulkan GPU\n\n"
            "usage: nnengine COMMAND [options]   (nnengine COMMAND --help for its options)\n\n"
            "commands:\n",
            NN_ENGINE_VERSION);
    for (int i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\nmodels: %s\n"
            "        or FILE.onnx: the graph of an ONNX file (its input shape and classes; nn_onnx_import)\n"
            "text:   gpt-mini, a language model of bytes (nnengine train gpt-mini --text FILE; generate)\n\n"
            "examples:\n"
            "  nnengine train lenet5 --data /usr/share/datasets/fashion-mnist --epochs 10\n"
            "  nnengine train gpt-mini --text corpus.txt --save gpt.safetensors\n",
            models_names());
}

int main(int argc, char **argv) {
    standard_output_begin();
    nn_utf8_arguments(&argc, &argv);
    if (argc < 2) {
        print_usage(stderr);
        return EXIT_BAD_INPUT;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        print_usage(stdout);
        return standard_output_end(EXIT_OK);
    }
    if (strcmp(name, "--version") == 0) {
        printf("nnengine %s\n", NN_ENGINE_VERSION);
        return standard_output_end(EXIT_OK);
    }
    for (int i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0) return standard_output_end(commands[i].run(argc - 2, argv + 2));
    fprintf(stderr, "nnengine: unknown command '%s' (commands: train, eval, devices, export, generate; see nnengine --help)\n",
            name);
    return EXIT_BAD_INPUT;
}
