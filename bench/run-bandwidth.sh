#!/usr/bin/env bash
# Issue 34's bandwidth table on a GPU with Vulkan and PyTorch (CUDA) in one
# call: bench_bandwidth (each memory-bound kernel at the shapes of ResNet-50,
# vit-tiny and GPT-2 small, next to nn_tensor_copy of the same bytes), then
# torch_bandwidth.py (PyTorch's kernels for the same operations and
# dst.copy_(src) of the same bytes) on its lines; then, for where the time
# goes, the same kernels once more under NN_ENGINE_VULKAN_PROFILE=1 (its
# table of kernels goes to bandwidth-profile.txt). Outputs go to
# OUT/bandwidth-*.txt as well as stdout.
#
#   bench/run-bandwidth.sh [--bin DIR] [--out DIR] [--runs 7] [--no-profile]
#
# DIR holds bench_bandwidth (default build/bench).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/bench
out=build/bandwidth-results
runs=7
profile=1
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --no-profile) profile=0; shift ;;
        *) echo "run-bandwidth.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
"$bin/bench_bandwidth" --runs "$runs" | tee "$out/bandwidth-ours.txt"
python3 bench/torch_bandwidth.py "$out/bandwidth-ours.txt" --runs "$runs" --markdown | tee "$out/bandwidth-table.txt"
if [ "$profile" = 1 ]; then
    NN_ENGINE_VULKAN_PROFILE=1 "$bin/bench_bandwidth" --runs 1 --reps 5 > "$out/bandwidth-profile-lines.txt" \
        2> "$out/bandwidth-profile.txt"
    tail -n 60 "$out/bandwidth-profile.txt"
fi
