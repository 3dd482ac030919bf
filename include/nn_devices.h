/* Devices: what this library can run on, and why a backend it knows of is
 * not usable here (not built in, no driver, no device). `nnengine devices`
 * prints this list; nn_ctx_new({.device = "auto"}) takes the best usable
 * hardware GPU in it (discrete, then integrated, then virtual), else the CPU;
 * a software Vulkan device (lavapipe) only when "vulkan" is asked for. */
#ifndef NN_DEVICES_H
#define NN_DEVICES_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nn_device_info {
    char backend[16]; /* "cpu", "vulkan" */
    int index;        /* index within the backend; -1 for a backend-wide entry */
    char name[128];   /* e.g. "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)" */
    char kind[32];    /* "cpu", "discrete gpu", "integrated gpu", "virtual gpu", "software" */
    char detail[192]; /* driver, API version, memory, threads */
    bool usable;      /* nn_ctx_new can open it */
    char reason[256]; /* when not usable: why (empty otherwise) */
} nn_device_info;

/* Fill out[0 .. capacity-1] and return the number of entries there are (which
 * may exceed capacity; call with capacity 0 to count). A backend that is not
 * built in or finds no device appears as one entry with usable = false and a
 * reason. Never fails: probing errors become reasons. */
int nn_list_devices(nn_device_info *out, int capacity);

#ifdef __cplusplus
}
#endif
#endif
