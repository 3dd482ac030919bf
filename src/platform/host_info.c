#include "host_info.h"

#include <stdio.h>

#ifdef _WIN32
#include <windows.h>

int nn_host_online_cores(void) {
    DWORD cores = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return cores > 0 ? (int)cores : 1;
}

int nn_host_usable_cores(void) {
    DWORD_PTR process_mask, system_mask;
    int online = nn_host_online_cores();
    if (!GetProcessAffinityMask(GetCurrentProcess(), &process_mask, &system_mask) || !process_mask) return online;
    int allowed = __builtin_popcountll((unsigned long long)process_mask);
    return allowed < online ? allowed : online;
}

uint64_t nn_host_memory_bytes(void) {
    MEMORYSTATUSEX status = {.dwLength = sizeof status};
    return GlobalMemoryStatusEx(&status) ? (uint64_t)status.ullTotalPhys : UINT64_MAX;
}

void nn_host_name(char *name, size_t size) {
    DWORD length = (DWORD)size;
    if (!size) return;
    if (!GetComputerNameA(name, &length)) snprintf(name, size, "localhost");
}
#else
#include <sched.h>
#include <string.h>
#include <unistd.h>

int nn_host_online_cores(void) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

int nn_host_usable_cores(void) {
    int cores = nn_host_online_cores();
    cpu_set_t set;
    int allowed = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    if (allowed > 0 && allowed < cores) cores = allowed;
    return cores;
}

uint64_t nn_host_memory_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
}

void nn_host_name(char *name, size_t size) {
    if (!size) return;
    if (gethostname(name, size - 1) != 0) snprintf(name, size, "localhost");
    name[size - 1] = '\0';
}
#endif
