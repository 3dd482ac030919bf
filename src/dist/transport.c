/* The MPI calls of src/dist/ (transport.h). Errors return (MPI_ERRORS_RETURN)
 * and become the library's messages, naming the call and MPI's reason;
 * a rank that dies makes mpirun end the job. */
#include "transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef NN_WITH_MPI
#include <mpi.h>

static struct {
    bool ready;
    dist_group group;
    MPI_Comm local; /* this host's ranks */
    char library[256];
    MPI_Request requests[DIST_MAX_IN_FLIGHT];
    bool used[DIST_MAX_IN_FLIGHT];
} g_mpi;

/* MPI counts are int: longer arrays go in pieces of this many. */
#define DIST_MAX_COUNT ((int64_t)1 << 30)

static nn_status mpi_failed(const char *call, int code) {
    char reason[MPI_MAX_ERROR_STRING] = "";
    int length = 0;
    MPI_Error_string(code, reason, &length);
    return nn_set_error(NN_ERR_IO, "%s failed on rank %d of %d: %s", call, g_mpi.group.rank, g_mpi.group.size,
                        reason);
}

#define MPI_TRY(call, expr)                                 \
    do {                                                    \
        int mpi_code_ = (expr);                             \
        if (mpi_code_ != MPI_SUCCESS) return mpi_failed(call, mpi_code_); \
    } while (0)

bool dist_transport_built(void) { return true; }

nn_status dist_transport_init(void) {
    if (g_mpi.ready) return NN_OK;
    int initialized = 0, provided = 0;
    MPI_Initialized(&initialized);
    /* Serialized: one thread calls MPI at a time (a context's own rule, and
     * Python's lock), not necessarily the one that initialised it. */
    if (!initialized && MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return nn_set_error(NN_ERR_IO, "nn_dist_init: MPI_Init_thread failed (is this process started by mpirun?)");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_mpi.group.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_mpi.group.size);
    MPI_TRY("MPI_Comm_split_type", MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_mpi.group.rank,
                                                       MPI_INFO_NULL, &g_mpi.local));
    MPI_Comm_set_errhandler(g_mpi.local, MPI_ERRORS_RETURN);
    MPI_Comm_rank(g_mpi.local, &g_mpi.group.local_rank);
    MPI_Comm_size(g_mpi.local, &g_mpi.group.local_size);
    g_mpi.ready = true;
    return NN_OK;
}

bool dist_transport_ready(void) { return g_mpi.ready; }
dist_group dist_transport_group(void) { return g_mpi.group; }
/* MPI_Get_library_version is one of the calls allowed before MPI_Init. */
const char *dist_transport_library(void) {
    if (!g_mpi.library[0]) {
        char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
        int length = 0;
        MPI_Get_library_version(version, &length);
        version[strcspn(version, "\n")] = '\0';
        snprintf(g_mpi.library, sizeof g_mpi.library, "%s", version);
    }
    return g_mpi.library;
}

nn_status dist_all_reduce_start(float *values, int64_t count, dist_request *request) {
    request->slot = -1;
    if (count > DIST_MAX_COUNT)
        return nn_set_error(NN_ERR_ARGUMENT, "dist_all_reduce_start: %lld values in one reduction exceed %lld",
                            (long long)count, (long long)DIST_MAX_COUNT);
    int slot = 0;
    while (slot < DIST_MAX_IN_FLIGHT && g_mpi.used[slot]) slot++;
    if (slot == DIST_MAX_IN_FLIGHT)
        return nn_set_error(NN_ERR_STATE, "dist_all_reduce_start: %d reductions already in flight", DIST_MAX_IN_FLIGHT);
    MPI_TRY("MPI_Iallreduce", MPI_Iallreduce(MPI_IN_PLACE, values, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                                             &g_mpi.requests[slot]));
    g_mpi.used[slot] = true;
    request->slot = slot;
    return NN_OK;
}

nn_status dist_all_reduce_wait(dist_request *request) {
    if (request->slot < 0) return NN_OK;
    int slot = request->slot;
    request->slot = -1;
    g_mpi.used[slot] = false;
    MPI_TRY("MPI_Wait (all-reduce)", MPI_Wait(&g_mpi.requests[slot], MPI_STATUS_IGNORE));
    return NN_OK;
}

