/* The fused convolution + ReLU + max pooling kernels (kernels.h,
 * nn_conv_pool_params) on Vulkan: conv_pool_forward.comp,
 * conv_pool_weight.comp and conv_pool_data.comp, each built per layer shape
 * (its window, strides and pooling as specialization constants, so their
 * loops unroll into registers: vk_pipeline_special).
 *
 * They are direct convolutions, one output (or a few) per invocation, made
 * for the small layers whose time goes to latency rather than arithmetic
 * (vk_latency_wanted), which is where vk_conv_pool_fuses (the backend's
 * supports) says yes; large
 * layers run unfused, on the column route. The kernels take any geometry
 * within the limits below and refuse the rest by name. */
#include <stdio.h>

#include "backends/conv_pool.h"
#include "base/error.h"
#include "vk_backend.h"

#define THREADS 128
#define MAX_WINDOW 11 /* kernel rows and columns (unrolled loops) */
#define MAX_STRIDE 4
#define MAX_POOL 4    /* pool * pool sums per invocation */
#define DATA_RUN 4    /* pixels per invocation in the data gradient */
/* The shaders' shared arrays, in floats (each kernel stays within 32 KiB;
 * a device with less runs the layers unfused: vk_conv_pool_fuses). */
#define SHARED_BYTES_NEEDED 32768
#define IMAGE_FLOATS 4096        /* forward and weight gradient: padded images */
#define FORWARD_WEIGHT_FLOATS 3072 /* forward: a workgroup's filters */
#define TERMS 1024               /* weight gradient: pooled outputs of a round */
#define WEIGHT_THREADS 256       /* weight gradient: its workgroup, one item per invocation */
#define MAX_GROUPS 128           /* weight gradient: partials the last workgroup adds */
/* Weight gradient: the workgroups a split aims at, about two per H100
 * multiprocessor: fewer leave the GPU idle, more add partials to the last
 * workgroup's sum (bench/README.md). */
#define WEIGHT_WORKGROUPS 256
#define DZ_FLOATS 5120           /* data gradient: staged gradient planes */
#define DATA_WEIGHT_FLOATS 2560  /* data gradient: a chunk's weights */
/* Chained weight gradient (conv_pool_chain_weight.comp): the invocations
 * of a workgroup (an image and a block of the first layer's filters), its
 * shared floats (the second layer's staged planes and weights, the first
 * layer's padded image; 8184 leave room for a flag in 32 KiB). */
#define CHAIN_THREADS 256
#define CHAIN_SMEM_FLOATS 8184
/* The workgroups an image's work is spread over (each takes a block of the
 * first layer's filters), its data gradient taking DATA_RUN pixels per
 * invocation as the data kernel does. Two workgroups per image: fewer leave
 * the GPU idle, more add partial sums (bench/README.md). */
#define CHAIN_WORKGROUPS_PER_IMAGE 2

/* The zero-padded image the forward and weight kernels stage. */
static int64_t padded_floats(const nn_conv_geometry *g) {
    return (int64_t)g->channels * (g->height + 2 * g->pad_h) * (g->width + 2 * g->pad_w);
}
static uint32_t padded(const nn_conv_geometry *g) { return g->pad_h > 0 || g->pad_w > 0; }
/* The weight gradient's gap after each staged plane (conv_pool_weight.comp,
 * PLANE_GAP): one float where a plane's floats are even. Its sums' invocations
 * read one window position in several channels' planes at once, and planes
 * an even number of floats apart put those reads in fewer shared-memory
 * banks: 12x12 planes (144 floats) averaged 5.7 reads per bank, 2.2 with
 * 145 (a model of the addresses). The gap made the kernel faster; in the
 * chained kernel's image rows (32 floats there) it made it slower, and is
 * not used there (bench/README.md). */
static int64_t weight_plane_gap(const nn_conv_geometry *g) {
    const int64_t plane = (int64_t)(g->height + 2 * g->pad_h) * (g->width + 2 * g->pad_w);
    return plane % 2 == 0 && g->channels * (plane + 1) <= IMAGE_FLOATS ? 1 : 0;
}
/* The floats an image takes staged by the weight gradient. */
static int64_t weight_staged_floats(const nn_conv_geometry *g) {
    return padded_floats(g) + g->channels * weight_plane_gap(g);
}
static int64_t filter_floats(const nn_conv_geometry *g) { return (int64_t)g->channels * g->kernel_h * g->kernel_w; }
static int64_t pooled_plane(const nn_conv_pool_params *p) { return (int64_t)p->pooled_h * p->pooled_w; }

