/* Averaging gradients through the memory of one host (data_parallel.c's
 * route when every rank is on one host): an MPI shared window with a piece
 * per rank, which every rank's device uses in place. */
#ifndef NN_DIST_SHARED_MEMORY_ROUTE_H
#define NN_DIST_SHARED_MEMORY_ROUTE_H

#include <stddef.h>

#include "base/error.h"
#include "optim/param_set.h"

typedef struct shared_route shared_route;

/* Opens the route for the flat gradients of `set`, or leaves *route NULL
 * and says why not in `why`. Collective: every rank takes the same route. */
nn_status shared_route_open(const nn_param_set *set, shared_route **route, char *why, size_t why_size);
/* Before each update (the optimizer's gradient hook): the rest of the
 * average (what backward did not start), after the ranks meet in a host
 * call of the step (nn_capture_host_call). */
nn_status shared_route_before_update(shared_route *route);
/* The average with every bucket copied at the end: for a step whose
 * backward ran before the route was open. */
nn_status shared_route_average_all(shared_route *route);
void shared_route_free(shared_route *route);

#endif
