// nn_conv_geometry as push constants (after the buffer offsets).
layout(push_constant) uniform Params {
    PC_OFFSETS
    int batch, channels, height, width;
    int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
    int out_h, out_w;
    int accumulate;
} p;
