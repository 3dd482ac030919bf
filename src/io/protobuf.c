#include "protobuf.h"

#include <stdlib.h>
#include <string.h>

void nn_pb_free(nn_pb *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

void nn_pb_raw(nn_pb *b, const void *data, size_t size) {
    if (b->failed || size == 0) return;
    if (size > SIZE_MAX / 2 - b->len) {
        b->failed = true;
        return;
    }
    if (b->len + size > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + size) cap *= 2;
        uint8_t *grown = realloc(b->data, cap);
        if (!grown) {
            b->failed = true;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, size);
    b->len += size;
}

void nn_pb_varint(nn_pb *b, uint64_t value) {
    uint8_t bytes[10];
    size_t n = 0;
    do {
        bytes[n] = (uint8_t)(value & 0x7F);
        value >>= 7;
        if (value) bytes[n] |= 0x80;
        n++;
    } while (value);
    nn_pb_raw(b, bytes, n);
}

void nn_pb_tag(nn_pb *b, int field, int wire_type) {
    nn_pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wire_type);
}

void nn_pb_int(nn_pb *b, int field, int64_t value) {
    nn_pb_tag(b, field, NN_PB_VARINT);
    nn_pb_varint(b, (uint64_t)value);
}

void nn_pb_float(nn_pb *b, int field, float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    uint8_t le[4] = {(uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16), (uint8_t)(bits >> 24)};
    nn_pb_tag(b, field, NN_PB_FIXED32);
    nn_pb_raw(b, le, 4);
}

void nn_pb_bytes(nn_pb *b, int field, const void *data, size_t size) {
    nn_pb_tag(b, field, NN_PB_BYTES);
    nn_pb_varint(b, size);
    nn_pb_raw(b, data, size);
}

void nn_pb_string(nn_pb *b, int field, const char *s) { nn_pb_bytes(b, field, s, strlen(s)); }

void nn_pb_message(nn_pb *b, int field, const nn_pb *child) {
    if (child->failed) b->failed = true;
    nn_pb_bytes(b, field, child->data, child->len);
}
