"""The ctypes mirrors of the public C structs the package passes to the
library. Generated from include/*.h by scripts/ctypes_structs.py: do not
edit; run the script after changing a header."""
import ctypes


class DeviceInfo(ctypes.Structure):
    """nn_device_info (include/nn_devices.h)."""
    _fields_ = [
        ("backend", ctypes.c_char * 16),
        ("index", ctypes.c_int),
        ("name", ctypes.c_char * 128),
        ("kind", ctypes.c_char * 32),
        ("detail", ctypes.c_char * 192),
        ("usable", ctypes.c_bool),
        ("reason", ctypes.c_char * 256),
    ]


class CtxOptions(ctypes.Structure):
    """nn_ctx_options (include/nn_context.h)."""
    _fields_ = [
        ("device", ctypes.c_char_p),
        ("threads", ctypes.c_int),
        ("seed", ctypes.c_uint64),
    ]


class SgdOptions(ctypes.Structure):
    """nn_sgd_options (include/nn_optim.h)."""
    _fields_ = [
        ("lr", ctypes.c_float),
        ("momentum", ctypes.c_float),
        ("weight_decay", ctypes.c_float),
        ("nesterov", ctypes.c_bool),
        ("clip_value", ctypes.c_float),
        ("max_grad_norm", ctypes.c_float),
    ]


class ParamGroup(ctypes.Structure):
    """nn_param_group (include/nn_optim.h)."""
    _fields_ = [
        ("params", ctypes.POINTER(ctypes.c_void_p)),
        ("count", ctypes.c_int),
        ("lr", ctypes.c_float),
        ("weight_decay", ctypes.c_float),
        ("adamw", ctypes.c_bool),
    ]


class LossScaleOptions(ctypes.Structure):
    """nn_loss_scale_options (include/nn_optim.h)."""
    _fields_ = [
        ("init_scale", ctypes.c_float),
        ("growth_factor", ctypes.c_float),
        ("backoff_factor", ctypes.c_float),
        ("growth_interval", ctypes.c_int),
    ]


class LossScaleState(ctypes.Structure):
    """nn_loss_scale_state (include/nn_optim.h)."""
    _fields_ = [
        ("scale", ctypes.c_float),
        ("good_steps", ctypes.c_int64),
        ("skipped_steps", ctypes.c_int64),
    ]


class AdamOptions(ctypes.Structure):
    """nn_adam_options (include/nn_optim.h)."""
    _fields_ = [
        ("lr", ctypes.c_float),
        ("beta1", ctypes.c_float),
        ("beta2", ctypes.c_float),
        ("eps", ctypes.c_float),
        ("weight_decay", ctypes.c_float),
        ("amsgrad", ctypes.c_bool),
        ("maximize", ctypes.c_bool),
    ]


class RmspropOptions(ctypes.Structure):
    """nn_rmsprop_options (include/nn_optim.h)."""
    _fields_ = [
        ("lr", ctypes.c_float),
        ("alpha", ctypes.c_float),
        ("eps", ctypes.c_float),
        ("weight_decay", ctypes.c_float),
        ("momentum", ctypes.c_float),
        ("centered", ctypes.c_bool),
        ("maximize", ctypes.c_bool),
    ]


class LionOptions(ctypes.Structure):
    """nn_lion_options (include/nn_optim.h)."""
    _fields_ = [
        ("lr", ctypes.c_float),
        ("beta1", ctypes.c_float),
        ("beta2", ctypes.c_float),
        ("weight_decay", ctypes.c_float),
        ("maximize", ctypes.c_bool),
    ]


class MuonOptions(ctypes.Structure):
    """nn_muon_options (include/nn_optim.h)."""
    _fields_ = [
        ("lr", ctypes.c_float),
        ("momentum", ctypes.c_float),
        ("nesterov", ctypes.c_bool),
        ("ns_steps", ctypes.c_int),
        ("weight_decay", ctypes.c_float),
        ("adamw_lr", ctypes.c_float),
        ("adamw_beta1", ctypes.c_float),
        ("adamw_beta2", ctypes.c_float),
        ("adamw_eps", ctypes.c_float),
        ("adamw_weight_decay", ctypes.c_float),
    ]


class ScheduleOptions(ctypes.Structure):
    """nn_schedule_options (include/nn_schedule.h)."""
    _fields_ = [
        ("kind", ctypes.c_int),
        ("base_lr", ctypes.c_double),
        ("group_lrs", ctypes.POINTER(ctypes.c_double)),
        ("step_size", ctypes.c_int64),
        ("gamma", ctypes.c_double),
        ("milestones", ctypes.c_int64 * 8),
        ("milestone_count", ctypes.c_int),
        ("warmup", ctypes.c_int64),
        ("warmup_start", ctypes.c_double),
        ("total_steps", ctypes.c_int64),
        ("start_factor", ctypes.c_double),
        ("end_factor", ctypes.c_double),
        ("eta_min", ctypes.c_double),
        ("max_lr", ctypes.c_double),
        ("pct_start", ctypes.c_double),
        ("anneal_linear", ctypes.c_bool),
        ("div_factor", ctypes.c_double),
        ("final_div_factor", ctypes.c_double),
        ("three_phase", ctypes.c_bool),
        ("cycle_momentum", ctypes.c_bool),
        ("base_momentum", ctypes.c_double),
        ("max_momentum", ctypes.c_double),
    ]


