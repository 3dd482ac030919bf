/* GLSL -> SPIR-V for custom kernels (custom_kernels.h), after the prelude
 * that gives a kernel's body its buffers and helpers: libshaderc, linked
 * in where the build found its static archives (NN_WITH_SHADERC, the
 * Makefile's SHADERC), else opened at run time; without it GLSL is refused
 * with the way to get it, and SPIR-V still works. Set up once per process. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "custom_kernels.h"
#include "platform/dynamic_library.h"

/* libshaderc's C API (shaderc/shaderc.h), the part used here. */
typedef void *shaderc_handle;
enum { SHADERC_COMPUTE_SHADER = 2, SHADERC_STATUS_SUCCESS = 0, SHADERC_OPTIMIZE_PERFORMANCE = 2 };

typedef struct shaderc_api {
    shaderc_handle (*compiler_initialize)(void);
    shaderc_handle (*options_initialize)(void);
    void (*options_release)(shaderc_handle);
    void (*options_set_optimization_level)(shaderc_handle, int);
    shaderc_handle (*compile_into_spv)(shaderc_handle compiler, const char *source, size_t size, int kind,
                                       const char *file, const char *entry, shaderc_handle options);
    int (*result_status)(shaderc_handle);
    size_t (*result_length)(shaderc_handle);
    const char *(*result_bytes)(shaderc_handle);
    const char *(*result_error)(shaderc_handle);
    void (*result_release)(shaderc_handle);
    shaderc_handle compiler; /* thread-safe for compiling (shaderc.h) */
} shaderc_api;

static shaderc_api kApi;
static atomic_int kState; /* 0 not tried, 1 loading, 2 loaded, 3 absent */

#ifdef NN_WITH_SHADERC
/* Linked in (the Makefile's SHADERC=1): the table points at the functions themselves. */
#include <shaderc/shaderc.h>
static bool link_symbols(void) {
    *(void **)&kApi.compiler_initialize = (void *)shaderc_compiler_initialize;
    *(void **)&kApi.options_initialize = (void *)shaderc_compile_options_initialize;
    *(void **)&kApi.options_release = (void *)shaderc_compile_options_release;
    *(void **)&kApi.options_set_optimization_level = (void *)shaderc_compile_options_set_optimization_level;
    *(void **)&kApi.compile_into_spv = (void *)shaderc_compile_into_spv;
    *(void **)&kApi.result_status = (void *)shaderc_result_get_compilation_status;
    *(void **)&kApi.result_length = (void *)shaderc_result_get_length;
    *(void **)&kApi.result_bytes = (void *)shaderc_result_get_bytes;
    *(void **)&kApi.result_error = (void *)shaderc_result_get_error_message;
    *(void **)&kApi.result_release = (void *)shaderc_result_release;
    return true;
}
#else
static const char *const kLibraryNames[] = {
#ifdef _WIN32
    "shaderc_shared.dll",
#else
    "libshaderc.so.1", "libshaderc_shared.so.1", "libshaderc.so", "libshaderc_shared.so",
#endif
};

static bool load_symbols(void *lib) {
#define SYM(field, symbol) (*(void **)&kApi.field = nn_library_symbol(lib, symbol)) != NULL
    return SYM(compiler_initialize, "shaderc_compiler_initialize") &&
           SYM(options_initialize, "shaderc_compile_options_initialize") &&
           SYM(options_release, "shaderc_compile_options_release") &&
           SYM(options_set_optimization_level, "shaderc_compile_options_set_optimization_level") &&
           SYM(compile_into_spv, "shaderc_compile_into_spv") &&
           SYM(result_status, "shaderc_result_get_compilation_status") &&
           SYM(result_length, "shaderc_result_get_length") && SYM(result_bytes, "shaderc_result_get_bytes") &&
           SYM(result_error, "shaderc_result_get_error_message") &&
           SYM(result_release, "shaderc_result_release");
#undef SYM
}

static bool link_symbols(void) {
    void *lib = NULL;
    for (size_t i = 0; i < sizeof kLibraryNames / sizeof kLibraryNames[0] && !lib; i++)
        lib = nn_library_open(kLibraryNames[i]);
    return lib && load_symbols(lib);
}
#endif

static bool shaderc_available(void) {
    int expected = 0;
    if (atomic_compare_exchange_strong(&kState, &expected, 1)) {
        bool ok = link_symbols() && (kApi.compiler = kApi.compiler_initialize()) != NULL;
        atomic_store(&kState, ok ? 2 : 3);
    }
    while (atomic_load(&kState) == 1) {
    }
    return atomic_load(&kState) == 2;
}

/* The push-constant block (128 bytes, every device's minimum): the
 * buffers' element offsets (written by the Vulkan dispatch, as for the
 * library's kernels), their element counts, the grid, the kernel's id (for
 * the out-of-range report) and the call's 12 parameter words. */
