/* The Vulkan backend's private types, shared by its files:
 *   vk_backend.c   opening the device, the nn_backend table, buffer copies
 *   vk_memory.c    device-local blocks and the sub-allocator
 *   vk_stream.c    command recording, barriers, submission, staging
 *   vk_pipelines.c shader modules, pipelines, descriptor sets
 *   vk_dispatch.c  recording one dispatch (pipeline, descriptors, push constants)
 *   vk_kernels.c   run(): the table of entry points, and the one-shader kernels'
 *   vk_gemm.c, vk_conv.c, vk_conv_pool.c, vk_linear_head.c: the larger families */
#ifndef NN_VK_BACKEND_H
#define NN_VK_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "vk_loader.h"
#include "vk_pipeline_list.h"
#include "vk_push.h"
#include "vk_probe.h"

/* A device-local VkBuffer over one VkDeviceMemory, carved into sub-buffers.
 * Kernels bind whole blocks and address tensors by element offset. */
typedef struct vk_range {
    VkDeviceSize offset, size;
    struct vk_range *next;
} vk_range;

typedef struct vk_block {
    uint32_t id;              /* index in the backend's block table */
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize size;
    vk_range *free_list;      /* sorted by offset, neighbours merged */
    bool imported;            /* the caller's host memory (vk_host_memory.h): never allocated from */
} vk_block;

struct nn_buffer {
    vk_block *block;
    VkDeviceSize offset;      /* bytes into the block */
    VkDeviceSize reserved;    /* bytes taken from the block */
    size_t bytes;             /* bytes asked for */
};

/* Host-visible memory mapped for the whole life of the backend. */
typedef struct vk_host_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize size;
    void *mapped;
} vk_host_buffer;

/* Commands are recorded into one of two frames: when a frame gets long it
 * is submitted and recording goes on in the other, so the GPU works while
 * the host records. Each frame has its staging area for uploads and reads,
 * reused once the frame's fence says the GPU is done with it. */
/* A memory range a command reads or writes (a block's VkBuffer, bytes). */
typedef struct vk_access {
    VkBuffer buffer;
    VkDeviceSize begin, end;
    bool write;
} vk_access;

/* What the commands recorded since the last barrier touched: a new command
 * gets a barrier only when it conflicts (reads what they wrote, or writes
 * what they read or wrote), so independent kernels overlap on the GPU. */
typedef struct vk_hazards {
    vk_access *items;
    int count, capacity;
    int barriers, commands; /* counts, for tests and profiles */
} vk_hazards;

/* Where commands are recorded: an eager frame, or a captured step's plan. */
typedef struct vk_target {
    VkCommandBuffer cmd;
    vk_hazards hazards;
} vk_target;

#define VK_FRAMES 2
typedef struct vk_frame {
    VkCommandPool pool;
    vk_target target;
    VkFence fence;
    bool recording, in_flight;
    int commands;
    vk_host_buffer staging;
    VkDeviceSize staging_used;
} vk_frame;

typedef struct vk_stretches vk_stretches;

/* A captured step recorded once into its own command buffer (vk_plan.c). */
typedef struct vk_plan {
    VkCommandPool pool;
    vk_target target;
    VkCommandBuffer to_host;   /* ends each submit of replays: their writes made visible to the host */
    vk_host_buffer constants;  /* the bytes of captured writes */
    VkDeviceSize constants_used;
    nn_buffer **scratch;       /* the kernels' temporaries, kept with the plan */
    int scratch_count, scratch_capacity;
    /* Those whose kernels are recorded: later kernels of the plan take them
     * again (vk_scratch_alloc), the barriers keeping the uses apart. */
    nn_buffer **spare;
    int spare_count;
    vk_stretches *stretches;   /* NN_ENGINE_VULKAN_PROFILE=1: its stretches timed (vk_stretch_profile.c) */
} vk_plan;

