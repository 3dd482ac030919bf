#include "aligned_memory.h"

#include <stdlib.h>
#ifdef _WIN32
#include <malloc.h>

void *nn_aligned_alloc(size_t alignment, size_t bytes) { return _aligned_malloc(bytes, alignment); }
void nn_aligned_free(void *block) { _aligned_free(block); }
#else
void *nn_aligned_alloc(size_t alignment, size_t bytes) { return aligned_alloc(alignment, bytes); }
void nn_aligned_free(void *block) { free(block); }
#endif
