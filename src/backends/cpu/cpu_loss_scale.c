/* LOSS_SCALE (kernels.h): dynamic loss scaling's two steps on the CPU.
 * state = {scale, found, good steps, skipped steps}. */
#include <math.h>

#include "base/error.h"
#include "cpu_backend.h"

nn_status nn_cpu_loss_scale(const nn_loss_scale_params *p, const nn_buffer_ref *a) {
    if (p->n < 0 || (p->mode != NN_LOSS_SCALE_UNSCALE && p->mode != NN_LOSS_SCALE_UPDATE) ||
        (p->mode == NN_LOSS_SCALE_UNSCALE && !a[0].buffer))
        return nn_set_error(NN_ERR_ARGUMENT, "cpu loss_scale: n=%lld mode=%d, or a buffer it needs is absent",
                            (long long)p->n, p->mode);
    float *state = nn_cpu_f32(a[1]);
    if (p->mode == NN_LOSS_SCALE_UNSCALE) {
        float *x = nn_cpu_f32(a[0]);
        const float inverse = 1.0f / state[0];
        bool found = false;
        for (int64_t i = 0; i < p->n; i++) {
            x[i] *= inverse;
            if (!isfinite(x[i])) found = true;
        }
        if (found) state[1] = 1.0f;
    } else if (state[1] != 0.0f) {
        state[0] *= p->backoff_factor;
        state[2] = 0.0f;
        state[3] += 1.0f;
        state[1] = 0.0f;
    } else if ((state[2] += 1.0f) >= (float)p->growth_interval) {
        state[0] *= p->growth_factor;
        state[2] = 0.0f;
    }
    return NN_OK;
}
