/* Operations written outside the library: PyTorch's custom autograd
 * Functions and its extensions' kernels, in C.
 *
 * A custom kernel is code over up to NN_CUSTOM_MAX_BUFFERS buffers of
 * 32-bit words (float32 or int32 tensors): a C function for the CPU backend
 * and a compute shader for the Vulkan backend, given as GLSL (compiled when
 * the kernel is made, by libshaderc: linked into the library where the build
 * found it, else looked for at run time) or as SPIR-V. A backend the kernel
 * has no code for refuses it, naming the kernel.
 *
 *   nn_custom_call    runs it as an operation: inputs in, one new output.
 *                     Recorded as the library's operations are, so it runs
 *                     in eager steps and in captured ones, in order with
 *                     every other kernel. It has no gradient of its own.
 *   nn_custom_launch  runs it now on existing tensors, writing the ones the
 *                     call names (an optimizer's update in place).
 *   nn_function_apply gives any computation a gradient of the user's: the
 *                     forward is whatever the caller computed (operations,
 *                     custom calls), the backward a function written in
 *                     operations, as PyTorch's autograd.Function.
 *
 * The shader. GLSL source is the body of a compute shader; the library puts
 * a prelude before it (nn_custom_glsl_prelude returns it, for compiling
 * SPIR-V elsewhere) that declares the workgroup size, the buffers and
 * these helpers, every buffer index checked against the tensor's size:
 *
 *   NN_LOAD(b, i)  NN_LOAD_INT(b, i)      element i of buffer b (a literal
 *                                         0-7) as float / int; 0 out of range
 *   NN_STORE(b, i, v)  NN_STORE_INT(b, i, v)   write it (skipped out of range)
 *   NN_COUNT(b)                           buffer b's elements
 *   NN_PARAM_FLOAT(k) NN_PARAM_INT(k) NN_PARAM_UINT(k)   word k of the call's parameters
 *   NN_GRID                               the call's invocation count (uvec3)
 *   NN_INDEX                              gl_GlobalInvocationID
 *
 * An index out of range is reported by the next read or sync as an error
 * naming the kernel, the buffer and the index. The grid is rounded up to
 * whole workgroups: check NN_INDEX against NN_GRID. Buffers are the call's
 * inputs in order, then its output.
 *
 *     const char *glsl =
 *         "void main() {"
 *         "    uint i = NN_INDEX.x;"
 *         "    if (i >= NN_GRID.x) return;"
 *         "    NN_STORE(1, i, NN_LOAD(0, i) * NN_PARAM_FLOAT(0));"
 *         "}";
 *     nn_custom_kernel *scale = nn_custom_kernel_new(&(nn_custom_kernel_desc){
 *         .name = "scale", .cpu = scale_cpu, .glsl = glsl});
 *     float s = 3.0f;
 *     nn_tensor *y = nn_custom_call(scale, &x, 1, &(nn_custom_output){NN_F32, x_ndim, x_shape},
 *                                   &s, sizeof s, (uint32_t[3]){numel, 1, 1});
 */
#ifndef NN_CUSTOM_H
#define NN_CUSTOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nn_optim.h"
#include "nn_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NN_CUSTOM_MAX_BUFFERS 8
#define NN_CUSTOM_MAX_PARAMS 48 /* bytes of a call's parameters: 12 words */

typedef struct nn_custom_kernel nn_custom_kernel;

/* What the CPU function is given for one launch. */
typedef struct nn_custom_cpu_call {
    void *buffers[NN_CUSTOM_MAX_BUFFERS]; /* float * or int32_t *: the tensors' first elements */
    int64_t counts[NN_CUSTOM_MAX_BUFFERS]; /* their elements */
    int buffer_count;
    const void *params; /* the call's parameters */
    size_t params_size;
    uint32_t grid[3];   /* the call's invocation counts, as the shader gets them */
    void *user;         /* nn_custom_kernel_desc.cpu_user */
    char error[256];    /* the function's message when it returns non-zero */
} nn_custom_cpu_call;

/* Returns 0, or non-zero with call->error saying what went wrong (the
 * library reports it naming the kernel). Runs on the calling thread. */
typedef int (*nn_custom_cpu_fn)(nn_custom_cpu_call *call);

