/* Modules, the parts models are built from (PyTorch's nn.Module). A module
 * has a forward function, named parameters (tensors it trains), named
 * buffers (tensors it keeps and saves but does not train: running
 * statistics), named children (modules it owns), a training flag and, when
 * a user wrote it, a pointer to the user's own data. The layers, containers
 * and zoo models of nn_layers.h are modules made with this interface.
 *
 * Names follow PyTorch's state_dict: a module's own entries under their
 * names ("weight"), a child's under "<child>.<name>" ("features.0.weight").
 * Listings walk the module first, then its children in the order they
 * were added, as PyTorch's named_parameters() and state_dict() do.
 *
 * A module written in C:
 *
 *     static nn_tensor *block_forward(nn_module *self, nn_tensor *x) {
 *         nn_tensor *h = nn_module_forward(nn_module_child(self, "conv"), x);
 *         return nn_add(nn_relu(h), x);              // a residual connection
 *     }
 *     nn_module *block = nn_module_new(ctx, "Block", block_forward, NULL, NULL);
 *     nn_module_add_child(block, "conv", nn_conv2d_layer(ctx, 8, 8, 3, 1, 1, NN_INIT_KAIMING_UNIFORM));
 *
 * trains, checkpoints (nn_save_module), resumes (nn_save_train_state) and
 * exports to ONNX (nn_onnx_export_module, where its operations have an
 * ONNX form) as a built-in model does. */
#ifndef NN_MODULE_H
#define NN_MODULE_H

#include <stdbool.h>
#include "nn_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nn_module nn_module;

/* The module's computation: called by nn_module_forward with an input of
 * the module's context. Returns the output (step-owned, as operations
 * make it) or NULL with the error set. */
typedef nn_tensor *(*nn_module_forward_fn)(nn_module *self, nn_tensor *x);

/* A module of kind `kind` (a name for messages and listings: "Block"),
 * with no parameters, buffers or children yet. `data` is the caller's
 * (nn_module_data returns it); free_data, when not NULL, is called on it
 * when the module is freed, and also when creation fails. */
nn_module *nn_module_new(nn_ctx *ctx, const char *kind, nn_module_forward_fn forward, void *data,
                         void (*free_data)(void *data));
void *nn_module_data(const nn_module *m);
nn_ctx *nn_module_ctx(const nn_module *m);
/* "Linear", "Conv2d", "MaxPool2d", "Flatten", "ReLU", "Dropout",
 * "Sequential", "AdaptiveAvgPool2d" for the built-ins; nn_module_new's kind
 * for the rest. */
const char *nn_module_kind(const nn_module *m);

/* ---- building ----
 * Names are letters, digits and '_', unique among the module's parameters,
 * buffers and children. */

/* A tensor the module trains: made with nn_tensor_new or
 * nn_tensor_from_data in the module's context (not an operation's result),
 * float32. The module takes a reference (nn_tensor_free the caller's when
 * done with it) and sets requires_grad; a frozen parameter is one whose
 * requires_grad is cleared afterwards. */
nn_status nn_module_register_parameter(nn_module *m, const char *name, nn_tensor *param);
/* A tensor the module keeps and saves but does not train (running
 * statistics): made as a parameter is, and not requiring grad. The module
 * takes a reference. */
nn_status nn_module_register_buffer(nn_module *m, const char *name, nn_tensor *buffer);
/* Make `child` a part of m. m takes ownership of child in every case: on
 * failure child is freed. A NULL child (a failed constructor) is reported
 * with the constructor's message. A module has one parent at most. */
nn_status nn_module_add_child(nn_module *m, const char *name, nn_module *child);

/* ---- finding ----
 * A dotted path walks children: nn_module_child(net, "features.0"),
 * nn_module_get_parameter(net, "features.0.weight"). NULL (no error set)
 * when there is no such entry. Borrowed. */
nn_module *nn_module_child(const nn_module *m, const char *path);
nn_tensor *nn_module_get_parameter(const nn_module *m, const char *path);
nn_tensor *nn_module_get_buffer(const nn_module *m, const char *path);

/* The module's own children, in the order they were added. */
int nn_module_child_count(const nn_module *m);
nn_module *nn_module_child_at(const nn_module *m, int i);
const char *nn_module_child_name(const nn_module *m, int i);

/* ---- listing (the module and all its descendants) ----
 * Index i from 0 to count - 1; NULL when out of range. Names and tensors
 * are borrowed and stay valid until the module or one of its descendants
 * changes. */

/* Parameters, each tensor once (a parameter shared by two modules is listed
 * under its first name): what an optimizer is given. */
int nn_module_param_count(const nn_module *m);
nn_tensor *nn_module_param(const nn_module *m, int i);
const char *nn_module_param_name(const nn_module *m, int i);
/* Buffers. */
int nn_module_buffer_count(const nn_module *m);
nn_tensor *nn_module_buffer(const nn_module *m, int i);
const char *nn_module_buffer_name(const nn_module *m, int i);
/* The state_dict: for each module, its parameters then its buffers, under
 * every name (a shared parameter appears under each): what checkpoints,
 * training states and ONNX initializers hold. */
int nn_module_state_count(const nn_module *m);
nn_tensor *nn_module_state(const nn_module *m, int i);
const char *nn_module_state_name(const nn_module *m, int i);

/* ---- running ---- */

nn_tensor *nn_module_forward(nn_module *m, nn_tensor *x);
/* The mean softmax cross-entropy of the module's output against labels
 * (int32 [N]): nn_softmax_cross_entropy(nn_module_forward(m, x), labels).
 * *logits, when not NULL, receives the module's output (step-owned). */
nn_tensor *nn_module_forward_loss(nn_module *m, nn_tensor *x, nn_tensor *labels, nn_tensor **logits);
/* Training (the default for a new module) or evaluation mode, set on m and,
 * recursively, its children (PyTorch's module.train() / .eval()). A
 * forward function reads it with nn_module_is_training(self). */
nn_status nn_module_set_training(nn_module *m, bool training);
bool nn_module_is_training(const nn_module *m);

/* Called by nn_module_forward after m's forward succeeds, with its input
 * and output (PyTorch's register_forward_hook): what a model summary uses to
 * see each layer's output shape. One hook per module: setting one replaces
 * the previous, NULL removes it. */
typedef void (*nn_module_forward_hook)(nn_module *m, nn_tensor *input, nn_tensor *output, void *user);
nn_status nn_module_set_forward_hook(nn_module *m, nn_module_forward_hook hook, void *user);

/* Frees the module, its children, its references to its parameters and
 * buffers, and its data (free_data); a child freed this way first leaves
 * its parent. NULL is ignored. */
void nn_module_free(nn_module *m);

#ifdef __cplusplus
}
#endif
#endif
