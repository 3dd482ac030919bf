/* The context's random generator: PCG32 (O'Neill), small, fast and with
 * reproducible streams from a 64-bit seed. */
#ifndef NN_RNG_H
#define NN_RNG_H

#include <stdint.h>

typedef struct nn_rng {
    uint64_t state;
    uint64_t increment;
} nn_rng;

void nn_rng_seed(nn_rng *rng, uint64_t seed);
uint32_t nn_rng_next_u32(nn_rng *rng);
/* Uniform in [0, 1) with 24 random bits (every float32 value equally spaced). */
float nn_rng_uniform(nn_rng *rng);

#endif
