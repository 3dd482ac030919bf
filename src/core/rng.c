#include "rng.h"

#include <stdatomic.h>

static atomic_uint_fast64_t generations;

static uint64_t next_generation(void) { return (uint64_t)atomic_fetch_add(&generations, 1) + 1; }

uint32_t nn_rng_next_u32(nn_rng *rng) {
    uint64_t old = rng->state;
    rng->state = old * 6364136223846793005ULL + rng->increment;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
}

void nn_rng_seed(nn_rng *rng, uint64_t seed) {
    /* The reference seeding procedure of pcg32_srandom_r, stream 54. */
    rng->state = 0;
    rng->increment = (54u << 1u) | 1u;
    nn_rng_next_u32(rng);
    rng->state += seed;
    nn_rng_next_u32(rng);
    rng->generation = next_generation();
}

void nn_rng_set_state(nn_rng *rng, uint64_t state, uint64_t increment) {
    rng->state = state;
    rng->increment = increment;
    rng->generation = next_generation();
}

float nn_rng_uniform(nn_rng *rng) { return (float)(nn_rng_next_u32(rng) >> 8) * (1.0f / 16777216.0f); }