class StepOptions(ctypes.Structure):
    """nn_step_options (include/nn_step.h)."""
    _fields_ = [
        ("warmup", ctypes.c_int),
        ("eager", ctypes.c_bool),
    ]


class ModelInfo(ctypes.Structure):
    """nn_model_info (include/nn_io.h)."""
    _fields_ = [
        ("channels", ctypes.c_int),
        ("mean", ctypes.c_float * 8),
        ("std", ctypes.c_float * 8),
        ("class_count", ctypes.c_int),
        ("class_names", ctypes.POINTER(ctypes.c_char_p)),
    ]


class OnnxOptions(ctypes.Structure):
    """nn_onnx_options (include/nn_io.h)."""
    _fields_ = [
        ("graph_name", ctypes.c_char_p),
        ("opset", ctypes.c_int),
        ("static_batch", ctypes.c_bool),
        ("n_names", ctypes.c_int),
        ("named_tensors", ctypes.POINTER(ctypes.c_void_p)),
        ("names", ctypes.POINTER(ctypes.c_char_p)),
        ("info", ctypes.POINTER(ModelInfo)),
    ]


class OnnxImportOptions(ctypes.Structure):
    """nn_onnx_import_options (include/nn_io.h)."""
    _fields_ = [
        ("classes", ctypes.c_int),
    ]


class TensorListing(ctypes.Structure):
    """nn_tensor_listing (include/nn_io.h)."""
    _fields_ = [
        ("count", ctypes.c_int),
        ("names", ctypes.POINTER(ctypes.c_char_p)),
        ("dtypes", ctypes.POINTER(ctypes.c_int)),
        ("ndims", ctypes.POINTER(ctypes.c_int)),
        ("shapes", ctypes.POINTER(ctypes.c_int64)),
        ("value", ctypes.c_char_p),
    ]


class Dataset(ctypes.Structure):
    """nn_dataset (include/nn_data.h)."""
    _fields_ = [
        ("count", ctypes.c_int64),
        ("channels", ctypes.c_int),
        ("height", ctypes.c_int),
        ("width", ctypes.c_int),
        ("classes", ctypes.c_int),
        ("pixels", ctypes.POINTER(ctypes.c_uint8)),
        ("labels", ctypes.POINTER(ctypes.c_int32)),
        ("class_names", ctypes.POINTER(ctypes.c_char_p)),
        ("skipped", ctypes.c_int64),
        ("first_skipped", ctypes.c_char * 512),
        ("skipped_entries", ctypes.c_char * 512),
    ]


class Conv2dParams(ctypes.Structure):
    """nn_conv2d_params (include/nn_ops.h)."""
    _fields_ = [
        ("stride_h", ctypes.c_int),
        ("stride_w", ctypes.c_int),
        ("pad_h", ctypes.c_int),
        ("pad_w", ctypes.c_int),
        ("dilation_h", ctypes.c_int),
        ("dilation_w", ctypes.c_int),
        ("groups", ctypes.c_int),
    ]


class Pool2dParams(ctypes.Structure):
    """nn_pool2d_params (include/nn_ops.h)."""
    _fields_ = [
        ("kernel_h", ctypes.c_int),
        ("kernel_w", ctypes.c_int),
        ("stride_h", ctypes.c_int),
        ("stride_w", ctypes.c_int),
        ("pad_h", ctypes.c_int),
        ("pad_w", ctypes.c_int),
        ("dilation_h", ctypes.c_int),
        ("dilation_w", ctypes.c_int),
        ("ceil_mode", ctypes.c_bool),
    ]


class ConvTranspose2dParams(ctypes.Structure):
    """nn_conv_transpose2d_params (include/nn_ops.h)."""
    _fields_ = [
        ("stride_h", ctypes.c_int),
        ("stride_w", ctypes.c_int),
        ("pad_h", ctypes.c_int),
        ("pad_w", ctypes.c_int),
        ("output_pad_h", ctypes.c_int),
        ("output_pad_w", ctypes.c_int),
        ("dilation_h", ctypes.c_int),
        ("dilation_w", ctypes.c_int),
        ("groups", ctypes.c_int),
    ]


class ImageIndex(ctypes.Structure):
    """nn_image_index (include/nn_loader.h)."""
    _fields_ = [
        ("count", ctypes.c_int64),
        ("classes", ctypes.c_int),
        ("class_names", ctypes.POINTER(ctypes.c_char_p)),
        ("paths", ctypes.POINTER(ctypes.c_char_p)),
        ("labels", ctypes.POINTER(ctypes.c_int32)),
        ("skipped", ctypes.c_int64),
        ("first_skipped", ctypes.c_char * 512),
        ("skipped_entries", ctypes.c_char * 512),
    ]