/* The staged plane of the data gradient (conv_pool_data.comp). */
static int64_t data_rows(const nn_conv_geometry *g) { return (int64_t)g->height + g->pad_h + g->kernel_h - 1; }
static int64_t data_cols(const nn_conv_geometry *g) {
    return (int64_t)g->width + g->pad_w + g->kernel_w - 1 + DATA_RUN - 1;
}

/* The filters a forward workgroup of `threads` items, `fb` filters per
 * item, stages the weights of: its items span at most this many filter
 * blocks (conv_pool_forward.comp's first_filter to end_filter). */
static int64_t forward_spanned_filters(const nn_conv_pool_params *p, int64_t threads, int64_t fb) {
    const int64_t plane = pooled_plane(p) > 0 ? pooled_plane(p) : 1;
    const int64_t spanned = ((threads + plane - 1) / plane + 1) * fb;
    return spanned < p->conv.filters ? spanned : p->conv.filters;
}

/* NULL when the kernels take p, else what they cannot take. */
static const char *unsupported(const nn_conv_pool_params *p) {
    const nn_conv_geometry *g = &p->conv.g;
    if (g->kernel_h > MAX_WINDOW || g->kernel_w > MAX_WINDOW) return "a window larger than 11x11";
    if (g->stride_h > MAX_STRIDE || g->stride_w > MAX_STRIDE) return "a stride above 4";
    if (p->pool > MAX_POOL) return "a pooling window larger than 4x4";
    if (padded_floats(g) > IMAGE_FLOATS) return "an image larger than the kernels stage";
    /* At most THREADS items and two filters per invocation, as the forward takes. */
    if (forward_spanned_filters(p, THREADS, 2) * filter_floats(g) > FORWARD_WEIGHT_FLOATS)
        return "more weights than the forward stages";
    if (pooled_plane(p) > TERMS) return "a pooled output larger than the weight gradient stages";
    if ((int64_t)g->channels * g->kernel_h + 1 > WEIGHT_THREADS || filter_floats(g) + 1 > IMAGE_FLOATS)
        return "more weights per filter than the weight gradient's workgroup sums";
    if (data_rows(g) * data_cols(g) > DZ_FLOATS || filter_floats(g) > DATA_WEIGHT_FLOATS)
        return "an image or filter larger than the data gradient stages";
    return NULL;
}

static int64_t multiply_adds(const nn_conv_pool_params *p) {
    const nn_conv_geometry *g = &p->conv.g;
    return (int64_t)p->conv.filters * g->channels * g->kernel_h * g->kernel_w * g->out_h * g->out_w * g->batch;
}

bool vk_conv_pool_fuses(nn_backend *self, const nn_conv_pool_params *p) {
    const vk_backend *vk = as_vk(self);
    return vk->phys->props.limits.maxComputeSharedMemorySize >= SHARED_BYTES_NEEDED &&
           vk_latency_wanted(multiply_adds(p)) && !unsupported(p);
}

static void name_command(vk_backend *vk, const char *what, const nn_conv_pool_params *p) {
    const nn_conv_geometry *g = &p->conv.g;
    if (vk->labels)
        snprintf(vk->profile_label, sizeof vk->profile_label, "conv+pool %s %dx%dx%dx%d f%d k%d p%d", what, g->batch,
                 g->channels, g->height, g->width, p->conv.filters, g->kernel_h, p->pool);
}

/* The layer's shape every kernel's push constants start with
 * (PUSH_CONV_POOL_SHAPE), as designated initializers. */
#define SHAPE_OF(p)                                                                                          \
    .batch = (uint32_t)(p)->conv.g.batch, .channels = (uint32_t)(p)->conv.g.channels,                      \
    .height = (uint32_t)(p)->conv.g.height, .width = (uint32_t)(p)->conv.g.width, .pad_h = (p)->conv.g.pad_h, \
    .pad_w = (p)->conv.g.pad_w, .out_w = (uint32_t)(p)->conv.g.out_w, .filters = (uint32_t)(p)->conv.filters

/* The forward kernel's workgroups: invocations, filters per invocation
 * (fb), workgroups per image (tiles). */
typedef struct forward_shape {
    uint32_t threads, fb;
    uint64_t tiles;
} forward_shape;

/* Without the Linear: THREADS invocations, and two filters per invocation
 * sharing its input reads once there are enough outputs that halving the
 * invocations leaves the GPU busy. */
