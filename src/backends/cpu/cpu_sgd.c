/* The SGD update of one parameter tensor; the order of the steps is the one
 * documented in nn_optim.h (PyTorch's SGD plus the seed's clamp). */
#include <math.h>

#include "cpu_backend.h"

typedef struct sgd_job {
    const nn_sgd_params *p;
    float *param, *velocity;
    const float *grad;
    float grad_scale;
} sgd_job;

static void sgd_range(void *arg, int64_t begin, int64_t end, int worker) {
    const sgd_job *job = arg;
    const nn_sgd_params *p = job->p;
    for (int64_t i = begin; i < end; i++) {
        float g = job->grad[i] * job->grad_scale;
        if (p->clip_value > 0.0f) g = fminf(fmaxf(g, -p->clip_value), p->clip_value);
        g += p->weight_decay * job->param[i];
        if (p->momentum != 0.0f) {
            float v = p->momentum * job->velocity[i] + g;
            job->velocity[i] = v;
            g = p->nesterov ? g + p->momentum * v : v;
        }
        job->param[i] -= p->lr * g;
    }
}

nn_status nn_cpu_sgd_update(nn_thread_pool *pool, const nn_sgd_params *p, float *param,
                            const float *grad, float *velocity, const float *grad_norm_sq) {
    float scale = 1.0f;
    if (p->max_grad_norm > 0.0f && grad_norm_sq) {
        /* torch.nn.utils.clip_grad_norm_: scale only when the norm is larger. */
        float norm = sqrtf(grad_norm_sq[0]);
        float factor = p->max_grad_norm / (norm + 1e-6f);
        if (factor < 1.0f) scale = factor;
    }
    sgd_job job = {p, param, velocity, grad, scale};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, sgd_range, &job);
    return NN_OK;
}
