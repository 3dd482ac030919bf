#include "progress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _WIN32
#include <windows.h>
#else
#include <sys/ioctl.h>
#endif

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static bool locale_is_utf8(void) {
    const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8");
    }
    return false;
}

static int terminal_columns(void) {
#ifdef _WIN32
    CONSOLE_SCREEN_BUFFER_INFO info;
    if (GetConsoleScreenBufferInfo(GetStdHandle(STD_OUTPUT_HANDLE), &info)) {
        int columns = info.srWindow.Right - info.srWindow.Left + 1;
        if (columns >= 40) return columns;
    }
#else
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
#endif
    return 80;
}

void progress_init(progress *p, int epochs) {
    memset(p, 0, sizeof *p);
    p->enabled = isatty(STDOUT_FILENO);
    p->unicode = locale_is_utf8();
    p->epochs = epochs;
}

void progress_begin_epoch(progress *p, int epoch, int64_t steps) {
    p->epoch = epoch;
    p->steps = steps;
    p->start = now_seconds();
    p->last_draw = 0;
}

static void format_duration(double seconds, char *out, size_t size) {
    long s = (long)(seconds + 0.5);
    if (s >= 3600) snprintf(out, size, "%ldh%02ldm", s / 3600, s / 60 % 60);
    else if (s >= 60) snprintf(out, size, "%ldm%02lds", s / 60, s % 60);
    else snprintf(out, size, "%lds", s);
}

/* Whether to draw now: the bar is on, and `must` or a tenth of a second
 * has passed since the last drawing (whose time it then takes). */
static bool redraw_due(progress *p, bool must, double now) {
    if (!p->enabled || (!must && now - p->last_draw < 0.1)) return false;
    p->last_draw = now;
    return true;
}

void progress_update(progress *p, int64_t step, int64_t images, double running_loss) {
    double now = now_seconds();
    if (!redraw_due(p, step >= p->steps, now)) return;
    double elapsed = now - p->start;
    double rate = elapsed > 0 ? images / elapsed : 0;
    double eta = step > 0 ? elapsed / step * (p->steps - step) : 0;
    char eta_text[32];
    format_duration(eta, eta_text, sizeof eta_text);

    char tail[128];
    int tail_len = snprintf(tail, sizeof tail, " %lld/%lld  %.0f img/s  loss %.4f  ETA %s",
                            (long long)step, (long long)p->steps, rate, running_loss, eta_text);
    char head[32];
    int head_len = snprintf(head, sizeof head, "epoch %d/%d ", p->epoch, p->epochs);
    int bar = terminal_columns() - 1 - head_len - tail_len - 2;
    if (bar > 40) bar = 40;
    if (bar < 0) bar = 0;
    int filled = p->steps > 0 ? (int)((double)bar * step / p->steps) : bar;

    char line[512];
    size_t used = 0;
    used += snprintf(line + used, sizeof line - used, "\r%s%s", head, bar ? "[" : "");
    for (int i = 0; i < bar && used + 4 < sizeof line; i++) {
        const char *cell = p->unicode ? (i < filled ? "\u2588" : "\u00b7") : (i < filled ? "#" : ".");
        used += snprintf(line + used, sizeof line - used, "%s", cell);
    }
    snprintf(line + used, sizeof line - used, "%s%s\033[K", bar ? "]" : "", tail);
    fputs(line, stdout);
    fflush(stdout);
}

void progress_evaluating(progress *p, int64_t images, int64_t total) {
    if (!redraw_due(p, images == 0, now_seconds())) return;
    printf("\repoch %d/%d evaluating %lld/%lld\033[K", p->epoch, p->epochs, (long long)images, (long long)total);
    fflush(stdout);
}

void progress_clear(progress *p) {
    if (!p->enabled) return;
    fputs("\r\033[K", stdout);
    fflush(stdout);
}

void print_epoch_line(const epoch_stats *s, int epochs, const char *test_name) {
    int width = epochs >= 100 ? 3 : epochs >= 10 ? 2 : 1;
    printf("epoch %*d/%d  train loss %.4f acc %6.2f%%  ", width, s->epoch, epochs, s->train_loss, 100 * s->train_acc);
    if (test_name) printf("%s loss %.4f acc %6.2f%%  ", test_name, s->test_loss, 100 * s->test_acc);
    else printf("(not evaluated)  ");
    printf("%6.1f s  %6.0f img/s\n", s->seconds, s->images_per_s);
    fflush(stdout);
}

int write_epoch_json(FILE *f, const epoch_stats *s) {
    /* %.9g keeps every float32 digit; JSON needs no special cases for finite
     * values, and a diverged run's NaN is written as null. */
    double values[6] = {s->train_loss, s->train_acc, s->test_loss, s->test_acc, s->seconds,
                        s->images_per_s};
    const char *names[6] = {"train_loss", "train_acc", "test_loss", "test_acc", "seconds",
                            "images_per_s"};
    int ok = fprintf(f, "{\"epoch\": %d", s->epoch) > 0;
    for (int i = 0; i < 6 && ok; i++) {
        if (values[i] != values[i] || values[i] - values[i] != 0)
            ok = fprintf(f, ", \"%s\": null", names[i]) > 0;
        else
            ok = fprintf(f, ", \"%s\": %.9g", names[i], values[i]) > 0;
    }
    ok = ok && fputs("}\n", f) >= 0 && fflush(f) == 0;
    return ok;
}
