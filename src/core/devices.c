/* The device list: every backend's entries in the registry's order (the
 * CPU first), then one for each backend this build left out, so
 * `nnengine devices` can say why there is no GPU. */
#include <string.h>

#include "backends/registry.h"
#include "nn_devices.h"

typedef struct device_list {
    nn_device_info *out;
    int capacity, count;
} device_list;

static void add_to_list(void *ctx, const nn_device_info *info) {
    device_list *list = ctx;
    if (list->count < list->capacity) list->out[list->count] = *info;
    list->count++;
}

int nn_list_devices(nn_device_info *out, int capacity) {
    device_list list = {out, out ? capacity : 0, 0};
    int count;
    const nn_backend_provider *const *providers = nn_backend_providers(&count);
    for (int i = 0; i < count; i++) providers[i]->list_devices(add_to_list, &list);
    nn_backend_list_left_out(add_to_list, &list);
    return list.count;
}
