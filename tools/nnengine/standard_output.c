/* The standard output's failures noticed, not fatal (standard_output.h). */
#include "standard_output.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "options.h"
#include "platform/files.h"

void standard_output_begin(void) {
    nn_file_keep_standard_streams_open();
#ifdef SIGPIPE
    signal(SIGPIPE, SIG_IGN);
#endif
}

int standard_output_end(int status) {
    errno = 0;
    const bool flushed = fflush(stdout) == 0;
    const int error = errno;
    if (flushed && !ferror(stdout)) return status;
    fprintf(stderr, "nnengine: writing the standard output failed%s%s%s: some of what this run printed is lost (its "
            "files were written as usual)\n", error ? " (" : "", error ? strerror(error) : "", error ? ")" : "");
    return status == EXIT_OK ? EXIT_FAILURE_RUNTIME : status;
}
