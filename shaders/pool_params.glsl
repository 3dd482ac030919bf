// nn_pool_params as push constants (after the buffer offsets).
PUSH_CONSTANTS(PUSH_POOL)

// Where pixel `pixel` (row * columns + column) of plane (n, c) of a
// [batch, channels, rows, columns] tensor is: planes are dense, or the
// channels are innermost (channels-last).
uint pool_element(uint n, uint c, uint pixel, uint plane) {
    return p.channels_last != 0 ? (n * plane + pixel) * uint(p.channels) + c : (n * uint(p.channels) + c) * plane + pixel;
}

// The plane (n, c) and pixel of element idx of such a tensor, in its memory order.
void pool_position(uint idx, uint plane, out uint n, out uint c, out uint pixel) {
    if (p.channels_last != 0) {
        c = idx % uint(p.channels);
        pixel = idx / uint(p.channels) % plane;
        n = idx / uint(p.channels) / plane;
    } else {
        pixel = idx % plane;
        c = idx / plane % uint(p.channels);
        n = idx / plane / uint(p.channels);
    }
}

// The image n, first channel c, row and column of the four channels that
// invocation idx takes of a channels-last [batch, rows, columns, channels]
// tensor (p.quads: channels in fours).
void pool_quad_position(uint idx, uint rows, uint columns, out uint n, out uint c, out int row, out int column) {
    uint quads_per_pixel = uint(p.channels) / 4u, pixel = idx / quads_per_pixel;
    c = (idx - pixel * quads_per_pixel) * 4u;
    uint line = pixel / columns;
    column = int(pixel - line * columns);
    n = line / rows;
    row = int(line - n * rows);
}
