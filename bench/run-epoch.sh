#!/usr/bin/env bash
# One LeNet-5 epoch on Fashion-MNIST (60,000 images, batch 64) on the CPU:
# `nnengine train` against PyTorch (torch_lenet_epoch.py, the same model, batch,
# optimizer and loop), one after the other on the same machine and threads.
# Each runs 3 epochs; the figure is the median epoch. Run on an idle machine.
#
#   bench/run-epoch.sh [--threads T] [--data DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

threads=$(nproc)
data=/usr/share/datasets/fashion-mnist
while [ $# -gt 0 ]; do
    case "$1" in
        --threads) threads=$2; shift 2 ;;
        --data) data=$2; shift 2 ;;
        *) echo "usage: $0 [--threads T] [--data DIR]" >&2; exit 2 ;;
    esac
done

scripts/install-deps.sh python3-venv dataset-fashion-mnist
make -s -j"$(nproc)" BUILD=build BLAS=1 lib cli
make -s -j"$(nproc)" BUILD=build/noblas BLAS=0 lib cli
. bench/torch-venv.sh

echo "== $(date -u +%Y-%m-%d) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $threads threads"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
median_seconds() { # the median "seconds" of a JSON-lines log
    python3 -c 'import json,statistics,sys; print(statistics.median(json.loads(l)["seconds"] for l in open(sys.argv[1])))' "$1"
}
declare -A ours
for variant in build build/noblas; do
    echo "-- nn-engine ($variant)"
    "$variant/nnengine" train lenet5 --data "$data" --epochs 3 --schedule constant --device cpu \
        --threads "$threads" --log "$log" 2>&1
    ours[$variant]=$(median_seconds "$log")
done
echo "-- PyTorch"
torch_out=$(cd bench && "../$venv/bin/python" torch_lenet_epoch.py --data "$data" --epochs 3 --threads "$threads")
echo "$torch_out"
theirs=$(sed -E 's/.*: ([0-9.]+) s,.*/\1/' <<<"$torch_out" | sort -n | sed -n 2p)
awk -v a="${ours[build]}" -v b="${ours[build/noblas]}" -v t="$theirs" 'BEGIN {
    printf "median epoch: nn-engine %.2f s (OpenBLAS), %.2f s (built-in GEMM); PyTorch %.2f s\n", a, b, t
    printf "nn-engine time / PyTorch time: %.2f (OpenBLAS), %.2f (built-in GEMM); goal <= 0.50\n", a / t, b / t }'
