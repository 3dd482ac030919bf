/* --log FILE: one line per epoch, as JSON objects (progress.h's
 * write_epoch_json) or as CSV with a header (by the file's extension .csv,
 * or --log-format). */
#ifndef NNENGINE_EPOCH_LOG_H
#define NNENGINE_EPOCH_LOG_H

#include <stdbool.h>
#include <stdio.h>

#include "progress.h"

typedef enum log_format { LOG_JSON, LOG_CSV } log_format;

/* --log-format NAME ("json", "csv"; NULL: by the extension of path, JSON
 * unless it ends in .csv). False for an unknown name. */
bool epoch_log_format(const char *name, const char *path, log_format *format);

/* The CSV header, written to a file that is still empty (a resumed run's
 * log already has one). Returns 0 when the write failed. */
int write_epoch_csv_header(FILE *f);
/* One CSV row: the JSON log's fields in the same order; a NaN is an empty
 * field. Returns 0 when the write failed. */
int write_epoch_csv(FILE *f, const epoch_stats *s);

#endif
