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
