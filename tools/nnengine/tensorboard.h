/* --tensorboard DIR: scalars per epoch in an event file TensorBoard reads
 * (DIR/events.out.tfevents.<seconds>.<host>): TensorFlow's record format
 * (length, masked CRC-32C of the length, the bytes, their masked CRC-32C)
 * around Event protobufs holding a Summary of simple_value scalars. */
#ifndef NNENGINE_TENSORBOARD_H
#define NNENGINE_TENSORBOARD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tensorboard {
    FILE *file;
    char path[4200];
} tensorboard;

/* Creates DIR when missing and a new event file in it, starting with the
 * file-version event. False after printing why to stderr. */
bool tensorboard_open(tensorboard *tb, const char *dir);
/* One event at `step` holding `count` scalars tags[i] = values[i]. False
 * when the write failed. */
bool tensorboard_scalars(tensorboard *tb, int64_t step, const char *const *tags, const double *values, int count);
void tensorboard_close(tensorboard *tb);

#endif