#define VK_PROFILE_MAX_COMMANDS 320 /* per frame: MAX_COMMANDS_PER_FRAME and a margin */
#define VK_PROFILE_LABEL 64
typedef struct vk_profile vk_profile;

/* Pipelines: one per shader and tile configuration (vk_pipeline_list.h). */
typedef enum vk_pipeline_id {
#define VK_PIPELINE_ENUM(ID, ...) VK_PIPE_##ID,
    VK_PIPELINE_LIST(VK_PIPELINE_ENUM)
#undef VK_PIPELINE_ENUM
    VK_PIPE_COUNT
} vk_pipeline_id;

/* Pipeline variants: bit 0 / bit 1 vec4 loads of A / B (GEMM), bits 2-3
 * specialization constant 9 (the operands' rounding, or on the matrix cores
 * the transposes; the implicit GEMM's mode; Winograd's transform;
 * attention's chunks), bit 4 constant 10 (the implicit GEMM on matrix
 * cores: PRELOAD) (specialization constants, not push-constant branches: a
 * branch costs every variant registers). */
#define VK_PIPE_VARIANTS 32
/* Kernel arguments sit at bindings 0-7 and, past the eighth, at 9 and up:
 * binding 8 is the status buffer, where the first kernels put it. A kernel
 * binds at most VK_ARG_BINDINGS arguments; a device allowing fewer storage
 * buffers per stage gets fewer (vk_backend.arg_bindings, never fewer than
 * VK_BASE_ARG_BINDINGS), and there kernels of more arguments are refused by
 * name and the fused kernels that need them are not chosen. */
#define VK_ARG_BINDINGS 16
#define VK_BASE_ARG_BINDINGS 8
#define VK_STATUS_BINDING 8
static inline uint32_t vk_arg_binding(uint32_t arg) { return arg < VK_STATUS_BINDING ? arg : arg + 1; }

typedef struct vk_set_entry {
    uint32_t blocks[VK_ARG_BINDINGS];
    VkDescriptorSet set;
} vk_set_entry;

typedef struct vk_backend {
    nn_backend base;
    const nn_vk_instance *vi; /* the process's (vk_probe.h) */
    PFN_vkGetMemoryHostPointerPropertiesEXT host_pointer_properties; /* vk_host_memory.h, or NULL */
    const nn_vk_physical *phys;
    VkDevice device;
    VkQueue queue;
    nn_vk_device_fns fn;
    VkPhysicalDeviceMemoryProperties memory_props;

    /* memory */
    uint32_t device_memory_type;
    vk_block **blocks;
    uint32_t block_count, block_capacity;
    VkDeviceSize block_size;      /* the size of a shared block */
    VkDeviceSize max_range;       /* maxStorageBufferRange: the largest bindable buffer */
    /* nn_ctx_memory_stats: sub-buffer bytes handed out (rounded to the
     * alignment) now and at most, and device memory held in blocks. */
    VkDeviceSize bytes_in_use, peak_in_use, block_bytes;

    /* pipelines and descriptors */
    VkDescriptorSetLayout set_layout;
    uint32_t arg_bindings;        /* arguments a kernel may bind here (VK_ARG_BINDINGS) */
    VkPipelineLayout pipeline_layout;
    VkPipeline pipelines[VK_PIPE_COUNT][VK_PIPE_VARIANTS]; /* [id][variant]: GEMM's variants */
    struct vk_special_pipeline *specials; /* pipelines specialised per layer (vk_pipeline_special) */
    uint32_t special_count, special_capacity;
    VkDescriptorPool set_pool;
    vk_set_entry *sets;           /* one set per combination of blocks, kept */
    uint32_t set_count, set_capacity;

    /* The device-side error flag (softmax-CE labels), host-visible. */
    vk_host_buffer status;

    vk_frame frames[VK_FRAMES];
    int current;
    vk_plan *compiling;      /* commands go into this plan instead of a frame */
    struct vk_profile *profile; /* NN_ENGINE_VULKAN_PROFILE=1 (vk_profile.c), else NULL */
    char profile_label[VK_PROFILE_LABEL]; /* names the next command in the profile or trace */
    bool trace;              /* NN_ENGINE_VULKAN_TRACE=1: print each plan's commands and barriers */
    /* NN_ENGINE_VULKAN_PIPELINE_STATS=1: the driver's statistics of each
     * pipeline (vk_pipeline_stats_print); NULL without the extension */
    PFN_vkGetPipelineExecutableStatisticsKHR pipeline_statistics;
    /* fp16 products on cooperative matrices (vk_matrix_cores.h): the device
     * has them and NN_ENGINE_VULKAN_MATRIX_CORES is not 0 */
    bool matrix_cores;
    char matrix_cores_note[112]; /* what they are, or why they are off */
    bool labels;             /* profile, trace or skip: commands are named */
    /* NN_ENGINE_VULKAN_SKIP=a,b: commands whose names contain one of these
     * are dispatched with no workgroups (a diagnostic: results are wrong,
     * the time saved is what those commands cost in the pipelined step). */
    char skip[VK_PROFILE_LABEL];
    bool plans_in_flight;    /* a plan was submitted since the last full wait */
    /* Kernel variants chosen by measurement (vk_tune.c); while it times
     * candidates, commands go into `tuning` instead of a frame or plan. */
    struct vk_tuner *tuner;
    vk_target *tuning;
    /* Custom kernels' pipelines, indexed by their ids (vk_custom.c), built on first use. */
    VkPipeline *custom_pipelines;
    uint32_t custom_capacity;
    /* Self-reducing splits' counters and partials (vk_split_work.c). */
    nn_buffer *split_work;
    uint64_t work_counter_cursor, work_partial_cursor;
} vk_backend;