static const char kPreludeHead[] =
    "#version 450\n"
    "layout(local_size_x = %u, local_size_y = %u, local_size_z = %u) in;\n"
    "layout(push_constant) uniform NN_Push {\n"
    "    uint off[8]; uint len[8]; uint grid[3]; uint kernel; uint params[12];\n"
    "} nn_push;\n"
    "layout(std430, binding = 8) buffer NN_Status { int nn_status[]; };\n"
    "void nn_out_of_range(uint b, uint i) {\n"
    "    if (atomicCompSwap(nn_status[0], 0x7fffffff, int(i)) == 0x7fffffff) {\n"
    "        nn_status[1] = int(b); nn_status[2] = int(nn_push.len[b]); nn_status[4] = int(nn_push.kernel);\n"
    "        nn_status[3] = 3;\n"
    "    }\n"
    "}\n"
    "#define NN_DEFINE_BUFFER(b) \\\n"
    "layout(std430, binding = b) buffer NN_Buffer##b { uint nn_words##b[]; }; \\\n"
    "uint nn_word##b(uint i) { if (i >= nn_push.len[b]) { nn_out_of_range(b, i); return 0u; } \\\n"
    "    return nn_words##b[nn_push.off[b] + i]; } \\\n"
    "void nn_put##b(uint i, uint v) { if (i >= nn_push.len[b]) { nn_out_of_range(b, i); return; } \\\n"
    "    nn_words##b[nn_push.off[b] + i] = v; }\n"
    "NN_DEFINE_BUFFER(0) NN_DEFINE_BUFFER(1) NN_DEFINE_BUFFER(2) NN_DEFINE_BUFFER(3)\n"
    "NN_DEFINE_BUFFER(4) NN_DEFINE_BUFFER(5) NN_DEFINE_BUFFER(6) NN_DEFINE_BUFFER(7)\n"
    "#define NN_LOAD(b, i) uintBitsToFloat(nn_word##b(uint(i)))\n"
    "#define NN_LOAD_INT(b, i) int(nn_word##b(uint(i)))\n"
    "#define NN_STORE(b, i, v) nn_put##b(uint(i), floatBitsToUint(float(v)))\n"
    "#define NN_STORE_INT(b, i, v) nn_put##b(uint(i), uint(int(v)))\n"
    "#define NN_COUNT(b) nn_push.len[b]\n"
    "#define NN_PARAM_UINT(k) nn_push.params[k]\n"
    "#define NN_PARAM_INT(k) int(nn_push.params[k])\n"
    "#define NN_PARAM_FLOAT(k) uintBitsToFloat(nn_push.params[k])\n"
    "#define NN_GRID uvec3(nn_push.grid[0], nn_push.grid[1], nn_push.grid[2])\n"
    "#define NN_INDEX gl_GlobalInvocationID\n"
    "#line 1\n";

const char *nn_custom_glsl_prelude(const uint32_t local_size[3]) {
    static _Thread_local char text[sizeof kPreludeHead + 64];
    const bool defaults = !local_size || (!local_size[0] && !local_size[1] && !local_size[2]);
    snprintf(text, sizeof text, kPreludeHead, defaults ? 256u : local_size[0], defaults ? 1u : local_size[1],
             defaults ? 1u : local_size[2]);
    return text;
}

bool nn_custom_glsl_available(void) { return shaderc_available(); }

nn_status nn_custom_compile_glsl(const char *kernel, const char *body, const uint32_t local_size[3],
                                 uint32_t **spirv, size_t *bytes) {
    if (!shaderc_available())
        return nn_set_error(NN_ERR_BACKEND,
                            "custom kernel %s: compiling GLSL needs libshaderc, which this machine does not have "
                            "(Debian/Ubuntu: apt install libshaderc1; Windows: shaderc_shared.dll from the Vulkan "
                            "SDK on PATH); or give the kernel SPIR-V compiled elsewhere (glslc, with "
                            "nn_custom_glsl_prelude before the body)", kernel);
    const char *prelude = nn_custom_glsl_prelude(local_size);
    size_t head = strlen(prelude), tail = strlen(body);
    char *source = malloc(head + tail + 2);
    if (!source) return nn_set_error(NN_ERR_MEMORY, "custom kernel %s: out of memory", kernel);
    memcpy(source, prelude, head);
    memcpy(source + head, body, tail);
    source[head + tail] = '\n';
    source[head + tail + 1] = '\0';
    shaderc_handle options = kApi.options_initialize();
    if (options) kApi.options_set_optimization_level(options, SHADERC_OPTIMIZE_PERFORMANCE);
    shaderc_handle result = kApi.compile_into_spv(kApi.compiler, source, head + tail + 1, SHADERC_COMPUTE_SHADER,
                                                  kernel, "main", options);
    free(source);
    if (options) kApi.options_release(options);
    if (!result) return nn_set_error(NN_ERR_MEMORY, "custom kernel %s: libshaderc returned no result", kernel);
    nn_status st = NN_OK;
    if (kApi.result_status(result) != SHADERC_STATUS_SUCCESS) {
        const char *message = kApi.result_error(result);
        st = nn_set_error(NN_ERR_ARGUMENT, "custom kernel %s: the GLSL does not compile:\n%s", kernel,
                          message && *message ? message : "(no message)");
    } else {
        size_t n = kApi.result_length(result);
        *spirv = n >= 4 && n % 4 == 0 ? malloc(n) : NULL;
        if (!*spirv) st = nn_set_error(NN_ERR_MEMORY, "custom kernel %s: out of memory for its SPIR-V", kernel);
        else {
            memcpy(*spirv, kApi.result_bytes(result), n);
            *bytes = n;
        }
    }
    kApi.result_release(result);
    return st;
}