typedef struct nn_custom_kernel_desc {
    const char *name;          /* letters, digits and '_': messages, profiles */
    nn_custom_cpu_fn cpu;      /* NULL: the CPU backend refuses the kernel */
    void *cpu_user;
    /* The Vulkan backend's code: GLSL (the body after the prelude) or a
     * SPIR-V module (its words and their byte count) built from a prelude
     * of the same workgroup size; neither: the Vulkan backend refuses it. */
    const char *glsl;
    const uint32_t *spirv;
    size_t spirv_bytes;
    uint32_t local_size[3];    /* the workgroup's size; all 0: 256 x 1 x 1 */
    /* A kernel whose CPU function must run on every step (it reads host
     * state): a step capture that meets it fails, naming it. */
    bool not_capturable;
} nn_custom_kernel_desc;

/* A kernel from desc (copied: the strings and code need not outlive the
 * call). GLSL is compiled here: a compile error, or no libshaderc on this
 * machine, returns NULL with the error naming the kernel and, for a compile
 * error, the compiler's message with line numbers of the body. */
nn_custom_kernel *nn_custom_kernel_new(const nn_custom_kernel_desc *desc);
/* Free it once nothing will launch it: no pending step and no kept
 * capture holds a launch of it (a later replay of one is an error). */
void nn_custom_kernel_free(nn_custom_kernel *kernel);
const char *nn_custom_kernel_name(const nn_custom_kernel *kernel);

/* Whether GLSL can be compiled here (libshaderc linked in, or found at run
 * time); false: give kernels SPIR-V. */
bool nn_custom_glsl_available(void);

/* The GLSL the library puts before a kernel's body, for a workgroup of
 * local_size (NULL or zeros: 256 x 1 x 1): compile prelude + body with
 * glslc to SPIR-V for nn_custom_kernel_desc.spirv. Static storage, valid
 * until the next call on this thread. */
const char *nn_custom_glsl_prelude(const uint32_t local_size[3]);

/* An output's description: dtype, dimensions, sizes. */
typedef struct nn_custom_output {
    nn_dtype dtype;
    int ndim;
    const int64_t *shape;
} nn_custom_output;

/* The kernel as an operation on `inputs` (count + 1 <= NN_CUSTOM_MAX_BUFFERS,
 * all of one context, NULL entries not allowed) giving a new step-owned
 * output: buffers 0..count-1 are the inputs, buffer `count` the output
 * (zero-filled first), params (params_size <= NN_CUSTOM_MAX_PARAMS bytes)
 * the call's parameters, grid the invocations to run (each >= 1, at most
 * 65535 workgroups per dimension). It carries no gradient: an input that
 * requires grad is refused while grad mode is on (wrap the call in
 * nn_function_apply, or turn grad mode off). NULL on error. */
nn_tensor *nn_custom_call(nn_custom_kernel *kernel, nn_tensor *const *inputs, int count,
                          const nn_custom_output *output, const void *params, size_t params_size,
                          const uint32_t grid[3]);

/* The kernel run now on `tensors` (buffers 0..count-1, after every pending
 * operation), writing the ones whose bit is set in `written` (bit i:
 * tensors[i]): a command, as an optimizer's update is, recorded by a step
 * capture. The tensors are read as dense rows (a channels-last one is
 * refused); a backward that needs a tensor's values from before the launch
 * refuses to run, as after any write. */
nn_status nn_custom_launch(nn_custom_kernel *kernel, nn_tensor *const *tensors, int count, unsigned written,
                           const void *params, size_t params_size, const uint32_t grid[3]);

/* ---- custom functions (autograd) ---- */

#define NN_FUNCTION_MAX_INPUTS 7 /* and up to 8 saved tensors */

/* What a custom function's backward gets. grad_inputs[i] is to be set to a
 * tensor of inputs[i]'s shape (an operation's result, made from inputs,
 * output, grad_output and saved with operations and custom calls), or left
 * NULL where input i needs no gradient (needs_grad[i] false) or has none. */
