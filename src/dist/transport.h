/* The one place that calls MPI (transport.c): the process group, reductions
 * of host arrays and broadcasts of host bytes. The rest of src/dist/ works
 * on tensors through it, so a build without MPI differs in this file only:
 * there dist_transport_init says the build has no MPI and nothing else is
 * reached. Every function but init expects dist_transport_ready(). */
#ifndef NN_DIST_TRANSPORT_H
#define NN_DIST_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct dist_group {
    int rank, size;             /* in the world */
    int local_rank, local_size; /* among the ranks of this host */
} dist_group;

/* A reduction in flight (dist_all_reduce_start); at most this many at once. */
#define DIST_MAX_IN_FLIGHT 64
typedef struct dist_request {
    int slot; /* -1: none */
} dist_request;

bool dist_transport_built(void);
/* Joins the job (MPI_Init_thread, once; later calls return NN_OK). */
nn_status dist_transport_init(void);
bool dist_transport_ready(void);
dist_group dist_transport_group(void);
/* "Open MPI v4.1.4, ..." (the first line), or why there is none. */
const char *dist_transport_library(void);
/* Sums floats (in place) over the ranks, started now and finished by
 * dist_all_reduce_wait: the caller may do other work in between. */
nn_status dist_all_reduce_start(float *values, int64_t count, dist_request *request);
nn_status dist_all_reduce_wait(dist_request *request);
/* Sums doubles (in place) over the ranks, finished on return. */
nn_status dist_all_reduce_doubles(double *values, int64_t count);
/* The ranks' largest values, in place. */
nn_status dist_max_doubles(double *values, int count);
/* Rank root's bytes to every rank. */
nn_status dist_broadcast_bytes(void *bytes, size_t count, int root);
nn_status dist_transport_barrier(void);

/* Memory every rank of this host maps (MPI_Win_allocate_shared): a piece of
 * piece_bytes per local rank, each piece's address a multiple of `align`
 * (at most a page). Collective over the host's ranks, which must all ask
 * for the same sizes. */
typedef struct dist_shared_memory {
    void *window; /* the MPI_Win */
    char **pieces; /* pieces[r]: local rank r's */
    size_t piece_bytes;
    int count;
} dist_shared_memory;
nn_status dist_shared_memory_new(size_t piece_bytes, size_t align, dist_shared_memory **out);
void dist_shared_memory_free(dist_shared_memory *memory);
/* Waits until every rank of this host has called it. */
nn_status dist_local_barrier(void);

void dist_transport_abort(int code);
nn_status dist_transport_finalize(void);

#endif
