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

/* ---- checkpoints (safetensors) ----
 * A module's state_dict (nn_module_state_name: "c1.weight", ..., buffers
 * included), little-endian in each tensor's dtype, nothing else: the file loads into the
 * equivalent torch.nn.Module with safetensors.torch.load_file followed by
 * load_state_dict(strict=True), and a file saved by
 * safetensors.torch.save_file(model.state_dict()) loads here. */
nn_status nn_save_module(const nn_module *module, const char *path);
/* Every state_dict entry must be in the file with its dtype and shape, and
 * the file must hold nothing else; otherwise nothing is loaded. */
nn_status nn_load_module(nn_module *module, const char *path);
/* nn_load_module for fine-tuning with a new classifier: every state_dict
 * entry except those of the child at `child_path` ("fc", "classifier.1")
 * must be in the file, as strictly; the file's entries under child_path are
 * ignored whatever their shapes, and the child keeps its values. */
nn_status nn_load_module_except(nn_module *module, const char *path, const char *child_path);
/* The same for any tensors under names (unique, non-empty): what Python's
 * Model.save writes. Loading fills each tensor from the entry of its name,
 * all or nothing, on the same conditions. */
nn_status nn_save_tensors(const char *path, int count, nn_tensor *const *tensors, const char *const *names);
nn_status nn_load_tensors(const char *path, int count, nn_tensor *const *tensors, const char *const *names);

/* ---- files of named tensors with a note ----
 * nn_save_tensors with one __metadata__ entry key -> value (text: JSON,
 * say). Python's nn_engine.save writes a nested structure this way: its
 * tensors, and the structure in the note. */
nn_status nn_save_tensors_meta(const char *path, int count, nn_tensor *const *tensors, const char *const *names,
                               const char *key, const char *value);
/* What a safetensors file holds, its tensors' bytes left unread, so that
 * a reader can make the tensors and fill them with nn_load_tensors: each
 * entry's name, dtype and shape (shapes[i * NN_MAX_DIMS + d]), and the
 * metadata value under key (NULL: absent, or key NULL). A file holding a
 * tensor the engine cannot (a dtype other than F32 and I32, 0 or more
 * than NN_MAX_DIMS dimensions) is refused, naming it. Free it with
 * nn_tensor_listing_free (also after a failure). */
typedef struct nn_tensor_listing {
    int count;
    char **names;
    nn_dtype *dtypes;
    int *ndims;
    int64_t *shapes;
    char *value;
} nn_tensor_listing;
nn_status nn_list_tensors(const char *path, const char *key, nn_tensor_listing *out);
void nn_tensor_listing_free(nn_tensor_listing *listing);

/* ---- what a model needs besides its weights ----
 * To run on raw pixels a trained model needs the normalisation its training
 * fed it and, to name its outputs, the class names. Both travel in the
 * checkpoint's __metadata__ (safetensors values are strings):
 *   "nn_engine.normalize": "MEAN,STD" per channel, channels joined by ";"
 *                          ("0.2860,0.3530" or "0.485,0.229;0.456,0.224;0.406,0.225")
 *   "nn_engine.classes":   a JSON list of strings (["T-shirt", "Trouser", ...])
 * and ONNX export can put the normalisation in front of the graph. */
#define NN_MODEL_INFO_MAX_CHANNELS 8
typedef struct nn_model_info {
    int channels; /* channels normalised; 0: no normalisation recorded */
    float mean[NN_MODEL_INFO_MAX_CHANNELS], std[NN_MODEL_INFO_MAX_CHANNELS]; /* x' = (x - mean) / std */
    int class_count;     /* 0: no class names recorded */
    char **class_names;  /* class_count UTF-8 strings */
} nn_model_info;

/* nn_save_module / nn_save_tensors with the info in the file's metadata
 * (info may be NULL: none). Refused when channels is outside
 * 0..NN_MODEL_INFO_MAX_CHANNELS, a mean or std is not finite, a std is not
 * positive, or a class name is NULL or empty. */
nn_status nn_save_module_info(const nn_module *module, const char *path, const nn_model_info *info);
nn_status nn_save_tensors_info(const char *path, int count, nn_tensor *const *tensors, const char *const *names,
                               const nn_model_info *info);
/* The info a checkpoint carries (fields zero where the file has none);
 * free it with nn_model_info_free. A malformed value is refused, naming the
 * key. */
nn_status nn_read_model_info(const char *path, nn_model_info *info);
void nn_model_info_free(nn_model_info *info);

/* ---- training state (for resuming) ----
 * One safetensors file holding everything a run needs to continue exactly
 * where it stopped: the module's state_dict (as above), the
 * optimizer's state ("optimizer.<param name>.<state name>", e.g. SGD's
 * "momentum_buffer": nn_optimizer_state_name), and in __metadata__ the
 * progress below, the context's random-generator state, the optimizer's
 * name and, for information, its options; with dynamic loss scaling
 * (nn_optimizer_enable_loss_scaling) also its scale and counters
 * ("loss_scale.state", float [4]: a file without them resumes at the run's
 * initial scale; a run without loss scaling refuses a file with them). The
 * data order of epoch e must depend on (seed, e) alone for a resumed run to
 * match an uninterrupted one. */
