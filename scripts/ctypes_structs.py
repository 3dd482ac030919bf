#!/usr/bin/env python3
"""Writes python/nn_engine/_structs.py: the ctypes mirrors of the public C
structs the Python package passes to the library, generated from their
declarations in include/*.h, so that a field added in C reaches Python by
running this script (tests/python/test_struct_layouts.py fails, naming
this script, while the file is behind its headers, and checks every
offset against the C compiler's).

    python3 scripts/ctypes_structs.py            # rewrite the file
    python3 scripts/ctypes_structs.py --check    # exit 1 when it is stale

The structs' fields are of the kinds the public headers use: integers,
floats, bool, enums, fixed arrays (sizes may be #defined), char arrays,
C strings, and pointers (to a struct mirrored here, to numbers, to
strings; any other pointer is a void pointer)."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "python", "nn_engine", "_structs.py")

# (Python name, C struct, header): the order the file defines them in (a
# struct another points to comes first).
STRUCTS = [
    ("DeviceInfo", "nn_device_info", "nn_devices.h"),
    ("CtxOptions", "nn_ctx_options", "nn_context.h"),
    ("SgdOptions", "nn_sgd_options", "nn_optim.h"),
    ("ParamGroup", "nn_param_group", "nn_optim.h"),
    ("LossScaleOptions", "nn_loss_scale_options", "nn_optim.h"),
    ("LossScaleState", "nn_loss_scale_state", "nn_optim.h"),
    ("AdamOptions", "nn_adam_options", "nn_optim.h"),
    ("RmspropOptions", "nn_rmsprop_options", "nn_optim.h"),
    ("LionOptions", "nn_lion_options", "nn_optim.h"),
    ("MuonOptions", "nn_muon_options", "nn_optim.h"),
    ("ScheduleOptions", "nn_schedule_options", "nn_schedule.h"),
    ("StepOptions", "nn_step_options", "nn_step.h"),
    ("ModelInfo", "nn_model_info", "nn_io.h"),
    ("OnnxOptions", "nn_onnx_options", "nn_io.h"),
    ("OnnxImportOptions", "nn_onnx_import_options", "nn_io.h"),
    ("TensorListing", "nn_tensor_listing", "nn_io.h"),
    ("Dataset", "nn_dataset", "nn_data.h"),
    ("Conv2dParams", "nn_conv2d_params", "nn_ops.h"),
    ("Pool2dParams", "nn_pool2d_params", "nn_ops.h"),
    ("ConvTranspose2dParams", "nn_conv_transpose2d_params", "nn_ops.h"),
    ("ImageIndex", "nn_image_index", "nn_loader.h"),
    ("LoaderOptions", "nn_loader_options", "nn_loader.h"),
    ("Batch", "nn_batch", "nn_loader.h"),
    ("CustomCpuCall", "nn_custom_cpu_call", "nn_custom.h"),
    ("CustomKernelDesc", "nn_custom_kernel_desc", "nn_custom.h"),
    ("CustomOutput", "nn_custom_output", "nn_custom.h"),
    ("FunctionCall", "nn_function_call", "nn_custom.h"),
    ("FunctionDef", "nn_function_def", "nn_custom.h"),
    ("CustomUpdate", "nn_custom_update", "nn_custom.h"),
    ("CustomOptimizerDesc", "nn_custom_optimizer_desc", "nn_custom.h"),
    ("VitOptions", "nn_vit_options", "nn_layers.h"),
    ("GptOptions", "nn_gpt_options", "nn_layers.h"),
]

NUMBERS = {"int": "ctypes.c_int", "int32_t": "ctypes.c_int32", "int64_t": "ctypes.c_int64",
           "uint8_t": "ctypes.c_uint8", "uint32_t": "ctypes.c_uint32", "uint64_t": "ctypes.c_uint64",
           "size_t": "ctypes.c_size_t", "float": "ctypes.c_float", "double": "ctypes.c_double",
           "bool": "ctypes.c_bool", "char": "ctypes.c_char", "nn_dtype": "ctypes.c_int"}


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", " ", text, flags=re.S))


def headers():
    folder = os.path.join(ROOT, "include")
    return {name: strip_comments(open(os.path.join(folder, name)).read()) for name in sorted(os.listdir(folder))
            if name.endswith(".h")}


def defines(sources):
    found = {}
    for text in sources.values():
        for name, value in re.findall(r"#define\s+(\w+)\s+(\d+)\b", text):
            found[name] = int(value)
    return found


def enums(sources):
    return {name for text in sources.values() for name in re.findall(r"typedef\s+enum\s+\w*\s*\{[^}]*\}\s*(\w+)\s*;",
                                                                      text)}


def body(sources, header, c_name):
    text = sources[header]
    match = re.search(r"typedef\s+struct\s+" + c_name + r"\s*\{(.*?)\}\s*" + c_name + r"\s*;", text, re.S)
    if not match:
        raise SystemExit(f"ctypes_structs: no 'typedef struct {c_name} {{ ... }} {c_name};' in include/{header}")
    return match.group(1)


def ctype(base, stars, mirrored, enum_names, where):
    """The ctypes expression of `base` with `stars` pointer levels."""
    if stars == 0:
        if base in NUMBERS:
            return NUMBERS[base]
        if base in enum_names:
            return "ctypes.c_int"
        if base in mirrored:
            return mirrored[base]
        if base.endswith("_fn"):  # a function pointer's typedef (nn_custom_cpu_fn)
            return "ctypes.c_void_p"
        raise SystemExit(f"ctypes_structs: {where}: no ctypes type for '{base}'")
    if base == "char":
        inner = "ctypes.c_char_p"
    elif base in NUMBERS:
        inner = f"ctypes.POINTER({NUMBERS[base]})"
    elif base in enum_names:
        inner = "ctypes.POINTER(ctypes.c_int)"
    elif base in mirrored:
        inner = f"ctypes.POINTER({mirrored[base]})"
    else:
        inner = "ctypes.c_void_p"  # an opaque object (nn_tensor *, nn_ctx *) or a function
    for _ in range(stars - 1):
        inner = f"ctypes.POINTER({inner})"
    return inner


def fields(declarations, constants, mirrored, enum_names, c_name):
    out = []
    for declaration in (d.strip() for d in declarations.split(";")):
        if not declaration:
            continue
        declaration = re.sub(r"\*\s+(?=\*)", "*", re.sub(r"\bconst\b", " ", declaration))
        function = re.match(r"(.+?)\(\s*\*\s*(\w+)\s*\)\s*\(.*\)$", declaration, re.S)
        if function:  # a function pointer
            out.append((function.group(2), "ctypes.c_void_p"))
            continue
        base_match = re.match(r"\s*((?:unsigned\s+|struct\s+)?\w+)\s*(.*)$", declaration, re.S)
        base, rest = base_match.group(1).replace("struct ", "").strip(), base_match.group(2)
        for declarator in rest.split(","):
            parts = re.match(r"\s*(\**)\s*(\w+)\s*((?:\[\s*\w+\s*\])*)\s*$", declarator)
            if not parts:
                raise SystemExit(f"ctypes_structs: {c_name}: cannot read the declaration '{declaration}'")
            stars, name, dims = len(parts.group(1)), parts.group(2), re.findall(r"\[\s*(\w+)\s*\]", parts.group(3))
            expression = ctype(base, stars, mirrored, enum_names, f"{c_name}.{name}")
            for dim in reversed(dims):
                size = int(dim) if dim.isdigit() else constants.get(dim)
                if size is None:
                    raise SystemExit(f"ctypes_structs: {c_name}.{name}: unknown array size '{dim}'")
                expression = f"{expression} * {size}"
            out.append((name, expression))
    return out


def generate():
    sources = headers()
    constants, enum_names = defines(sources), enums(sources)
    mirrored = {}
    lines = ['"""The ctypes mirrors of the public C structs the package passes to the',
             "library. Generated from include/*.h by scripts/ctypes_structs.py: do not",
             'edit; run the script after changing a header."""',
             "import ctypes"]
    for py_name, c_name, header in STRUCTS:
        lines += ["", "", f"class {py_name}(ctypes.Structure):", f'    """{c_name} (include/{header})."""',
                  "    _fields_ = ["]
        for name, expression in fields(body(sources, header, c_name), constants, mirrored, enum_names, c_name):
            lines.append(f'        ("{name}", {expression}),')
        lines.append("    ]")
        mirrored[c_name] = py_name
    return "\n".join(lines) + "\n"


def main():
    text = generate()
    if "--check" in sys.argv[1:]:
        current = open(OUT).read() if os.path.exists(OUT) else ""
        if current != text:
            print(f"{OUT} is behind include/*.h: run python3 scripts/ctypes_structs.py", file=sys.stderr)
            return 1
        return 0
    with open(OUT, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
