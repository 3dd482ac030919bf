/* The protobuf encoder behind ONNX export: byte-exact against the examples
 * of the protobuf encoding guide, and a random round trip through an
 * independent decoder (tests/pb_decode.c). */
#include <stdlib.h>
#include <string.h>

#include "io/protobuf.h"
#include "pb_decode.h"
#include "test.h"

static int bytes_are(const nn_pb *b, const uint8_t *want, size_t n) {
    return !b->failed && b->len == n && memcmp(b->data, want, n) == 0;
}

TEST(protobuf_matches_documented_encodings) {
    nn_pb b = {0};
    nn_pb_int(&b, 1, 150); /* "a = 150" of the encoding guide */
    CHECK(bytes_are(&b, (const uint8_t[]){0x08, 0x96, 0x01}, 3));
    nn_pb_free(&b);

    nn_pb_string(&b, 2, "testing");
    CHECK(bytes_are(&b, (const uint8_t[]){0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'}, 9));
    nn_pb_free(&b);

    nn_pb child = {0};
    nn_pb_int(&child, 1, 150);
    nn_pb_message(&b, 3, &child);
    CHECK(bytes_are(&b, (const uint8_t[]){0x1a, 0x03, 0x08, 0x96, 0x01}, 5));
    nn_pb_free(&b);
    nn_pb_free(&child);

    nn_pb_int(&b, 1, -2); /* int64 -2: ten bytes of two's complement */
    CHECK(bytes_are(&b, (const uint8_t[]){0x08, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 11));
    nn_pb_free(&b);

    nn_pb_float(&b, 2, 1.5f);
    CHECK(bytes_are(&b, (const uint8_t[]){0x15, 0x00, 0x00, 0xc0, 0x3f}, 5));
    nn_pb_free(&b);

    nn_pb_int(&b, 20, 0); /* a field number above 15 takes a two-byte key */
    CHECK(bytes_are(&b, (const uint8_t[]){0xa0, 0x01, 0x00}, 3));
    nn_pb_free(&b);

    nn_pb_bytes(&b, 9, NULL, 0);
    CHECK(bytes_are(&b, (const uint8_t[]){0x4a, 0x00}, 2));
    nn_pb_free(&b);
}

static uint64_t xorshift(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

TEST(protobuf_random_round_trip) {
    uint64_t s = 0x1234567;
    for (int round = 0; round < 200; round++) {
        enum { MAX = 37 };
        int numbers[MAX], kinds[MAX], count = 1 + (int)(xorshift(&s) % MAX);
        uint64_t values[MAX];
        uint8_t payloads[MAX][300];
        size_t sizes[MAX];
        nn_pb b = {0};
        for (int i = 0; i < count; i++) {
            numbers[i] = 1 + (int)(xorshift(&s) % ((1u << 29) - 1));
            kinds[i] = (int)(xorshift(&s) % 3);
            /* Varints of every length: shift a random value right by 0..63. */
            values[i] = xorshift(&s) >> (xorshift(&s) % 64);
            sizes[i] = (size_t)(xorshift(&s) % 300);
            for (size_t k = 0; k < sizes[i]; k++) payloads[i][k] = (uint8_t)xorshift(&s);
            if (kinds[i] == 0) nn_pb_int(&b, numbers[i], (int64_t)values[i]);
            if (kinds[i] == 1) {
                float f;
                uint32_t bits = (uint32_t)values[i];
                memcpy(&f, &bits, 4);
                nn_pb_float(&b, numbers[i], f);
            }
            if (kinds[i] == 2) nn_pb_bytes(&b, numbers[i], payloads[i], sizes[i]);
        }
        size_t pos = 0;
        pb_field f;
        for (int i = 0; i < count; i++) {
            CHECK_MSG(pb_next(b.data, b.len, &pos, &f) == 1, "round %d field %d: decode failed", round, i);
            CHECK(f.number == numbers[i]);
            if (kinds[i] == 0) CHECK(f.wire == 0 && f.value == values[i]);
            if (kinds[i] == 1) CHECK(f.wire == 5 && f.value == (uint32_t)values[i]);
            if (kinds[i] == 2)
                CHECK(f.wire == 2 && f.size == sizes[i] && memcmp(f.data, payloads[i], sizes[i]) == 0);
            if (nn_test_failures()) break;
        }
        CHECK(pb_next(b.data, b.len, &pos, &f) == 0); /* nothing left over */
        nn_pb_free(&b);
        if (nn_test_failures()) break;
    }
}
