/* The model info of a checkpoint (normalisation, class names in the
 * safetensors metadata) and the normalisation in front of an exported ONNX
 * graph, read back with the independent protobuf decoder; onnxruntime runs
 * such graphs on raw pixels in tests/io/test_preprocessing_onnx.py. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "io_test_util.h"
#include "pb_decode.h"
#include "test.h"

static nn_ctx *cpu_ctx(void) {
    nn_ctx_options o = {.device = "cpu", .threads = 1, .seed = 5};
    return nn_ctx_new(&o);
}

static bool contains(const uint8_t *file, size_t size, const char *text) {
    return file && memmem(file, size, text, strlen(text)) != NULL;
}

TEST(model_info_round_trip) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "mlp.safetensors");
    nn_ctx *ctx = cpu_ctx();
    nn_module *m = io_test_mlp(ctx);
    char *names[] = {"T-shirt/top", "say \"hi\"", "back\\slash", "two  spaces", "\xc3\x9c" "ber"};
    nn_model_info info = {.channels = 3, .mean = {0.485f, 0.456f, 1.0f / 3.0f}, .std = {0.229f, 7e-3f, 12.5f},
                          .class_count = 5, .class_names = names};
    CHECK_MSG(nn_save_module_info(m, path, &info) == NN_OK, "%s", nn_last_error());
    nn_model_info got;
    CHECK_MSG(nn_read_model_info(path, &got) == NN_OK, "%s", nn_last_error());
    CHECK(got.channels == 3);
    for (int c = 0; c < 3 && got.channels == 3; c++) {
        CHECK_MSG(got.mean[c] == info.mean[c] && got.std[c] == info.std[c], "channel %d: %g,%g want %g,%g", c,
                  (double)got.mean[c], (double)got.std[c], (double)info.mean[c], (double)info.std[c]);
    }
    CHECK(got.class_count == 5);
    for (int i = 0; i < 5 && got.class_count == 5; i++)
        CHECK_MSG(strcmp(got.class_names[i], names[i]) == 0, "class %d: '%s' want '%s'", i, got.class_names[i],
                  names[i]);
    nn_model_info_free(&got);
    CHECK(got.class_names == NULL && got.class_count == 0);
    /* Names that would print as terminal commands, or two alike, are refused (issue 40, item 15). */
    char *escape[] = {"cat", "\x1b[31mdog"}, *twice[] = {"cat", "dog", "cat"};
    nn_model_info bad = {.class_count = 2, .class_names = escape};
    CHECK(nn_save_module_info(m, path, &bad) == NN_ERR_ARGUMENT && strstr(nn_last_error(), "control character"));
    bad = (nn_model_info){.class_count = 3, .class_names = twice};
    CHECK(nn_save_module_info(m, path, &bad) == NN_ERR_ARGUMENT && strstr(nn_last_error(), "repeats"));
    /* The weights load as from any checkpoint, and the keys read as documented. */
    CHECK_MSG(nn_load_module(m, path) == NN_OK, "%s", nn_last_error());
    size_t size;
    uint8_t *file = io_test_read_bytes(path, &size);
    CHECK(contains(file, size, "\"nn_engine.normalize\":\"0.485,0.229;0.456,0.007;0.33333334,12.5\""));
    CHECK(contains(file, size, "\"nn_engine.classes\":\"[\\\"T-shirt/top\\\", "));
    free(file);

    /* A plain checkpoint has none. */
    CHECK(nn_save_module(m, path) == NN_OK);
    nn_model_info none = {.channels = 7};
    CHECK_MSG(nn_read_model_info(path, &none) == NN_OK, "%s", nn_last_error());
    CHECK(none.channels == 0 && none.class_count == 0 && none.class_names == NULL);
    nn_module_free(m);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}