class LoaderOptions(ctypes.Structure):
    """nn_loader_options (include/nn_loader.h)."""
    _fields_ = [
        ("channels", ctypes.c_int),
        ("height", ctypes.c_int),
        ("width", ctypes.c_int),
        ("batch", ctypes.c_int64),
        ("threads", ctypes.c_int),
        ("prefetch", ctypes.c_int),
        ("seed", ctypes.c_uint64),
        ("shuffle", ctypes.c_bool),
        ("flip", ctypes.c_bool),
        ("crop", ctypes.c_int),
        ("mean", ctypes.c_float * 3),
        ("std", ctypes.c_float * 3),
    ]


class Batch(ctypes.Structure):
    """nn_batch (include/nn_loader.h)."""
    _fields_ = [
        ("images", ctypes.POINTER(ctypes.c_float)),
        ("labels", ctypes.POINTER(ctypes.c_int32)),
        ("count", ctypes.c_int64),
        ("first", ctypes.c_int64),
    ]


class CustomCpuCall(ctypes.Structure):
    """nn_custom_cpu_call (include/nn_custom.h)."""
    _fields_ = [
        ("buffers", ctypes.c_void_p * 8),
        ("counts", ctypes.c_int64 * 8),
        ("buffer_count", ctypes.c_int),
        ("params", ctypes.c_void_p),
        ("params_size", ctypes.c_size_t),
        ("grid", ctypes.c_uint32 * 3),
        ("user", ctypes.c_void_p),
        ("error", ctypes.c_char * 256),
    ]


class CustomKernelDesc(ctypes.Structure):
    """nn_custom_kernel_desc (include/nn_custom.h)."""
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("cpu", ctypes.c_void_p),
        ("cpu_user", ctypes.c_void_p),
        ("glsl", ctypes.c_char_p),
        ("spirv", ctypes.POINTER(ctypes.c_uint32)),
        ("spirv_bytes", ctypes.c_size_t),
        ("local_size", ctypes.c_uint32 * 3),
        ("not_capturable", ctypes.c_bool),
    ]


class CustomOutput(ctypes.Structure):
    """nn_custom_output (include/nn_custom.h)."""
    _fields_ = [
        ("dtype", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
    ]


class FunctionCall(ctypes.Structure):
    """nn_function_call (include/nn_custom.h)."""
    _fields_ = [
        ("inputs", ctypes.POINTER(ctypes.c_void_p)),
        ("input_count", ctypes.c_int),
        ("output", ctypes.c_void_p),
        ("grad_output", ctypes.c_void_p),
        ("saved", ctypes.POINTER(ctypes.c_void_p)),
        ("saved_count", ctypes.c_int),
        ("needs_grad", ctypes.POINTER(ctypes.c_bool)),
        ("grad_inputs", ctypes.POINTER(ctypes.c_void_p)),
        ("user", ctypes.c_void_p),
    ]


class FunctionDef(ctypes.Structure):
    """nn_function_def (include/nn_custom.h)."""
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("backward", ctypes.c_void_p),
        ("compose", ctypes.c_void_p),
    ]


class CustomUpdate(ctypes.Structure):
    """nn_custom_update (include/nn_custom.h)."""
    _fields_ = [
        ("param", ctypes.c_void_p),
        ("grad", ctypes.c_void_p),
        ("state", ctypes.c_void_p * 3),
        ("n", ctypes.c_int64),
        ("lr", ctypes.c_void_p),
        ("step", ctypes.c_void_p),
        ("skip", ctypes.c_void_p),
        ("group", ctypes.c_int),
        ("weight_decay", ctypes.c_float),
        ("options", ctypes.POINTER(ctypes.c_float)),
        ("user", ctypes.c_void_p),
    ]


class CustomOptimizerDesc(ctypes.Structure):
    """nn_custom_optimizer_desc (include/nn_custom.h)."""
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("states", ctypes.c_char_p * 3),
        ("state_count", ctypes.c_int),
        ("step_count", ctypes.c_bool),
        ("options", ctypes.c_char_p * 4),
        ("option_values", ctypes.c_float * 4),
        ("option_count", ctypes.c_int),
        ("update", ctypes.c_void_p),
        ("user", ctypes.c_void_p),
    ]


class VitOptions(ctypes.Structure):
    """nn_vit_options (include/nn_layers.h)."""
    _fields_ = [
        ("image_size", ctypes.c_int),
        ("patch_size", ctypes.c_int),
        ("in_channels", ctypes.c_int),
        ("num_classes", ctypes.c_int),
        ("hidden_dim", ctypes.c_int),
        ("num_layers", ctypes.c_int),
        ("num_heads", ctypes.c_int),
        ("mlp_dim", ctypes.c_int),
    ]


class GptOptions(ctypes.Structure):
    """nn_gpt_options (include/nn_layers.h)."""
    _fields_ = [
        ("vocab_size", ctypes.c_int),
        ("context", ctypes.c_int),
        ("width", ctypes.c_int),
        ("depth", ctypes.c_int),
        ("heads", ctypes.c_int),
    ]
