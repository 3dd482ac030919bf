#include "wait_word.h"

#include <limits.h>

#ifdef _WIN32
#include <windows.h>

void nn_wait_word(_Atomic uint32_t *word, uint32_t expected) {
    WaitOnAddress((volatile VOID *)word, &expected, sizeof expected, INFINITE);
}

void nn_wake_word(_Atomic uint32_t *word, int count) {
    if (count == 1) WakeByAddressSingle((PVOID)word);
    else WakeByAddressAll((PVOID)word);
}
#else
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

void nn_wait_word(_Atomic uint32_t *word, uint32_t expected) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

void nn_wake_word(_Atomic uint32_t *word, int count) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}
#endif
