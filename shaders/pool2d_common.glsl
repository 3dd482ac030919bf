// Shared by the pool2d_*.comp shaders: the push constants (nn_pool2d_geometry)
// and the windows of shaders/pool2d_window.h along rows and columns, walked
// as the CPU walks them (cpu_pool2d.c).
#include "pool2d_window.h"
PUSH_CONSTANTS(PUSH_POOL2D)

// Output o's window along an axis: positions start + j * step for
// first <= j < end, all inside the image.
struct WindowTaps {
    int start, first, end, step;
};

WindowTaps row_window(int oh) {
    int start = pool2d_start(oh, p.height, p.out_h, p.stride_h, p.pad_h, p.adaptive);
    int taps = pool2d_taps(oh, p.height, p.out_h, p.kernel_h, p.adaptive);
    return WindowTaps(start, pool2d_first_tap(start, p.dilation_h), pool2d_end_tap(start, taps, p.height, p.dilation_h),
                      p.dilation_h);
}

WindowTaps column_window(int ow) {
    int start = pool2d_start(ow, p.width, p.out_w, p.stride_w, p.pad_w, p.adaptive);
    int taps = pool2d_taps(ow, p.width, p.out_w, p.kernel_w, p.adaptive);
    return WindowTaps(start, pool2d_first_tap(start, p.dilation_w), pool2d_end_tap(start, taps, p.width, p.dilation_w),
                      p.dilation_w);
}

float avg_divisor(int oh, int ow) {
    if (p.divisor > 0) return float(p.divisor);
    int rows = pool2d_avg_count(oh, p.height, p.out_h, p.kernel_h, p.stride_h, p.pad_h, p.adaptive, p.count_include_pad);
    int cols = pool2d_avg_count(ow, p.width, p.out_w, p.kernel_w, p.stride_w, p.pad_w, p.adaptive, p.count_include_pad);
    return float(rows * cols);
}

int row_reader(int candidate, int h) {
    return pool2d_reader(candidate, h, p.height, p.out_h, p.stride_h, p.pad_h, p.dilation_h, p.adaptive);
}

int column_reader(int candidate, int w) {
    return pool2d_reader(candidate, w, p.width, p.out_w, p.stride_w, p.pad_w, p.dilation_w, p.adaptive);
}
