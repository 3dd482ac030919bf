/* The registry of kernels written outside the library (custom_kernels.h). */
#include "custom_kernels.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/names.h"
#include "kernels.h"

#define MAX_KERNELS 4096 /* per process; ids are never reused */

static _Atomic(nn_custom_kernel *) kKernels[MAX_KERNELS];
static atomic_int kNextId;

_Static_assert(sizeof(((nn_custom_params *)0)->params) == NN_CUSTOM_MAX_PARAMS,
               "nn_custom_params holds a call's parameters");

const nn_custom_kernel *nn_custom_kernel_find(int32_t id) {
    return id >= 0 && id < MAX_KERNELS ? atomic_load(&kKernels[id]) : NULL;
}

static nn_status check_name(const char *name) {
    if (!name || !*name) return nn_set_error(NN_ERR_ARGUMENT, "nn_custom_kernel_new: the kernel has no name");
    size_t n = strlen(name);
    if (n >= sizeof(((nn_custom_kernel *)0)->name))
        return nn_set_error(NN_ERR_ARGUMENT, "nn_custom_kernel_new: name '%.40s...' is longer than %zu characters",
                            name, sizeof(((nn_custom_kernel *)0)->name) - 1);
    const char bad = nn_name_bad_char(name);
    if (bad)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_custom_kernel_new: name '%s' has '%c'; use letters, digits "
                            "and '_'", name, bad);
    return NN_OK;
}

static nn_status check_local_size(const char *name, const uint32_t local[3]) {
    uint64_t total = (uint64_t)local[0] * local[1] * local[2];
    if (!local[0] || !local[1] || !local[2] || total > 1024)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_custom_kernel_new %s: local_size %u x %u x %u; each must be >= 1 "
                            "and their product at most 1024", name, local[0], local[1], local[2]);
    return NN_OK;
}

static nn_status fill_code(nn_custom_kernel *k, const nn_custom_kernel_desc *d) {
    if (d->glsl && d->spirv)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_custom_kernel_new %s: give glsl or spirv, not both", k->name);
    if (d->glsl) {
        NN_TRY(nn_custom_compile_glsl(k->name, d->glsl, k->local_size, &k->spirv, &k->spirv_bytes));
        return nn_custom_check_spirv(k->name, k->spirv, k->spirv_bytes, k->local_size);
    }
    if (!d->spirv) return NN_OK;
    NN_TRY(nn_custom_check_spirv(k->name, d->spirv, d->spirv_bytes, k->local_size));
    k->spirv = malloc(d->spirv_bytes);
    if (!k->spirv) return nn_set_error(NN_ERR_MEMORY, "nn_custom_kernel_new %s: out of memory", k->name);
    memcpy(k->spirv, d->spirv, d->spirv_bytes);
    k->spirv_bytes = d->spirv_bytes;
    return NN_OK;
}

nn_custom_kernel *nn_custom_kernel_new(const nn_custom_kernel_desc *desc) {
    if (!desc) {
        nn_set_error(NN_ERR_ARGUMENT, "nn_custom_kernel_new: desc is NULL");
        return NULL;
    }
    if (check_name(desc->name) != NN_OK) return NULL;
    if (!desc->cpu && !desc->glsl && !desc->spirv) {
        nn_set_error(NN_ERR_ARGUMENT, "nn_custom_kernel_new %s: no code (cpu, glsl or spirv)", desc->name);
        return NULL;
    }
    nn_custom_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        nn_set_error(NN_ERR_MEMORY, "nn_custom_kernel_new %s: out of memory", desc->name);
        return NULL;
    }
    snprintf(k->name, sizeof k->name, "%s", desc->name);
    k->cpu = desc->cpu;
    k->cpu_user = desc->cpu_user;
    k->not_capturable = desc->not_capturable;
    bool defaults = !desc->local_size[0] && !desc->local_size[1] && !desc->local_size[2];
    const uint32_t fallback[3] = {256, 1, 1};
    memcpy(k->local_size, defaults ? fallback : desc->local_size, sizeof k->local_size);
    nn_status st = check_local_size(k->name, k->local_size);
    if (st == NN_OK) st = fill_code(k, desc);
    if (st == NN_OK) {
        int id = atomic_fetch_add(&kNextId, 1);
        if (id >= MAX_KERNELS)
            st = nn_set_error(NN_ERR_STATE, "nn_custom_kernel_new %s: a process makes at most %d custom kernels",
                              k->name, MAX_KERNELS);
        else {
            k->id = id;
            atomic_store(&kKernels[id], k);
            return k;
        }
    }
    free(k->spirv);
    free(k);
    return NULL;
}

void nn_custom_kernel_free(nn_custom_kernel *kernel) {
    if (!kernel) return;
    atomic_store(&kKernels[kernel->id], NULL);
    free(kernel->spirv);
    free(kernel);
}

const char *nn_custom_kernel_name(const nn_custom_kernel *kernel) { return kernel ? kernel->name : NULL; }
