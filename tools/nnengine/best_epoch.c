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
