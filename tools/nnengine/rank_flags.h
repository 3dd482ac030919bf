/* Under mpirun every rank parses its own command line; ranks given
 * different --batch or --epochs hang at a collective, and different --lr
 * or --seed train silently diverging replicas (issue 40, item 9). Rank 0's
 * flags are the run's: every rank compares its own with them, a rank that
 * differs names the flag, and every rank refuses together. */
#ifndef NNENGINE_RANK_FLAGS_H
#define NNENGINE_RANK_FLAGS_H

#include "dist_train.h"

/* A flag that must agree, and its value as this rank parsed it. */
typedef struct rank_flag {
    const char *flag;
    char value[96];
} rank_flag;

/* EXIT_OK when every rank's values equal rank 0's (or there is no job);
 * else EXIT_BAD_INPUT on every rank, the differing ranks having named their
 * flags. A collective: every rank calls it with the same flags in order. */
int rank_flags_agree(const dist_train *d, const rank_flag *flags, int count);

#endif
