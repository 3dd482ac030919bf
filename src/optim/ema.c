/* The moving average of a module's weights (include/nn_ema.h): one shadow
 * tensor per state_dict entry, each updated, copied or swapped by the
 * EMA_UPDATE kernel. */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"
#include "nn_ema.h"

struct nn_ema {
    nn_module *module;
    float decay;
    int count;
    nn_tensor **shadow;
};

static nn_status launch(nn_ema *ema, int i, nn_ema_mode mode) {
    nn_tensor *value = nn_module_state(ema->module, i), *shadow = ema->shadow[i];
    /* Counts are copied, never averaged. */
    if (mode == NN_EMA_AVERAGE && value->dtype != NN_F32) mode = NN_EMA_COPY;
    nn_ema_params p = {.n = value->numel, .mode = mode, .decay = ema->decay,
                       .weight = (float)(1.0 - (double)ema->decay)};
    nn_buffer_ref args[2] = {nn_tensor_ref(shadow), nn_tensor_ref(value)};
    return nn_ctx_run(value->ctx, NN_KERNEL_EMA_UPDATE, args, 2, &p);
}

static nn_status launch_all(nn_ema *ema, nn_ema_mode mode, const char *fn) {
    if (!ema) return nn_set_error(NN_ERR_ARGUMENT, "%s: ema is NULL", fn);
    if (nn_module_state_count(ema->module) != ema->count)
        return nn_set_error(NN_ERR_STATE, "%s: the module now has %d state tensors, the average was made over %d",
                            fn, nn_module_state_count(ema->module), ema->count);
    for (int i = 0; i < ema->count; i++) NN_TRY(launch(ema, i, mode));
    return NN_OK;
}

nn_ema *nn_ema_new(nn_module *module, float decay) {
    if (!module) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_ema_new: module is NULL");
    if (!(decay >= 0.0f && decay <= 1.0f))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_ema_new: decay must be in [0, 1], got %g", (double)decay);
    nn_ema *ema = calloc(1, sizeof *ema);
    int count = nn_module_state_count(module);
    if (ema) ema->shadow = calloc((size_t)count + 1, sizeof *ema->shadow);
    if (!ema || !ema->shadow) {
        free(ema);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_ema_new: out of host memory");
    }
    ema->module = module;
    ema->decay = decay;
    ema->count = count;
    for (int i = 0; i < count; i++) {
        const nn_tensor *value = nn_module_state(module, i);
        ema->shadow[i] = nn_tensor_new(value->ctx, value->dtype, value->ndim, value->shape);
        if (!ema->shadow[i] || launch(ema, i, NN_EMA_COPY) != NN_OK) {
            nn_ema_free(ema);
            return NULL;
        }
    }
    return ema;
}

nn_status nn_ema_update(nn_ema *ema) { return launch_all(ema, NN_EMA_AVERAGE, "nn_ema_update"); }

nn_status nn_ema_swap(nn_ema *ema) { return launch_all(ema, NN_EMA_SWAP, "nn_ema_swap"); }

float nn_ema_decay(const nn_ema *ema) { return ema ? ema->decay : NAN; }

int nn_ema_count(const nn_ema *ema) { return ema ? ema->count : 0; }

nn_tensor *nn_ema_tensor(const nn_ema *ema, int i) {
    return ema && i >= 0 && i < ema->count ? ema->shadow[i] : NULL;
}

const char *nn_ema_name(const nn_ema *ema, int i) {
    return ema && i >= 0 && i < ema->count ? nn_module_state_name(ema->module, i) : NULL;
}

void nn_ema_free(nn_ema *ema) {
    if (!ema) return;
    for (int i = 0; i < ema->count; i++) nn_tensor_free(ema->shadow[i]);
    free(ema->shadow);
    free(ema);
}
