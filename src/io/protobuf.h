/* A minimal protocol-buffers encoder, enough to write ONNX files.
 *
 * Why hand-written rather than protobuf-c generated code: ONNX export needs
 * only the encoding side of five wire forms (varint, 64-bit two's-complement
 * varint, fixed32 float, length-delimited bytes, nested messages) for about
 * ten message types; that is ~100 lines with no build-time code generator, no
 * runtime library to install on every machine (CI and users), and no
 * generated sources to keep in step with the .proto. It is tested against the
 * encodings in the protobuf documentation and, end to end, by onnx's own
 * parser and checker in tests/python. Nested messages are built in their own
 * buffer and appended with their length (no size pre-pass); ONNX graphs are
 * small enough that the copy costs nothing. */
#ifndef NN_IO_PROTOBUF_H
#define NN_IO_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct nn_pb {
    uint8_t *data;
    size_t len, cap;
    bool failed; /* an allocation failed: the contents are incomplete */
} nn_pb;

enum { NN_PB_VARINT = 0, NN_PB_FIXED64 = 1, NN_PB_BYTES = 2, NN_PB_FIXED32 = 5 };

void nn_pb_free(nn_pb *b);
void nn_pb_raw(nn_pb *b, const void *data, size_t size);
void nn_pb_varint(nn_pb *b, uint64_t value);
void nn_pb_tag(nn_pb *b, int field, int wire_type);
/* int32/int64/enum/bool fields: negative values take 10 bytes, as protobuf says. */
void nn_pb_int(nn_pb *b, int field, int64_t value);
void nn_pb_float(nn_pb *b, int field, float value);
void nn_pb_bytes(nn_pb *b, int field, const void *data, size_t size);
void nn_pb_string(nn_pb *b, int field, const char *s);
/* `child` (a complete message) as a length-delimited field; child is not freed. */
void nn_pb_message(nn_pb *b, int field, const nn_pb *child);

#endif
