/* A small protobuf decoder for tests: written separately from the encoder
 * (src/io/protobuf.c) so each checks the other. */
#ifndef NN_PB_DECODE_H
#define NN_PB_DECODE_H

#include <stddef.h>
#include <stdint.h>

typedef struct pb_field {
    int number, wire;
    uint64_t value;       /* varint, fixed32, fixed64 */
    const uint8_t *data;  /* length-delimited */
    size_t size;
} pb_field;

/* Decode one field at *pos; returns 0 at the end, -1 on malformed input. */
int pb_next(const uint8_t *buf, size_t len, size_t *pos, pb_field *f);
/* Number of fields with this number in a message (-1 if malformed). */
int pb_count(const uint8_t *buf, size_t len, int number);
/* The k-th field with this number; 0 if found. */
int pb_get(const uint8_t *buf, size_t len, int number, int k, pb_field *f);
/* The k-th string field with this number compared with s (1 = equal). */
int pb_string_is(const uint8_t *buf, size_t len, int number, int k, const char *s);

#endif