static inline vk_backend *as_vk(nn_backend *b) { return (vk_backend *)b; }
/* Whether products of `precision` (nn_precision) run on the matrix cores:
 * fp16, where the device has them (the one rule the GEMM, the convolution
 * routes and nn_ctx_matrix_cores follow). */
static inline bool vk_on_matrix_cores(const vk_backend *vk, int32_t precision) {
    return precision == NN_PRECISION_FP16 && vk->matrix_cores;
}

/* vk_memory.c */
nn_status vk_memory_init(vk_backend *vk);
void vk_memory_destroy(vk_backend *vk);
void vk_memory_stats(nn_backend *self, uint64_t *current, uint64_t *peak, uint64_t *reserved);
nn_buffer *vk_buffer_alloc(nn_backend *self, size_t bytes);
/* Room for one more block in the block table (vk_memory.c). */
nn_status vk_block_table_reserve(vk_backend *vk);
void vk_buffer_free(nn_backend *self, nn_buffer *buffer);
/* A host-visible, coherent buffer (staging, status), mapped. */
nn_status vk_host_buffer_create(vk_backend *vk, VkDeviceSize size, VkBufferUsageFlags usage,
                                vk_host_buffer *out);
void vk_host_buffer_destroy(vk_backend *vk, vk_host_buffer *hb);

/* vk_stream.c */
nn_status vk_stream_init(vk_backend *vk);
void vk_stream_destroy(vk_backend *vk);
/* The command buffer to record the next command into, after a barrier if
 * the command's accesses conflict with those recorded since the last one
 * (every command buffer starts with a barrier against earlier submissions). */
nn_status vk_begin_command(vk_backend *vk, const vk_access *accesses, int count, VkCommandBuffer *cmd);
/* The range an argument spans (its extent, or to the end of its buffer). */
vk_access vk_access_of(nn_buffer_ref ref, bool write);
/* Start tracking a fresh command buffer: one full barrier first. */
void vk_target_begin(vk_backend *vk, vk_target *t);
void vk_hazards_free(vk_hazards *h);
/* A kernel's temporary: a spare one of the plan being recorded where one is
 * large enough, else new memory. */
nn_buffer *vk_scratch_alloc(vk_backend *vk, size_t bytes);
/* A temporary a kernel used: freed now, or kept with the plan being recorded
 * (a replay will use it again) and offered to its later kernels. */
