/* The push-constant block of every shader, written once for both sides:
 * GLSL declares it with PUSH_CONSTANTS(PUSH_<NAME>) (common.glsl), C makes
 * the same struct with VK_PUSH(NAME) (src/backends/vulkan/vk_push.h), so
 * the two cannot drift apart. Each block is a list of F(type, name) with
 * type uint, int or float (scalars and scalar arrays only, so the C
 * struct's layout is std430's), and starts with the element offsets of the
 * kernel's buffer arguments: each binding is a whole memory block of the
 * sub-allocator, and a tensor lives at an offset in it. The dispatch fills
 * `off`, as many words as the block declares (at least one per argument);
 * the rest is the kernel's parameters, 64-bit sizes narrowed to 32 bits
 * after the host checked they fit. Included by C and GLSL: macros only. */
#ifndef NN_SHADERS_PUSH_CONSTANTS_H
#define NN_SHADERS_PUSH_CONSTANTS_H

/* ---- pointwise and reductions ---- */
#define PUSH_FILL(F) F(uint, off[4]) F(uint, n) F(uint, bits)
#define PUSH_RELU_FORWARD(F) F(uint, off[4]) F(uint, n)
#define PUSH_RELU_BACKWARD(F) F(uint, off[4]) F(uint, n) F(int, accumulate)
/* op: the row of unary_ops.h (nn_unary_op); alpha, beta: its parameters */
#define PUSH_UNARY_FORWARD(F) F(uint, off[4]) F(uint, n) F(int, op) F(float, alpha) F(float, beta)
#define PUSH_UNARY_BACKWARD(F) F(uint, off[4]) F(uint, n) F(int, op) F(int, accumulate) F(float, alpha) F(float, beta)
/* op: 0 add, 1 mul, 2 scale (nn_elementwise_op) */
#define PUSH_ELEMENTWISE(F) F(uint, off[4]) F(uint, n) F(int, op) F(int, accumulate) F(float, alpha)
#define PUSH_BROADCAST_SCALAR(F) F(uint, off[4]) F(uint, n) F(int, accumulate) F(float, alpha)
/* square_input: sum x^2; final: 1 writes alpha * total to out[0] (+= with
 * accumulate), 0 one partial per workgroup */
#define PUSH_REDUCE(F) \
    F(uint, off[4]) F(uint, n) F(int, square_input) F(int, final) F(int, accumulate) F(float, alpha)
#define PUSH_BIAS_ADD(F) F(uint, off[4]) F(uint, outer) F(uint, inner) F(uint, channels)
/* chunks per channel; chunk: entries per chunk, a multiple of PIECE;
 * counters (chunks > 1): the element index of the channel counters in binding 2 */
#define PUSH_BIAS_GRAD(F)                                                                                  \
    F(uint, off[4]) F(uint, outer) F(uint, inner) F(uint, channels) F(int, accumulate) F(uint, chunks)   \
    F(uint, chunk) F(uint, counters) F(uint, columns)
/* op: nn_cast_op (kernels.h) */
#define PUSH_CAST(F) F(uint, off[4]) F(uint, n) F(int, op)
#define PUSH_DROPOUT_FORWARD(F) \
    F(uint, off[4]) F(uint, n) F(uint, threshold) F(float, scale) F(uint, seed_lo) F(uint, seed_hi)

/* ---- strided: broadcasts, copies and reductions over any dimensions (kernels.h) ---- */
/* nn_broadcast_params: stride_a/b/c are its stride[0/1/2] */
#define PUSH_BROADCAST(F)                                                                                    \
    F(uint, off[4]) F(int, ndim) F(int, op) F(int, accumulate) F(float, alpha) F(int, shape[6])            \
    F(int, stride_a[6]) F(int, stride_b[6]) F(int, stride_c[6])
/* nn_compare_params: stride_a/b are its stride[0/1] */
#define PUSH_COMPARE(F)                                                                                      \
    F(uint, off[4]) F(int, ndim) F(int, op) F(int, integer) F(int, shape[6]) F(int, stride_a[6])           \
    F(int, stride_b[6])
