/* The context's random generator: PCG32 (O'Neill), small, fast and with
 * reproducible streams from a 64-bit seed. */
#ifndef NN_RNG_H
#define NN_RNG_H

#include <stdint.h>

typedef struct nn_rng {
    uint64_t state;
    uint64_t increment;
    /* A number unique to each nn_rng_seed / nn_rng_set_state call in the
     * process: dropout (ops/dropout.c) restarts its draw counter and key when
     * the context's generator was reseeded since its last draw. */
    uint64_t generation;
} nn_rng;

void nn_rng_seed(nn_rng *rng, uint64_t seed);
/* Restore a saved state (a checkpoint's); a new generation as for a seed. */
void nn_rng_set_state(nn_rng *rng, uint64_t state, uint64_t increment);
uint32_t nn_rng_next_u32(nn_rng *rng);
/* Uniform in [0, 1) with 24 random bits (every float32 value equally spaced). */
float nn_rng_uniform(nn_rng *rng);

#endif
