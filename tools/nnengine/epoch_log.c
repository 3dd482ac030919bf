#include "epoch_log.h"

#include <math.h>
#include <string.h>

bool epoch_log_format(const char *name, const char *path, log_format *format) {
    if (!name) {
        size_t n = path ? strlen(path) : 0;
        *format = n >= 4 && strcmp(path + n - 4, ".csv") == 0 ? LOG_CSV : LOG_JSON;
        return true;
    }
    if (strcmp(name, "json") == 0) *format = LOG_JSON;
    else if (strcmp(name, "csv") == 0) *format = LOG_CSV;
    else return false;
    return true;
}

int write_epoch_csv_header(FILE *f) {
    return fputs("epoch,train_loss,train_acc,test_loss,test_acc,seconds,images_per_s\n", f) >= 0 && fflush(f) == 0;
}

int write_epoch_csv(FILE *f, const epoch_stats *s) {
    double values[6] = {s->train_loss, s->train_acc, s->test_loss, s->test_acc, s->seconds, s->images_per_s};
    int ok = fprintf(f, "%d", s->epoch) > 0;
    for (int i = 0; i < 6 && ok; i++)
        ok = isfinite(values[i]) ? fprintf(f, ",%.9g", values[i]) > 0 : fputc(',', f) != EOF;
    return ok && fputc('\n', f) != EOF && fflush(f) == 0;
}
