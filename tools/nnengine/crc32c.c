#include "crc32c.h"

/* Bit-reflected polynomial 0x1EDC6F41, one table lookup per byte: the logs
 * checksum a few hundred bytes per epoch. */
static uint32_t table[256];

static void build_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
}

uint32_t crc32c(const void *data, size_t size) {
    if (!table[1]) build_table();
    const uint8_t *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < size; i++) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t crc32c_masked(const void *data, size_t size) {
    uint32_t c = crc32c(data, size);
    return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}