#define PUSH_STRIDED_COPY(F)                                                                                 \
    F(uint, off[4]) F(int, ndim) F(int, accumulate) F(int, shape[6]) F(int, src_stride[6])                 \
    F(int, dst_stride[6])
/* nn_reduce_dims_params; lanes: invocations per output (a power of 2 up
 * to 256); chunks > 1 (sums only): each output's elements in that many
 * slices of chunk elements, each slice's raw sum written to out[slice *
 * outputs + output] for a second pass to add; integer: an int32 sum */
#define PUSH_REDUCE_DIMS(F)                                                                                  \
    F(uint, off[4]) F(int, op) F(int, kept) F(int, reduced) F(int, accumulate) F(float, alpha)             \
    F(int, lanes) F(int, chunks) F(int, chunk) F(int, shape[6]) F(int, stride[6]) F(int, integer)

/* ---- softmax and its losses ---- */
/* row_groups (the cross-entropy kernels): a workgroup per row, else an
 * invocation; counters: the split work area's counter (several workgroups) */
#define PUSH_SOFTMAX(F) \
    F(uint, off[5]) F(int, rows) F(int, cols) F(int, accumulate) F(int, row_groups) F(uint, counters)
#define PUSH_METRICS_ACCUMULATE(F) F(uint, off[4]) F(int, rows) F(int, cols)

/* ---- optimizers ---- */
#define PUSH_SGD_UPDATE(F)                                                                                    \
    F(uint, off[5]) F(uint, n) F(float, lr) F(float, momentum) F(float, weight_decay) F(float, clip_value)   \
    F(float, max_grad_norm) F(int, nesterov) F(int, has_velocity) F(int, has_norm) F(int, has_skip)

/* ---- device-side training loops ---- */
#define PUSH_COUNTER_ADD(F) F(uint, off[4]) F(int, delta) F(int, has_skip)
/* nn_gather_params: row i of the output is table row order[first + counter
 * * stride + i] (no order: the position itself; no counter: 0) */
#define PUSH_GATHER(F)                                                                                        \
    F(uint, off[5]) F(int, rows) F(int, row_elems) F(int, first) F(int, stride) F(int, positions)           \
    F(int, table_rows) F(int, plane) F(float, scale[4]) F(float, shift[4]) F(int, has_order)                \
    F(int, has_counter) F(int, width) F(int, crop_pad) F(int, flip) F(uint, seed_lo) F(uint, seed_hi)        \
    F(int, draw_row)

/* ---- pooling, columns ---- */
/* channels_last: nn_pool_params.layout is channels-last */
#define PUSH_POOL(F)                                                                                          \
    F(uint, off[4]) F(int, batch) F(int, channels) F(int, height) F(int, width) F(int, kernel) F(int, stride) \
    F(int, pad) F(int, out_h) F(int, out_w) F(int, accumulate) F(int, channels_last) F(int, quads)
#define PUSH_CONV_GEOMETRY(F)                                                                                 \
    F(uint, off[4]) F(int, batch) F(int, channels) F(int, height) F(int, width) F(int, kernel_h)            \
    F(int, kernel_w) F(int, stride_h) F(int, stride_w) F(int, pad_h) F(int, pad_w) F(int, out_h)            \
    F(int, out_w) F(int, accumulate) F(int, dilation_h) F(int, dilation_w)

/* ---- GEMM ---- */
/* The product C[b] = alpha op(A[b]) op(B[b]) + beta C[b]; summed: the
 * batch adds into one C; splits walk split_steps (product, k slice) steps
 * each; epilogue: NN_EPI_* bits (kernels.h), 0 for the plain GEMM. */
#define PUSH_GEMM_PRODUCT(F)                                                                                  \
    F(uint, m) F(uint, n) F(uint, k) F(uint, trans_a) F(uint, trans_b) F(uint, lda) F(uint, ldb) F(uint, ldc) \
    F(uint, batch) F(uint, summed) F(uint, stride_a) F(uint, stride_b) F(uint, stride_c) F(float, alpha)    \
    F(float, beta) F(uint, splits) F(uint, split_steps) F(uint, epilogue)
