#!/usr/bin/env bash
# Vulkan checks and benchmarks for bench/README.md, on any machine with a
# Vulkan GPU: the device list, the Vulkan test suite (every kernel against
# the CPU backend, LeNet-5 losses against the CPU's), fp32 GEMM next to
# cuBLAS (when PyTorch with CUDA is importable), and one LeNet-5 epoch on
# Fashion-MNIST on Vulkan and on the CPU.
#
#   bench/run-vulkan.sh [--build DIR] [--no-build] [--data DIR] [--threads T] [--skip-gemm]
#
# --no-build runs what DIR already holds (e.g. a build copied to a GPU
# machine that has no glslc). NN_ENGINE_VULKAN_DEVICE picks the device.
set -uo pipefail
cd "$(dirname "$0")/.."

build=build
make_it=1
data=/usr/share/datasets/fashion-mnist
threads=0
gemm=1
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=$2; shift 2 ;;
        --no-build) make_it=0; shift ;;
        --data) data=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --skip-gemm) gemm=0; shift ;;
        *) echo "usage: $0 [--build DIR] [--no-build] [--data DIR] [--threads T] [--skip-gemm]" >&2; exit 2 ;;
    esac
done
if [ "$make_it" = 1 ]; then
    make -s -j"$(nproc)" BUILD="$build" lib cli bench "$build/tests/nn_tests" || exit 1
fi
status=0

echo "== $(date -u '+%Y-%m-%d %H:%M UTC') devices"
"$build/nnengine" devices || status=1

echo "== Vulkan tests (kernel parity with the CPU, LeNet-5 losses)"
"$build/tests/nn_tests" vulkan_ | grep -v '^ok' || status=1

if [ "$gemm" = 1 ]; then
    echo "== fp32 GEMM (GFLOP/s)"
    table=$(mktemp)
    "$build/bench/bench_vulkan_gemm" > "$table" || status=1
    if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        python3 bench/torch_gemm_cuda.py < "$table" || status=1
    else
        echo "(no PyTorch with CUDA here: nn-engine only)"
        cat "$table"
    fi
    rm -f "$table"
fi

echo "== LeNet-5, one epoch of Fashion-MNIST, batch 64, eager"
for device in vulkan cpu; do
    "$build/nnengine" train lenet5 --data "$data" --epochs 1 --device "$device" --threads "$threads" || status=1
done
exit $status
