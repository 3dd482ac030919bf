/* nnengine devices: every backend and device the library can see. */
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "nn_engine.h"
#include "options.h"

int command_devices(int argc, char **argv) {
    const command_spec spec = {
        "devices", "devices", "List the devices nn-engine can train on, and why any it cannot use is missing.",
        "--device auto takes the first usable GPU in this list, else the CPU.", 0, NULL, NULL, 0, NULL,
    };
    int status;
    if (options_parse_or_help(&spec, argc, argv, &status)) return status;
    int count = nn_list_devices(NULL, 0);
    nn_device_info *devices = calloc((size_t)count, sizeof *devices);
    if (!devices) {
        fprintf(stderr, "nnengine devices: out of host memory\n");
        return EXIT_FAILURE_RUNTIME;
    }
    count = nn_list_devices(devices, count);
    for (int i = 0; i < count; i++) {
        const nn_device_info *d = &devices[i];
        if (d->index >= 0)
            printf("%-7s %d  %-40s %-15s %s\n", d->backend, d->index, d->name, d->kind, d->detail);
        else
            printf("%-7s -  %s\n", d->backend, d->usable ? d->name : "(none)");
        if (!d->usable) printf("           not usable: %s\n", d->reason);
    }
    free(devices);
    return EXIT_OK;
}
