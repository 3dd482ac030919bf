/* The order a captured step's commands are issued in (src/core/schedule.h):
 * a hand-made list whose order is worked out below, and random lists on
 * which every pair of conflicting commands must keep its order and the
 * result be a permutation. The commands are never run: their buffers are
 * stand-in pointers, compared, never read. */
#include <stdlib.h>
#include <string.h>

#include "core/schedule.h"
#include "test.h"

static char stand_ins[4];
#define BUF(i) ((nn_buffer *)(void *)&stand_ins[i])

static nn_buffer_ref ref(int buffer, size_t offset, size_t bytes) {
    return (nn_buffer_ref){BUF(buffer), offset, bytes};
}

/* out = a (op) b: writes argument 2. */
static nn_command elementwise(nn_buffer_ref a, nn_buffer_ref b, nn_buffer_ref out, int tag) {
    nn_command c = {.kind = NN_COMMAND_RUN, .kernel = NN_KERNEL_ELEMENTWISE, .nargs = 3, .args = {a, b, out}};
    c.count = (size_t)tag; /* unused by a run: names the command here */
    return c;
}
static nn_command reduce_sum(nn_buffer_ref x, nn_buffer_ref out, int tag) {
    nn_command c = {.kind = NN_COMMAND_RUN, .kernel = NN_KERNEL_REDUCE_SUM, .nargs = 2, .args = {x, out}};
    c.count = (size_t)tag;
    return c;
}
static nn_command fill(nn_buffer_ref dst, int tag) {
    return (nn_command){.kind = NN_COMMAND_FILL, .nargs = 1, .args = {dst}, .count = (size_t)tag};
}
static nn_command copy(nn_buffer_ref dst, nn_buffer_ref src, int tag) {
    return (nn_command){.kind = NN_COMMAND_COPY, .nargs = 2, .args = {dst, src}, .count = (size_t)tag};
}

TEST(schedule_levels_and_trailing_commands_last) {
    /* Buffers: 0 A, 1 B, 2 C-and-others (disjoint ranges), 3 S (sums).
     * The earliest levels first: */
    nn_command list[8] = {
        fill(ref(0, 0, 4096), 0),                                        /* level 0, a fill: trailing */
        reduce_sum(ref(1, 0, 4096), ref(3, 0, 4), 1),                    /* level 0, light: trailing */
        elementwise(ref(0, 0, 4096), ref(1, 0, 4096), ref(2, 0, 4096), 2), /* reads what 0 writes: level 1 */
        elementwise(ref(2, 8192, 64), ref(2, 8192, 64), ref(2, 16384, 4096), 3), /* independent: level 0 */
        elementwise(ref(2, 16384, 4096), ref(2, 16384, 4096), ref(1, 0, 4096), 4), /* writes B (read by 1, 2) and
                                                                                     reads what 3 writes: level 2 */
        copy(ref(3, 64, 16), ref(2, 0, 16), 5),                          /* reads what 2 writes: level 2, light */
        elementwise(ref(2, 8192, 64), ref(2, 8192, 64), ref(0, 8192, 4096), 6), /* A past 0's range: level 0 */
        elementwise(ref(2, 8192, 64), ref(2, 8192, 64), ref(0, 4000, 0), 7),    /* A from 4000 to its end: after 0
                                                                                   and 6, and 2 (which reads
                                                                                   A[4000, 4096)): level 2 */
    };
    CHECK(nn_schedule_commands(list, 8) == NN_OK);
    /* Then each to its latest level: 3 (read by 4) and 6 (before 7 writes
     * A from 4000 on) to level 1 as deferred, 1 to level 1 (before 4
     * writes B); the fill stays (2 reads A). */
    const int want[8] = {0, 2, 3, 6, 1, 4, 7, 5};
    for (int i = 0; i < 8; i++)
        CHECK_MSG((int)list[i].count == want[i], "position %d: command %d, want %d", i, (int)list[i].count, want[i]);
}

static nn_command gemm(nn_buffer_ref a, nn_buffer_ref b, nn_buffer_ref c, int m, int n, int k, int tag) {
    nn_command cmd = {.kind = NN_COMMAND_RUN, .kernel = NN_KERNEL_GEMM, .nargs = 3, .args = {a, b, c}};
    nn_gemm_params p = {.m = m, .n = n, .k = k};
    memcpy(cmd.params, &p, sizeof p);
    cmd.count = (size_t)tag;
    return cmd;
}