void vk_scratch_done(vk_backend *vk, nn_buffer *buffer);
/* Submit the eager commands recorded so far (without waiting). */
nn_status vk_submit_pending(vk_backend *vk);
/* After a command: counts it, and submits the frame when it is long. */
nn_status vk_end_command(vk_backend *vk);
/* `bytes` of the current frame's staging area (submitting and switching
 * frames when it is full); bytes must be <= vk_staging_capacity(). */
nn_status vk_staging_take(vk_backend *vk, VkDeviceSize bytes, VkDeviceSize *offset, void **host);
VkDeviceSize vk_staging_capacity(const vk_backend *vk);
VkBuffer vk_staging_buffer(const vk_backend *vk);
/* Submit what is recorded and wait for all work; then report a device-side
 * error (a bad label) if a kernel raised one. */
nn_status vk_finish(vk_backend *vk);

/* vk_split_work.c: scratch for kernels whose workgroups add their own split
 * partial results: the last workgroup of a tile to finish (counted on a
 * counter that is zero at rest and reset by that workgroup) adds the
 * partials in order. `counters` counters and `floats` partials, in one
 * buffer; counters is the counters' element index in the partials' block. */
typedef struct vk_split_work {
    nn_buffer_ref partials;
    uint32_t counters;
    vk_access counter_access;
} vk_split_work;
bool vk_split_work_fits(uint64_t counters, uint64_t floats);
nn_status vk_split_work_take(vk_backend *vk, uint64_t counters, uint64_t floats, vk_split_work *out);
void vk_split_work_destroy(vk_backend *vk);

/* vk_plan.c: the backend's plan_new / plan_replay / plan_free. */
nn_status vk_plan_new(nn_backend *self, const nn_command *commands, int64_t count, void **plan);
nn_status vk_plan_replay(nn_backend *self, void *plan, int64_t times);
void vk_plan_free(nn_backend *self, void *plan);

/* vk_profile.c: per-kernel GPU times (NN_ENGINE_VULKAN_PROFILE=1). */
nn_status vk_profile_init(vk_backend *vk);
void vk_profile_frame_begin(vk_backend *vk, int frame, VkCommandBuffer cmd);
void vk_profile_command_begin(vk_backend *vk, int frame, VkCommandBuffer cmd);
void vk_profile_command_end(vk_backend *vk, int frame, VkCommandBuffer cmd);
/* After the frame's fence: collect its times. */
void vk_profile_frame_done(vk_backend *vk, int frame);
/* Print the table and free the profile. */
void vk_profile_destroy(vk_backend *vk);
/* vk_stretch_profile.c: a captured step's time per stretch, with the
 * profile on: begin after the plan's vkBeginCommandBuffer, a stamp after
 * each barrier and at the end, each command's name, a sample after each
 * replay, the table when the plan is freed. */
nn_status vk_stretches_begin(vk_backend *vk, vk_plan *plan);
void vk_stretches_stamp(vk_backend *vk, VkCommandBuffer cmd);
void vk_stretches_name(vk_backend *vk, const char *label);
void vk_stretches_sample(vk_backend *vk, vk_plan *plan);
void vk_stretches_free(vk_backend *vk, vk_plan *plan);
/* With NN_ENGINE_VULKAN_PIPELINE_STATS=1: the driver's statistics of a
 * pipeline just built (registers, spills, shared memory: what the driver
 * reports), one line on stderr. */
void vk_pipeline_stats_print(vk_backend *vk, VkPipeline pipeline, const char *shader, const uint32_t *constants,
                             uint32_t count);

/* vk_pipelines.c */
nn_status vk_pipelines_init(vk_backend *vk);
void vk_pipelines_destroy(vk_backend *vk);
/* The pipeline (created on first use; a shader missing from the library or
 * failing to build on this device is an error naming the kernel). variant:
 * 0 for pipelines without variants (VK_PIPE_VARIANTS above). */