typedef struct nn_function_call {
    nn_tensor *const *inputs;
    int input_count;
    nn_tensor *output;
    nn_tensor *grad_output;
    nn_tensor *const *saved;
    int saved_count;
    const bool *needs_grad;
    nn_tensor **grad_inputs;
    void *user;
} nn_function_call;

typedef struct nn_function_def {
    const char *name; /* for messages and the autograd tape */
    /* Runs with grad mode off; returns NN_OK or an error (from the
     * operations it called). */
    nn_status (*backward)(nn_function_call *call);
    /* The function as library operations with ONNX forms, for an export
     * (nn_onnx_export_module): while it traces the forward,
     * nn_function_apply returns compose(inputs, count, user) and the export
     * writes those operations. NULL: the export refuses the function by
     * name. */
    nn_tensor *(*compose)(nn_tensor *const *inputs, int count, void *user);
} nn_function_def;

/* `result`, computed from inputs (count <= NN_FUNCTION_MAX_INPUTS) with grad
 * mode off or by calls that carry no gradient, as a tensor whose gradient
 * with respect to each input is def->backward's: a view of result (no
 * copy). `saved` (up to 8 tensors, may be 0) are kept for backward with
 * references; `user` is handed to backward as it is; def and user must stay
 * valid until the step ends (nn_ctx_step_end).
 * While an export traces the model, returns def->compose's tensor instead
 * (or, without compose, the export refuses the function naming def->name). */
nn_tensor *nn_function_apply(const nn_function_def *def, nn_tensor *const *inputs, int count, nn_tensor *result,
                             nn_tensor *const *saved, int saved_count, void *user);

/* ---- custom optimizers ----
 * An optimizer whose update the user writes (launches of custom kernels,
 * nn_custom_launch), with everything else the library's: parameter groups
 * in flat buffers, per-parameter state saved in training states under its
 * names, rates on the device (schedules drive them), a step count, loss
 * scaling, data parallelism's averaged gradients, and capture (the update's
 * launches are recorded). nn_optimizer_step calls `update` once per run:
 * a group's consecutive parameters in the flat buffers, or one parameter
 * where they are not flat. */

#define NN_CUSTOM_OPTIMIZER_MAX_STATES 3
#define NN_CUSTOM_OPTIMIZER_MAX_OPTIONS 4

/* One run of an update. The tensors are views (valid during the call) of
 * `n` elements: the parameters, their gradients and each state, float32. */
typedef struct nn_custom_update {
    nn_tensor *param, *grad;
    nn_tensor *state[NN_CUSTOM_OPTIMIZER_MAX_STATES];
    int64_t n;
    nn_tensor *lr;   /* float32 [1]: the group's rate, on the device */
    nn_tensor *step; /* int32 [1]: the group's step count, this step's included; NULL without step_count */
    /* float32 [1]: non-zero when loss scaling found a gradient that is not
     * finite, and the update must write nothing; NULL without loss scaling */
    nn_tensor *skip;
    int group;
    float weight_decay;
    const float *options; /* the group's options, in the desc's order */
    void *user;
} nn_custom_update;

typedef struct nn_custom_optimizer_desc {
    const char *name; /* training states name it, and refuse another optimizer's */
    /* Per-parameter states (zeros at first), under their names ("exp_avg"). */
    const char *states[NN_CUSTOM_OPTIMIZER_MAX_STATES];
    int state_count;
    bool step_count; /* a "step" state: each group's count of steps, advanced before the update */
    /* Each group's options beyond lr and weight_decay (nn_optimizer_set_group_option). */
    const char *options[NN_CUSTOM_OPTIMIZER_MAX_OPTIONS];
    float option_values[NN_CUSTOM_OPTIMIZER_MAX_OPTIONS];
    int option_count;
    /* Launches the run's update (writing param and states); NN_OK or the error. */
    nn_status (*update)(const nn_custom_update *run);
    void *user;
} nn_custom_optimizer_desc;

/* An optimizer over parameter groups (as nn_sgd_new_groups takes them;
 * `adamw` refused) whose update is desc's (copied). Free with
 * nn_optimizer_free. NULL with the error naming the problem. */
nn_optimizer *nn_custom_optimizer_new(const nn_custom_optimizer_desc *desc, const nn_param_group *groups, int count);

#ifdef __cplusplus
}
#endif

#endif
