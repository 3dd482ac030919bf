/* Ranks agreeing on their flags (rank_flags.h): each value hashed to 32
 * bits (exact in a double), rank 0's hashes sent to every rank, and the
 * number of differing ranks summed so that all of them stop together. */
#include "rank_flags.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

/* FNV-1a: two values that differ give the same hash once in 2^32. */
static uint32_t hash_text(const char *text) {
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) h = (h ^ *p) * 16777619u;
    return h;
}

int rank_flags_agree(const dist_train *d, const rank_flag *flags, int count) {
    if (d->size <= 1) return EXIT_OK;
    double *mine = malloc(sizeof *mine * (size_t)count), *main_rank = malloc(sizeof *main_rank * (size_t)count);
    if (!mine || !main_rank) {
        free(mine), free(main_rank);
        fprintf(stderr, "nnengine train: rank %d: out of host memory\n", d->rank);
        return EXIT_FAILURE_RUNTIME;
    }
    for (int i = 0; i < count; i++) mine[i] = main_rank[i] = hash_text(flags[i].value);
    nn_status st = dist_train_from_main(d, main_rank, count);
    double differing = 0;
    for (int i = 0; st == NN_OK && i < count; i++)
        if (mine[i] != main_rank[i]) {
            fprintf(stderr, "nnengine train: rank %d was given %s %s, which differs from rank 0's: every rank needs "
                    "the same flags (only --device, --threads, --workers, the paths of --data and --resume and the output "
                    "files may differ)\n",
                    d->rank, flags[i].flag, flags[i].value);
            differing = 1;
        }
    if (st == NN_OK) st = dist_train_sum(d, &differing, 1);
    free(mine), free(main_rank);
    if (st != NN_OK) {
        fprintf(stderr, "nnengine train: rank %d: comparing the ranks' flags failed\n", d->rank);
        return EXIT_FAILURE_RUNTIME;
    }
    if (differing == 0) return EXIT_OK;
    if (d->rank == 0)
        fprintf(stderr, "nnengine train: %.0f of the %d ranks were given other flags than rank 0 (their messages "
                "name them); nothing was trained\n", differing, d->size);
    return EXIT_BAD_INPUT;
}