typedef struct nn_train_progress {
    int64_t epoch; /* epochs completed */
    int64_t step;  /* optimizer steps completed */
    uint64_t seed; /* the run's seed */
    /* Steps of epoch + 1 already done: a run stopped part way (Ctrl+C);
     * 0 for a state written after a whole epoch (and in older files). */
    int64_t epoch_step;
    /* The best epoch so far by a held-out metric, for early stopping and for
     * keeping the best weights across a resume: best_epoch in [1, epoch]
     * with its finite best_metric, compared by best_by ("accuracy", "loss":
     * printable, at most 15 characters); best_epoch 0 when none (and in
     * older files). */
    int64_t best_epoch;
    double best_metric;
    char best_by[16];
    /* The stopped epoch's training figures so far, for a run stopped part
     * way (epoch_step > 0): the loss summed over its images, the images
     * classified right and the images seen, so the resumed epoch reports
     * the whole epoch's figures. Zero when none (and in older files). */
    double epoch_loss_sum, epoch_correct;
    int64_t epoch_images;
} nn_train_progress;

/* `opt` must be the optimizer over exactly the module's parameters, in the
 * module's order (as nn_module_param gives them). */
nn_status nn_save_train_state(const char *path, const nn_module *module, const nn_optimizer *opt,
                              const nn_train_progress *progress);
/* Restores parameters, the optimizer's state and the random generator of
 * the module's context, and fills *progress. Refused (nothing changed) when
 * the file is not a training state, does not match the module, is another
 * optimizer's, or holds other state than opt keeps (momentum buffers while
 * opt has no momentum, or the other way round). */
nn_status nn_load_train_state(const char *path, nn_module *module, nn_optimizer *opt,
                              nn_train_progress *progress);

/* What a run may keep besides its module and optimizer (either NULL): a
 * schedule's step counter, saved as "schedule.step" (int32 [1]), and a
 * moving average's shadow weights, as "ema.<state_dict name>". Loading
 * restores both (the schedule then writes its step's rate) and refuses a
 * file that holds either where the run has none, or the other way round. */
typedef struct nn_schedule nn_schedule;
typedef struct nn_ema nn_ema;
typedef struct nn_train_extras {
    nn_schedule *schedule;
    nn_ema *ema;
    /* When saving (may be NULL): a description of the run, such as the
     * settings it was started with, kept as metadata "run" (printable text,
     * at most NN_TRAIN_STATE_RUN_MAX - 1 bytes) for nn_train_state_run. */
    const char *run;
} nn_train_extras;
#define NN_TRAIN_STATE_RUN_MAX 4096
nn_status nn_save_train_state_with(const char *path, const nn_module *module, const nn_optimizer *opt,
                                   const nn_train_extras *extras, const nn_train_progress *progress);
nn_status nn_load_train_state_with(const char *path, nn_module *module, nn_optimizer *opt,
                                   const nn_train_extras *extras, nn_train_progress *progress);
/* The "run" a training state was saved with (nn_train_extras.run) into
 * out[size]: "" when it has none. Fails on a file that is no training
 * state, and when the text does not fit. */
nn_status nn_train_state_run(const char *path, char *out, size_t size);

/* ---- ONNX export ----
 * From the graph recorded by a forward pass: the autograd tape is walked from
 * `output` back to `input`, so the forward must run with grad mode on and with
 * every operation recorded (an operation records when an input requires grad:
 * set requires_grad on `input` if the first operations have no parameter),
 * and the export must come before nn_backward consumes the recording.
 * Mapped operations: conv2d -> Conv, linear -> Gemm (transB), matmul -> Gemm,
 * add_bias -> Add (bias reshaped to broadcast over dimension 1), relu -> Relu,
 * maxpool2d -> MaxPool, flatten -> Flatten, reshape -> Reshape, softmax ->
 * Softmax (last axis), add -> Add, mul -> Mul, scale -> Mul by a constant,
 * sum/mean -> ReduceSum/ReduceMean then Reshape to [1], dropout -> Dropout in
 * inference mode (the identity; traced in training or eval mode alike), the
 * elementwise functions of shaders/unary_ops.h -> their row's operator
 * (sigmoid -> Sigmoid, ...) or standard operators computing the same
 * (gelu -> Erf and arithmetic, softplus with beta -> Where of Softplus),
 * maxpool2d_window -> MaxPool (dilations, ceil_mode), avgpool2d ->
 * AveragePool (count_include_pad, ceil_mode; a divisor_override is
 * refused), the adaptive pools -> GlobalAveragePool / GlobalMaxPool at
 * 1 x 1, else a plain pool where the output divides the input (other sizes
 * refused), compare -> Equal / Less / LessOrEqual / Greater / GreaterOrEqual
 * (NE: Equal then Not) then Cast to int32, cast -> Cast (float32 -> int32 as
 * IsNaN, Where, Clip, Cast to int64, Clip, Cast to int32: nn_cast's rule for
 * NaN and values beyond int32's range, which a bare Cast leaves undefined).
 * Operations on int32 results (argmax's, a comparison's) are recorded as
 * long as their inputs are, so they export too. Any other operation
 * (softmax_cross_entropy, a loss) is refused with its name.
 * Tensors that are not computed from `input` (parameters) become
 * initializers. Opset 13..17 (17 by default), IR version 8. */