static forward_shape plain_forward_shape(const nn_conv_pool_params *p) {
    const uint64_t outputs = (uint64_t)p->conv.g.batch * p->conv.filters * pooled_plane(p);
    const uint32_t fb = outputs >= 32768 && p->conv.filters > 1 ? 2 : 1;
    const uint64_t per_image = (uint64_t)((p->conv.filters + fb - 1) / fb) * pooled_plane(p);
    return (forward_shape){THREADS, fb, (per_image + THREADS - 1) / THREADS};
}

/* With the Linear, one workgroup per image where its outputs are at most
 * LINEAR_ONE_GROUP (one per invocation), so no workgroups add partial dot
 * products: faster than two workgroups per image or two filters per
 * invocation (bench/README.md). Larger layers run as without the Linear, but
 * a workgroup's items must be whole blocks of filters, so its features are
 * one run of the flattened output (conv_pool_linear.glsl): one filter per
 * invocation where two would split a block between workgroups. */
#define LINEAR_ONE_GROUP 256
static forward_shape linear_forward_shape(const nn_conv_pool_params *p) {
    const uint64_t outputs = (uint64_t)p->conv.filters * pooled_plane(p);
    if (outputs <= LINEAR_ONE_GROUP && p->conv.filters * filter_floats(&p->conv.g) <= FORWARD_WEIGHT_FLOATS)
        return (forward_shape){(uint32_t)((outputs + 31) / 32 * 32), 1, 1};
    forward_shape f = plain_forward_shape(p);
    if (f.fb > 1 && f.tiles > 1 && THREADS % pooled_plane(p) != 0)
        f = (forward_shape){THREADS, 1, (outputs + THREADS - 1) / THREADS};
    return f;
}

/* The forward kernel's shared floats for the padded image and for the
 * weights of the filters a workgroup's items span. Without the Linear,
 * what the layer needs: a small layer then takes a few KB instead of
 * 28 KB, so more of its workgroups are resident at once and it compiles to
 * fewer registers (bench/README.md). With the Linear the whole of
 * IMAGE_FLOATS: after the convolution it holds the Linear's lane sums, as
 * many rows at a time as fit (conv_pool_linear.glsl), and a smaller array
 * made that kernel slower (bench/README.md). */
static void forward_shared(const nn_conv_pool_params *p, bool linear, forward_shape shape, uint32_t *image,
                           uint32_t *weights) {
    if (linear) {
        *image = IMAGE_FLOATS;
        *weights = FORWARD_WEIGHT_FLOATS;
        return;
    }
    const int64_t spanned = forward_spanned_filters(p, shape.threads, shape.fb);
    *image = (uint32_t)((padded_floats(&p->conv.g) + 31) / 32 * 32);
    *weights = (uint32_t)((spanned * filter_floats(&p->conv.g) + 31) / 32 * 32);
}

/* The forward kernel, and with `linear` (NULL: none) the Linear after it:
 * a[5..7] are then its weight, bias and output. */
static nn_status forward(vk_backend *vk, const nn_buffer_ref *a, const nn_conv_pool_params *p,
                         const nn_conv_pool_linear_params *linear) {
    const nn_conv_geometry *g = &p->conv.g;
    const nn_kernel kernel = linear ? NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD : NN_KERNEL_CONV2D_POOL_FORWARD;
    if ((p->conv.epilogue & NN_EPI_BIAS_ROWS) && !a[2].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: the bias epilogue needs the bias buffer",
                            nn_kernel_name(kernel));
    const forward_shape shape = linear ? linear_forward_shape(p) : plain_forward_shape(p);
    const uint64_t tiles = shape.tiles;
    if (tiles == 0 || g->batch == 0) return NN_OK;
    if (tiles > VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %llu outputs per image is too many", nn_kernel_name(kernel),
                            (unsigned long long)((uint64_t)p->conv.filters * pooled_plane(p)));
    VK_PUSH(CONV_POOL_FORWARD) push = {SHAPE_OF(p), .pooled_h = (uint32_t)p->pooled_h,
                                       .pooled_w = (uint32_t)p->pooled_w,
                                       .padded_h = (uint32_t)(g->height + 2 * g->pad_h),
                                       .padded_w = (uint32_t)(g->width + 2 * g->pad_w),
                                       .flags = (p->conv.epilogue & NN_EPI_BIAS_ROWS) ? 1u : 0u};
    /* The columns (a[5] of the plain forward) are not used: these kernels read the image. */
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref args[9] = {a[0], a[1], a[2], a[3], a[4], none, none, none, none};
    vk_split_work work = {{NULL, 0, 0}, 0, {0}};
    if (linear) {
        if ((linear->epilogue & NN_EPI_BIAS_COLS) && !a[6].buffer)
            return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: the Linear's bias epilogue needs its bias buffer",
                                nn_kernel_name(kernel));
        const uint64_t in = (uint64_t)p->conv.filters * pooled_plane(p);
        const bool quads = in % 4 == 0 && vk_ref_aligned16(a[5]);
        push.flags |= ((linear->epilogue & NN_EPI_BIAS_COLS) ? 2u : 0u) | ((linear->epilogue & NN_EPI_RELU) ? 4u : 0u) |
                      (quads ? 8u : 0u);
        if (tiles > 1) { /* the image's workgroups add their partial dot products */
            NN_TRY(vk_split_work_take(vk, (uint64_t)g->batch, (uint64_t)g->batch * tiles * linear->out_features,
                                      &work));
            push.counters = work.counters;
        }
        args[5] = a[5];
        args[6] = a[6];
        args[7] = a[7];
        args[8] = work.partials;
    }
    uint32_t image_floats, weight_floats;
    forward_shared(p, linear != NULL, shape, &image_floats, &weight_floats);
    const uint32_t constants[VK_SPECIAL_CONSTANTS] = {(uint32_t)g->kernel_h, (uint32_t)g->kernel_w,
                                                      (uint32_t)g->stride_h, (uint32_t)g->stride_w,
                                                      (uint32_t)p->pool, shape.fb, padded(g),
                                                      linear ? (uint32_t)linear->out_features : 0u, shape.threads,
                                                      image_floats, weight_floats};
    name_command(vk, linear ? "linear forward" : "forward", p);
    return vk_record_special(vk, kernel, VK_PIPE_CONV_POOL_FORWARD, constants, args, 9,
                             work.partials.buffer ? &work : NULL, VK_PUSH_REF(push), (uint32_t)tiles, 1,
                             g->batch > (int32_t)VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)g->batch);
}