nn_status vk_pipeline_get(vk_backend *vk, vk_pipeline_id id, int variant, VkPipeline *out);
/* A pipeline from SPIR-V `code` (`bytes` long) with `count` specialization
 * constants (0 to count-1; none when count is 0), in the shared layout;
 * kernel and shader name it in errors. */
nn_status vk_pipeline_build(vk_backend *vk, const char *kernel, const char *shader, const uint32_t *code,
                            size_t bytes, const uint32_t *constants, uint32_t count, VkPipeline *out);
/* Whether shaders/<name>.comp is built into this library (COOPMAT=0 leaves
 * the cooperative-matrix shaders out). */
bool vk_shader_built(const char *name);
/* A pipeline of `id` with its specialization constants 0..VK_SPECIAL_CONSTANTS-1
 * set to `constants` (a layer's window, stride and pooling, so the shader's
 * loops over them unroll): built on first use for each set of constants,
 * then kept. */
#define VK_SPECIAL_CONSTANTS 11
nn_status vk_pipeline_special(vk_backend *vk, vk_pipeline_id id, const uint32_t constants[VK_SPECIAL_CONSTANTS],
                              VkPipeline *out);
/* The descriptor set binding these blocks (created on first use, then kept). */
nn_status vk_descriptor_set(vk_backend *vk, const uint32_t blocks[VK_ARG_BINDINGS], VkDescriptorSet *out);
/* The tile of a GEMM pipeline: rows, columns, k slice. */
void vk_gemm_tiles(vk_pipeline_id id, uint32_t *bm, uint32_t *bn, uint32_t *bk);
/* Whether a GEMM tile's shared memory fits the device (true for other pipelines). */
bool vk_tile_fits(const vk_backend *vk, vk_pipeline_id id);

/* vk_kernels.c: the backend's run() through the registry's table of entry
 * points, and its capability query (nn_backend.supports). */
nn_status vk_run(nn_backend *self, nn_kernel kernel, const nn_buffer_ref *args, int nargs, const void *params);
bool vk_supports(nn_backend *self, nn_kernel kernel, const void *params);
/* Every kernel's entry point, vk_run_<name>(vk, params, args) (kernel_list.h):
 * in vk_kernels.c, or in its family's file below. */
#define VK_RUN_DECLARE(ID, name, params, ...) \
    nn_status vk_run_##name(vk_backend *vk, const params *p, const nn_buffer_ref *a);
NN_KERNEL_LIST(VK_RUN_DECLARE)
#undef VK_RUN_DECLARE

/* vk_dispatch.c: record one dispatch of pipeline `pipe` in its `variant`
 * (VK_PIPE_VARIANTS; 0 for most): bind the blocks of the arguments (an absent one binds any
 * block), push their element offsets into push's first words and the rest
 * of push after them, dispatch gx x gy x gz workgroups. */
nn_status vk_record(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant, const nn_buffer_ref *args,
                    int nargs, vk_push_ref push, uint32_t gx, uint32_t gy, uint32_t gz);
/* vk_record with the written arguments given (bit i: argument i), for
 * dispatches whose arguments are not the kernel's list (split-K's sum). */
nn_status vk_record_ex(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant, const nn_buffer_ref *args,
                       int nargs, unsigned written, vk_push_ref push, uint32_t gx, uint32_t gy, uint32_t gz);
/* vk_record_ex for a kernel that finishes a split reduction (its partials
 * are among args): the work's counters and partials are tracked as
 * written too. */
nn_status vk_record_split(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant,
                          const nn_buffer_ref *args, int nargs, unsigned written, const vk_split_work *work,
                          vk_push_ref push, uint32_t gx, uint32_t gy, uint32_t gz);
