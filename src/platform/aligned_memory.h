/* Aligned host allocations: C11's aligned_alloc, which the Windows C runtime
 * lacks (it has _aligned_malloc, whose blocks need _aligned_free). */
#ifndef NN_PLATFORM_ALIGNED_MEMORY_H
#define NN_PLATFORM_ALIGNED_MEMORY_H

#include <stddef.h>

/* `bytes` must be a multiple of `alignment` (a power of two); NULL when out of memory. */
void *nn_aligned_alloc(size_t alignment, size_t bytes);
/* Frees a block of nn_aligned_alloc; NULL is ignored. */
void nn_aligned_free(void *block);

#endif
