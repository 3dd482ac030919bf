/* Resampling (PyTorch's interpolate, modes nearest and bilinear) through
 * the INTERPOLATE_* kernels. The node keeps the kernels' parameters and
 * the scale factors the caller gave (0 where it gave a size), which the
 * ONNX Resize takes as its scales (else its sizes). */
#include <math.h>
#include <stdio.h>

#include "interpolate_map.h"
#include "io/onnx_graph.h"
#include "ops.h"

typedef struct interpolate_node {
    nn_interpolate_params p;
    double scale_factor_h, scale_factor_w; /* 0: by size */
} interpolate_node;

static nn_status forward(nn_node *node) {
    return nn_run_forward(node, NN_KERNEL_INTERPOLATE_FORWARD, &NN_NODE_PARAMS(node, interpolate_node)->p);
}

static nn_status backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *grad;
    if (!nn_wants_grad(x)) return NN_OK;
    nn_interpolate_params p = NN_NODE_PARAMS(node, interpolate_node)->p;
    NN_TRY(nn_grad_target(x, &grad, &p.accumulate));
    nn_buffer_ref args[2] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_INTERPOLATE_BACKWARD, args, 2, &p);
}

/* Resize (opset 13+) with PyTorch's coordinates: nearest as asymmetric +
 * floor, bilinear as pytorch_half_pixel (half_pixel, except one output
 * reads input 0, as PyTorch does) or align_corners; scales where the
 * caller gave scale factors, else sizes from x's own N, C and the output's
 * H, W (so the batch stays free). */
static nn_status to_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    const interpolate_node *c = NN_NODE_PARAMS(io->node, interpolate_node);
    nn_onnx_reserve_name(x, "Resize", io);
    char name[96], shape[96], leading[96], sizes_name[96];
    const char *scales = "", *sizes = "";
    if (c->scale_factor_h > 0.0) {
        const float factors[4] = {1.0f, 1.0f, (float)c->scale_factor_h, (float)c->scale_factor_w};
        const int64_t len = 4;
        snprintf(name, sizeof name, "%s_scales", io->name);
        scales = nn_onnx_add_constant(x, name, NN_ONNX_FLOAT, &len, 1, factors, sizeof factors);
        if (!scales) return nn_last_status();
    } else {
        const int64_t one = 1, two = 2, zero = 0, hw[2] = {c->p.out_h, c->p.out_w};
        snprintf(name, sizeof name, "%s_starts", io->name);
        const char *starts = nn_onnx_add_constant(x, name, NN_ONNX_INT64, &one, 1, &zero, sizeof zero);
        snprintf(name, sizeof name, "%s_ends", io->name);
        const char *ends = nn_onnx_add_constant(x, name, NN_ONNX_INT64, &one, 1, &two, sizeof two);
        snprintf(name, sizeof name, "%s_hw", io->name);
        const char *out_hw = nn_onnx_add_constant(x, name, NN_ONNX_INT64, &two, 1, hw, sizeof hw);
        if (!starts || !ends || !out_hw) return nn_last_status();
        nn_onnx_node n;
        snprintf(shape, sizeof shape, "%s_shape", io->name);
        nn_onnx_node_begin(&n, "Shape", shape);
        nn_onnx_node_input(&n, io->in[0]->name);
        nn_onnx_node_output(&n, shape);
        nn_onnx_node_end(&n, &x->graph);
        snprintf(leading, sizeof leading, "%s_nc", io->name);
        nn_onnx_node_begin(&n, "Slice", leading);
        nn_onnx_node_input(&n, shape);
        nn_onnx_node_input(&n, starts);
        nn_onnx_node_input(&n, ends);
        nn_onnx_node_output(&n, leading);
        nn_onnx_node_end(&n, &x->graph);
        snprintf(sizes_name, sizeof sizes_name, "%s_sizes", io->name);
        nn_onnx_node_begin(&n, "Concat", sizes_name);
        nn_onnx_node_input(&n, leading);
        nn_onnx_node_input(&n, out_hw);
        nn_onnx_node_output(&n, sizes_name);
        nn_onnx_attr_int(&n, "axis", 0);
        nn_onnx_node_end(&n, &x->graph);
        sizes = sizes_name;
    }
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Resize", io->name);
    nn_onnx_node_input(&n, io->in[0]->name);
    nn_onnx_node_input(&n, ""); /* roi */
    nn_onnx_node_input(&n, scales);
    if (*sizes) nn_onnx_node_input(&n, sizes);
    nn_onnx_node_output(&n, out);
    const bool nearest = c->p.mode == NN_INTERP_NEAREST;
    nn_onnx_attr_string(&n, "mode", nearest ? "nearest" : "linear");
    nn_onnx_attr_string(&n, "coordinate_transformation_mode",
                        nearest ? "asymmetric" : c->p.align_corners ? "align_corners" : "pytorch_half_pixel");
    if (nearest) nn_onnx_attr_string(&n, "nearest_mode", "floor");
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

