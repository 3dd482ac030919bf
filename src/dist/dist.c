/* The job and the collectives on tensors (nn_dist.h), over transport.h.
 * Tensors travel through host memory: read, reduced or broadcast by MPI,
 * written back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_dist.h"
#include "transport.h"

bool nn_dist_available(void) { return dist_transport_built(); }

bool nn_dist_launched(int *size) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    int n = 1;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0] && n == 1; i++) {
        const char *value = getenv(vars[i]);
        if (value) n = atoi(value) > 1 ? atoi(value) : 1;
    }
    if (size) *size = n;
    return n > 1;
}

nn_status nn_dist_init(void) { return dist_transport_init(); }
bool nn_dist_initialized(void) { return dist_transport_ready(); }
int nn_dist_rank(void) { return dist_transport_ready() ? dist_transport_group().rank : 0; }
int nn_dist_size(void) { return dist_transport_ready() ? dist_transport_group().size : 1; }
int nn_dist_local_rank(void) { return dist_transport_ready() ? dist_transport_group().local_rank : 0; }
int nn_dist_local_size(void) { return dist_transport_ready() ? dist_transport_group().local_size : 1; }
const char *nn_dist_library(void) { return dist_transport_library(); }

static nn_status check_ready(const char *fn) {
    if (dist_transport_ready()) return NN_OK;
    return nn_set_error(NN_ERR_STATE, "%s: not in a job: call nn_dist_init first%s", fn,
                        dist_transport_built() ? "" : " (and this build of nn-engine has no MPI)");
}

static nn_status check_op(const char *fn, nn_dist_op op) {
    if (op == NN_DIST_SUM || op == NN_DIST_AVG) return NN_OK;
    return nn_set_error(NN_ERR_ARGUMENT, "%s: op must be NN_DIST_SUM (0) or NN_DIST_AVG (1), got %d", fn, (int)op);
}

nn_status nn_dist_all_reduce(nn_tensor *t, nn_dist_op op) {
    const char *fn = "nn_dist_all_reduce";
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "%s: tensor is NULL", fn);
    NN_TRY(check_op(fn, op));
    if (nn_tensor_dtype(t) != NN_F32)
        return nn_set_error(NN_ERR_DTYPE, "%s: the tensor must be float32, got int32", fn);
    NN_TRY(check_ready(fn));
    const int64_t n = nn_tensor_numel(t);
    float *host = malloc(sizeof *host * (size_t)(n > 0 ? n : 1));
    if (!host) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory for %lld floats", fn, (long long)n);
    dist_request request;
    nn_status st = nn_tensor_read(t, host, sizeof *host * (size_t)n);
    if (st == NN_OK) st = dist_all_reduce_start(host, n, &request);
    if (st == NN_OK) st = dist_all_reduce_wait(&request);
    if (st == NN_OK && op == NN_DIST_AVG) {
        const float scale = 1.0f / (float)nn_dist_size();
        for (int64_t i = 0; i < n; i++) host[i] *= scale;
    }
    if (st == NN_OK) st = nn_tensor_write(t, host, sizeof *host * (size_t)n);
    free(host);
    return st;
}

nn_status nn_dist_all_reduce_host(double *values, int64_t count, nn_dist_op op) {
    const char *fn = "nn_dist_all_reduce_host";
    if (!values || count < 0)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: values is %s and count %lld (need values and count >= 0)", fn,
                            values ? "set" : "NULL", (long long)count);
    NN_TRY(check_op(fn, op));
    NN_TRY(check_ready(fn));
    NN_TRY(dist_all_reduce_doubles(values, count));
    if (op == NN_DIST_AVG)
        for (int64_t i = 0; i < count; i++) values[i] /= (double)nn_dist_size();
    return NN_OK;
}

nn_status nn_dist_broadcast(nn_tensor *t, int root) {
    const char *fn = "nn_dist_broadcast";
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "%s: tensor is NULL", fn);
    NN_TRY(check_ready(fn));
    if (root < 0 || root >= nn_dist_size())
        return nn_set_error(NN_ERR_ARGUMENT, "%s: root %d is not a rank of this job [0, %d)", fn, root, nn_dist_size());
    const size_t bytes = (size_t)nn_tensor_numel(t) * 4; /* float32 and int32 alike */
    void *host = malloc(bytes ? bytes : 1);
    if (!host) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory for %zu bytes", fn, bytes);
    nn_status st = nn_dist_rank() == root ? nn_tensor_read(t, host, bytes) : NN_OK;
    if (st == NN_OK) st = dist_broadcast_bytes(host, bytes, root);
    if (st == NN_OK && nn_dist_rank() != root) st = nn_tensor_write(t, host, bytes);
    free(host);
    return st;
}

nn_status nn_dist_broadcast_module(nn_module *m, int root) {
    if (!m) return nn_set_error(NN_ERR_ARGUMENT, "nn_dist_broadcast_module: module is NULL");
    NN_TRY(check_ready("nn_dist_broadcast_module"));
    const int count = nn_module_state_count(m);
    /* The same module on every rank: checked by the number of tensors first,
     * so a mismatch fails here instead of as a garbled broadcast. */
    double counts[2] = {count, nn_dist_rank() == root ? count : 0};
    NN_TRY(dist_all_reduce_doubles(counts, 2));
    if (counts[0] != (double)count * nn_dist_size() || counts[1] != count)
        return nn_set_error(NN_ERR_STATE, "nn_dist_broadcast_module: the ranks' modules differ: this rank (%d) has %d "
                            "state tensors, rank %d %.0f, and the %d ranks %.0f in all: every rank must build the "
                            "same model", nn_dist_rank(), count, root, counts[1], nn_dist_size(), counts[0]);
    for (int i = 0; i < count; i++) {
        nn_status st = nn_dist_broadcast(nn_module_state(m, i), root);
        if (st != NN_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", nn_last_error());
            return nn_set_error(st, "nn_dist_broadcast_module: %s: %s", nn_module_state_name(m, i), why);
        }
    }
    return NN_OK;
}

nn_status nn_dist_barrier(void) {
    NN_TRY(check_ready("nn_dist_barrier"));
    return dist_transport_barrier();
}

void nn_dist_abort(int code) { dist_transport_abort(code); }
nn_status nn_dist_finalize(void) { return dist_transport_finalize(); }
