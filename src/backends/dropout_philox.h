/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC 2011): a counter-based generator, so element i of draw d gets its
 * random word from (seed, d, i) alone, in any order, on any device. The
 * shader shaders/dropout_philox.glsl is the same function line for line;
 * the CPU and Vulkan masks are bit-identical (tests/test_dropout.c). */
#ifndef NN_DROPOUT_PHILOX_H
#define NN_DROPOUT_PHILOX_H

#include <stdint.h>

/* Word 0 of philox4x32_10(counter = (index, draw, 0, 0), key = (k0, k1)). */
static inline uint32_t nn_philox_word(uint32_t index, uint32_t draw, uint32_t k0, uint32_t k1) {
    uint32_t c0 = index, c1 = draw, c2 = 0, c3 = 0;
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c0;
}

#endif
