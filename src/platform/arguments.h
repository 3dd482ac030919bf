/* The command line as UTF-8. Windows hands main() its arguments in the ANSI
 * code page, which cannot hold most non-ASCII names; this reads the wide
 * command line instead, and sets the console to show UTF-8 output. */
#ifndef NN_PLATFORM_ARGUMENTS_H
#define NN_PLATFORM_ARGUMENTS_H

/* Replaces *argv by the UTF-8 arguments (Windows; elsewhere it changes
 * nothing: they already are). The strings live until the process ends. */
void nn_utf8_arguments(int *argc, char ***argv);

#endif