typedef struct nn_onnx_options {
    const char *graph_name; /* NULL = "nn_engine" */
    int opset;              /* 0 = 17 */
    bool static_batch;      /* false: dimension 0 of the input is the symbolic "batch" */
    int n_names;            /* names for tensors of the graph (initializers, input, output) */
    nn_tensor *const *named_tensors;
    const char *const *names;
    /* NULL, or the model's info: a normalisation (channels > 0) becomes the
     * graph's first nodes, so the graph takes raw pixel values 0..255 as
     * float ("input") and computes (input / 255 - mean) / std itself; class
     * names go into the model's metadata_props as "nn_engine.classes". */
    const nn_model_info *info;
} nn_onnx_options;

/* options may be NULL. Unnamed initializers are "param_<k>", the input
 * "input" and the output "output". The input is float32, or int32 token
 * indices (an int32 graph input, with no normalisation in the info).
 * Written atomically. */
nn_status nn_onnx_export(const char *path, nn_tensor *input, nn_tensor *output,
                         const nn_onnx_options *options);
/* Runs the module on a zero input of input_shape (dimension 0 = batch, made
 * dynamic) with recording on, and exports it with initializers named by
 * nn_module_state_name. The pass's temporaries belong to the current step;
 * when the step held nothing before the call, they are freed before it returns.
 * int32 state (BatchNorm's num_batches_tracked) is left out, as torch.onnx
 * does. Export in evaluation mode (nn_module_set_training(m, false)): a
 * BatchNorm in training mode would update its running statistics on the
 * zero input before they are written. */
nn_status nn_onnx_export_module(const char *path, nn_module *module, const int64_t *input_shape,
                                int ndim);
/* nn_onnx_export_module with the options' info (may be NULL: as above). */
nn_status nn_onnx_export_module_info(const char *path, nn_module *module, const int64_t *input_shape, int ndim,
                                     const nn_model_info *info);

/* ---- ONNX import ----
 * A module running the graph of the ONNX file at `path` (opsets 13 to 21;
 * float or integer inputs, one output) with the engine's operations, so it trains,
 * captures, checkpoints and exports like a built-in model. Initializers
 * that hold learned state become parameters, BatchNormalization's running
 * statistics buffers, under their ONNX names (PyTorch's state_dict names
 * for its exports: "layer1.0.conv1.weight", a dotted name making child
 * modules; other characters than letters, digits and '_' become '_');
 * shapes, axes and the exporter's constants stay constants. The module's
 * training mode decides BatchNormalization and Dropout, as PyTorch's does.
 * A node whose operator (or form of it) the engine does not have is
 * refused by its name, operator and opset, as is a malformed file, before
 * any module is made; an operator whose sizes only the input decides
 * (a window on too small an image) fails at forward. */
nn_module *nn_onnx_import(nn_ctx *ctx, const char *path);
typedef struct nn_onnx_import_options {
    /* > 0: fine-tuning on other classes: the classifier (the Gemm, or
     * MatMul and Add, computing the graph's output from learned weights)
     * gets this many outputs, its weight and bias drawn afresh as PyTorch's
     * Linear draws them (uniform in +-1/sqrt(inputs)). 0: as in the file. */
    int classes;
} nn_onnx_import_options;
/* nn_onnx_import with options (NULL: none). */
nn_module *nn_onnx_import_with(nn_ctx *ctx, const char *path, const nn_onnx_import_options *options);
/* Runs an imported graph with several inputs (an attention mask beside
 * the tokens), given in the graph's order; nn_module_forward runs a graph
 * of one input and refuses the others, naming them. Returns the output
 * (step-owned), or NULL with the error set. */
nn_tensor *nn_onnx_run(nn_module *module, nn_tensor *const *inputs, int count);
/* The shapes the ONNX file at `path` declares for its graph's (first)
 * input and its output (up to NN_MAX_DIMS each; -1 for a symbolic or unknown dimension,
 * such as a dynamic batch; *ndim -1 when the file gives no shape), read
 * without making a module. */
nn_status nn_onnx_io_shapes(const char *path, int64_t *input, int *input_ndim, int64_t *output, int *output_ndim);

/* ---- output paths ----
 * Whether a save to `path` would succeed as far as the file system goes,
 * checked before a long run instead of after it: the folder exists and
 * takes new files, and `path` is absent, a regular file or a link to one.
 * NN_ERR_IO naming the path and the reason otherwise. Nothing is left
 * behind (a probe file is created and removed). */
nn_status nn_check_writable_path(const char *path);
/* Removes the temporary files of every save in flight (async-signal-safe:
 * only unlink); for a SIGINT/SIGTERM handler, which then exits. The files
 * being replaced are untouched. */
void nn_atomic_cleanup_all(void);

#ifdef __cplusplus
}
#endif
#endif
