/* nnengine devices: every backend and device the library can see. */
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "nn_engine.h"
#include "options.h"

int command_devices(int argc, char **argv) {
    const command_spec spec = {
        "devices", "devices", "List the devices nn-engine can train on, and why any it cannot use is missing.",
        "--device auto takes the first usable GPU in this list, else the CPU.\n"
        "The last line names the MPI library for data parallelism (mpirun -n N).", 0, NULL, NULL, 0, NULL,
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
    /* Data parallelism: the MPI library, and this rank when mpirun started it. */
    int ranks = 1;
    if (!nn_dist_available()) {
        printf("%-7s -  (none)\n           not usable: this build has no MPI (install libopenmpi-dev and rebuild)\n",
               "mpi");
    } else if (nn_dist_launched(&ranks) && nn_dist_init() == NN_OK) {
        printf("%-7s -  %s (rank %d of %d, %d on this host)\n", "mpi", nn_dist_library(), nn_dist_rank(),
               nn_dist_size(), nn_dist_local_size());
        nn_dist_finalize();
    } else {
        printf("%-7s -  %s (one process: start several with mpirun -n N)\n", "mpi", nn_dist_library());
    }
    return EXIT_OK;
}