TEST(model_info_refusals) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "bad.safetensors");
    nn_ctx *ctx = cpu_ctx();
    nn_module *m = io_test_mlp(ctx);
    char *empty[] = {"cat", ""};
    const struct {
        nn_model_info info;
        const char *message;
    } bad[] = {
        {{.channels = 9}, "channels must be 0..8, got 9"},
        {{.channels = -1}, "channels must be 0..8, got -1"},
        {{.channels = 2, .mean = {0, 0}, .std = {1, 0}}, "channel 1"},
        {{.channels = 1, .mean = {NAN}, .std = {1}}, "channel 0"},
        {{.class_count = 2}, "class_names is NULL"},
        {{.class_count = 2, .class_names = empty}, "class_names[1] is NULL or empty"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(nn_save_module_info(m, path, &bad[i].info) == NN_ERR_ARGUMENT);
        CHECK_MSG(strstr(nn_last_error(), "nn_save_module_info") && strstr(nn_last_error(), bad[i].message),
                  "case %zu: %s", i, nn_last_error());
    }
    CHECK(io_test_dir_entries(dir) == 0); /* nothing written */

    /* Malformed metadata in a file: refused naming the key. */
    const char *meta[] = {
        "\"nn_engine.normalize\":\"0.5\"",        "\"nn_engine.normalize\":\"0.5,0\"",
        "\"nn_engine.normalize\":\"0.5,1;\"",     "\"nn_engine.normalize\":\"\"",
        "\"nn_engine.normalize\":\"a,b\"",        "\"nn_engine.normalize\":\"1,1;1,1;1,1;1,1;1,1;1,1;1,1;1,1;1,1\"",
        "\"nn_engine.classes\":\"[1]\"",          "\"nn_engine.classes\":\"[\\\"a\\\",]\"",
        "\"nn_engine.classes\":\"not json\"",     "\"nn_engine.classes\":\"[]\"",
        "\"nn_engine.classes\":\"[\\\"a\\\"] x\"", "\"nn_engine.classes\":\"[\\\"\\\"]\"",
    };
    const float data[1] = {1.0f};
    for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++) {
        char json[256];
        snprintf(json, sizeof json, "{\"__metadata__\":{%s},\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
                                    "\"data_offsets\":[0,4]}}", meta[i]);
        CHECK(io_test_write_safetensors(path, json, data, sizeof data) == 0);
        nn_model_info info;
        CHECK_MSG(nn_read_model_info(path, &info) == NN_ERR_IO, "case %zu (%s) was accepted", i, meta[i]);
        const char *key = strstr(meta[i], "classes") ? "nn_engine.classes" : "nn_engine.normalize";
        CHECK_MSG(strstr(nn_last_error(), key) != NULL, "case %zu: %s", i, nn_last_error());
        CHECK(info.channels == 0 && info.class_names == NULL);
    }
    CHECK(nn_read_model_info(path, NULL) == NN_ERR_ARGUMENT);
    nn_model_info info;
    CHECK(nn_read_model_info(io_test_path(dir, "missing.safetensors"), &info) == NN_ERR_IO);
    nn_module_free(m);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}

/* The k-th node (GraphProto field 1) of the model's graph. */
static int graph_node(const uint8_t *file, size_t size, int k, const uint8_t **node, size_t *node_size) {
    pb_field graph, f;
    if (pb_get(file, size, 7, 0, &graph) != 0 || pb_get(graph.data, graph.size, 1, k, &f) != 0) return -1;
    *node = f.data;
    *node_size = f.size;
    return 0;
}

TEST(model_info_onnx_preprocessing) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "lenet.onnx");
    nn_ctx *ctx = cpu_ctx();
    nn_module *net = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    nn_module_set_training(net, false);
    char *names[] = {"zero", "one"};
    nn_model_info info = {.channels = 1, .mean = {0.286f}, .std = {0.353f}, .class_count = 2, .class_names = names};
    int64_t shape[4] = {2, 1, 28, 28};
    CHECK_MSG(nn_onnx_export_module_info(path, net, shape, 4, &info) == NN_OK, "%s", nn_last_error());
    size_t size;
    uint8_t *file = io_test_read_bytes(path, &size);
    const char *ops[3] = {"Div", "Sub", "Div"};
    const char *inputs[3] = {"input", "preprocess.scaled", "preprocess.centered"};
    for (int k = 0; file && k < 3; k++) {
        const uint8_t *node = NULL;
        size_t node_size = 0;
        CHECK(graph_node(file, size, k, &node, &node_size) == 0);
        CHECK_MSG(node && pb_string_is(node, node_size, 4, 0, ops[k]) && pb_string_is(node, node_size, 1, 0, inputs[k]),
                  "node %d", k);
    }
    const uint8_t *node;
    size_t node_size;
    CHECK(file && graph_node(file, size, 3, &node, &node_size) == 0 &&
          pb_string_is(node, node_size, 1, 0, "input_normalized")); /* the model's first layer */
    pb_field meta;
    CHECK(file && pb_get(file, size, 14, 0, &meta) == 0 && pb_string_is(meta.data, meta.size, 1, 0, "nn_engine.classes") &&
          pb_string_is(meta.data, meta.size, 2, 0, "[\"zero\", \"one\"]"));
    free(file);

    /* Without a normalisation the graph starts with the model itself. */
    nn_model_info classes_only = {.class_count = 2, .class_names = names};
    CHECK_MSG(nn_onnx_export_module_info(path, net, shape, 4, &classes_only) == NN_OK, "%s", nn_last_error());
    file = io_test_read_bytes(path, &size);
    CHECK(file && graph_node(file, size, 0, &node, &node_size) == 0 && pb_string_is(node, node_size, 4, 0, "Conv") &&
          pb_string_is(node, node_size, 1, 0, "input"));
    free(file);

    /* Three channels of normalisation for a one-channel input: refused. */
    nn_model_info rgb = {.channels = 3, .mean = {0.5f, 0.5f, 0.5f}, .std = {0.2f, 0.2f, 0.2f}};
    CHECK(nn_onnx_export_module_info(path, net, shape, 4, &rgb) == NN_ERR_SHAPE);
    CHECK_MSG(strstr(nn_last_error(), "3 channels") && strstr(nn_last_error(), "dimension 1 of 1"), "%s",
              nn_last_error());
    nn_model_info broken = {.channels = 1, .std = {-1.0f}};
    CHECK(nn_onnx_export_module_info(path, net, shape, 4, &broken) == NN_ERR_ARGUMENT);
    CHECK(nn_ctx_step_tensor_count(ctx) == 0);
    nn_module_free(net);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}