/* vk_custom.c: custom kernels' pipelines, freed before the others (vk_backend.c). */
void vk_custom_destroy(vk_backend *vk);
/* A dispatch of a pipeline made elsewhere (a custom kernel's, vk_custom.c). */
nn_status vk_record_pipeline(vk_backend *vk, nn_kernel kernel, VkPipeline pipeline, const nn_buffer_ref *args,
                             int nargs, unsigned written, vk_push_ref push, uint32_t gx, uint32_t gy, uint32_t gz);
/* A dispatch of a pipeline specialised by `constants` (vk_pipeline_special);
 * `work`, when given, is a split's work area (its counters and partials
 * are tracked as written, as by vk_record_split). */
nn_status vk_record_special(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe,
                            const uint32_t constants[VK_SPECIAL_CONSTANTS], const nn_buffer_ref *args, int nargs,
                            const vk_split_work *work, vk_push_ref push, uint32_t gx, uint32_t gy, uint32_t gz);
/* Workgroups of 256 for `items` (capped: the shaders stride over the rest). */
uint32_t vk_groups_for(uint64_t items);
/* An error naming the kernel unless 0 <= value <= UINT32_MAX: sizes and
 * element indices must fit the shaders' 32-bit arithmetic. */
nn_status vk_fits32(nn_kernel kernel, const char *what, int64_t value);
#define VK_MAX_GROUPS 65535u /* the workgroup count every device allows per dimension */

/* vk_gemm.c: C = op(A) op(B) through an epilogue, a[0..2] = A, B, C; with
 * epilogue != 0 (NN_EPI_* bits of NN_KERNEL_GEMM_EPILOGUE) a[3] is the aux
 * buffer (bias or mask). The convolutions' column route multiplies here. */
nn_status vk_gemm_record(vk_backend *vk, const nn_buffer_ref *a, const nn_gemm_params *p, int32_t epilogue);

/* Latency-bound products (gemm_latency.comp, conv_latency.comp): whether a
 * product of `macs` multiply-adds is one, and its tiles and splits. */
typedef struct vk_latency_plan {
    vk_pipeline_id pipe;
    int64_t tiles, splits, split_steps;
} vk_latency_plan;
bool vk_latency_wanted(int64_t macs);
/* conv: the conv_latency.comp pipelines. */
nn_status vk_latency_plan_for(int32_t m, int32_t n, int32_t k, int64_t outputs, int64_t products, bool conv,
                              vk_latency_plan *out);
/* Record it: *counters (a field of push) gets the split's counters; a[3]
 * (nargs > 3) is the epilogue's aux, binding 4 a split's work area. */
nn_status vk_latency_record(vk_backend *vk, nn_kernel kernel, const vk_latency_plan *plan, int variant,
                            const nn_buffer_ref *a, int nargs, vk_push_ref push, uint32_t *counters, int64_t outputs,
                            int32_t m, int32_t n);

/* vk_conv.c: the convolution kernels and im2col / col2im. */
/* The backend's conv_keeps_columns: the layers that take the column route. */
bool vk_conv_keeps_columns(nn_backend *self, const nn_conv_params *p);
/* The backend's conv_layout: channels-last for the layers the implicit GEMM takes. */
nn_layout vk_conv_layout(nn_backend *self, const nn_conv_params *p);
/* A CONV2D_* or DEPTHWISE_CONV2D_* kernel with a channels-last side that
 * no shader of its route reads: through dense copies (conv_layout.h). */
nn_status vk_conv_layouts(vk_backend *vk, nn_kernel kernel, const nn_conv_params *p, const nn_buffer_ref *a);
/* vk_tune.c: a kernel's variant chosen by measuring its candidates on the
 * device (NN_ENGINE_VULKAN_TUNE), remembered in a cache file. A request
 * names the candidates, the heuristic's pick and a function recording
 * candidate c (on scratch outputs: it runs several times); the key is the
 * kernel's shape, the same key meaning the same choice. */
