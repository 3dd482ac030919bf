/* Files of named tensors with a note (nn_save_tensors_meta) and their
 * listing (nn_list_tensors): the round trip of names, dtypes, shapes and
 * the note, the values through nn_load_tensors, and the refusals. */
#include <stdlib.h>
#include <string.h>

#include "io_test_util.h"
#include "nn_engine.h"
#include "test.h"

TEST(tensor_listing_round_trip) {
    const char *dir = io_test_dir();
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    const int64_t shape_a[3] = {2, 3, 5}, shape_b[1] = {7};
    float a[30];
    int32_t b[7];
    for (int i = 0; i < 30; i++) a[i] = (float)i * 0.37f - 4.0f;
    for (int i = 0; i < 7; i++) b[i] = i * 1000003 - 3;
    nn_tensor *tensors[2] = {nn_tensor_from_data(ctx, NN_F32, 3, shape_a, a),
                             nn_tensor_from_data(ctx, NN_I32, 1, shape_b, b)};
    const char *names[2] = {"tensor_0", "tensor_1"};
    const char *note = "{\"dict\": [[\"a\", \"quote \\\" and \\\\ and \\n\"]]}";
    const char *path = io_test_path(dir, "structure.safetensors");
    CHECK_MSG(nn_save_tensors_meta(path, 2, tensors, names, "nn_engine.structure", note) == NN_OK, "%s",
              nn_last_error());

    nn_tensor_listing listing;
    CHECK_MSG(nn_list_tensors(path, "nn_engine.structure", &listing) == NN_OK, "%s", nn_last_error());
    CHECK(listing.count == 2);
    CHECK(listing.value && !strcmp(listing.value, note));
    for (int i = 0; i < listing.count && i < 2; i++) {
        const int k = !strcmp(listing.names[i], "tensor_0") ? 0 : 1;
        CHECK(listing.dtypes[i] == (k ? NN_I32 : NN_F32));
        CHECK(listing.ndims[i] == (k ? 1 : 3));
        for (int d = 0; d < listing.ndims[i]; d++)
            CHECK(listing.shapes[i * NN_MAX_DIMS + d] == (k ? shape_b : shape_a)[d]);
    }
    nn_tensor_listing_free(&listing);
    CHECK(listing.count == 0 && listing.names == NULL);
    CHECK(nn_list_tensors(path, "absent", &listing) == NN_OK && listing.value == NULL);
    nn_tensor_listing_free(&listing);

    nn_tensor *back[2] = {nn_tensor_new(ctx, NN_F32, 3, shape_a), nn_tensor_new(ctx, NN_I32, 1, shape_b)};
    CHECK(nn_load_tensors(path, 2, back, names) == NN_OK);
    float a2[30];
    int32_t b2[7];
    CHECK(nn_tensor_read(back[0], a2, sizeof a2) == NN_OK && !memcmp(a, a2, sizeof a));
    CHECK(nn_tensor_read(back[1], b2, sizeof b2) == NN_OK && !memcmp(b, b2, sizeof b));

    /* refusals */
    CHECK(nn_save_tensors_meta(path, 2, tensors, names, "", note) == NN_ERR_ARGUMENT);
    CHECK(nn_save_tensors_meta(path, 2, tensors, names, "k", NULL) == NN_ERR_ARGUMENT);
    CHECK(nn_list_tensors(io_test_path(dir, "missing.safetensors"), NULL, &listing) != NN_OK);
    CHECK(listing.count == 0);
    nn_tensor_listing_free(&listing);
    const char *half = io_test_path(dir, "half.safetensors");
    const uint16_t halves[3] = {0x3c00, 0x4000, 0x4200};
    CHECK(io_test_write_safetensors(half, "{\"h\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,6]}}", halves,
                                    sizeof halves) == 0);
    CHECK(nn_list_tensors(half, NULL, &listing) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "tensor 'h' is F16") != NULL);
    nn_tensor_listing_free(&listing);
    const char *scalar = io_test_path(dir, "scalar.safetensors");
    const float one = 1.0f;
    CHECK(io_test_write_safetensors(scalar, "{\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", &one,
                                    sizeof one) == 0);
    CHECK(nn_list_tensors(scalar, NULL, &listing) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "tensor 's' has 0 dimensions") != NULL);
    nn_tensor_listing_free(&listing);
    CHECK(nn_list_tensors(path, NULL, NULL) == NN_ERR_ARGUMENT);

    for (int i = 0; i < 2; i++) nn_tensor_free(tensors[i]), nn_tensor_free(back[i]);
    nn_ctx_free(ctx);
    io_test_rmdir(dir);
}
