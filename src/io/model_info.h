/* The model info of nn_io.h as safetensors metadata: shared by the
 * checkpoint writer (checkpoint.c), the reader and the ONNX exporter. */
#ifndef NN_IO_MODEL_INFO_H
#define NN_IO_MODEL_INFO_H

#include "nn_io.h"
#include "safetensors_header.h"

#define NN_INFO_NORMALIZE_KEY "nn_engine.normalize"
#define NN_INFO_CLASSES_KEY "nn_engine.classes"

/* Refuses an info nn_io.h does not allow, naming `who` and the field. */
nn_status nn_model_info_check(const char *who, const nn_model_info *info);

/* The metadata entries of `info` (up to 2) into meta[], their strings
 * allocated; *count says how many. Free with nn_model_info_meta_free. */
nn_status nn_model_info_to_meta(const char *who, const nn_model_info *info, nn_st_meta meta[2], int *count);
void nn_model_info_meta_free(nn_st_meta *meta, int count);

/* The class names as one JSON list (allocated), or NULL when out of memory. */
char *nn_model_info_classes_json(const nn_model_info *info);

#endif
