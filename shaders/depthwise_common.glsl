// Shared by the depthwise_conv2d_*.comp shaders: the push constants
// (nn_conv_params with groups == channels: filter f reads channel f / mult)
// and the output along an axis that reads input i through tap k.
PUSH_CONSTANTS(PUSH_DEPTHWISE)

int multiplier() { return p.filters / p.channels; }

int reader(int i, int k, int pad, int dilation, int stride, int outputs) {
    int t = i + pad - k * dilation;
    if (t < 0 || t % stride != 0 || t / stride >= outputs) return -1;
    return t / stride;
}
