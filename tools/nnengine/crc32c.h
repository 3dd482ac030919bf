/* CRC-32C (Castagnoli), the checksum of TensorFlow's record files. */
#ifndef NNENGINE_CRC32C_H
#define NNENGINE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(const void *data, size_t size);
/* The record format's "masked" CRC: rotated and offset, so that a CRC of
 * data holding CRCs is not a trivial one. */
uint32_t crc32c_masked(const void *data, size_t size);

#endif
