/* Libraries opened at run time (the Vulkan loader): dlopen on POSIX,
 * LoadLibraryW on Windows. */
#ifndef NN_PLATFORM_DYNAMIC_LIBRARY_H
#define NN_PLATFORM_DYNAMIC_LIBRARY_H

/* The library of file name `name` (searched where the system looks), or NULL. */
void *nn_library_open(const char *name);
/* Its exported function `symbol`, or NULL. */
void *nn_library_symbol(void *library, const char *symbol);

#endif
