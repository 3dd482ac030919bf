/* The backend registry: every backend built in is found by its name, is
 * listed by nn_list_devices, and the CPU comes first (what "auto" falls
 * back to); names it does not have are refused, listing those it has. */
#include <string.h>

#include "backends/registry.h"
#include "nn_engine.h"
#include "test.h"

TEST(registry_lists_each_backend_once_cpu_first) {
    int count = 0;
    const nn_backend_provider *const *providers = nn_backend_providers(&count);
    CHECK(count >= 1);
    CHECK(strcmp(providers[0]->name, "cpu") == 0);
    CHECK(!providers[0]->automatic); /* "auto" falls back to it, never tries it first */
    for (int i = 0; i < count; i++) {
        CHECK_MSG(providers[i]->open && providers[i]->list_devices, "%s lacks a hook", providers[i]->name);
        for (int j = 0; j < i; j++)
            CHECK_MSG(strcmp(providers[i]->name, providers[j]->name) != 0, "%s twice", providers[i]->name);
    }
    nn_device_info info[32];
    int devices = nn_list_devices(info, 32);
    CHECK(devices >= count && devices <= 32);
    CHECK(strcmp(info[0].backend, "cpu") == 0 && info[0].usable);
    for (int i = 0; i < count; i++) {
        bool listed = false;
        for (int d = 0; d < devices && d < 32; d++) listed = listed || strcmp(info[d].backend, providers[i]->name) == 0;
        CHECK_MSG(listed, "backend %s has no entry in nn_list_devices", providers[i]->name);
    }
}

TEST(registry_opens_cpu_by_name_and_refuses_unknown_names) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    CHECK(ctx != NULL);
    if (ctx) CHECK(strncmp(nn_ctx_device_name(ctx), "cpu", 3) == 0);
    nn_ctx_free(ctx);
    CHECK(nn_ctx_new(&(nn_ctx_options){.device = "tpu"}) == NULL);
    CHECK(nn_last_status() == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "unknown device 'tpu'") != NULL, "message: %s", nn_last_error());
    int count = 0;
    const nn_backend_provider *const *providers = nn_backend_providers(&count);
    for (int i = 0; i < count; i++)
        CHECK_MSG(strstr(nn_last_error(), providers[i]->name) != NULL, "'%s' not named in: %s", providers[i]->name,
                  nn_last_error());
    CHECK(strstr(nn_last_error(), "auto") != NULL);
}
