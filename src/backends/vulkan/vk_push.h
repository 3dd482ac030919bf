/* The shaders' push-constant blocks as C structs, made from the same
 * layouts the shaders declare theirs from (shaders/push_constants.h), so a
 * field added, removed or reordered on one side is on the other too. */
#ifndef NN_VK_PUSH_H
#define NN_VK_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "push_constants.h"

typedef uint32_t vk_glsl_uint;
typedef int32_t vk_glsl_int;
typedef float vk_glsl_float;

#define VK_PUSH_FIELD(type, name) vk_glsl_##type name;
/* The struct of layout PUSH_<NAME>: VK_PUSH(GEMM) push = {.m = ...}. */
#define VK_PUSH(NAME) struct { PUSH_##NAME(VK_PUSH_FIELD) }

#define VK_PUSH_BYTES 128 /* the minimum every device allows */

/* A filled push-constant struct on its way to a dispatch, which writes the
 * arguments' element offsets into its first `offsets` words. */
typedef struct vk_push_ref {
    void *data;
    size_t bytes;
    uint32_t offsets;
} vk_push_ref;
#define VK_PUSH_REF(push) ((vk_push_ref){&(push), sizeof(push), (uint32_t)(sizeof (push).off / sizeof (push).off[0])})

#define VK_PUSH_FITS(NAME) _Static_assert(sizeof(VK_PUSH(NAME)) <= VK_PUSH_BYTES, #NAME " exceeds 128 bytes");
VK_PUSH_FITS(FILL)
VK_PUSH_FITS(RELU_FORWARD)
VK_PUSH_FITS(RELU_BACKWARD)
VK_PUSH_FITS(UNARY_FORWARD)
VK_PUSH_FITS(UNARY_BACKWARD)
VK_PUSH_FITS(ELEMENTWISE)
VK_PUSH_FITS(BROADCAST_SCALAR)
VK_PUSH_FITS(REDUCE)
VK_PUSH_FITS(BIAS_ADD)
VK_PUSH_FITS(BIAS_GRAD)
VK_PUSH_FITS(CAST)
VK_PUSH_FITS(DROPOUT_FORWARD)
VK_PUSH_FITS(SOFTMAX)
VK_PUSH_FITS(METRICS_ACCUMULATE)
VK_PUSH_FITS(SGD_UPDATE)
VK_PUSH_FITS(COUNTER_ADD)
VK_PUSH_FITS(LOSS_SCALE)
VK_PUSH_FITS(GATHER)
VK_PUSH_FITS(POOL)
VK_PUSH_FITS(CONV_GEOMETRY)
VK_PUSH_FITS(GEMM)
VK_PUSH_FITS(GEMM_LATENCY)
VK_PUSH_FITS(GEMM_SPLITK)
VK_PUSH_FITS(GEMM_EPILOGUE_PASS)
VK_PUSH_FITS(CONV_LATENCY)
VK_PUSH_FITS(CONV_GEMM)
VK_PUSH_FITS(CONV_GEMM_PACK)
VK_PUSH_FITS(WINOGRAD_FILTER)
VK_PUSH_FITS(WINOGRAD_TILES)
VK_PUSH_FITS(WINOGRAD_OUTPUT)
VK_PUSH_FITS(CONV_POOL_FORWARD)
VK_PUSH_FITS(CONV_POOL_WEIGHT)
VK_PUSH_FITS(CONV_POOL_DATA)
VK_PUSH_FITS(CONV_POOL_CHAIN_WEIGHT)
VK_PUSH_FITS(LINEAR_HEAD)
VK_PUSH_FITS(LINEAR_HEAD_LOSS)
VK_PUSH_FITS(DEPTHWISE)
VK_PUSH_FITS(INTERPOLATE)
VK_PUSH_FITS(BROADCAST)
VK_PUSH_FITS(COMPARE)
VK_PUSH_FITS(STRIDED_COPY)
VK_PUSH_FITS(REDUCE_DIMS)
VK_PUSH_FITS(NORM)
VK_PUSH_FITS(NORM_RUNNING)
VK_PUSH_FITS(EMBEDDING)
VK_PUSH_FITS(ADAM_UPDATE)
VK_PUSH_FITS(RMSPROP_UPDATE)
VK_PUSH_FITS(LION_UPDATE)
VK_PUSH_FITS(MUON)
#undef VK_PUSH_FITS

#endif