#define VK_TUNE_KEY_WORDS 32
#define VK_TUNE_MAX_CANDIDATES 8
typedef enum vk_tune_mode { VK_TUNE_OFF, VK_TUNE_CAPTURE, VK_TUNE_ALWAYS } vk_tune_mode;
typedef enum vk_tune_source { VK_TUNE_FROM_HEURISTIC, VK_TUNE_FROM_CACHE, VK_TUNE_MEASURED } vk_tune_source;
typedef nn_status (*vk_tune_record_fn)(vk_backend *vk, void *ctx, int candidate);
typedef struct vk_tune_request {
    uint32_t key[VK_TUNE_KEY_WORDS];
    const char *const *names;
    int count, heuristic;
    vk_tune_record_fn record;
    void *ctx;
} vk_tune_request;
nn_status vk_tune_init(vk_backend *vk);
/* Whether vk_tune_choose will run the candidates (nothing cached for the
 * key, measuring allowed now): the caller then gives them scratch outputs. */
bool vk_tune_will_measure(vk_backend *vk, const vk_tune_request *req);
nn_status vk_tune_choose(vk_backend *vk, const vk_tune_request *req, int *choice, vk_tune_source *source);
const char *vk_tune_source_name(vk_tune_source source);
void vk_tune_destroy(vk_backend *vk);
/* A full barrier in `t`, its tracked hazards cleared (vk_stream.c). */
void vk_target_barrier(vk_backend *vk, vk_target *t);

/* Whether a shader can read four floats at a time from `ref`'s start: it
 * is 16-byte aligned, or absent (an absent argument reads nothing). */
static inline bool vk_ref_aligned16(nn_buffer_ref ref) {
    return !ref.buffer || (ref.buffer->offset + ref.offset) % 16 == 0;
}

/* Element strides (n, channel, row, column) of a [n, c, h, w] activation in `layout` (nn_layout). */
typedef struct vk_activation_strides {
    uint32_t n, c, h, w;
} vk_activation_strides;
static inline vk_activation_strides vk_activation_strides_of(int32_t layout, int64_t c, int64_t h, int64_t w) {
    if (layout == NN_LAYOUT_CHANNELS_LAST)
        return (vk_activation_strides){(uint32_t)(h * w * c), 1, (uint32_t)(w * c), (uint32_t)c};
    return (vk_activation_strides){(uint32_t)(c * h * w), (uint32_t)(h * w), (uint32_t)w, 1};
}

/* vk_conv_gemm.c: a CONV2D_* kernel as one implicit GEMM over the batch,
 * its activations in either layout. */
nn_status vk_conv_gemm_record(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_conv_params *cp);

/* vk_conv_winograd.c: a CONV2D_* kernel of a 3x3 or 5x5 convolution at
 * stride 1 (vk_conv_winograd_fits) by Winograd's F(4x4, 3x3) or F(4x4, 5x5), in fp32, its
 * activations in either layout. */
bool vk_conv_winograd_fits(const nn_conv_params *cp);
nn_status vk_conv_winograd_record(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a,
                                  const nn_conv_params *cp);

/* vk_conv_pool.c: whether the fused convolution + ReLU + max pooling
 * kernels (and chained, and with the Linear after them) run these layers
 * to advantage here (vk_supports). */
bool vk_conv_pool_fuses(nn_backend *self, const nn_conv_pool_params *p);
bool vk_conv_pool_chains(nn_backend *self, const nn_conv_pool_chain_params *p);
bool vk_conv_pool_linear_fuses(nn_backend *self, const nn_conv_pool_linear_params *p);
/* vk_linear_head.c: the same of the fused Linear -> ReLU -> Linear kernels
 * (and with the loss after them). */
bool vk_linear_head_fuses(nn_backend *self, const nn_linear_head_params *p);
bool vk_linear_head_loss_fuses(nn_backend *self, const nn_linear_head_params *p);

/* The generated table of embedded SPIR-V (build/gen/vk_shaders.c). */
typedef struct nn_vk_shader {
    const char *name;
    const unsigned char *code;
    size_t size;
} nn_vk_shader;
extern const nn_vk_shader nn_vk_shaders[];
extern const int nn_vk_shader_count;

#endif
