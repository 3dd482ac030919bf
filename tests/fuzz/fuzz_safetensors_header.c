/* libFuzzer target for the safetensors header parser: the input is a whole
 * file. Built with `make fuzz` (clang -fsanitize=fuzzer,address,undefined);
 * `make fuzz-regress` replays tests/fuzz/corpus/ (part of make test).
 *
 * Besides the sanitizers' checks, every header the parser accepts must hold
 * what loaders rely on; a violation aborts, which libFuzzer reports. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors_header.h"

static void require(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "accepted header violates: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nn_st_header h;
    nn_status status = nn_st_parse("fuzz", "input", data, size, &h);
    if (status != NN_OK) {
        require(h.count == 0 && h.entries == NULL && h.meta == NULL, "failure leaves *out empty");
        require(nn_last_error()[0] != '\0', "failure sets a message");
        return 0;
    }
    require(h.data_start + h.data_size == size, "data section ends at the end of the file");
    uint64_t covered = 0;
    for (int i = 0; i < h.count; i++) {
        const nn_st_entry *e = &h.entries[i];
        require(e->name != NULL && nn_st_find(&h, e->name) == e, "names unique and findable");
        require(e->begin <= e->end && e->end <= h.data_size, "range inside the data section");
        uint64_t bytes = (uint64_t)e->element_size;
        for (int d = 0; d < e->ndim; d++) bytes *= (uint64_t)e->shape[d];
        require(bytes == e->end - e->begin, "range size = numel * element size");
        require(nn_st_dtype_size(e->dtype) == e->element_size, "known dtype");
        covered += e->end - e->begin;
        /* Touch every byte the range claims, so ASan sees any overreach. */
        volatile uint8_t sink = 0;
        for (uint64_t k = e->begin; k < e->end; k++) sink ^= data[h.data_start + k];
        (void)sink;
    }
    require(covered == h.data_size, "ranges tile the data section");
    for (int i = 0; i < h.meta_count; i++)
        require(h.meta[i].key && h.meta[i].value && nn_st_meta_get(&h, h.meta[i].key), "metadata readable");
    nn_st_header_free(&h);
    return 0;
}
