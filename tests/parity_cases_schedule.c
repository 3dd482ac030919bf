/* The kernel parity test's cases for LR_SCHEDULE and EMA_UPDATE
 * (parity_cases.h): every schedule kind at steps around its turning
 * points (warm-up's end, milestones, one-cycle's phase ends, past the
 * total), advancing and not, whole and as a sequence's part (a range of
 * steps); the average, copy and swap of odd sizes. */
#include <math.h>
#include <stdint.h>

#include "nn_schedule.h"
#include "parity_cases.h"
#include "parity_harness.h"

static nn_lr_schedule_params schedule_of(int kind) {
    nn_lr_schedule_params p = {.kind = kind, .base_lr = 0.1, .gamma = 0.5, .step_size = 7, .total = 101,
                               .until = INT32_MAX};
    switch (kind) {
    case NN_SCHEDULE_MULTISTEP:
        p.milestone_count = 3;
        p.milestones[0] = 3, p.milestones[1] = 30, p.milestones[2] = 31;
        break;
    case NN_SCHEDULE_EXPONENTIAL: p.gamma = 0.97; break;
    case NN_SCHEDULE_COSINE: p.warmup = 13, p.warmup_start = 0.25, p.eta_min = 1e-3; break;
    case NN_SCHEDULE_ONECYCLE:
        p.max_lr = 0.4, p.initial_lr = 0.4 / 25.0, p.min_lr = 0.4 / 25.0 / 1e4;
        p.phase_end1 = 0.3 * 101 - 1, p.phase_end2 = 2 * 0.3 * 101 - 2;
        break;
    case NN_SCHEDULE_LINEAR: p.warmup_start = 0.1, p.end_factor = 0.7, p.total = 29; break;
    default: break;
    }
    return p;
}

void parity_lr_schedule_case(nn_backend *o) {
    static const int32_t steps[] = {0, 1, 2, 12, 13, 29, 30, 31, 59, 100, 101, 5000};
    for (int kind = NN_SCHEDULE_CONSTANT; kind <= NN_SCHEDULE_LINEAR; kind++)
        for (int variant = 0; variant < (kind == NN_SCHEDULE_ONECYCLE ? 4 : 2); variant++)
            for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++)
                for (int delta = 0; delta < 2; delta++) {
                    nn_lr_schedule_params p = schedule_of(kind);
                    p.delta = delta;
                    if (kind == NN_SCHEDULE_ONECYCLE) {
                        p.anneal_linear = variant & 1; /* linear or cosine, two or three phases */
                        p.three_phase = variant >> 1;
                    } else if (variant == 1) { /* a sequence's part: writes within [start, until) only */
                        p.start = 12, p.until = 31;
                    }
                    float *lr = parity_randoms(1, -1, 1);
                    parity_arg a[2] = {arg_exact(&steps[s], 1, 4), arg_near(lr, 1, 8, 2e-6)};
                    parity_check(o, NN_KERNEL_LR_SCHEDULE, a, 2, &p, "kind %d variant %d step %d delta %d", kind,
                                 variant, steps[s], delta);
                }
}

void parity_ema_update_case(nn_backend *o) {
    static const int64_t sizes[] = {1, 7, 1031};
    for (int mode = NN_EMA_AVERAGE; mode <= NN_EMA_SWAP; mode++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            const size_t n = (size_t)sizes[s];
            const nn_ema_params p = {.n = sizes[s], .mode = mode, .decay = 0.999f, .weight = (float)(1.0 - 0.999f)};
            /* the average rounds twice per element; copy and swap move words */
            parity_arg a[2] = {
                mode == NN_EMA_AVERAGE ? arg_near(parity_randoms(n, -2, 2), n, 12, ROUNDING)
                                       : arg_exact(parity_randoms(n, -2, 2), n, 12),
                arg_exact(parity_randoms(n, -2, 2), n, 4), /* written by the swap only */
            };
            parity_check(o, NN_KERNEL_EMA_UPDATE, a, 2, &p, "mode %d n %zu", mode, n);
        }
}

/* Dynamic loss scaling: unscaling by a power of two is exact, so every mode
 * compares bit for bit; the inputs hold an infinity and a NaN in some runs
 * (found set), none in others (found left as it was). */
void parity_loss_scale_case(nn_backend *o) {
    static const int64_t sizes[] = {1, 7, 1031};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int bad = 0; bad < 2; bad++) {
            const size_t n = (size_t)sizes[s];
            float *x = (float *)parity_randoms(n, -3e4, 3e4);
            if (bad) x[n / 2] = n > 2 ? INFINITY : NAN;
            const float state[4] = {65536.0f, 0.0f, 5.0f, 2.0f};
            const nn_loss_scale_params unscale = {.n = sizes[s], .mode = NN_LOSS_SCALE_UNSCALE};
            /* near with no tolerance: the same floats, any NaN as any NaN (GPUs write their own NaN) */
            parity_arg a[2] = {arg_near(x, n, 4, 0.0), arg_exact(state, 4, 8)};
            parity_check(o, NN_KERNEL_LOSS_SCALE, a, 2, &unscale, "unscale n %zu, %s", n, bad ? "not finite" : "finite");
        }
    /* The update after a good step (growing at the interval, or not yet) and after a bad one. */
    static const float states[][4] = {{65536.0f, 0.0f, 1999.0f, 0.0f}, {256.0f, 0.0f, 3.0f, 1.0f},
                                      {65536.0f, 1.0f, 17.0f, 4.0f}};
    for (int i = 0; i < 3; i++) {
        const nn_loss_scale_params update = {.mode = NN_LOSS_SCALE_UPDATE, .growth_interval = 2000,
                                             .growth_factor = 2.0f, .backoff_factor = 0.5f};
        parity_arg u[2] = {arg_none(), arg_exact(states[i], 4, 8)};
        parity_check(o, NN_KERNEL_LOSS_SCALE, u, 2, &update, "update from scale %g found %g good %g", states[i][0],
                     states[i][1], states[i][2]);
    }
}
