#include "arguments.h"

#ifdef _WIN32
#include <stdlib.h>
#include <windows.h>

void nn_utf8_arguments(int *argc, char ***argv) {
    int count = 0;
    wchar_t **wide = CommandLineToArgvW(GetCommandLineW(), &count);
    if (!wide) return;
    char **utf8 = calloc((size_t)count + 1, sizeof *utf8);
    for (int i = 0; utf8 && i < count; i++) {
        int bytes = WideCharToMultiByte(CP_UTF8, 0, wide[i], -1, NULL, 0, NULL, NULL);
        utf8[i] = bytes > 0 ? malloc((size_t)bytes) : NULL;
        if (!utf8[i]) { /* out of memory at start-up: keep the ANSI arguments */
            while (i > 0) free(utf8[--i]);
            free(utf8);
            LocalFree(wide);
            return;
        }
        WideCharToMultiByte(CP_UTF8, 0, wide[i], -1, utf8[i], bytes, NULL, NULL);
    }
    LocalFree(wide);
    if (!utf8) return;
    SetConsoleOutputCP(CP_UTF8);
    *argc = count;
    *argv = utf8;
}
#else
void nn_utf8_arguments(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
}
#endif