/* The weight gradient's split: blocks of `block` filters, groups of
 * group_images images (one workgroup per group and block), staged
 * round_images at a time. One round per group where the groups' partials
 * fit the work area (the last workgroup of each block adds them, all its
 * invocations sharing it). Blocks share the staged images between filters,
 * up to two lanes per item, but no larger than leaves about
 * WEIGHT_WORKGROUPS workgroups: at small batches, spreading the work
 * matters more. */
typedef struct weight_split {
    int64_t block, blocks, lanes, group_images, round_images, groups;
} weight_split;

/* Groups of one round each for blocks of `block` filters (at most
 * MAX_GROUPS, as many as the work area's partials allow, and no more
 * images per round than leaves about WEIGHT_WORKGROUPS workgroups). */
static void group_images_for(const nn_conv_pool_params *p, weight_split *w) {
    const int64_t batch = p->conv.g.batch, filters = p->conv.filters, outputs = filter_floats(&p->conv.g) + 1;
    const int64_t plane = pooled_plane(p) > 0 ? pooled_plane(p) : 1;
    w->round_images = IMAGE_FLOATS / weight_staged_floats(&p->conv.g);
    if (TERMS / (w->block * plane) < w->round_images) w->round_images = TERMS / (w->block * plane);
    /* Smaller groups where that leaves about WEIGHT_WORKGROUPS workgroups. */
    const int64_t spread = batch * w->blocks / WEIGHT_WORKGROUPS;
    if (spread >= 1 && spread < w->round_images) w->round_images = spread;
    int64_t groups = (batch + w->round_images - 1) / w->round_images;
    if (groups > MAX_GROUPS) groups = MAX_GROUPS;
    while (groups > 1 && !vk_split_work_fits((uint64_t)w->blocks, (uint64_t)(groups * filters * outputs))) groups /= 2;
    w->group_images = (batch + groups - 1) / groups;
    w->groups = (batch + w->group_images - 1) / w->group_images;
    if (w->round_images > w->group_images) w->round_images = w->group_images;
}

static weight_split weight_split_of(const nn_conv_pool_params *p) {
    const nn_conv_geometry *g = &p->conv.g;
    const int64_t filters = p->conv.filters, outputs = filter_floats(g) + 1;
    const int64_t units = (int64_t)g->channels * g->kernel_h + 1, plane = pooled_plane(p) > 0 ? pooled_plane(p) : 1;
    weight_split w = {.block = 1, .blocks = filters};
    group_images_for(p, &w);
    int64_t most = WEIGHT_THREADS / (2 * units); /* two lanes per item */
    if (most > TERMS / plane) most = TERMS / plane;
    if (most > IMAGE_FLOATS / outputs) most = IMAGE_FLOATS / outputs;
    w.block = filters * w.groups / WEIGHT_WORKGROUPS;
    if (w.block > most) w.block = most;
    if (w.block > filters) w.block = filters;
    if (w.block < 1) w.block = 1;
    w.blocks = (filters + w.block - 1) / w.block;
    w.lanes = WEIGHT_THREADS / (w.block * units);
    group_images_for(p, &w);
    return w;
}