#define PUSH_GEMM(F) F(uint, off[4]) PUSH_GEMM_PRODUCT(F)
/* counters (splits > 1): the element index of the tile counters in binding 4 */
#define PUSH_GEMM_LATENCY(F) F(uint, off[8]) PUSH_GEMM_PRODUCT(F) F(uint, counters)
#define PUSH_GEMM_SPLITK(F) \
    F(uint, off[4]) F(uint, m) F(uint, n) F(uint, ldc) F(uint, splits) F(float, alpha) F(float, beta) F(uint, epilogue)
#define PUSH_GEMM_EPILOGUE_PASS(F)                                                                            \
    F(uint, off[4]) F(uint, m) F(uint, n) F(uint, ldc) F(uint, ld_t) F(uint, batch) F(uint, stride_c)       \
    F(uint, stride_t) F(float, beta) F(uint, epilogue)

/* ---- convolution ---- */
/* conv_latency.comp: the convolution's geometry, then its product's m, n,
 * k (conv_latency.comp says which per mode) as gemm_latency.comp's */
#define PUSH_CONV_LATENCY(F)                                                                                  \
    F(uint, off[8]) F(uint, batch) F(uint, channels) F(uint, height) F(uint, width) F(uint, kernel_h)       \
    F(uint, kernel_w) F(uint, stride_h) F(uint, stride_w) F(uint, pad_h) F(uint, pad_w) F(uint, out_h)      \
    F(uint, out_w) F(uint, filters) F(uint, m) F(uint, n) F(uint, k) F(uint, summed) F(float, alpha)        \
    F(float, beta) F(uint, splits) F(uint, split_steps) F(uint, epilogue) F(uint, counters)

/* The fused convolution + ReLU + max pooling kernels: the layer's shape first. */
#define PUSH_CONV_POOL_SHAPE(F)                                                                               \
    F(uint, batch) F(uint, channels) F(uint, height) F(uint, width) F(int, pad_h) F(int, pad_w) F(uint, out_w) \
    F(uint, filters)
/* flags: 1 the convolution's bias; the Linear's: 2 its bias, 4 a ReLU after
 * it, 8 its weight rows in vec4s; counters: the Linear with several
 * workgroups per image: the work area's first counter (one per image) */
#define PUSH_CONV_POOL_FORWARD(F)                                                                             \
    F(uint, off[16]) PUSH_CONV_POOL_SHAPE(F) F(uint, pooled_h) F(uint, pooled_w) F(uint, padded_h)          \
    F(uint, padded_w) F(uint, flags) F(uint, counters)
/* block: filters per workgroup; lanes per (filter, unit); flags: 1 dweight,
 * 2 dbias, 4 add into dweight, 8 add into dbias; counters: the work area's
 * first counter (element index in binding 6's block) */
#define PUSH_CONV_POOL_WEIGHT(F)                                                                              \
    F(uint, off[8]) PUSH_CONV_POOL_SHAPE(F) F(uint, pooled_plane) F(uint, padded_h) F(uint, padded_w)       \
    F(uint, group_images) F(uint, round_images) F(uint, groups) F(uint, block) F(uint, lanes) F(uint, flags) \
    F(uint, counters)
/* rows, cols: the staged plane, height + pad_h + KH - 1 by width + pad_w +
 * KW - 1 + R - 1; chunk: filters staged at a time */
#define PUSH_CONV_POOL_DATA(F)                                                                                \
    F(uint, off[4]) PUSH_CONV_POOL_SHAPE(F) F(uint, pooled_plane) F(uint, rows) F(uint, cols) F(uint, chunk) \
    F(uint, accumulate)
/* The second layer's shape and staged planes as PUSH_CONV_POOL_DATA's, then
 * the first layer: its input, padding (pad_h | pad_w << 16), output width,
 * window rows and strides (stride_h | stride_w << 16); flags as
 * PUSH_CONV_POOL_WEIGHT's; counters: the work area's first counter (element
 * index in binding 7's block); block_images: images per block of the final
 * sums; filter_block: the first layer's filters per workgroup */
