/* The optimizers' update kernels (ADAM_UPDATE, RMSPROP_UPDATE,
 * LION_UPDATE and Muon's pointwise kernels), each one pass over a range of
 * the flat buffers. The order of the operations is PyTorch's (torch.optim,
 * single-tensor path), so results track it to a rounding. */
#include <math.h>

#include "base/error.h"
#include "cpu_backend.h"

typedef struct update_job {
    const void *p;
    float *param, *grad_out;
    const float *grad;
    float *s0, *s1, *s2; /* the kernel's state buffers, in argument order */
    float lr;
    float c0, c1; /* per-kernel constants computed once (bias corrections) */
} update_job;

static float decay_factor(float lr, float weight_decay) { return 1.0f - lr * weight_decay; }

/* ---- Adam and AdamW ---- */

static void adam_range(void *arg, int64_t begin, int64_t end, int worker) {
    const update_job *j = arg;
    const nn_adam_params *p = j->p;
    const float step_size = j->c0, bias_correction2_sqrt = j->c1;
    for (int64_t i = begin; i < end; i++) {
        float g = p->maximize ? -j->grad[i] : j->grad[i];
        float w = j->param[i];
        if (p->decoupled) w *= decay_factor(j->lr, p->weight_decay);
        else g += p->weight_decay * w;
        float m = j->s0[i] * p->beta1 + g * (1.0f - p->beta1);
        float v = j->s1[i] * p->beta2 + g * g * (1.0f - p->beta2);
        j->s0[i] = m;
        j->s1[i] = v;
        if (p->amsgrad) {
            v = fmaxf(j->s2[i], v);
            j->s2[i] = v;
        }
        float denom = sqrtf(v) / bias_correction2_sqrt + p->eps;
        j->param[i] = w - step_size * (m / denom);
    }
}

nn_status nn_cpu_adam_update(nn_thread_pool *pool, const nn_adam_params *p, float *param, const float *grad,
                             float *exp_avg, float *exp_avg_sq, float *max_exp_avg_sq, const float *lr,
                             const int32_t *step) {
    if (p->amsgrad && !max_exp_avg_sq)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu adam_update: amsgrad needs max_exp_avg_sq (argument 4)");
    const float t = (float)step[0];
    const float bias_correction1 = 1.0f - powf(p->beta1, t), bias_correction2 = 1.0f - powf(p->beta2, t);
    update_job job = {.p = p, .param = param, .grad = grad, .s0 = exp_avg, .s1 = exp_avg_sq,
                      .s2 = max_exp_avg_sq, .lr = lr[0], .c0 = lr[0] / bias_correction1,
                      .c1 = sqrtf(bias_correction2)};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, adam_range, &job);
    return NN_OK;
}

/* ---- RMSprop ---- */

static void rmsprop_range(void *arg, int64_t begin, int64_t end, int worker) {
    const update_job *j = arg;
    const nn_rmsprop_params *p = j->p;
    for (int64_t i = begin; i < end; i++) {
        float g = p->maximize ? -j->grad[i] : j->grad[i];
        float w = j->param[i];
        g += p->weight_decay * w;
        float square_avg = j->s0[i] * p->alpha + g * g * (1.0f - p->alpha);
        j->s0[i] = square_avg;
        float avg;
        if (p->centered) {
            float grad_avg = j->s2[i] * p->alpha + g * (1.0f - p->alpha);
            j->s2[i] = grad_avg;
            avg = sqrtf(square_avg - grad_avg * grad_avg) + p->eps;
        } else {
            avg = sqrtf(square_avg) + p->eps;
        }
        if (p->momentum > 0.0f) {
            float buf = j->s1[i] * p->momentum + g / avg;
            j->s1[i] = buf;
            j->param[i] = w - j->lr * buf;
        } else {
            j->param[i] = w - j->lr * (g / avg);
        }
    }
}

nn_status nn_cpu_rmsprop_update(nn_thread_pool *pool, const nn_rmsprop_params *p, float *param, const float *grad,
                                float *square_avg, float *momentum_buffer, float *grad_avg, const float *lr) {
    if ((p->momentum > 0.0f && !momentum_buffer) || (p->centered && !grad_avg))
        return nn_set_error(NN_ERR_ARGUMENT, "cpu rmsprop_update: %s", !grad_avg && p->centered
                                                                         ? "centered needs grad_avg (argument 4)"
                                                                         : "momentum needs momentum_buffer (argument 3)");
    update_job job = {.p = p, .param = param, .grad = grad, .s0 = square_avg, .s1 = momentum_buffer,
                      .s2 = grad_avg, .lr = lr[0]};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, rmsprop_range, &job);
    return NN_OK;
}

/* ---- Lion (Chen et al. 2023; lucidrains/lion-pytorch) ---- */

static float sign_of(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f; }

static void lion_range(void *arg, int64_t begin, int64_t end, int worker) {
    const update_job *j = arg;
    const nn_lion_params *p = j->p;
    for (int64_t i = begin; i < end; i++) {
        float g = p->maximize ? -j->grad[i] : j->grad[i];
        float w = j->param[i] * decay_factor(j->lr, p->weight_decay);
        float m = j->s0[i];
        j->param[i] = w - j->lr * sign_of(m * p->beta1 + g * (1.0f - p->beta1));
        j->s0[i] = m * p->beta2 + g * (1.0f - p->beta2);
    }
}

nn_status nn_cpu_lion_update(nn_thread_pool *pool, const nn_lion_params *p, float *param, const float *grad,
                             float *exp_avg, const float *lr) {
    update_job job = {.p = p, .param = param, .grad = grad, .s0 = exp_avg, .lr = lr[0]};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, lion_range, &job);
    return NN_OK;
}

/* ---- Muon's pointwise kernels ---- */

/* torch.lerp's formula: from `a` toward `b` by w, exact at both ends. */
static float lerp(float a, float b, float w) { return w < 0.5f ? a + w * (b - a) : b - (b - a) * (1.0f - w); }

nn_status nn_cpu_muon_momentum(const nn_muon_params *p, const float *grad, float *momentum_buffer, float *update) {
    for (int64_t i = 0; i < p->n; i++) {
        float m = lerp(momentum_buffer[i], grad[i], 1.0f - p->momentum);
        momentum_buffer[i] = m;
        update[i] = p->nesterov ? lerp(grad[i], m, p->momentum) : m;
    }
    return NN_OK;
}

nn_status nn_cpu_muon_normalize(const nn_muon_params *p, float *x, const float *norm_sq) {
    const float denom = sqrtf(norm_sq[0]) + p->eps;
    for (int64_t i = 0; i < p->n; i++) x[i] = x[i] / denom;
    return NN_OK;
}

nn_status nn_cpu_muon_apply(const nn_muon_params *p, float *param, const float *update, const float *lr) {
    const float factor = decay_factor(lr[0], p->weight_decay);
    for (int64_t i = 0; i < p->n; i++) param[i] = param[i] * factor - lr[0] * (update[i] * p->scale);
    return NN_OK;
}