static nn_status weight(vk_backend *vk, const nn_buffer_ref *a, const nn_conv_pool_params *p) {
    const nn_conv_geometry *g = &p->conv.g;
    if (!a[3].buffer && !a[4].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan conv2d_pool_backward_weight: neither dweight nor dbias is given");
    const int64_t weights = (int64_t)g->channels * g->kernel_h * g->kernel_w, outputs = weights + 1;
    NN_TRY(vk_fits32(NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, "filters", p->conv.filters));
    if (p->conv.filters > (int32_t)VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan conv2d_pool_backward_weight: %d filters; at most %u",
                            p->conv.filters, VK_MAX_GROUPS);
    if (p->conv.filters == 0) return NN_OK;
    if (g->batch == 0 || pooled_plane(p) == 0) { /* the sums over nothing */
        if (a[3].buffer && !g->accumulate && weights > 0)
            NN_TRY(vk->base.fill(&vk->base, a[3], 0.0f, (size_t)(weights * p->conv.filters)));
        if (a[4].buffer && !p->bias_accumulate) NN_TRY(vk->base.fill(&vk->base, a[4], 0.0f, (size_t)p->conv.filters));
        return NN_OK;
    }
    const weight_split split = weight_split_of(p);
    const int64_t groups = split.groups;
    if (groups > 1 && !vk_split_work_fits((uint64_t)split.blocks, (uint64_t)(groups * p->conv.filters * outputs)))
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan conv2d_pool_backward_weight: %d filters of %lld weights need "
                            "more partial sums than the work area holds", p->conv.filters, (long long)weights);
    vk_split_work work = {{NULL, 0, 0}, 0, {0}};
    if (groups > 1)
        NN_TRY(vk_split_work_take(vk, (uint64_t)split.blocks, (uint64_t)(groups * p->conv.filters * outputs), &work));
    VK_PUSH(CONV_POOL_WEIGHT) push = {
        SHAPE_OF(p), .pooled_plane = (uint32_t)pooled_plane(p), .padded_h = (uint32_t)(g->height + 2 * g->pad_h),
        .padded_w = (uint32_t)(g->width + 2 * g->pad_w), .group_images = (uint32_t)split.group_images,
        .round_images = (uint32_t)split.round_images, .groups = (uint32_t)groups, .block = (uint32_t)split.block,
        .lanes = (uint32_t)split.lanes,
        .flags = (a[3].buffer ? 1u : 0u) | (a[4].buffer ? 2u : 0u) | (g->accumulate ? 4u : 0u) |
                 (p->bias_accumulate ? 8u : 0u),
        .counters = work.counters};
    const uint32_t constants[VK_SPECIAL_CONSTANTS] = {(uint32_t)g->kernel_h, (uint32_t)g->kernel_w,
                                                      (uint32_t)g->stride_h, (uint32_t)g->stride_w, 0, 0,
                                                      padded(g), (uint32_t)weight_plane_gap(g)};
    nn_buffer_ref args[7] = {a[0], a[1], a[2], a[3], a[4], {NULL, 0, 0}, work.partials};
    name_command(vk, "weight", p);
    return vk_record_special(vk, NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, VK_PIPE_CONV_POOL_WEIGHT, constants, args, 7,
                             groups > 1 ? &work : NULL, VK_PUSH_REF(push), (uint32_t)groups,
                             (uint32_t)split.blocks, 1);
}

