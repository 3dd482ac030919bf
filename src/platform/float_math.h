/* Float functions that give the same bits on every system. glibc's expf and
 * the Windows C runtime's differ in the last bit for some arguments (glibc's
 * is within 0.502 ulp, not always correctly rounded), enough to make two
 * training runs drift apart after a few steps; exp in double rounded to
 * float is the correctly rounded value on both. */
#ifndef NN_PLATFORM_FLOAT_MATH_H
#define NN_PLATFORM_FLOAT_MATH_H

#include <math.h>

static inline float nn_expf(float x) { return (float)exp((double)x); }

#endif