TEST(schedule_longest_gemms_first_and_deferred_commands_late) {
    /* Buffers: 0 A (read by all of level 0), 1 outputs of level 0, 2 the
     * sum S, 3 later outputs. Level 0 holds an elementwise command and
     * GEMMs of k 64, 256 (m * n 100), 256 (m * n 400) and 120, all read in
     * level 1: the GEMMs go first, longest k first, then larger m * n. The
     * light sum (level 0 by its inputs) is read only in level 2, so it
     * moves to level 1, after that level's command; command 9, which
     * nothing reads, moves to the last level after its own command and
     * before the fill, which nothing later touches either. */
    nn_command list[10] = {
        elementwise(ref(0, 0, 4096), ref(0, 0, 4096), ref(1, 0, 4096), 0),
        gemm(ref(0, 0, 4096), ref(0, 0, 4096), ref(1, 4096, 4096), 10, 10, 64, 1),
        gemm(ref(0, 0, 4096), ref(0, 0, 4096), ref(1, 8192, 4096), 10, 10, 256, 2),
        gemm(ref(0, 0, 4096), ref(0, 0, 4096), ref(1, 12288, 4096), 20, 20, 256, 3),
        gemm(ref(0, 0, 4096), ref(0, 0, 4096), ref(1, 16384, 4096), 10, 10, 120, 4),
        reduce_sum(ref(0, 0, 4096), ref(2, 0, 4), 5),                           /* light */
        elementwise(ref(1, 0, 20480), ref(1, 0, 20480), ref(3, 0, 4096), 6),    /* reads level 0's: level 1 */
        elementwise(ref(3, 0, 4096), ref(2, 0, 4), ref(3, 4096, 4096), 7),      /* reads 6's and 5's: level 2 */
        fill(ref(3, 65536, 4096), 8),
        elementwise(ref(0, 0, 4096), ref(0, 0, 4096), ref(3, 8192, 4096), 9),   /* level 0, read by none */
    };
    CHECK(nn_schedule_commands(list, 10) == NN_OK);
    const int want[10] = {3, 2, 4, 1, 0, 6, 5, 7, 9, 8};
    for (int i = 0; i < 10; i++)
        CHECK_MSG((int)list[i].count == want[i], "position %d: command %d, want %d", i, (int)list[i].count, want[i]);
}

/* dw += the weight gradient of x and dy (argument 3, the bias's, absent). */
static nn_command conv_weight_gradient(nn_buffer_ref x, nn_buffer_ref dy, nn_buffer_ref dw, int tag) {
    nn_command c = {.kind = NN_COMMAND_RUN, .kernel = NN_KERNEL_CONV2D_BACKWARD_WEIGHT, .nargs = 4,
                    .args = {x, dy, dw, {NULL, 0, 0}}};
    c.count = (size_t)tag;
    return c;
}

TEST(schedule_issues_convolution_weight_gradients_first_in_their_level) {
    /* Buffers: 0 x, 1 a chain of gradients, 2 dW. The weight gradient
     * (command 1) reads command 0's dy, so level 1 is its earliest; nothing
     * reads dW, so it is deferred to the last level, level 2, with command
     * 3. A deferred command would go after the level's own; the weight
     * gradient goes first. */
    nn_command list[4] = {
        elementwise(ref(0, 0, 4096), ref(0, 0, 4096), ref(1, 0, 4096), 0),       /* dy: level 0 */
        conv_weight_gradient(ref(0, 0, 4096), ref(1, 0, 4096), ref(2, 0, 4096), 1),
        elementwise(ref(1, 0, 4096), ref(1, 0, 4096), ref(1, 4096, 4096), 2),    /* level 1 */
        elementwise(ref(1, 4096, 4096), ref(1, 4096, 4096), ref(1, 8192, 4096), 3), /* level 2 */
    };
    CHECK(nn_schedule_commands(list, 4) == NN_OK);
    const int want[4] = {0, 2, 1, 3};
    for (int i = 0; i < 4; i++)
        CHECK_MSG((int)list[i].count == want[i], "position %d: command %d, want %d", i, (int)list[i].count, want[i]);
}

