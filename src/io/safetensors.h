/* Reading and writing safetensors files of nn-engine tensors, shared by the
 * module checkpoints (checkpoint.c) and the training state (train_state.c). */
#ifndef NN_IO_SAFETENSORS_H
#define NN_IO_SAFETENSORS_H

#include "core/internal.h"
#include "safetensors_header.h"

/* __metadata__ "format" of a training state (train_state.c), which
 * nn_load_module names when refusing one. */
#define NN_TRAIN_STATE_FORMAT "nn-engine-train-state"

/* One tensor to write or to fill, under its file name. */
typedef struct nn_st_binding {
    const char *name;
    nn_tensor *tensor;
} nn_st_binding;

/* Write the tensors (in this order) and the metadata (may be NULL/0)
 * atomically. Names must be unique and non-empty. */
nn_status nn_st_save(const char *who, const char *path, const nn_st_binding *tensors, int count,
                     const nn_st_meta *meta, int meta_count);

/* A whole file in memory with its validated header. */
typedef struct nn_st_file {
    uint8_t *bytes;
    size_t size;
    nn_st_header header;
} nn_st_file;

nn_status nn_st_open(const char *who, const char *path, nn_st_file *file);
void nn_st_close(nn_st_file *file);

/* A file's validated header alone, its tensors' bytes left unread (for
 * its metadata); free with nn_st_header_free. */
nn_status nn_st_read_header(const char *who, const char *path, nn_st_header *header);

/* Fill the bound tensors from the file, all or nothing: the file must hold
 * exactly these names (an extra or a missing one is refused, naming it),
 * each with the tensor's dtype and shape; only when everything checks out
 * are the tensors written, and if a device write still fails the tensors
 * already written get their old values back. */
nn_status nn_st_assign(const char *who, const char *path, const nn_st_file *file,
                       const nn_st_binding *tensors, int count);
/* nn_st_assign, ignoring the file's entries under the module path
 * `except` (nn_st_name_under; NULL: none): a classifier being replaced. */
nn_status nn_st_assign_except(const char *who, const char *path, const nn_st_file *file,
                              const nn_st_binding *tensors, int count, const char *except);
/* Whether state_dict name `name` belongs to the child at module path
 * `child` ("fc.weight" is under "fc"; "fc2.weight" is not). */
bool nn_st_name_under(const char *name, const char *child);

#endif
