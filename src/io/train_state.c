/* The training state for --resume, as ONE safetensors file.
 *
 * Why one file and not weights + a side file: a resume must restore
 * parameters, momentum buffers and progress together, and two files can get
 * out of step (one copied, renamed or overwritten without the other); one
 * atomically written file cannot. The cost is that this file is not a plain
 * state_dict: it also holds "optimizer.<name>.momentum_buffer" tensors, so
 * torch's load_state_dict(strict=True) would refuse them. The weights-only
 * file for torch and `eval --weights` is what nn_save_module writes (the CLI's
 * --save); in PyTorch, a training state's parameters are the keys without the
 * "optimizer." prefix.
 *
 * __metadata__ (all values are strings, as safetensors requires):
 *   format "nn-engine-train-state", format_version "1",
 *   epoch, step, seed, rng_state, rng_increment (decimal integers),
 *   optimizer "sgd" and its options (informational: a resumed run may change
 *   the learning rate; only the presence of momentum must match). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/module.h"
#include "optim/sgd_state.h"
#include "safetensors.h"

#define FORMAT_NAME NN_TRAIN_STATE_FORMAT
#define FORMAT_VERSION "1"
#define BUFFER_PREFIX "optimizer."
#define BUFFER_SUFFIX ".momentum_buffer"

static nn_status check_pairing(const char *who, const nn_module *m, const nn_sgd *opt) {
    int count = nn_sgd_state_count(opt);
    if (count != m->param_count)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: the optimizer holds %d parameters, the module %d",
                            who, count, m->param_count);
    for (int i = 0; i < count; i++)
        if (nn_sgd_state_param(opt, i) != m->params[i])
            return nn_set_error(NN_ERR_ARGUMENT, "%s: optimizer parameter %d is not module "
                                                 "parameter %d ('%s'): create the optimizer over "
                                                 "the module's parameters in order",
                                who, i, i, m->param_names[i]);
    return NN_OK;
}

/* Parameters then momentum buffers (when the optimizer has them). The
 * buffer names are allocated into names[] (caller frees). */
static nn_st_binding *state_bindings(const char *who, const nn_module *m, const nn_sgd *opt,
                                     int *count, char ***names) {
    int n = m->param_count;
    bool momentum = n > 0 && nn_sgd_state_velocity(opt, 0) != NULL;
    int total = momentum ? 2 * n : n;
    nn_st_binding *b = calloc((size_t)total + 1, sizeof *b);
    char **buffer_names = calloc((size_t)n + 1, sizeof *buffer_names);
    bool ok = b && buffer_names;
    for (int i = 0; ok && i < n; i++) {
        b[i].name = m->param_names[i];
        b[i].tensor = m->params[i];
        if (!momentum) continue;
        size_t len = strlen(BUFFER_PREFIX) + strlen(m->param_names[i]) + strlen(BUFFER_SUFFIX) + 1;
        buffer_names[i] = malloc(len);
        if (!buffer_names[i]) {
            ok = false;
            break;
        }
        snprintf(buffer_names[i], len, "%s%s%s", BUFFER_PREFIX, m->param_names[i], BUFFER_SUFFIX);
        b[n + i].name = buffer_names[i];
        b[n + i].tensor = nn_sgd_state_velocity(opt, i);
    }
    if (!ok) {
        for (int i = 0; buffer_names && i < n; i++) free(buffer_names[i]);
        free(buffer_names);
        free(b);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", who);
    }
    *count = total;
    *names = buffer_names;
    return b;
}

static void free_names(char **names, int n) {
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
}

nn_status nn_save_train_state(const char *path, const nn_module *module, const nn_sgd *opt,
                              const nn_train_progress *progress) {
    const char *who = "nn_save_train_state";
    if (!module || !opt || !progress)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s is NULL", who,
                            !module ? "module" : !opt ? "optimizer" : "progress");
    if (!path || !*path) return nn_set_error(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    if (progress->epoch < 0 || progress->step < 0)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: epoch and step must be >= 0, got %" PRId64
                                             " and %" PRId64, who, progress->epoch, progress->step);
    NN_TRY(check_pairing(who, module, opt));
    const nn_sgd_options *o = nn_sgd_get_options(opt);
    const nn_rng *rng = &module->ctx->rng;
    char values[13][32];
    snprintf(values[0], 32, "%" PRId64, progress->epoch);
    snprintf(values[1], 32, "%" PRId64, progress->step);
    snprintf(values[2], 32, "%" PRIu64, progress->seed);
    snprintf(values[3], 32, "%" PRIu64, rng->state);
    snprintf(values[4], 32, "%" PRIu64, rng->increment);
    snprintf(values[5], 32, "%.9g", (double)o->lr);
    snprintf(values[6], 32, "%.9g", (double)o->momentum);
    snprintf(values[7], 32, "%.9g", (double)o->weight_decay);
    snprintf(values[8], 32, "%s", o->nesterov ? "true" : "false");
    snprintf(values[9], 32, "%.9g", (double)o->clip_value);
    snprintf(values[10], 32, "%.9g", (double)o->max_grad_norm);
    nn_st_meta meta[] = {
        {"format", FORMAT_NAME}, {"format_version", FORMAT_VERSION},
        {"epoch", values[0]}, {"step", values[1]}, {"seed", values[2]},
        {"rng_state", values[3]}, {"rng_increment", values[4]}, {"optimizer", "sgd"},
        {"lr", values[5]}, {"momentum", values[6]}, {"weight_decay", values[7]},
        {"nesterov", values[8]}, {"clip_value", values[9]}, {"max_grad_norm", values[10]},
    };
    int count;
    char **names;
    nn_st_binding *b = state_bindings(who, module, opt, &count, &names);
    if (!b) return nn_last_status();
    nn_status status = nn_st_save(who, path, b, count, meta, (int)(sizeof meta / sizeof meta[0]));
    free(b);
    free_names(names, module->param_count);
    return status;
}