#define PUSH_CONV_POOL_CHAIN_WEIGHT(F)                                                                        \
    F(uint, off[8]) PUSH_CONV_POOL_SHAPE(F) F(uint, pooled_plane) F(uint, rows) F(uint, cols) F(uint, chunk) \
    F(uint, x_channels) F(uint, x_height) F(uint, x_width) F(uint, x_pad) F(uint, first_out_w)              \
    F(uint, first_kh) F(uint, first_stride) F(uint, flags) F(uint, counters) F(uint, block_images)          \
    F(uint, filter_block)

/* ---- Linear -> ReLU -> Linear ---- */
/* mask_input, accumulate: the data gradient's; given_a, given_b: forward
 * and cross-entropy: ba, bb bound; data gradient: dx bound (given_a);
 * given_dh, given_dx: cross-entropy: dh, dx bound */
#define PUSH_LINEAR_HEAD_FIELDS(F)                                                                            \
    F(uint, rows) F(uint, in_features) F(uint, hidden) F(uint, out_features) F(uint, mask_input)            \
    F(uint, accumulate) F(uint, given_a) F(uint, given_b) F(uint, given_dh) F(uint, given_dx)
#define PUSH_LINEAR_HEAD(F) F(uint, off[8]) PUSH_LINEAR_HEAD_FIELDS(F)
#define PUSH_LINEAR_HEAD_LOSS(F) F(uint, off[16]) PUSH_LINEAR_HEAD_FIELDS(F)

/* ---- normalisation (nn_norm_params) ---- */
/* has_weight, has_bias: APPLY: weight, bias bound; BACKWARD_DATA: weight;
 * BACKWARD_AFFINE: dweight, dbias. The split reductions (vk_norm.c): each
 * group (or channel, or tile of columns) in `chunks` chunks of `chunk`
 * entries (rows for the columns kernel); counters (chunks > 1): the work
 * area's first counter (element index in the partials' block); mode: the
 * columns kernel's reduction (norm_columns.comp); affine (BACKWARD_FROM_SUMS):
 * bits 0, 1: dweight, dbias bound; bits 2, 3: each adds into its output;
 * has_residual: APPLY: the residual bound */
#define PUSH_NORM(F)                                                                                          \
    F(uint, off[10]) F(uint, outer) F(uint, inner) F(uint, channel_inner) F(uint, groups) F(uint, channels)  \
    F(float, eps) F(int, batch_stats) F(int, accumulate) F(int, has_weight) F(int, has_bias)                \
    F(uint, chunks) F(uint, chunk) F(uint, counters) F(uint, mode) F(int, sums_unweighted) F(int, epilogue_on) \
    F(int, epilogue_op) F(float, epilogue_alpha) F(float, epilogue_beta) F(int, affine) F(int, grad_mask)     \
    F(int, has_residual)
/* unbias: count / (count - 1), the unbiased variance's factor */
#define PUSH_NORM_RUNNING(F) F(uint, off[8]) F(uint, channels) F(float, momentum) F(float, unbias)
/* ---- 2-D pooling (nn_pool2d_geometry) ---- */
#define PUSH_POOL2D(F)                                                                                        \
    F(uint, off[4]) F(int, batch) F(int, channels) F(int, height) F(int, width) F(int, out_h) F(int, out_w) \
    F(int, kernel_h) F(int, kernel_w) F(int, stride_h) F(int, stride_w) F(int, pad_h) F(int, pad_w)         \
    F(int, dilation_h) F(int, dilation_w) F(int, adaptive) F(int, count_include_pad) F(int, divisor)       \
    F(int, accumulate)
/* ---- embedding (nn_embedding_params); phase: the backward's (embedding_backward.comp) ---- */
#define PUSH_EMBEDDING(F)                                                                                     \
    F(uint, off[6]) F(uint, count) F(int, num) F(int, dim) F(int, padding_idx) F(int, accumulate) F(int, phase)

/* ---- softmax along any dimension, class-target losses (kernels.h) ---- */
/* nn_softmax_dim_params */
#define PUSH_SOFTMAX_DIM(F) F(uint, off[4]) F(int, outer) F(int, size) F(int, inner) F(int, log) F(int, accumulate)
/* nn_attention_params; masked: whether the mask is given */
#define PUSH_ATTENTION(F)                                                                                     \
    F(uint, off[9]) F(int, groups) F(int, heads) F(int, queries) F(int, keys) F(int, head_dim)                \
    F(int, value_dim) F(int, causal) F(int, accumulate) F(int, accumulate_v) F(float, scale) F(int, mask_row) \
    F(int, mask_col) F(int, masked) F(uint, group_stride[4]) F(uint, head_stride[4]) F(int, qkv_row)        \
    F(int, out_row)
