#include "conv_layout.h"

#include "base/error.h"

nn_status nn_conv_layout_check(const char *backend, nn_kernel kernel, const nn_conv_params *p) {
    const bool known = (p->image_layout == NN_LAYOUT_DENSE || p->image_layout == NN_LAYOUT_CHANNELS_LAST) &&
                       (p->output_layout == NN_LAYOUT_DENSE || p->output_layout == NN_LAYOUT_CHANNELS_LAST);
    if (!known)
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: unknown layouts %d (image) and %d (output)", backend,
                            nn_kernel_name(kernel), p->image_layout, p->output_layout);
    return NN_OK;
}

nn_strided_copy_params nn_channels_last_copy(int32_t n, int32_t c, int32_t h, int32_t w, bool to_channels_last,
                                           int32_t accumulate) {
    const int32_t dense[4] = {c * h * w, h * w, w, 1}, last[4] = {h * w * c, 1, w * c, c};
    nn_strided_copy_params p = {.ndim = 4, .accumulate = accumulate, .shape = {n, c, h, w}};
    for (int d = 0; d < 4; d++) {
        p.src_stride[d] = to_channels_last ? dense[d] : last[d];
        p.dst_stride[d] = to_channels_last ? last[d] : dense[d];
    }
    return p;
}

/* One side of the convolution: the image [batch, channels, height, width]
 * or the output [batch, filters, out_h, out_w]. */
typedef struct side {
    int32_t n, c, h, w;
    bool channels_last;
} side;

static size_t side_bytes(const side *s) { return (size_t)s->n * s->c * s->h * s->w * sizeof(float); }

/* A dense copy of a channels-last operand, in scratch. */
static nn_status to_dense(nn_backend *self, const nn_conv_dense_host *host, const side *s, nn_buffer_ref from,
                          nn_buffer **made, nn_buffer_ref *dense) {
    *made = host->scratch(self, side_bytes(s));
    if (!*made) return nn_last_status();
    *dense = (nn_buffer_ref){*made, 0, side_bytes(s)};
    const nn_strided_copy_params c = nn_channels_last_copy(s->n, s->c, s->h, s->w, false, 0);
    const nn_buffer_ref args[2] = {from, *dense};
    return self->run(self, NN_KERNEL_STRIDED_COPY, args, 2, &c);
}

nn_status nn_conv_through_dense(nn_backend *self, const nn_conv_dense_host *host, nn_kernel kernel,
                                const nn_conv_params *p, const nn_buffer_ref *args, int nargs) {
    const nn_conv_geometry *g = &p->g;
    const side image = {g->batch, g->channels, g->height, g->width, p->image_layout == NN_LAYOUT_CHANNELS_LAST};
    const side output = {g->batch, p->filters, g->out_h, g->out_w, p->output_layout == NN_LAYOUT_CHANNELS_LAST};
    const bool data = kernel == NN_KERNEL_CONV2D_BACKWARD_DATA || kernel == NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_DATA;
    const bool weight =
        kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT || kernel == NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_WEIGHT;
    /* The operand each argument slot holds: forward x, w, y; data dy, w,
     * dx; weight dy, x, dw. The written one is slot 2. */
    const side *read0 = data || weight ? &output : &image, *read1 = weight ? &image : NULL;
    const side *written = data ? &image : weight ? NULL : &output;
    nn_buffer_ref dense[5];
    for (int i = 0; i < nargs && i < 5; i++) dense[i] = args[i];
    nn_conv_params q = *p;
    q.image_layout = q.output_layout = NN_LAYOUT_DENSE;
    nn_buffer *made[3] = {NULL, NULL, NULL};
    /* A weight gradient from kept columns does not read x. */
    const bool reads_x = !(weight && nargs > 3 && args[3].buffer);
    nn_status st = NN_OK;
    if (read0->channels_last) st = to_dense(self, host, read0, args[0], &made[0], &dense[0]);
    if (st == NN_OK && read1 && read1->channels_last && reads_x)
        st = to_dense(self, host, read1, args[1], &made[1], &dense[1]);
    if (st == NN_OK && written && written->channels_last) {
        made[2] = host->scratch(self, side_bytes(written));
        if (!made[2]) st = nn_last_status();
        else dense[2] = (nn_buffer_ref){made[2], 0, side_bytes(written)};
        q.g.accumulate = 0; /* added to the channels-last result below */
    }
    if (st == NN_OK) st = self->run(self, kernel, dense, nargs, &q);
    if (st == NN_OK && made[2]) {
        const nn_strided_copy_params c =
            nn_channels_last_copy(written->n, written->c, written->h, written->w, true, data ? g->accumulate : 0);
        const nn_buffer_ref back[2] = {dense[2], args[2]};
        st = self->run(self, NN_KERNEL_STRIDED_COPY, back, 2, &c);
    }
    for (int i = 0; i < 3; i++)
        if (made[i]) host->scratch_done(self, made[i]);
    return st;
}
