/* What the host offers the process: cores, memory, its name. */
#ifndef NN_PLATFORM_HOST_INFO_H
#define NN_PLATFORM_HOST_INFO_H

#include <stddef.h>
#include <stdint.h>

/* The cores online (at least 1). */
int nn_host_online_cores(void);
/* The cores this process may run on: its affinity mask (taskset, cgroups'
 * cpusets), never more than the online ones. */
int nn_host_usable_cores(void);
/* Physical memory in bytes; UINT64_MAX when it cannot be read. */
uint64_t nn_host_memory_bytes(void);
/* The machine's name into `name` ("localhost" when it cannot be read). */
void nn_host_name(char *name, size_t size);

#endif
