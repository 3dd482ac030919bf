/* The order a captured step's commands are issued in: nn_capture_end
 * reorders its list before the backend makes a plan of it (or replays it
 * command by command).
 *
 * A backend puts a barrier between commands that conflict and lets the
 * others run together, but it launches them one after another in the order
 * given, and each launch takes time: a step's long kernels can wait behind
 * the launches of tiny ones (a loss's sum, a step counter: a 1-thread
 * kernel each) issued before them (bench/README.md). So the order
 * keeps every conflict's order (a command stays after each earlier one it
 * conflicts with: one writes a byte range the other touches) and is
 * otherwise: the levels (stretches) are the earliest-possible ones (a
 * command's level is one more than the highest of the earlier commands it
 * conflicts with), and each command goes in the latest level the commands
 * after it allow; in a level, first the convolutions' weight gradients,
 * then the commands that could go in no earlier one, then those deferred to
 * it, then the light commands (writing at most a few floats) and fills,
 * each group in issue order except that GEMMs with the longest k go first
 * (schedule.c says why each rule, bench/README.md what it measured). The results are the eager step's: only
 * independent commands change places. */
#ifndef NN_CORE_SCHEDULE_H
#define NN_CORE_SCHEDULE_H

#include "backends/backend.h"

nn_status nn_schedule_commands(nn_command *commands, int64_t count);

#endif