static nn_status data(vk_backend *vk, const nn_buffer_ref *a, const nn_conv_pool_params *p) {
    const nn_conv_geometry *g = &p->conv.g;
    const int64_t plane = data_rows(g) * data_cols(g);
    int64_t chunk = DZ_FLOATS / plane;
    if (filter_floats(g) > 0 && DATA_WEIGHT_FLOATS / filter_floats(g) < chunk) chunk = DATA_WEIGHT_FLOATS / filter_floats(g);
    if (chunk > p->conv.filters) chunk = p->conv.filters;
    const int64_t units = (int64_t)g->channels * g->height * ((g->width + DATA_RUN - 1) / DATA_RUN);
    if (units == 0 || g->batch == 0) return NN_OK;
    if (p->conv.filters == 0 || pooled_plane(p) == 0) /* no gradient reaches x: it is zero */
        return g->accumulate ? NN_OK
                             : vk->base.fill(&vk->base, a[3], 0.0f, (size_t)g->batch * g->channels * g->height * g->width);
    uint64_t tiles = (uint64_t)((units + THREADS - 1) / THREADS);
    if (tiles > VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan conv2d_pool_backward_data: %lld pixels per image is too many",
                            (long long)(g->channels * g->height * g->width));
    VK_PUSH(CONV_POOL_DATA) push = {SHAPE_OF(p), .pooled_plane = (uint32_t)pooled_plane(p),
                                    .rows = (uint32_t)data_rows(g), .cols = (uint32_t)data_cols(g),
                                    .chunk = (uint32_t)chunk, .accumulate = (uint32_t)g->accumulate};
    const uint32_t constants[VK_SPECIAL_CONSTANTS] = {(uint32_t)g->kernel_h, (uint32_t)g->kernel_w,
                                                      (uint32_t)g->stride_h, (uint32_t)g->stride_w, DATA_RUN};
    name_command(vk, "data", p);
    return vk_record_special(vk, NN_KERNEL_CONV2D_POOL_BACKWARD_DATA, VK_PIPE_CONV_POOL_DATA, constants, a, 4, NULL,
                             VK_PUSH_REF(push), (uint32_t)tiles, 1,
                             g->batch > (int32_t)VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)g->batch);
}

/* The first layer's filters per workgroup of the chained kernel: a share
 * of CHAIN_WORKGROUPS_PER_IMAGE, or fewer where the invocations do not
 * cover that many (a data-gradient unit and a weight-sum item each; 0:
 * not even one filter fits). */
static int64_t chain_filter_block(const nn_conv_pool_chain_params *p) {
    const nn_conv_geometry *a = &p->first.conv.g, *b = &p->second.conv.g;
    const int64_t units = (int64_t)b->height * ((b->width + DATA_RUN - 1) / DATA_RUN);
    const int64_t rows = (int64_t)a->channels * a->kernel_h + 1; /* weight-sum items per filter */
    int64_t block = (p->first.conv.filters + CHAIN_WORKGROUPS_PER_IMAGE - 1) / CHAIN_WORKGROUPS_PER_IMAGE;
    if (units > 0 && block > CHAIN_THREADS / units) block = CHAIN_THREADS / units;
    if (block > CHAIN_THREADS / rows) block = CHAIN_THREADS / rows;
    return units > 0 ? block : 0;
}

/* The chained kernel: the second layer's filters staged at a time, after
 * the first layer's image has its place (0: not even one fits). */
static int64_t chain_chunk(const nn_conv_pool_chain_params *p) {
    const nn_conv_geometry *b = &p->second.conv.g;
    const int64_t room = CHAIN_SMEM_FLOATS - padded_floats(&p->first.conv.g);
    /* a staged plane, and the filter's weights for the block's channels */
    const int64_t per_filter = data_rows(b) * data_cols(b) + chain_filter_block(p) * b->kernel_h * b->kernel_w;
    int64_t chunk = room > 0 && per_filter > 0 ? room / per_filter : 0;
    return chunk > p->second.conv.filters ? p->second.conv.filters : chunk;
}

/* The first layer's outputs per filter: its weights and its bias. */
static int64_t chain_outputs(const nn_conv_pool_chain_params *p) { return filter_floats(&p->first.conv.g) + 1; }

/* The images of a block of the chained kernel's final sums: the whole
 * batch up to CHAIN_ONE_SUM_IMAGES (one sum, by the last workgroup), else
 * about the square root of the batch, so both sums are short: one sum was
 * faster up to 64 images, two above (bench/README.md). */
#define CHAIN_ONE_SUM_IMAGES 64
static int64_t chain_block_images(int64_t batch) {
    if (batch <= CHAIN_ONE_SUM_IMAGES) return batch;
    int64_t b = 1;
    while (b * b < batch) b++;
    return b;
}

/* NULL when the chained kernel takes p, else what it cannot take. */
static const char *chain_unsupported(const nn_conv_pool_chain_params *p) {
    const nn_conv_geometry *a = &p->first.conv.g, *b = &p->second.conv.g;
    if (unsupported(&p->first) || unsupported(&p->second)) return "layers the fused kernels do not take";
    const int64_t block = chain_filter_block(p);
    if (block < 1) return "a first layer's output plane of more than 256 pixels, or kernel rows of more than 255";
    const int64_t chunk = chain_chunk(p);
    if (chunk < 1) return "a first layer's image and a second layer's filter larger than shared memory";
    const int64_t terms = block * b->height * b->width;
    if (2 * terms > chunk * (data_rows(b) * data_cols(b) + block * b->kernel_h * b->kernel_w))
        return "more first-layer outputs than the staged planes hold";
    if (a->batch > (int32_t)VK_MAX_GROUPS) return "more than 65535 images";
    const int64_t blocks = (a->batch + chain_block_images(a->batch) - 1) / chain_block_images(a->batch);
    const int64_t filter_blocks = (p->first.conv.filters + block - 1) / block;
    if (!vk_split_work_fits((uint64_t)((blocks + 1) * filter_blocks),
                            (uint64_t)((a->batch + blocks) * p->first.conv.filters * chain_outputs(p))))
        return "more partial sums than the work area holds";
    return NULL;
}

