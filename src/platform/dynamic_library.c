#include "dynamic_library.h"

#ifdef _WIN32
#include <windows.h>

void *nn_library_open(const char *name) {
    wchar_t wide[MAX_PATH];
    if (!MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, name, -1, wide, MAX_PATH)) return NULL;
    /* The system folders only, never the current one (DLL planting). */
    return (void *)LoadLibraryExW(wide, NULL, LOAD_LIBRARY_SEARCH_DEFAULT_DIRS);
}

void *nn_library_symbol(void *library, const char *symbol) {
    return (void *)GetProcAddress((HMODULE)library, symbol);
}
#else
#include <dlfcn.h>

void *nn_library_open(const char *name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }
void *nn_library_symbol(void *library, const char *symbol) { return dlsym(library, symbol); }
#endif
