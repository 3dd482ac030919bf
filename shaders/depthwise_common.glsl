// Shared by the depthwise_conv2d_*.comp shaders: the push constants
// (nn_conv_params with groups == channels: filter f reads channel f / mult)
// and the output along an axis that reads input i through tap k.
PUSH_CONSTANTS(PUSH_DEPTHWISE)

int multiplier() { return p.filters / p.channels; }

// The weight of filter f at tap t: packed [tap][filter] for channels-last
// tensors (vk_depthwise.c), as the layer's [filter][tap] otherwise.
uint weight_at(int f, int t) {
    return p.image_last != 0 || p.output_last != 0 ? uint(t * p.filters + f) : uint(f * p.kernel_h * p.kernel_w + t);
}

int reader(int i, int k, int pad, int dilation, int stride, int outputs) {
    int t = i + pad - k * dilation;
    if (stride == 1) return t >= 0 && t < outputs ? t : -1; // no division: most depthwise layers
    if (t < 0) return -1;
    if ((stride & (stride - 1)) == 0) { // a power of two (MobileNet's 2): a mask and a shift
        int o = t >> findLSB(stride);
        return (t & (stride - 1)) == 0 && o < outputs ? o : -1;
    }
    if (t % stride != 0 || t / stride >= outputs) return -1;
    return t / stride;
}

// Element (n, channel, row, column) of a [batch, channels, rows, columns]
// tensor, dense or channels-last.
uint element(bool last, uint n, uint channel, uint row, uint column, uint channels, uint rows, uint columns) {
    return last ? ((n * rows + row) * columns + column) * channels + channel
                : ((n * channels + channel) * rows + row) * columns + column;
}

// The (n, channel, row, column) of element idx of such a tensor, in the
// order of its memory (invocations in a row write neighbouring elements).
void position(bool last, uint idx, uint channels, uint rows, uint columns, out uint n, out int channel, out int row,
              out int column) {
    if (last) {
        channel = int(idx % channels);
        uint pixel = idx / channels;
        column = int(pixel % columns);
        row = int(pixel / columns % rows);
        n = pixel / columns / rows;
    } else {
        column = int(idx % columns);
        row = int(idx / columns % rows);
        uint plane = idx / columns / rows;
        channel = int(plane % channels);
        n = plane / channels;
    }
}

// Quads (p.quads): the pixel (n, row, column) and first channel of quad
// `idx` of a channels-last [batch, rows, columns, channels] tensor.
void quad_position(uint idx, uint channels, uint rows, uint columns, out uint n, out int channel, out int row,
                   out int column) {
    uint quads_per_pixel = channels / 4u, pixel = idx / quads_per_pixel;
    channel = int((idx - pixel * quads_per_pixel) * 4u);
    uint line = pixel / columns;
    column = int(pixel - line * columns);
    n = line / rows;
    row = int(line - n * rows);
}
