// nn_pool_params as push constants (after the buffer offsets).
layout(push_constant) uniform Params {
    PC_OFFSETS
    int batch, channels, height, width;
    int kernel, stride, pad;
    int out_h, out_w;
    int accumulate;
} p;