TEST(schedule_spreads_background_commands_over_the_busiest_levels) {
    /* Buffers: 0 inputs, 1 a chain of layers, 2 a gradient, 3 host memory.
     * Levels 0, 2 and 3 hold a GEMM each, level 1 a light command. The
     * gradient (command 4, level 0) is read only by two background copies
     * to host memory: it stays in level 0 rather than going to the last
     * level, and the copies go beside the GEMMs of levels 2 and 3 (the
     * busiest from level 1 on, taken in turn), not to the light level. */
    nn_command list[7] = {
        gemm(ref(0, 0, 4096), ref(0, 0, 4096), ref(1, 0, 4096), 100, 100, 1000, 0),
        elementwise(ref(1, 0, 4096), ref(1, 0, 4096), ref(1, 4096, 4096), 1),
        gemm(ref(1, 4096, 4096), ref(0, 0, 4096), ref(1, 8192, 4096), 100, 100, 1000, 2),
        gemm(ref(1, 8192, 4096), ref(0, 0, 4096), ref(1, 12288, 4096), 100, 100, 1000, 3),
        elementwise(ref(0, 0, 4096), ref(0, 0, 4096), ref(2, 0, 4096), 4),
        copy(ref(3, 0, 4096), ref(2, 0, 4096), 5),
        copy(ref(3, 4096, 4096), ref(2, 0, 4096), 6),
    };
    list[5].background = list[6].background = true;
    CHECK(nn_schedule_commands(list, 7) == NN_OK);
    const int want[7] = {0, 4, 1, 2, 5, 3, 6};
    for (int i = 0; i < 7; i++)
        CHECK_MSG((int)list[i].count == want[i], "position %d: command %d, want %d", i, (int)list[i].count, want[i]);
}

/* The test's own conflict rule: one of the two writes a range the other
 * touches (bytes 0: to the buffer's end). */
static unsigned writes(const nn_command *c) {
    return c->kind == NN_COMMAND_RUN ? nn_kernel_written_args(c->kernel) : 1u;
}
static bool overlaps(nn_buffer_ref a, nn_buffer_ref b) {
    if (a.buffer != b.buffer) return false;
    size_t a_end = a.bytes ? a.offset + a.bytes : (size_t)-1, b_end = b.bytes ? b.offset + b.bytes : (size_t)-1;
    return a.offset < b_end && b.offset < a_end;
}
static bool conflicts(const nn_command *a, const nn_command *b) {
    for (int i = 0; i < a->nargs; i++)
        for (int j = 0; j < b->nargs; j++)
            if ((((writes(a) >> i) & 1u) || ((writes(b) >> j) & 1u)) && overlaps(a->args[i], b->args[j]))
                return true;
    return false;
}

TEST(schedule_keeps_every_conflicts_order) {
    srand(12345);
    for (int round = 0; round < 200; round++) {
        const int n = 2 + rand() % 30;
        nn_command list[32], original[32];
        for (int i = 0; i < n; i++) {
            nn_buffer_ref r[3];
            for (int k = 0; k < 3; k++) {
                size_t bytes = rand() % 5 == 0 ? 0 : (size_t)(4 + 4 * (rand() % 300));
                r[k] = ref(rand() % 4, (size_t)(4 * (rand() % 400)), bytes);
            }
            int kind = rand() % 4;
            list[i] = kind == 0   ? fill(r[0], i)
                      : kind == 1 ? copy(r[0], r[1], i)
                      : kind == 2 ? reduce_sum(r[0], r[1], i)
                                  : elementwise(r[0], r[1], r[2], i);
            list[i].background = rand() % 4 == 0;
        }
        memcpy(original, list, sizeof list);
        CHECK(nn_schedule_commands(list, n) == NN_OK);
        int position[32], seen[32] = {0};
        for (int i = 0; i < n; i++) {
            position[list[i].count] = i;
            seen[list[i].count]++;
        }
        for (int i = 0; i < n; i++) CHECK_MSG(seen[i] == 1, "round %d: command %d appears %d times", round, i, seen[i]);
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                if (conflicts(&original[i], &original[j]))
                    CHECK_MSG(position[i] < position[j], "round %d: commands %d and %d conflict but swapped places",
                              round, i, j);
        if (nn_test_failures()) return;
    }
}
