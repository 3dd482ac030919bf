#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, plus any named as
# arguments (the demo adds its dataset), when they are missing. As root it
# runs apt-get; otherwise it prints the exact command to run.
set -euo pipefail

needed=(gcc make pkg-config libopenblas-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev
        python3 dataset-fashion-mnist
        glslc libvulkan-dev mesa-vulkan-drivers "$@") # Vulkan: shader compiler, headers, lavapipe (CI's GPU)
# Custom kernels' GLSL (issue 37): shaderc, glslang and SPIRV-Tools as static archives.
needed+=(libshaderc-dev spirv-tools)
# Data parallelism (issue 24): Open MPI's headers (pkg-config ompi-c) and mpirun.
needed+=(libopenmpi-dev openmpi-bin)
# io: clang and its libFuzzer runtime for the safetensors fuzz regression.
needed+=(clang libclang-rt-14-dev)
# Windows (issue 27): the mingw-w64 cross compiler, its zlib, and Wine to run the tests.
needed+=(gcc-mingw-w64-x86-64 libz-mingw-w64-dev wine64)
missing=()
for pkg in "${needed[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "nn-engine needs these Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}"
