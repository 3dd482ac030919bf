/* Parity cases of the optimizers' update kernels beyond SGD: Adam/AdamW
 * (amsgrad, maximize, steps 1 and large), RMSprop (momentum, centered),
 * Lion, and Muon's pointwise kernels, at sizes 1 and odd, every state given
 * as random values (second moments non-negative, as an update keeps them),
 * without the skip argument; each kernel's last case at the odd size also
 * with it clear and set (parity_check_skips). */
#include "parity_cases.h"
#include "parity_harness.h"

/* The bias corrections' pow differs between libm and the GPU's by a few
 * roundings, and enters every element's step. */
#define POW_ROUNDING 1e-5

static const size_t kOptimSizes[] = {1, 1001};
#define OPTIM_SIZES (sizeof kOptimSizes / sizeof kOptimSizes[0])

void parity_adam_update_case(nn_backend *o) {
    static const struct {
        int decoupled, amsgrad, maximize, step;
        float weight_decay;
    } cases[] = {
        {0, 0, 0, 1, 0.0f},   /* Adam, first step */
        {0, 1, 0, 7, 0.01f},  /* Adam, L2, amsgrad */
        {1, 0, 1, 3, 0.1f},   /* AdamW, maximize */
        {1, 1, 0, 5000, 0.05f}, /* AdamW, amsgrad, bias corrections ~ 1 */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t s = 0; s < OPTIM_SIZES; s++) {
            const size_t n = kOptimSizes[s];
            const float lr = 0.003f;
            const int32_t step = cases[c].step;
            const nn_adam_params p = {.n = (int64_t)n, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                                      .weight_decay = cases[c].weight_decay, .decoupled = cases[c].decoupled,
                                      .amsgrad = cases[c].amsgrad, .maximize = cases[c].maximize};
            parity_arg a[8] = {arg_near(parity_randoms(n, -1, 1), n, 4, POW_ROUNDING),
                               arg_in(parity_randoms(n, -0.5f, 0.5f), n, 0),
                               arg_near(parity_randoms(n, -0.1f, 0.1f), n, 8, ROUNDING),
                               arg_near(parity_randoms(n, 0.0f, 0.01f), n, 12, ROUNDING),
                               given(cases[c].amsgrad, arg_near(parity_randoms(n, 0.0f, 0.02f), n, 4, ROUNDING)),
                               arg_in(&lr, 1, 4),
                               arg_in(&step, 1, 8), arg_none()};
            (c + 1 == sizeof cases / sizeof cases[0] && n > 1 ? parity_check_skips : parity_check)(
                o, NN_KERNEL_ADAM_UPDATE, a, 8, &p, "case %zu n=%zu", c, n);
        }
}

void parity_rmsprop_update_case(nn_backend *o) {
    static const struct {
        float momentum, weight_decay;
        int centered, maximize;
    } cases[] = {{0, 0, 0, 0}, {0.9f, 0.01f, 0, 0}, {0, 0, 1, 1}, {0.5f, 0.1f, 1, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t s = 0; s < OPTIM_SIZES; s++) {
            const size_t n = kOptimSizes[s];
            const float lr = 0.01f;
            const nn_rmsprop_params p = {.n = (int64_t)n, .alpha = 0.99f, .eps = 1e-8f,
                                         .weight_decay = cases[c].weight_decay, .momentum = cases[c].momentum,
                                         .centered = cases[c].centered, .maximize = cases[c].maximize};
            parity_arg a[7] = {arg_near(parity_randoms(n, -1, 1), n, 4, ROUNDING),
                               arg_in(parity_randoms(n, -0.5f, 0.5f), n, 0),
                               arg_near(parity_randoms(n, 0.5f, 1.0f), n, 8, ROUNDING),
                               given(cases[c].momentum > 0, arg_near(parity_randoms(n, -0.1f, 0.1f), n, 12, ROUNDING)),
                               given(cases[c].centered, arg_near(parity_randoms(n, -0.1f, 0.1f), n, 4, ROUNDING)),
                               arg_in(&lr, 1, 8), arg_none()};
            (c + 1 == sizeof cases / sizeof cases[0] && n > 1 ? parity_check_skips : parity_check)(
                o, NN_KERNEL_RMSPROP_UPDATE, a, 7, &p, "case %zu n=%zu", c, n);
        }
}

void parity_lion_update_case(nn_backend *o) {
    for (int variant = 0; variant < 2; variant++) /* 1: weight decay and maximize */
        for (size_t s = 0; s < OPTIM_SIZES; s++) {
            const size_t n = kOptimSizes[s];
            const float lr = 1e-3f;
            const nn_lion_params p = {.n = (int64_t)n, .beta1 = 0.9f, .beta2 = 0.99f,
                                      .weight_decay = variant ? 0.1f : 0.0f, .maximize = variant};
            parity_arg a[5] = {arg_near(parity_randoms(n, -1, 1), n, 4, ROUNDING),
                               arg_in(parity_randoms(n, -0.5f, 0.5f), n, 0),
                               arg_near(parity_randoms(n, -0.1f, 0.1f), n, 8, ROUNDING), arg_in(&lr, 1, 12),
                               arg_none()};
            (variant == 1 && n > 1 ? parity_check_skips : parity_check)(o, NN_KERNEL_LION_UPDATE, a, 5, &p,
                                                                        "variant %d n=%zu", variant, n);
        }
}

void parity_muon_momentum_case(nn_backend *o) {
    for (int nesterov = 0; nesterov < 2; nesterov++)
        for (size_t s = 0; s < OPTIM_SIZES; s++) {
            const size_t n = kOptimSizes[s];
            const nn_muon_params p = {.n = (int64_t)n, .momentum = 0.95f, .nesterov = nesterov};
            parity_arg a[4] = {arg_in(parity_randoms(n, -1, 1), n, 4),
                               arg_near(parity_randoms(n, -0.5f, 0.5f), n, 0, ROUNDING),
                               arg_near(parity_randoms(n, -9, 9), n, 8, ROUNDING), arg_none()};
            (nesterov == 1 && n > 1 ? parity_check_skips : parity_check)(o, NN_KERNEL_MUON_MOMENTUM, a, 4, &p,
                                                                         "nesterov %d n=%zu", nesterov, n);
        }
}

void parity_muon_normalize_case(nn_backend *o) {
    for (size_t s = 0; s < OPTIM_SIZES; s++) {
        const size_t n = kOptimSizes[s];
        const float norm_sq = 37.5f;
        const nn_muon_params p = {.n = (int64_t)n, .eps = 1e-7f};
        parity_arg a[2] = {arg_near(parity_randoms(n, -3, 3), n, 4, ROUNDING), arg_in(&norm_sq, 1, 8)};
        parity_check(o, NN_KERNEL_MUON_NORMALIZE, a, 2, &p, "n=%zu", n);
    }
}

void parity_muon_apply_case(nn_backend *o) {
    for (size_t s = 0; s < OPTIM_SIZES; s++) {
        const size_t n = kOptimSizes[s];
        const float lr = 0.02f;
        const nn_muon_params p = {.n = (int64_t)n, .scale = 1.7320508f, .weight_decay = 0.1f};
        parity_arg a[4] = {arg_near(parity_randoms(n, -1, 1), n, 4, ROUNDING),
                           arg_in(parity_randoms(n, -1, 1), n, 0), arg_in(&lr, 1, 12), arg_none()};
        (n > 1 ? parity_check_skips : parity_check)(o, NN_KERNEL_MUON_APPLY, a, 4, &p, "n=%zu", n);
    }
}
