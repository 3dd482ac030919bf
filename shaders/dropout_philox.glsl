// Philox4x32-10, word 0, exactly as src/backends/dropout_philox.h (the CPU
// reference): counter (index, draw, 0, 0), key (k0, k1).
uint philox_word(uint index, uint draw, uint k0, uint k1) {
    uint c0 = index, c1 = draw, c2 = 0u, c3 = 0u;
    for (int round = 0; round < 10; round++) {
        uint hi0, lo0, hi1, lo1;
        umulExtended(0xD2511F53u, c0, hi0, lo0);
        umulExtended(0xCD9E8D57u, c2, hi1, lo1);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c0;
}
