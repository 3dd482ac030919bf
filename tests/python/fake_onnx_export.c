/* Test double of nn_onnx_export (include/nn_io.h, issue 7), built by
 * test_native_export_abi.py into a small .so over libnnengine.so: it writes what it
 * received as text, so the test can check that Model.export passes the input,
 * the output and the options struct exactly as the C declaration lays them
 * out. The struct below is the declaration the lead gave for nn_io.h. */
#include <stdbool.h>
#include <stdio.h>

#include "nn_engine.h"
#include "base/error.h"

typedef struct nn_onnx_options {
    const char *graph_name;
    int opset;
    bool static_batch;
    int n_names;
    nn_tensor *const *named_tensors;
    const char *const *names;
} nn_onnx_options;

nn_status nn_onnx_export(const char *path, nn_tensor *input, nn_tensor *output,
                         const nn_onnx_options *options);

static void shape(FILE *f, const nn_tensor *t) {
    char buf[96];
    fprintf(f, "%s", nn_tensor_shape_str(t, buf, sizeof buf));
}

nn_status nn_onnx_export(const char *path, nn_tensor *input, nn_tensor *output,
                         const nn_onnx_options *options) {
    if (!path || !input || !output || !options)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_onnx_export (test double): NULL argument");
    FILE *f = fopen(path, "w");
    if (!f) return nn_set_error(NN_ERR_IO, "nn_onnx_export (test double): cannot write %s", path);
    fprintf(f, "graph %s opset %d static_batch %d\ninput ", options->graph_name, options->opset,
            (int)options->static_batch);
    shape(f, input);
    fprintf(f, "\noutput ");
    shape(f, output);
    fprintf(f, " requires_grad %d\n", (int)nn_tensor_requires_grad(output));
    for (int i = 0; i < options->n_names; i++) {
        fprintf(f, "%s ", options->names[i]);
        shape(f, options->named_tensors[i]);
        fprintf(f, "\n");
    }
    fclose(f);
    return NN_OK;
}
