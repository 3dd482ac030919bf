#include "setup.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

const char *library_error(void) {
    const char *message = nn_last_error();
    return message && *message ? message : "out of host memory";
}

const char *normalization_problem(const char *text) {
    if (strcmp(text, "none") == 0) return NULL;
    char *end;
    double m = strtod(text, &end);
    if (end == text || *end != ',') return "not auto, none or two numbers MEAN,STD";
    const char *std_text = end + 1;
    double s = strtod(std_text, &end);
    if (end == std_text || *end) return "the STD after the comma is not a number";
    /* nan, inf and denormal std values train to NaN without another word. */
    if (!isfinite(m) || !isfinite((float)m)) return "the MEAN is not a finite float";
    if (!isfinite(s) || !isfinite((float)s)) return "the STD is not a finite float";
    if (!(s >= NORMALIZE_MIN_STD)) return "the STD is below 1e-6 (dividing by it overflows)";
    return NULL;
}

bool parse_fixed_normalization(const char *text, float *mean, float *std) {
    if (normalization_problem(text)) return false;
    if (strcmp(text, "none") == 0) {
        *mean = 0.0f;
        *std = 1.0f;
        return true;
    }
    char *end;
    *mean = (float)strtod(text, &end);
    *std = (float)strtod(end + 1, NULL);
    return true;
}

static int parse_normalization(const char *command, const char *text, const nn_dataset *train,
                               normalization *norm) {
    if (strcmp(text, "auto") == 0) {
        double mean, std;
        nn_dataset_pixel_stats(train, &mean, &std);
        norm->mean = (float)mean;
        norm->std = std > 1e-6 ? (float)std : 1.0f; /* a constant image set: no scaling */
        return EXIT_OK;
    }
    if (parse_fixed_normalization(text, &norm->mean, &norm->std)) return EXIT_OK;
    fprintf(stderr, "nnengine %s: --normalize takes auto, none or MEAN,STD (finite, STD >= 1e-6); got '%s': %s\n",
            command, text, normalization_problem(text));
    return EXIT_BAD_INPUT;
}

int data_setup_load(const char *command, const char *dir, double validation_fraction,
                    uint64_t seed, int64_t limit, const char *normalize, data_setup *out) {
    memset(out, 0, sizeof *out);
    if (nn_dataset_load_dir(dir, validation_fraction, seed, &out->train, &out->test,
                            &out->test_is_validation) != NN_OK) {
        fprintf(stderr, "nnengine %s: %s\n", command, library_error());
        return EXIT_BAD_INPUT;
    }
    int64_t skipped = out->train.skipped + out->test.skipped;
    if (skipped)
        fprintf(stderr, "nnengine %s: skipped %lld files that are not readable images (first: %s)\n",
                command, (long long)skipped,
                out->train.skipped ? out->train.first_skipped : out->test.first_skipped);
    /* Links, FIFOs and loops among the folders: one line per walk. */
    if (out->train.skipped_entries[0]) fprintf(stderr, "nnengine %s: %s\n", command, out->train.skipped_entries);
    if (out->test.skipped_entries[0] && strcmp(out->test.skipped_entries, out->train.skipped_entries) != 0)
        fprintf(stderr, "nnengine %s: %s\n", command, out->test.skipped_entries);
    /* Statistics of the whole training set, before --limit: eval (which has
     * no --limit) then finds the same normalisation as train. */
    int status = parse_normalization(command, normalize, &out->train, &out->norm);
    nn_dataset_truncate(&out->train, limit);
    out->classes = out->train.classes > out->test.classes ? out->train.classes : out->test.classes;
    if (status != EXIT_OK) data_setup_free(out);
    return status;
}

void data_setup_free(data_setup *setup) {
    nn_dataset_free(&setup->train);
    nn_dataset_free(&setup->test);
}

nn_ctx *open_device(const char *command, const char *device, int threads, uint64_t seed) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = threads, .seed = seed});
    if (!ctx) {
        fprintf(stderr, "nnengine %s: cannot open device '%s': %s\n(`nnengine devices` lists what this machine has)\n",
                command, device, library_error());
        return NULL;
    }
    fprintf(stderr, "device: %s%s\n", nn_ctx_device_name(ctx),
            strcmp(device, "auto") == 0 ? " (chosen by --device auto)" : "");
    return ctx;
}