nn_status dist_all_reduce_doubles(double *values, int64_t count) {
    for (int64_t at = 0; at < count; at += DIST_MAX_COUNT) {
        int n = (int)(count - at < DIST_MAX_COUNT ? count - at : DIST_MAX_COUNT);
        MPI_TRY("MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, values + at, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    }
    return NN_OK;
}

nn_status dist_max_doubles(double *values, int count) {
    MPI_TRY("MPI_Allreduce (max)", MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return NN_OK;
}

nn_status dist_broadcast_bytes(void *bytes, size_t count, int root) {
    for (size_t at = 0; at < count; at += (size_t)DIST_MAX_COUNT) {
        int n = (int)(count - at < (size_t)DIST_MAX_COUNT ? count - at : (size_t)DIST_MAX_COUNT);
        MPI_TRY("MPI_Bcast", MPI_Bcast((char *)bytes + at, n, MPI_BYTE, root, MPI_COMM_WORLD));
    }
    return NN_OK;
}

nn_status dist_transport_barrier(void) {
    MPI_TRY("MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD));
    return NN_OK;
}

nn_status dist_shared_memory_new(size_t piece_bytes, size_t align, dist_shared_memory **out) {
    *out = NULL;
    if (align == 0 || piece_bytes % align != 0)
        return nn_set_error(NN_ERR_ARGUMENT, "dist_shared_memory_new: %zu bytes per rank are not a multiple of %zu",
                            piece_bytes, align);
    dist_shared_memory *m = calloc(1, sizeof *m);
    char **pieces = calloc((size_t)g_mpi.group.local_size, sizeof *pieces);
    MPI_Win *window = malloc(sizeof *window);
    if (!m || !pieces || !window) {
        free(m);
        free(pieces);
        free(window);
        return nn_set_error(NN_ERR_MEMORY, "dist_shared_memory_new: out of host memory");
    }
    /* MPI places the pieces at any byte; each process maps the window at a
     * page boundary, so a page boundary inside a piece is one in every
     * process, and a piece one alignment longer holds an aligned one. */
    const long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || align > (size_t)page) {
        free(m);
        free(pieces);
        free(window);
        return nn_set_error(NN_ERR_ARGUMENT, "dist_shared_memory_new: an alignment of %zu bytes is more than a page "
                            "(%ld bytes), which the processes' mappings do not share", align, page);
    }
    void *mine = NULL;
    int code = MPI_Win_allocate_shared((MPI_Aint)(piece_bytes + align), 1, MPI_INFO_NULL, g_mpi.local, &mine, window);
    if (code != MPI_SUCCESS) {
        free(m);
        free(pieces);
        free(window);
        return mpi_failed("MPI_Win_allocate_shared", code);
    }
    for (int r = 0; code == MPI_SUCCESS && r < g_mpi.group.local_size; r++) {
        MPI_Aint size = 0;
        int unit = 0;
        char *raw = NULL;
        code = MPI_Win_shared_query(*window, r, &size, &unit, &raw);
        pieces[r] = raw + (align - (uintptr_t)raw % align) % align;
    }
    m->window = window;
    m->pieces = pieces;
    m->piece_bytes = piece_bytes;
    m->count = g_mpi.group.local_size;
    if (code != MPI_SUCCESS) {
        dist_shared_memory_free(m);
        return mpi_failed("MPI_Win_shared_query", code);
    }
    *out = m;
    return NN_OK;
}

void dist_shared_memory_free(dist_shared_memory *m) {
    if (!m) return;
    /* After MPI_Finalize the window is gone with the job. */
    if (g_mpi.ready) MPI_Win_free((MPI_Win *)m->window);
    free(m->window);
    free(m->pieces);
    free(m);
}

nn_status dist_local_barrier(void) {
    MPI_TRY("MPI_Barrier (this host's ranks)", MPI_Barrier(g_mpi.local));
    return NN_OK;
}

void dist_transport_abort(int code) {
    if (g_mpi.ready) MPI_Abort(MPI_COMM_WORLD, code);
}

nn_status dist_transport_finalize(void) {
    if (!g_mpi.ready) return NN_OK;
    g_mpi.ready = false;
    MPI_Comm_free(&g_mpi.local);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_TRY("MPI_Finalize", MPI_Finalize());
    return NN_OK;
}

#else /* built without MPI: nothing joins a job */

bool dist_transport_built(void) { return false; }

nn_status dist_transport_init(void) {
    return nn_set_error(NN_ERR_STATE, "nn_dist_init: this build of nn-engine has no MPI (pkg-config found no ompi-c "
                                      "when it was built): install libopenmpi-dev and rebuild (make MPI=1)");
}

bool dist_transport_ready(void) { return false; }
dist_group dist_transport_group(void) { return (dist_group){0, 1, 0, 1}; }
const char *dist_transport_library(void) { return "none (built without MPI)"; }

static nn_status not_built(const char *fn) {
    return nn_set_error(NN_ERR_STATE, "%s: this build of nn-engine has no MPI", fn);
}

nn_status dist_all_reduce_start(float *values, int64_t count, dist_request *request) {
    request->slot = -1;
    return not_built("dist_all_reduce_start");
}
nn_status dist_all_reduce_wait(dist_request *request) { return NN_OK; }
nn_status dist_all_reduce_doubles(double *values, int64_t count) { return not_built("dist_all_reduce_doubles"); }
nn_status dist_max_doubles(double *values, int count) { return not_built("dist_max_doubles"); }
nn_status dist_broadcast_bytes(void *bytes, size_t count, int root) { return not_built("dist_broadcast_bytes"); }
nn_status dist_transport_barrier(void) { return not_built("dist_transport_barrier"); }
nn_status dist_shared_memory_new(size_t piece_bytes, size_t align, dist_shared_memory **out) {
    *out = NULL;
    return not_built("dist_shared_memory_new");
}
void dist_shared_memory_free(dist_shared_memory *memory) {}
nn_status dist_local_barrier(void) { return not_built("dist_local_barrier"); }
void dist_transport_abort(int code) {}
nn_status dist_transport_finalize(void) { return NN_OK; }

#endif
