/* What the 2-D pooling operations share (pool2d.c): the checks of their
 * arguments and the geometry of their POOL2D_* kernels, their output shape,
 * and their ONNX nodes. Max pooling is pool2d_max.c, average pooling
 * pool2d_avg.c, each with its adaptive form. */
#ifndef NN_OPS_POOL2D_H
#define NN_OPS_POOL2D_H

#include "io/onnx_graph.h"
#include "nn_ops.h"
#include "op_common.h"

/* x (float32, [N, C, H, W] or [C, H, W]) under sliding windows: the window's
 * checks (PyTorch's; dilation other than 1 only with `dilation`), its
 * output size rule (ceil_mode included) and the kernels' geometry. The
 * messages name `op`. */
nn_status nn_pool2d_window_geometry(const char *op, const nn_tensor *x, const nn_pool2d_params *window,
                                    bool dilation, nn_pool2d_geometry *g);
/* x under adaptive windows to out_h x out_w (each >= 1). */
nn_status nn_pool2d_adaptive_geometry(const char *op, const nn_tensor *x, int out_h, int out_w,
                                      nn_pool2d_geometry *g);
/* Record `op` over x with the geometry as its parameters: x's leading
 * dimensions, then out_h, out_w. */
nn_tensor *nn_pool2d_record(const nn_op *op, nn_tensor *x, const nn_pool2d_geometry *g);

/* ---- ONNX ---- */

/* Refuses an unbatched input (ONNX's pools take [N, C, H, W]) and checks
 * the batch as a one-input operation. */
nn_status nn_pool2d_onnx_begin(exporter *x, op_io *io);
/* A pooling node of `op_type` over the sliding windows of g (kernel_shape,
 * strides, pads and ceil_mode when the output size needs it), left open
 * for more attributes. */
void nn_pool2d_onnx_window(exporter *x, nn_onnx_node *n, const char *op_type, op_io *io, const char *out,
                           const nn_pool2d_geometry *g);
/* An adaptive pool as ONNX: `global_type` for a 1 x 1 output, `op_type`
 * with kernel = stride = input / output where the output divides the input,
 * else refused (ONNX has no adaptive pooling), naming the operation. */
nn_status nn_pool2d_onnx_adaptive(exporter *x, op_io *io, const char *out, const char *op_type,
                                  const char *global_type);

#endif
