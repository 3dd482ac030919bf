/* Files: checkpoints in the safetensors format, the training state for
 * resuming, and ONNX export. Every file is written atomically (a temporary
 * file in the same directory, fsync, rename, fsync of the directory): a
 * failed or interrupted write leaves the previous file intact. Every reader
 * refuses a bad file (truncated, inconsistent header, wrong names, dtypes or
 * shapes) with a message naming the file and the problem, and loads nothing
 * unless everything checks out. */
#ifndef NN_IO_H
#define NN_IO_H

#include <stdbool.h>
#include <stdint.h>
#include "nn_layers.h"
#include "nn_optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- module checkpoints (safetensors) ----
 * The parameters under their PyTorch state_dict names (nn_module_param_name:
 * "c1.weight", ...), float32 little-endian, nothing else: the file loads into
 * the equivalent torch.nn.Module with safetensors.torch.load_file followed by
 * load_state_dict(strict=True), and a file saved by
 * safetensors.torch.save_file(model.state_dict()) loads here. */
nn_status nn_save_module(const nn_module *module, const char *path);
/* Every parameter must be in the file with its dtype and shape, and the file
 * must hold nothing else; otherwise nothing is loaded. */
nn_status nn_load_module(nn_module *module, const char *path);

/* ---- training state (for resuming) ----
 * One safetensors file holding everything a run needs to continue exactly
 * where it stopped: the parameters (under the same names as above), SGD's
 * momentum buffers ("optimizer.<param name>.momentum_buffer"), and in
 * __metadata__ the progress below, the context's random-generator state and,
 * for information, the SGD options. The data order of epoch e must depend on
 * (seed, e) alone for a resumed run to match an uninterrupted one. */
typedef struct nn_train_progress {
    int64_t epoch; /* epochs completed */
    int64_t step;  /* optimizer steps completed */
    uint64_t seed; /* the run's seed */
} nn_train_progress;

/* `opt` must be the optimizer over exactly the module's parameters, in the
 * module's order (as nn_module_param gives them). */
nn_status nn_save_train_state(const char *path, const nn_module *module, const nn_sgd *opt,
                              const nn_train_progress *progress);
/* Restores parameters, momentum buffers and the random generator of the
 * module's context, and fills *progress. Refused (nothing changed) when the
 * file is not a training state, does not match the module, or has momentum
 * buffers while opt has no momentum (or the other way round). */
nn_status nn_load_train_state(const char *path, nn_module *module, nn_sgd *opt,
                              nn_train_progress *progress);

#ifdef __cplusplus
}
#endif
#endif
