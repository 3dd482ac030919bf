/* The elementwise functions of shaders/unary_ops.h on the CPU. The rows'
 * expressions are GLSL, which C reads once abs, sign and the helpers of
 * shaders/unary_math.glsl mean what they mean there (erfc, log1p and expm1
 * are math.h's); they are evaluated in double and rounded once. */
#include <math.h>

#include "base/error.h"
#include "cpu_backend.h"

#define abs(v) fabs(v)
#define power(x, e) pow(x, e) /* C's pow is PyTorch's: NaN for x < 0 with e not an integer */
static inline double sign(double v) { return v > 0.0 ? 1.0 : v < 0.0 ? -1.0 : v; }
static inline double quiet_nan(void) { return NAN; }
static inline double positive_infinity(void) { return INFINITY; }
static inline double logistic(double v) { return 1.0 / (1.0 + exp(-v)); }
static inline double tanh_gate(double x) { return logistic(1.5957691216057308 * (x + 0.044715 * x * x * x)); }
static inline double softplus_of(double z) { return fmax(z, 0.0) + log1p(exp(-fabs(z))); }

typedef struct unary_job {
    const nn_pointwise_params *p;
    const float *x, *y, *dy;
    float *out;
} unary_job;

static void forward_range(void *arg, int64_t begin, int64_t end, int worker) {
    const unary_job *job = arg;
    const float *restrict xs = job->x;
    float *restrict ys = job->out;
    const double alpha = job->p->alpha, beta = job->p->beta;
    (void)alpha, (void)beta;
    switch ((nn_unary_op)job->p->op) {
#define FORWARD_ROW(ID, name, Onnx, forward, backward, export, public)   \
    case NN_UNARY_##ID:                                                  \
        for (int64_t i = begin; i < end; i++) {                          \
            const double x = xs[i];                                      \
            ys[i] = (float)(forward);                                    \
        }                                                                \
        break;
        NN_UNARY_OPS(FORWARD_ROW)
#undef FORWARD_ROW
    case NN_UNARY_COUNT: break;
    }
}

void nn_cpu_unary_in_place(const nn_pointwise_epilogue *e, float *values, int64_t n) {
    const double alpha = e->alpha, beta = e->beta;
    (void)alpha, (void)beta;
    switch ((nn_unary_op)e->op) {
#define IN_PLACE_ROW(ID, name, Onnx, forward, backward, export, public) \
    case NN_UNARY_##ID:                                                 \
        for (int64_t i = 0; i < n; i++) {                               \
            const double x = values[i];                                 \
            values[i] = (float)(forward);                               \
        }                                                               \
        break;
        NN_UNARY_OPS(IN_PLACE_ROW)
#undef IN_PLACE_ROW
    case NN_UNARY_COUNT: break;
    }
}

/* The choice of accumulating stays outside the loops, which then vectorize. */
static void backward_range(void *arg, int64_t begin, int64_t end, int worker) {
    const unary_job *job = arg;
    const float *restrict xs = job->x, *restrict ys = job->y, *restrict dys = job->dy;
    float *restrict dxs = job->out;
    const bool acc = job->p->accumulate != 0;
    const double alpha = job->p->alpha, beta = job->p->beta;
    (void)alpha, (void)beta;
    switch ((nn_unary_op)job->p->op) {
#define BACKWARD_LOOP(backward, store)                                   \
    for (int64_t i = begin; i < end; i++) {                              \
        const double x = xs[i], y = ys[i], dy = dys[i];                  \
        (void)x, (void)y;                                                \
        dxs[i] store (float)(backward);                                  \
    }
#define BACKWARD_ROW(ID, name, Onnx, forward, backward, export, public)  \
    case NN_UNARY_##ID:                                                  \
        if (acc) BACKWARD_LOOP(backward, +=) else BACKWARD_LOOP(backward, =) \
        break;
        NN_UNARY_OPS(BACKWARD_ROW)
#undef BACKWARD_ROW
#undef BACKWARD_LOOP
    case NN_UNARY_COUNT: break;
    }
}

static nn_status check_op(const char *kernel, const nn_pointwise_params *p) {
    if (p->op < 0 || p->op >= NN_UNARY_COUNT)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu %s: unknown function %d (unary_ops.h has %d)", kernel, p->op,
                            (int)NN_UNARY_COUNT);
    return NN_OK;
}

nn_status nn_cpu_unary_forward(nn_thread_pool *pool, const nn_pointwise_params *p, const float *x, float *y) {
    NN_TRY(check_op("unary_forward", p));
    unary_job job = {.p = p, .x = x, .out = y};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, forward_range, &job);
    return NN_OK;
}

nn_status nn_cpu_unary_backward(nn_thread_pool *pool, const nn_pointwise_params *p, const float *x, const float *y,
                                const float *dy, float *dx) {
    NN_TRY(check_op("unary_backward", p));
    unary_job job = {.p = p, .x = x, .y = y, .dy = dy, .out = dx};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, backward_range, &job);
    return NN_OK;
}