/* nn_nll_params; has_weight, has_total: whether those arguments are given */
#define PUSH_NLL(F)                                                                                            \
    F(uint, off[8]) F(int, outer) F(int, classes) F(int, inner) F(int, ignore_index) F(int, reduction)       \
    F(float, smoothing) F(int, accumulate) F(int, has_weight) F(int, has_total)

/* ---- depthwise convolution (nn_conv_params, groups == channels) and resampling ---- */
/* image_last, output_last: x (dx) and y (dy) channels-last (then the
 * forward and data gradient read the weight packed [tap][filter], so
 * neighbouring invocations read neighbouring taps); the weight gradient's
 * filter lanes per workgroup and its pairs (image, output pixel) per chunk
 * (depthwise_conv2d_weight.comp); quads: both sides channels-last, one
 * filter per channel, channels and offsets in fours, so each invocation
 * takes four neighbouring channels in 16-byte loads */
#define PUSH_DEPTHWISE(F)                                                                                     \
    F(uint, off[4]) F(int, batch) F(int, channels) F(int, height) F(int, width) F(int, kernel_h)            \
    F(int, kernel_w) F(int, stride_h) F(int, stride_w) F(int, pad_h) F(int, pad_w) F(int, out_h)            \
    F(int, out_w) F(int, dilation_h) F(int, dilation_w) F(int, filters) F(int, epilogue) F(int, accumulate) \
    F(int, image_last) F(int, output_last) F(int, filter_lanes) F(uint, chunk) F(int, quads)
#define PUSH_INTERPOLATE(F)                                                                                   \
    F(uint, off[4]) F(int, planes) F(int, in_h) F(int, in_w) F(int, out_h) F(int, out_w) F(int, mode)       \
    F(int, align_corners) F(float, scale_h) F(float, scale_w) F(int, accumulate)

/* ---- the optimizers of src/optim/ beyond SGD (kernels.h's nn_adam_params ...) ---- */
#define PUSH_ADAM_UPDATE(F)                                                                                   \
    F(uint, off[8]) F(uint, n) F(float, beta1) F(float, beta2) F(float, eps) F(float, weight_decay)         \
    F(int, decoupled) F(int, amsgrad) F(int, maximize) F(int, has_skip)
#define PUSH_RMSPROP_UPDATE(F)                                                                                \
    F(uint, off[8]) F(uint, n) F(float, alpha) F(float, eps) F(float, weight_decay) F(float, momentum)      \
    F(int, centered) F(int, maximize) F(int, has_skip)
#define PUSH_LION_UPDATE(F)                                                                                   \
    F(uint, off[5]) F(uint, n) F(float, beta1) F(float, beta2) F(float, weight_decay) F(int, maximize)     \
    F(int, has_skip)
#define PUSH_MUON(F)                                                                                          \
    F(uint, off[4]) F(uint, n) F(float, momentum) F(int, nesterov) F(float, eps) F(float, scale)            \
    F(float, weight_decay) F(int, has_skip)
/* ---- learning-rate schedules and weight averages ---- */
/* nn_lr_schedule_params, its rates rounded to float; milestones: the first
 * milestone_count entries (128 bytes: the block is full) */
#define PUSH_LR_SCHEDULE(F)                                                                                   \
    F(uint, off[4]) F(int, kind) F(int, delta) F(int, start) F(int, until) F(float, base_lr) F(float, gamma)  \
    F(float, eta_min) F(float, warmup_start) F(float, end_factor) F(int, step_size) F(int, warmup)            \
    F(int, total) F(int, milestone_count) F(int, milestones[8]) F(float, initial_lr) F(float, max_lr)         \
    F(float, min_lr) F(float, phase_end1) F(float, phase_end2) F(int, anneal_linear) F(int, three_phase)
