/* The names users give (modules' parameters, buffers and children, custom
 * kernels and optimizers, their states and options): letters, digits and
 * '_', so that they read the same in messages, state_dicts and files. */
#ifndef NN_BASE_NAMES_H
#define NN_BASE_NAMES_H

/* The first character of `name` that is not a letter, digit or '_', or
 * '\0' when there is none (an empty name has none either). */
char nn_name_bad_char(const char *name);

#endif
