/* Step capture and replay (docs/ARCHITECTURE.md, "How a step flows"). A training step run
 * between nn_capture_begin and nn_capture_end executes as usual and is also
 * recorded: the exact list of kernel launches and buffer operations, on the
 * exact buffers. nn_replay issues that list again: no graph building, no
 * allocation and, on Vulkan, no re-recording (the same command buffer is
 * submitted again). A replayed step gives bit-for-bit what the eager step
 * would have given on the same data.
 *
 *     nn_train_step(...);              // one eager step first: gradients and
 *                                      // momentum buffers now exist
 *     nn_capture_begin(ctx);
 *     nn_train_step(...);              // runs, and is recorded
 *     nn_capture *step = nn_capture_end(ctx);
 *     for (...) {
 *         nn_tensor_write(x, ...);     // new data into the same input tensors
 *         nn_replay(step, 1);
 *     }
 *     nn_capture_free(step);
 *
 * What a capture keeps: the values the step reads live in tensors that
 * existed when it was recorded (inputs, parameters, learning-rate buffers);
 * write new values into them between replays. Host-side decisions made while
 * recording (which kernels, sizes, a learning rate passed by value) are
 * frozen. Inside a capture, reading a tensor back to the host is an error: a
 * replayed step cannot return host values (read after nn_replay instead).
 *
 * Memory: tensors the step allocates come from memory the capture keeps for
 * itself (reused between the step's own temporaries, as eagerly); memory a
 * recorded command touches stays reserved until nn_capture_free, even if the
 * tensor that owned it is freed, so a replay never writes memory in use by
 * something else. Tensors made during the capture that the caller keeps
 * (nn_tensor_persist, e.g. the loss) hold the replayed step's values. */
#ifndef NN_CAPTURE_H
#define NN_CAPTURE_H

#include <stdint.h>
#include "nn_context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nn_capture nn_capture;

/* Start recording on ctx. Fails if a capture is already recording there. */
nn_status nn_capture_begin(nn_ctx *ctx);
/* Stop recording. Returns the captured step, or NULL (with nn_last_error())
 * when nothing was recorded or an operation failed while recording. */
nn_capture *nn_capture_end(nn_ctx *ctx);
/* Issue the captured step `times` times in a row (times >= 1). On Vulkan
 * this submits without waiting: several steps in one submit, with nothing
 * read back in between; a later read or nn_ctx_sync waits for them. */
nn_status nn_replay(nn_capture *capture, int64_t times);
/* Commands in the captured step (kernel launches and buffer operations). */
int64_t nn_capture_command_count(const nn_capture *capture);
/* A function the host runs inside a step, e.g. MPI's all-reduce of the
 * gradients (nn_dist.h). Called outside a capture, it runs fn(user) now,
 * after the operations recorded before it. While a capture records, it runs
 * fn the same way, unrecorded (fn may read and write tensors), and marks the
 * point: every replay issues the step's commands up to there, calls fn
 * (whose reads wait for them), then issues the rest. So a replay with host
 * calls waits for the device at each of them. fn returns NN_OK or a status
 * with its message set; user must outlive the capture. */
typedef nn_status (*nn_host_fn)(void *user);
nn_status nn_capture_host_call(nn_ctx *ctx, nn_host_fn fn, void *user);
/* Host calls in the captured step. */
int64_t nn_capture_host_call_count(const nn_capture *capture);
/* Releases the capture and the memory it kept (after replays still in
 * flight have finished). NULL is ignored. nn_ctx_free frees the captures still alive. */
void nn_capture_free(nn_capture *capture);

#ifdef __cplusplus
}
#endif

#endif
