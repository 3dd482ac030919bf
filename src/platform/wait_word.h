/* Sleeping until a 32-bit word changes: the futex of Linux, WaitOnAddress of
 * Windows. Used by the CPU thread pool; spurious wake-ups are allowed, so
 * callers re-check the word in a loop. */
#ifndef NN_PLATFORM_WAIT_WORD_H
#define NN_PLATFORM_WAIT_WORD_H

#include <stdatomic.h>
#include <stdint.h>

/* Sleeps while *word == expected (returns at once when it already differs). */
void nn_wait_word(_Atomic uint32_t *word, uint32_t expected);
/* Wakes up to `count` threads sleeping on `word` (INT_MAX: all of them). */
void nn_wake_word(_Atomic uint32_t *word, int count);

#endif
