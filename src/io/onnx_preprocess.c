/* The normalisation a model was trained with, as the first nodes of its
 * ONNX graph: raw pixel values in, (x / 255 - mean) / std per channel, in
 * the order torchvision's ToTensor and Normalize compute it. */
#include "onnx_graph.h"

nn_status nn_onnx_emit_preprocess(exporter *x, const char *raw_name, const char *normalized_name) {
    const nn_model_info *info = x->opt->info;
    const nn_tensor *in = x->input;
    const int channels = info->channels;
    /* One channel broadcasts over any input; several need NCHW with as many channels. */
    if (channels > 1 && (in->ndim != 4 || in->shape[1] != channels))
        return nn_set_error(NN_ERR_SHAPE, "%s: the normalisation has %d channels but the input is not "
                                          "N x %d x H x W (%d dimensions, dimension 1 of %lld)", x->who, channels,
                            channels, in->ndim, in->ndim > 1 ? (long long)in->shape[1] : 0LL);
    const int64_t per_channel[4] = {1, channels, 1, 1}, one[1] = {1};
    const int64_t *dims = channels > 1 ? per_channel : one;
    const int ndim = channels > 1 ? 4 : 1;
    const float pixel_max = 255.0f;
    const char *scale = nn_onnx_add_constant(x, "preprocess.pixel_max", NN_ONNX_FLOAT, one, 1, &pixel_max,
                                             sizeof pixel_max);
    const char *mean = scale ? nn_onnx_add_constant(x, "preprocess.mean", NN_ONNX_FLOAT, dims, ndim, info->mean,
                                                    (size_t)channels * sizeof(float))
                             : NULL;
    const char *std = mean ? nn_onnx_add_constant(x, "preprocess.std", NN_ONNX_FLOAT, dims, ndim, info->std,
                                                  (size_t)channels * sizeof(float))
                           : NULL;
    if (!std) return nn_last_status();
    value *scaled = nn_onnx_add_value(x, NULL, "preprocess.scaled", true);
    value *centered = scaled ? nn_onnx_add_value(x, NULL, "preprocess.centered", true) : NULL;
    if (!centered) return nn_last_status();
    nn_onnx_pair(x, "Div", "preprocess.Div_scale", raw_name, scale, scaled->name);
    nn_onnx_pair(x, "Sub", "preprocess.Sub_mean", scaled->name, mean, centered->name);
    nn_onnx_pair(x, "Div", "preprocess.Div_std", centered->name, std, normalized_name);
    return NN_OK;
}
