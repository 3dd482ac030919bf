/* The public functions of the rows of shaders/unary_ops.h that take
 * parameters (their public column is `with_scalars`): each checks its
 * scalars, naming the function, the argument and the value, and records its
 * row with them as alpha and beta (nn_ops.h documents each). */
#include <math.h>

#include "base/error.h"
#include "unary.h"

static bool refuse(const char *fn, const char *arg, float v, const char *rule) {
    nn_set_error(NN_ERR_ARGUMENT, "%s: %s must be %s, got %g", fn, arg, rule, (double)v);
    return true;
}

static bool not_finite(const char *fn, const char *arg, float v) {
    return !isfinite(v) && refuse(fn, arg, v, "finite");
}

static bool is_nan(const char *fn, const char *arg, float v) { return isnan(v) && refuse(fn, arg, v, "a number"); }

/* Two rows, gelu and gelu_tanh; the message names the public function. */
nn_tensor *nn_gelu(nn_tensor *x, bool tanh_approximation) {
    if (nn_check_tensor("nn_gelu", "x", x, NN_F32)) return NULL;
    return nn_unary_record(tanh_approximation ? NN_UNARY_GELU_TANH : NN_UNARY_GELU, x, 0.0f, 0.0f);
}

nn_tensor *nn_leaky_relu(nn_tensor *x, float negative_slope) {
    if (not_finite("nn_leaky_relu", "negative_slope", negative_slope)) return NULL;
    return nn_unary_record(NN_UNARY_LEAKY_RELU, x, negative_slope, 0.0f);
}

nn_tensor *nn_elu(nn_tensor *x, float alpha) {
    if (not_finite("nn_elu", "alpha", alpha)) return NULL;
    return nn_unary_record(NN_UNARY_ELU, x, alpha, 0.0f);
}

nn_tensor *nn_softplus(nn_tensor *x, float beta, float threshold) {
    if (not_finite("nn_softplus", "beta", beta) || (!(beta > 0.0f) && refuse("nn_softplus", "beta", beta, "> 0")) ||
        is_nan("nn_softplus", "threshold", threshold))
        return NULL;
    return nn_unary_record(NN_UNARY_SOFTPLUS, x, beta, threshold);
}

nn_tensor *nn_clamp(nn_tensor *x, float min, float max) {
    if (is_nan("nn_clamp", "min", min) || is_nan("nn_clamp", "max", max)) return NULL;
    return nn_unary_record(NN_UNARY_CLAMP, x, min, max);
}

nn_tensor *nn_pow_scalar(nn_tensor *x, float exponent) {
    if (not_finite("nn_pow_scalar", "exponent", exponent)) return NULL;
    return nn_unary_record(NN_UNARY_POW_SCALAR, x, exponent, 0.0f);
}

nn_tensor *nn_add_scalar(nn_tensor *x, float s) {
    if (is_nan("nn_add_scalar", "s", s)) return NULL;
    return nn_unary_record(NN_UNARY_ADD_SCALAR, x, s, 0.0f);
}

nn_tensor *nn_mul_scalar(nn_tensor *x, float s) {
    if (is_nan("nn_mul_scalar", "s", s)) return NULL;
    return nn_unary_record(NN_UNARY_MUL_SCALAR, x, s, 0.0f);
}

nn_tensor *nn_rsub_scalar(nn_tensor *x, float s) {
    if (is_nan("nn_rsub_scalar", "s", s)) return NULL;
    return nn_unary_record(NN_UNARY_RSUB_SCALAR, x, s, 0.0f);
}

nn_tensor *nn_rdiv_scalar(nn_tensor *x, float s) {
    if (is_nan("nn_rdiv_scalar", "s", s)) return NULL;
    return nn_unary_record(NN_UNARY_RDIV_SCALAR, x, s, 0.0f);
}
