/* Ctrl+C during training: the first SIGINT asks the loop to stop after the
 * current step (it then writes --checkpoint and --save and exits 130); a
 * second one exits at once, removing the temporaries of files in flight. */
#ifndef NNENGINE_INTERRUPT_H
#define NNENGINE_INTERRUPT_H

#include <stdbool.h>

enum { EXIT_INTERRUPTED = 130 }; /* 128 + SIGINT, as shells report it */

/* Install the handler (SIGINT and SIGTERM); interrupt_restore puts the
 * previous handlers back. */
void interrupt_install(void);
void interrupt_restore(void);
/* Whether a first signal has come since interrupt_install. */
bool interrupt_requested(void);
/* What it was, for messages: "Ctrl+C" (SIGINT; the console's events on
 * Windows), "SIGTERM", or (none here) "a signal to another rank". */
const char *interrupt_name(void);

#endif
