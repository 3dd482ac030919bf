/* The kernel parity test's case for CUSTOM (parity_cases.h): one custom
 * kernel, a multiply-add over its inputs at their views' offsets, with a C
 * function and the same in GLSL, over odd sizes, float and int32 inputs
 * and absent buffers: the launch's buffers, offsets, counts, grid and
 * parameters reach each backend's code alike. */
#include <stdint.h>
#include <string.h>

#include "backends/custom_kernels.h"
#include "parity_cases.h"
#include "parity_harness.h"
#include "test.h"

/* out[i] = x[i] * p0 + idx[i] (int) + count of x, over the grid's x */
static const char kGlsl[] =
    "void main() {\n"
    "    uint i = NN_INDEX.x;\n"
    "    if (i >= NN_GRID.x) return;\n"
    "    NN_STORE(2, i, NN_LOAD(0, i) * NN_PARAM_FLOAT(0) + float(NN_LOAD_INT(1, i)) + float(NN_COUNT(0)));\n"
    "}\n";

static int affine_cpu(nn_custom_cpu_call *c) {
    const float *x = c->buffers[0];
    const int32_t *idx = c->buffers[1];
    float *out = c->buffers[2], scale;
    memcpy(&scale, c->params, sizeof scale);
    for (uint32_t i = 0; i < c->grid[0]; i++) out[i] = x[i] * scale + (float)idx[i] + (float)c->counts[0];
    return 0;
}

void parity_custom_case(nn_backend *o) {
    static nn_custom_kernel *kernel;
    if (!kernel)
        kernel = nn_custom_kernel_new(
            &(nn_custom_kernel_desc){.name = "parity_affine", .cpu = affine_cpu,
                                     .glsl = nn_custom_glsl_available() ? kGlsl : NULL});
    CHECK_MSG(kernel, "%s", nn_last_error());
    if (!kernel || (!nn_custom_glsl_available() && strcmp(o->name, "vulkan") == 0)) return;
    static const size_t sizes[] = {1, 7, 1031};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t n = sizes[s];
        nn_custom_params p = {.id = kernel->id, .written = 1u << 2, .grid = {(uint32_t)n, 1, 1}, .params_size = 4};
        const float scale = -1.5f;
        memcpy(p.params, &scale, sizeof scale);
        parity_arg a[8] = {arg_in(parity_randoms(n, -2, 2), n, 4), arg_in(parity_ints(n, -9, 9), n, 8),
                           arg_near(parity_randoms(n, -1, 1), n, 12, ROUNDING), arg_none(), arg_none(), arg_none(),
                           arg_none(), arg_none()};
        parity_check(o, NN_KERNEL_CUSTOM, a, 8, &p, "n %zu", n);
    }
}
