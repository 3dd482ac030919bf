/* A bounded protocol-buffers decoder, the reading side of protobuf.h, enough
 * to read ONNX files (onnx_read.c). Every read checks the bytes left: a
 * truncated or malformed message ends the walk with `failed` set and a
 * reason, never a read past the buffer. */
#ifndef NN_IO_PROTOBUF_READ_H
#define NN_IO_PROTOBUF_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct nn_pb_reader {
    const uint8_t *p, *end;
    const char *failed; /* NULL while the message reads well, else why it does not */
} nn_pb_reader;

/* One field of a message: its number, wire type and value. A varint's or a
 * fixed-size field's value is in `number` (fixed32 in its low 32 bits); a
 * length-delimited one's bytes are `data`, `size` long (a nested reader:
 * nn_pb_sub). */
typedef struct nn_pb_field {
    int field, wire;
    uint64_t number;
    const uint8_t *data;
    size_t size;
} nn_pb_field;

nn_pb_reader nn_pb_reader_of(const void *data, size_t size);
/* The next field into *f: false at the end of the message or on a malformed
 * one (then r->failed says why). Groups (wire types 3 and 4, deprecated) are
 * refused. */
bool nn_pb_next(nn_pb_reader *r, nn_pb_field *f);
/* A reader over a length-delimited field's bytes. */
nn_pb_reader nn_pb_sub(const nn_pb_field *f);
/* f's bytes as a new NUL-terminated string (NULL: out of memory; bytes
 * holding a NUL are cut there). */
char *nn_pb_strdup(const nn_pb_field *f);

/* Repeated scalars arrive one per field or packed into one length-delimited
 * field. These append f's values to *values (grown with realloc; *count
 * values so far); false on a malformed packing or out of memory, with
 * r->failed set. */
bool nn_pb_append_varints(nn_pb_reader *r, const nn_pb_field *f, int64_t **values, int64_t *count);
bool nn_pb_append_floats(nn_pb_reader *r, const nn_pb_field *f, float **values, int64_t *count);

#endif