const nn_op nn_op_interpolate = {.name = "nn_interpolate", .forward = forward, .backward = backward,
                                 .to_onnx = to_onnx};

/* PyTorch's input positions per output step (area_pixel_compute_scale). */
static float scale_of(int64_t in, int64_t out, double scale_factor, bool align_corners) {
    if (align_corners) return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
    return scale_factor > 0.0 ? (float)(1.0 / scale_factor) : (float)in / (float)out;
}

nn_tensor *nn_interpolate(nn_tensor *x, int out_h, int out_w, double scale_h, double scale_w,
                          nn_interpolate_mode mode, bool align_corners) {
    const char *op = "nn_interpolate";
    if (nn_check_tensor_ndim(op, "x", x, NN_F32, 4) != NN_OK) return NULL;
    if (mode != NN_INTERPOLATE_NEAREST && mode != NN_INTERPOLATE_BILINEAR) {
        nn_set_error(NN_ERR_ARGUMENT, "%s: mode must be NN_INTERPOLATE_NEAREST (0) or NN_INTERPOLATE_BILINEAR (1), "
                     "got %d", op, (int)mode);
        return NULL;
    }
    if (align_corners && mode != NN_INTERPOLATE_BILINEAR) {
        nn_set_error(NN_ERR_ARGUMENT, "%s: align_corners applies to bilinear mode only", op);
        return NULL;
    }
    const bool by_size = out_h != 0 || out_w != 0, by_scale = scale_h != 0.0 || scale_w != 0.0;
    if (by_size == by_scale) {
        nn_set_error(NN_ERR_ARGUMENT, "%s: give either a size (got %dx%d) or scale factors (got %gx%g), not %s", op,
                     out_h, out_w, scale_h, scale_w, by_size ? "both" : "neither");
        return NULL;
    }
    if (by_scale && !(scale_h > 0.0 && scale_w > 0.0 && isfinite(scale_h) && isfinite(scale_w))) {
        nn_set_error(NN_ERR_ARGUMENT, "%s: scale factors must be positive and finite, got %gx%g", op, scale_h, scale_w);
        return NULL;
    }
    /* A scaled size is checked as a double: converting one past int64 is undefined. */
    const double scaled_h = floor((double)x->shape[2] * scale_h), scaled_w = floor((double)x->shape[3] * scale_w);
    if (by_scale && (scaled_h > INT32_MAX || scaled_w > INT32_MAX)) {
        nn_set_error(NN_ERR_SHAPE, "%s: scale factors %gx%g make an output height x width of %.0fx%.0f, beyond the "
                     "kernels' 32-bit sizes", op, scale_h, scale_w, scaled_h, scaled_w);
        return NULL;
    }
    const int64_t oh = by_size ? out_h : (int64_t)scaled_h;
    const int64_t ow = by_size ? out_w : (int64_t)scaled_w;
    char sx[96];
    if (x->shape[2] < 1 || x->shape[3] < 1 || oh < 1 || ow < 1) {
        nn_set_error(NN_ERR_SHAPE, "%s: x %s to an output of %lldx%lld: both must be at least 1x1", op,
                     nn_format_shape(4, x->shape, sx, sizeof sx), (long long)oh, (long long)ow);
        return NULL;
    }
    if (nn_check_int32(op, "planes", x->shape[0] * x->shape[1]) != NN_OK ||
        nn_check_int32(op, "output height", oh) != NN_OK || nn_check_int32(op, "output width", ow) != NN_OK ||
        nn_check_int32(op, "input height", x->shape[2]) != NN_OK ||
        nn_check_int32(op, "input width", x->shape[3]) != NN_OK)
        return NULL;
    interpolate_node node = {
        .p = {.planes = (int32_t)(x->shape[0] * x->shape[1]), .in_h = (int32_t)x->shape[2],
              .in_w = (int32_t)x->shape[3], .out_h = (int32_t)oh, .out_w = (int32_t)ow,
              .mode = mode == NN_INTERPOLATE_NEAREST ? NN_INTERP_NEAREST : NN_INTERP_BILINEAR,
              .align_corners = align_corners,
              .scale_h = scale_of(x->shape[2], oh, by_scale ? scale_h : 0.0, align_corners),
              .scale_w = scale_of(x->shape[3], ow, by_scale ? scale_w : 0.0, align_corners)},
        .scale_factor_h = by_scale ? scale_h : 0.0, .scale_factor_w = by_scale ? scale_w : 0.0};
    const int64_t shape[4] = {x->shape[0], x->shape[1], oh, ow};
    nn_tensor *inputs[1] = {x};
    return nn_op_result(&nn_op_interpolate, inputs, 1, &node, sizeof node, 4, shape);
}
