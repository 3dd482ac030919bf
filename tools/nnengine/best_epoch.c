#include "best_epoch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

bool best_epoch_parse_metric(const char *name, bool *by_loss) {
    if (strcmp(name, "accuracy") == 0 || strcmp(name, "acc") == 0) *by_loss = false;
    else if (strcmp(name, "loss") == 0) *by_loss = true;
    else return false;
    return true;
}

bool best_epoch_update(best_epoch *b, const epoch_stats *s) {
    double metric = b->by_loss ? s->test_loss : s->test_acc;
    bool better = !isnan(metric) && (!b->any || (b->by_loss ? metric < b->best : metric > b->best));
    if (better) {
        b->any = true;
        b->best = metric;
        b->epoch = s->epoch;
        b->stale = 0;
    } else {
        b->stale++;
    }
    return better;
}

void best_epoch_describe(const best_epoch *b, char *out, int size) {
    if (!b->any) snprintf(out, (size_t)size, "no finite %s yet", b->by_loss ? "loss" : "accuracy");
    else if (b->by_loss) snprintf(out, (size_t)size, "loss %.4f", b->best);
    else snprintf(out, (size_t)size, "accuracy %.2f%%", 100 * b->best);
}

static const char *metric_name(const best_epoch *b) { return b->by_loss ? "loss" : "accuracy"; }

void best_epoch_save(const best_epoch *b, int64_t *epoch, double *metric, char *by, int by_size) {
    *epoch = b->any ? b->epoch : 0;
    *metric = b->any ? b->best : 0;
    snprintf(by, (size_t)by_size, "%s", b->any ? metric_name(b) : "");
}

bool best_epoch_restore(best_epoch *b, int64_t epochs_done, int64_t epoch, double metric, const char *by) {
    if (epoch == 0) return true;
    if (strcmp(by, metric_name(b)) != 0) return false;
    b->any = true;
    b->best = metric;
    b->epoch = (int)epoch;
    b->stale = epochs_done - epoch; /* every epoch after the best one was no better */
    return true;
}
