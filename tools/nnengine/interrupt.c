/* The SIGINT/SIGTERM handler of the training loop (interrupt.h). Only
 * async-signal-safe calls in the handler: write, unlink (through the
 * atomic-file cleanup), _exit. */
#include "interrupt.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "nn_io.h"

static volatile sig_atomic_t requested;

static void say(const char *text) {
    ssize_t ignored = write(STDERR_FILENO, text, strlen(text));
    (void)ignored;
}

static void on_signal(int signo) {
    if (requested) { /* the second: at once */
        nn_atomic_cleanup_all(); /* the temporary files of saves in flight */
        say("\nnnengine: interrupted again: stopped at once\n");
        _exit(EXIT_INTERRUPTED);
    }
    requested = signo;
    say(signo == SIGINT ? "\nnnengine: interrupted: finishing the current step, then saving (Ctrl+C again to stop "
                          "at once)\n"
                        : "\nnnengine: terminated: finishing the current step, then saving (a second signal stops "
                          "at once)\n");
}

#ifdef _WIN32
#include <windows.h>

/* Ctrl+C, Ctrl+Break or the console window closing: the console calls
 * this on a thread of its own, where any call is safe. */
static BOOL WINAPI on_console_event(DWORD event) {
    if (event != CTRL_C_EVENT && event != CTRL_BREAK_EVENT && event != CTRL_CLOSE_EVENT) return FALSE;
    on_signal(SIGINT);
    return TRUE;
}

void interrupt_install(void) {
    requested = 0;
    SetConsoleCtrlHandler(on_console_event, TRUE);
}

void interrupt_restore(void) { SetConsoleCtrlHandler(on_console_event, FALSE); }
#else
static struct sigaction previous_int, previous_term;

void interrupt_install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    requested = 0;
    sigaction(SIGINT, &action, &previous_int);
    sigaction(SIGTERM, &action, &previous_term);
}

void interrupt_restore(void) {
    sigaction(SIGINT, &previous_int, NULL);
    sigaction(SIGTERM, &previous_term, NULL);
}
#endif

bool interrupt_requested(void) { return requested != 0; }

const char *interrupt_name(void) {
    return requested == SIGINT ? "Ctrl+C" : requested ? "SIGTERM" : "a signal to another rank";
}