/* A decimal metadata integer, strictly (digits only, in range). */
static nn_status meta_u64(const char *who, const char *path, const nn_st_header *h,
                          const char *key, uint64_t max, uint64_t *out) {
    const char *text = nn_st_meta_get(h, key);
    if (!text)
        return nn_set_error(NN_ERR_IO, "%s: %s: training state lacks metadata \"%s\"", who, path, key);
    bool digits = *text != '\0';
    for (const char *c = text; *c; c++) digits = digits && *c >= '0' && *c <= '9';
    errno = 0;
    unsigned long long v = digits ? strtoull(text, NULL, 10) : 0;
    if (!digits || errno == ERANGE || v > max)
        return nn_set_error(NN_ERR_IO, "%s: %s: metadata \"%s\" = \"%.40s\" is not an integer in "
                                       "[0, %" PRIu64 "]", who, path, key, text, max);
    *out = v;
    return NN_OK;
}

/* Everything in the metadata, checked before any tensor is touched. */
static nn_status read_metadata(const char *who, const char *path, const nn_st_header *h,
                               nn_train_progress *progress, nn_rng *rng) {
    const char *format = nn_st_meta_get(h, "format");
    if (!format || strcmp(format, FORMAT_NAME) != 0)
        return nn_set_error(NN_ERR_IO, "%s: %s: not an nn-engine training state (metadata "
                                       "\"format\" is %s%.40s%s); a weights-only checkpoint loads "
                                       "with nn_load_module", who, path, format ? "\"" : "",
                            format ? format : "missing", format ? "\"" : "");
    const char *version = nn_st_meta_get(h, "format_version");
    if (!version || strcmp(version, FORMAT_VERSION) != 0)
        return nn_set_error(NN_ERR_IO, "%s: %s: training state format_version %.20s, this build "
                                       "reads %s", who, path, version ? version : "(missing)",
                            FORMAT_VERSION);
    const char *optimizer = nn_st_meta_get(h, "optimizer");
    if (!optimizer || strcmp(optimizer, "sgd") != 0)
        return nn_set_error(NN_ERR_IO, "%s: %s: training state of optimizer \"%.20s\", this build "
                                       "resumes \"sgd\"", who, path,
                            optimizer ? optimizer : "(missing)");
    uint64_t epoch, step, seed, state, increment;
    NN_TRY(meta_u64(who, path, h, "epoch", INT64_MAX, &epoch));
    NN_TRY(meta_u64(who, path, h, "step", INT64_MAX, &step));
    NN_TRY(meta_u64(who, path, h, "seed", UINT64_MAX, &seed));
    NN_TRY(meta_u64(who, path, h, "rng_state", UINT64_MAX, &state));
    NN_TRY(meta_u64(who, path, h, "rng_increment", UINT64_MAX, &increment));
    if (increment % 2 == 0) /* PCG32 needs an odd increment */
        return nn_set_error(NN_ERR_IO, "%s: %s: metadata rng_increment must be odd", who, path);
    progress->epoch = (int64_t)epoch;
    progress->step = (int64_t)step;
    progress->seed = seed;
    nn_rng_set_state(rng, state, increment);
    return NN_OK;
}

nn_status nn_load_train_state(const char *path, nn_module *module, nn_sgd *opt,
                              nn_train_progress *progress) {
    const char *who = "nn_load_train_state";
    if (!module || !opt || !progress)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s is NULL", who,
                            !module ? "module" : !opt ? "optimizer" : "progress");
    NN_TRY(check_pairing(who, module, opt));
    nn_st_file file;
    NN_TRY(nn_st_open(who, path, &file));
    nn_train_progress loaded;
    nn_rng rng;
    nn_status status = read_metadata(who, path, &file.header, &loaded, &rng);
    bool want_buffers = module->param_count > 0 && nn_sgd_state_velocity(opt, 0) != NULL;
    if (status == NN_OK && module->param_count > 0) {
        char name[512];
        snprintf(name, sizeof name, "%s%s%s", BUFFER_PREFIX, module->param_names[0], BUFFER_SUFFIX);
        bool has_buffers = nn_st_find(&file.header, name) != NULL;
        if (has_buffers != want_buffers)
            status = nn_set_error(NN_ERR_ARGUMENT, "%s: %s: the file %s momentum buffers but the "
                                                   "optimizer %s momentum", who, path,
                                  has_buffers ? "holds" : "has no",
                                  want_buffers ? "uses" : "has no");
    }
    int count = 0;
    char **names = NULL;
    nn_st_binding *b = NULL;
    if (status == NN_OK) {
        b = state_bindings(who, module, opt, &count, &names);
        if (!b) status = nn_last_status();
    }
    if (status == NN_OK) status = nn_st_assign(who, path, &file, b, count);
    if (status == NN_OK) {
        module->ctx->rng = rng;
        *progress = loaded;
    }
    free(b);
    free_names(names, module->param_count);
    nn_st_close(&file);
    return status;
}
