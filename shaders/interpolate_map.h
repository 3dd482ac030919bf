/* Which inputs each output of the INTERPOLATE_* kernels reads along one
 * axis (rows or columns), and with what weights (nn_interpolate_params in
 * kernels.h), as PyTorch 1.13's upsample_nearest2d and upsample_bilinear2d
 * compute them. Written in the part of C and GLSL the two share, so the CPU
 * backend (cpu_interpolate.c) and the shaders (interpolate_*.comp) pick the
 * same taps and add in the same order.
 *
 * Output o reads input i0 with weight 1 - lambda and i0 + step with weight
 * lambda (nearest: lambda 0; step 0 at the last input, where both taps are
 * the same input and its weights add). */
#ifndef NN_SHADERS_INTERPOLATE_MAP_H
#define NN_SHADERS_INTERPOLATE_MAP_H

#define NN_INTERP_NEAREST 0
#define NN_INTERP_BILINEAR 1

/* GLSL (#version 450 is a core profile) knows no static, inline or casts;
 * `precise` keeps it from fusing the source position's multiply-add, so it
 * rounds as C does. */
#ifdef GL_core_profile
#define INTERP_FN
#define INTERP_FLOAT(v) float(v)
#define INTERP_INT(v) int(v)
#define INTERP_PRECISE precise
#else
#define INTERP_FN static inline
#define INTERP_FLOAT(v) ((float)(v))
#define INTERP_INT(v) ((int)(v))
#define INTERP_PRECISE
#endif

/* The source position of output o: o * scale (nearest, align_corners), or
 * the pixel centre's (o + 0.5) * scale - 0.5, clamped at 0 (bilinear). */
INTERP_FN float interp_source(int o, float scale, int mode, int align_corners) {
    if (mode == NN_INTERP_NEAREST || align_corners != 0) {
        INTERP_PRECISE float s = INTERP_FLOAT(o) * scale;
        return s;
    }
    INTERP_PRECISE float s = (INTERP_FLOAT(o) + 0.5f) * scale - 0.5f;
    return s < 0.0f ? 0.0f : s;
}

/* The first input tap of a source position (truncation: it is >= 0). */
INTERP_FN int interp_first(float source, int size) {
    int i = INTERP_INT(source);
    return i < size - 1 ? i : size - 1;
}

INTERP_FN int interp_step(int first, int size, int mode) {
    return mode == NN_INTERP_BILINEAR && first < size - 1 ? 1 : 0;
}

INTERP_FN float interp_lambda(float source, int first, int mode) {
    return mode == NN_INTERP_BILINEAR ? source - INTERP_FLOAT(first) : 0.0f;
}

/* The weight with which output o reads input i (0 where it does not). */
INTERP_FN float interp_weight(int o, int i, float scale, int size, int mode, int align_corners) {
    float source = interp_source(o, scale, mode, align_corners);
    int first = interp_first(source, size);
    float lambda = interp_lambda(source, first, mode);
    float w = i == first ? 1.0f - lambda : 0.0f;
    return i == first + interp_step(first, size, mode) ? w + lambda : w;
}

/* A range [first, end) of outputs holding every output that reads input i
 * (a superset: interp_weight says which do). A source position moves by
 * scale per output, so the readers of i lie within (i - 2) / scale - 2
 * and (i + 2) / scale + 2; a scale of 0 (align_corners onto one output,
 * or from one input) lets every output read input 0. */
INTERP_FN int interp_first_reader(int i, float scale) {
    if (!(scale > 0.0f)) return 0;
    int o = INTERP_INT(INTERP_FLOAT(i - 2) / scale) - 2;
    return o < 0 ? 0 : o;
}

INTERP_FN int interp_end_reader(int i, float scale, int outputs) {
    if (!(scale > 0.0f)) return outputs;
    float o = INTERP_FLOAT(i + 2) / scale + 3.0f;
    return o < INTERP_FLOAT(outputs) ? INTERP_INT(o) : outputs;
}

#endif