/* nn_ema_params: mode 0 average, 1 copy, 2 swap */
#define PUSH_EMA_UPDATE(F) F(uint, off[4]) F(uint, n) F(int, mode) F(float, decay) F(float, weight)
#define PUSH_LOSS_SCALE(F)                                                                                    \
    F(uint, off[4]) F(uint, n) F(int, mode) F(int, growth_interval) F(float, growth_factor)                  \
    F(float, backoff_factor)

/* ---- implicit-GEMM convolution over strided activations (conv_gemm.comp) ---- */
/* batch; the product's m and n for one group (conv_gemm.comp says which per
 * mode); the gathered tensor (x, or dy for the data gradient): its height,
 * width and element strides (n, channel, row, column); the other activation
 * (y, dx, or dy for the weight gradient): its strides; the row space
 * (out_h x out_w, or the data gradient's height x width); the window as
 * pairs (height << 16 | width); groups, channels and filters per group;
 * beta (1 adds into the output), the forward's epilogue (NN_EPI_BIAS_ROWS,
 * NN_EPI_RELU), split_steps: k slices per split of the weight gradient */
#define PUSH_CONV_GEMM(F)                                                                                     \
    F(uint, off[4]) F(uint, batch) F(uint, m) F(uint, n) F(uint, in_h) F(uint, in_w) F(uint, in_sn)          \
    F(uint, in_sc) F(uint, in_sh) F(uint, in_sw) F(uint, out_sn) F(uint, out_sc) F(uint, out_sh)             \
    F(uint, out_sw) F(uint, rows_h) F(uint, rows_w) F(uint, kernel_hw) F(uint, stride_hw) F(uint, pad_hw)   \
    F(uint, dilation_hw) F(uint, groups) F(uint, cg) F(uint, fg) F(float, beta) F(uint, epilogue)           \
    F(uint, split_steps)
/* The weight [filters, cg, kernel_h, kernel_w] packed for conv_gemm.comp
 * (conv_gemm_pack.comp): mode 0 for the forward, 1 for the data gradient;
 * the window's pairs as PUSH_CONV_GEMM's */
#define PUSH_CONV_GEMM_PACK(F)                                                                                \
    F(uint, off[4]) F(uint, count) F(uint, mode) F(uint, groups) F(uint, cg) F(uint, fg) F(uint, kernel_hw) \
    F(uint, stride_hw) F(uint, pad_hw) F(uint, dilation_hw)
/* Winograd convolution (vk_conv_winograd.c; the transform, F(4x4, 3x3) or
 * F(4x4, 5x5), is the pipeline's variant): the filter's transforms
 * (winograd_filter.comp; mode 0 forward, 1 data gradient, 2 the weight
 * gradient's from `splits` partials, beta on dw); an activation's patches
 * into the Winograd domain (winograd_tiles.comp; mode 0 the input's
 * patches with padding, 1 the output gradient's 4x4 ones) and the products
 * back to output patches (winograd_output.comp): `rows` rows per
 * transformed entry holding tiles first_tile.. of tiles_h x tiles_w per
 * image, `count` of them real; height, width and the strides (n, c, h, w)
 * are the tensor's read or written */
#define PUSH_WINOGRAD_FILTER(F) \
    F(uint, off[4]) F(uint, channels) F(uint, filters) F(uint, mode) F(uint, splits) F(float, beta)
#define PUSH_WINOGRAD_TILES(F)                                                                                \
    F(uint, off[4]) F(uint, channels) F(uint, height) F(uint, width) F(uint, sn) F(uint, sc) F(uint, sh)     \
    F(uint, sw) F(uint, tiles_h) F(uint, tiles_w) F(uint, pad_h) F(uint, pad_w) F(uint, first_tile)          \
    F(uint, count) F(uint, rows) F(uint, mode)
#define PUSH_WINOGRAD_OUTPUT(F)                                                                               \
    F(uint, off[4]) F(uint, filters) F(uint, height) F(uint, width) F(uint, sn) F(uint, sc) F(uint, sh)      \
    F(uint, sw) F(uint, tiles_h) F(uint, tiles_w) F(uint, first_tile) F(uint, count) F(uint, rows)           \
    F(float, beta) F(uint, epilogue)

#endif