bool vk_conv_pool_chains(nn_backend *self, const nn_conv_pool_chain_params *p) {
    return vk_conv_pool_fuses(self, &p->first) && vk_conv_pool_fuses(self, &p->second) &&
           nn_conv_pool_chain_check("vulkan", p) == NN_OK && !chain_unsupported(p);
}

nn_status vk_run_conv2d_pool_chain_weight(vk_backend *vk, const nn_conv_pool_chain_params *p,
                                          const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT;
    NN_TRY(nn_conv_pool_chain_check("vulkan", p));
    const char *why = chain_unsupported(p);
    if (why)
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: the chained kernel does not take %s (run the layers' "
                            "own backward kernels)", nn_kernel_name(kernel), why);
    if (!a[5].buffer && !a[6].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: neither dweight nor dbias is given", nn_kernel_name(kernel));
    const nn_conv_pool_params *first = &p->first, *second = &p->second;
    const nn_conv_geometry *g1 = &first->conv.g, *g2 = &second->conv.g;
    NN_TRY(vk_fits32(kernel, "input entries", (int64_t)g1->batch * g1->channels * g1->height * g1->width));
    NN_TRY(vk_fits32(kernel, "second layer's output entries",
                     (int64_t)g2->batch * second->conv.filters * g2->out_h * g2->out_w));
    const int64_t weights = filter_floats(g1), filters = first->conv.filters;
    if (filters == 0) return NN_OK;
    if (g1->batch == 0 || pooled_plane(first) == 0 || pooled_plane(second) == 0 || second->conv.filters == 0) {
        /* no gradient reaches the first layer: its sums are zero */
        if (a[5].buffer && !g1->accumulate && weights > 0)
            NN_TRY(vk->base.fill(&vk->base, a[5], 0.0f, (size_t)(weights * filters)));
        if (a[6].buffer && !first->bias_accumulate) NN_TRY(vk->base.fill(&vk->base, a[6], 0.0f, (size_t)filters));
        return NN_OK;
    }
    const int64_t block_images = chain_block_images(g1->batch);
    const int64_t blocks = (g1->batch + block_images - 1) / block_images;
    const int64_t filter_block = chain_filter_block(p), filter_blocks = (filters + filter_block - 1) / filter_block;
    vk_split_work work;
    NN_TRY(vk_split_work_take(vk, (uint64_t)((blocks + 1) * filter_blocks),
                              (uint64_t)((g1->batch + blocks) * filters * chain_outputs(p)), &work));
    VK_PUSH(CONV_POOL_CHAIN_WEIGHT) push = {
        SHAPE_OF(second), .pooled_plane = (uint32_t)pooled_plane(second), .rows = (uint32_t)data_rows(g2),
        .cols = (uint32_t)data_cols(g2), .chunk = (uint32_t)chain_chunk(p), .x_channels = (uint32_t)g1->channels,
        .x_height = (uint32_t)g1->height, .x_width = (uint32_t)g1->width,
        .x_pad = (uint32_t)g1->pad_h | (uint32_t)g1->pad_w << 16, .first_out_w = (uint32_t)g1->out_w,
        .first_kh = (uint32_t)g1->kernel_h, .first_stride = (uint32_t)g1->stride_h | (uint32_t)g1->stride_w << 16,
        .flags = (a[5].buffer ? 1u : 0u) | (a[6].buffer ? 2u : 0u) | (g1->accumulate ? 4u : 0u) |
                 (first->bias_accumulate ? 8u : 0u),
        .counters = work.counters, .block_images = (uint32_t)block_images, .filter_block = (uint32_t)filter_block};
    const uint32_t constants[VK_SPECIAL_CONSTANTS] = {(uint32_t)g2->kernel_h, (uint32_t)g2->kernel_w,
                                                      (uint32_t)g2->stride_h, (uint32_t)g2->stride_w,
                                                      (uint32_t)DATA_RUN,     (uint32_t)g1->kernel_w};
    nn_buffer_ref args[8] = {a[0], a[1], a[2], a[3], a[4], a[5], a[6], work.partials};
    name_command(vk, "chain weight", first);
    return vk_record_special(vk, kernel, VK_PIPE_CONV_POOL_CHAIN_WEIGHT, constants, args, 8, &work,
                             VK_PUSH_REF(push), (uint32_t)g1->batch, (uint32_t)filter_blocks, 1);
}

/* The checks of the three kernels of one fused layer. */
static nn_status check_layer(nn_kernel kernel, const nn_conv_pool_params *p) {
    NN_TRY(nn_conv_pool_params_check("vulkan", kernel, p));
    const char *why = unsupported(p);
    if (why)
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: the fused kernels do not take %s (run the layers unfused)",
                            nn_kernel_name(kernel), why);
    const nn_conv_geometry *g = &p->conv.g;
    NN_TRY(vk_fits32(kernel, "input entries", (int64_t)g->batch * g->channels * g->height * g->width));
    NN_TRY(vk_fits32(kernel, "convolution output entries", (int64_t)g->batch * p->conv.filters * g->out_h * g->out_w));
    return vk_fits32(kernel, "weight entries", (int64_t)p->conv.filters * g->channels * g->kernel_h * g->kernel_w);
}

