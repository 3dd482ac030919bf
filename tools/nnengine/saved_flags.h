/* The flags a training state was saved with (its "run" metadata,
 * nn_train_extras.run): written with every --checkpoint, read back at
 * --resume so that a resumed run names the flags it was given otherwise
 * (issue 41: another --lr was taken silently, another model refused with
 * a tensor's shape alone). The flags are rank_flags.h's: those every rank
 * of a job must share. */
#ifndef NNENGINE_SAVED_FLAGS_H
#define NNENGINE_SAVED_FLAGS_H

#include <stdbool.h>
#include <stddef.h>

#include "rank_flags.h"

/* "FLAG=VALUE; FLAG=VALUE; ..." into out[size] (a ';' inside a value
 * written as ','); false when it does not fit. */
bool saved_flags_format(const rank_flag *flags, int count, char *out, size_t size);
/* Whether such a text names flag->flag with another value than
 * flag->value (then the saved one is in value[size], truncated to fit); a
 * text that does not name it (an older file's) differs in nothing. */
bool saved_flags_differ(const char *saved, const rank_flag *flag, char *value, size_t size);

#endif
