/* The command's standard output as a place that can fail (issue 40, item
 * 12): `nnengine train ... | head -1` closes the pipe after a line, and
 * `> /dev/full` takes none. Neither may stop a run before it writes its
 * files (SIGPIPE would have killed it at the next line), and neither may
 * pass unnoticed: the exit status says the output was lost. */
#ifndef NNENGINE_STANDARD_OUTPUT_H
#define NNENGINE_STANDARD_OUTPUT_H

/* At start: descriptors 0-2 open, and a write to a closed pipe an error
 * (EPIPE) rather than the end of the process. */
void standard_output_begin(void);
/* At the end, with the command's exit status: the output flushed; if any
 * of it could not be written, says so on stderr and returns 1 in place of
 * a successful status. */
int standard_output_end(int status);

#endif