nn_status vk_run_conv2d_pool_forward(vk_backend *vk, const nn_conv_pool_params *p, const nn_buffer_ref *a) {
    NN_TRY(check_layer(NN_KERNEL_CONV2D_POOL_FORWARD, p));
    return forward(vk, a, p, NULL);
}

nn_status vk_run_conv2d_pool_backward_weight(vk_backend *vk, const nn_conv_pool_params *p, const nn_buffer_ref *a) {
    NN_TRY(check_layer(NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, p));
    return weight(vk, a, p);
}

nn_status vk_run_conv2d_pool_backward_data(vk_backend *vk, const nn_conv_pool_params *p, const nn_buffer_ref *a) {
    NN_TRY(check_layer(NN_KERNEL_CONV2D_POOL_BACKWARD_DATA, p));
    return data(vk, a, p);
}

/* NULL when the fused forward with the Linear takes p, else what it cannot
 * take. */
static const char *linear_unsupported(const vk_backend *vk, const nn_conv_pool_linear_params *p) {
    const nn_conv_pool_params *c = &p->conv_pool;
    if (unsupported(c)) return "layers the fused kernels do not take";
    if (c->conv.filters == 0 || pooled_plane(c) == 0) return "a Linear of no input features";
    if (vk->arg_bindings < 9) return "nine buffers (this device binds fewer per kernel)";
    const uint64_t tiles = linear_forward_shape(c).tiles;
    if (tiles > 1 && !vk_split_work_fits((uint64_t)c->conv.g.batch,
                                         (uint64_t)c->conv.g.batch * tiles * (uint64_t)p->out_features))
        return "more partial sums than the work area holds";
    return NULL;
}

bool vk_conv_pool_linear_fuses(nn_backend *self, const nn_conv_pool_linear_params *p) {
    return vk_conv_pool_fuses(self, &p->conv_pool) && nn_conv_pool_linear_check("vulkan", p) == NN_OK &&
           !linear_unsupported(as_vk(self), p);
}

nn_status vk_run_conv2d_pool_linear_forward(vk_backend *vk, const nn_conv_pool_linear_params *p,
                                            const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD;
    NN_TRY(nn_conv_pool_linear_check("vulkan", p));
    const char *why = linear_unsupported(vk, p);
    if (why)
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: the fused kernel does not take %s (run the layers unfused)",
                            nn_kernel_name(kernel), why);
    const nn_conv_geometry *g = &p->conv_pool.conv.g;
    NN_TRY(vk_fits32(kernel, "input entries", (int64_t)g->batch * g->channels * g->height * g->width));
    NN_TRY(vk_fits32(kernel, "convolution output entries",
                     (int64_t)g->batch * p->conv_pool.conv.filters * g->out_h * g->out_w));
    NN_TRY(vk_fits32(kernel, "weight entries",
                     (int64_t)p->conv_pool.conv.filters * g->channels * g->kernel_h * g->kernel_w));
    NN_TRY(vk_fits32(kernel, "Linear weight entries",
                     (int64_t)p->out_features * p->conv_pool.conv.filters * pooled_plane(&p->conv_pool)));
    NN_TRY(vk_fits32(kernel, "Linear output entries", (int64_t)g->batch * p->out_features));
    return forward(vk, a, &p->conv_pool, p);
}
