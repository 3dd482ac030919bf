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
/* The struct's size is checked where it is dispatched: a block over
 * VK_PUSH_BYTES fails to compile at its VK_PUSH_REF (every dispatched block,
 * with no list to keep). */
#define VK_PUSH_REF(push)                                                  \
    ((void)sizeof(char[sizeof(push) <= VK_PUSH_BYTES ? 1 : -1]),           \
     (vk_push_ref){&(push), sizeof(push), (uint32_t)(sizeof (push).off / sizeof (push).off[0])})

#endif
