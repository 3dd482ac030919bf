/* "Did you mean": the known name nearest a mistyped one (a flag, a model). */
#ifndef NNENGINE_SUGGEST_H
#define NNENGINE_SUGGEST_H

#include <stddef.h>

/* The name among `names` (count of them) nearest `given` by edit distance,
 * ignoring case, when it is close enough to be a typo (at most a third of
 * given's letters differ, and at least one may); NULL otherwise. */
const char *suggest_name(const char *given, size_t given_length, const char *const *names, int count);

#endif
