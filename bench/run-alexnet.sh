#!/usr/bin/env bash
# AlexNet training throughput (issue 8) for bench/README.md, on a machine
# with a Vulkan GPU and PyTorch with CUDA (the H100 machine): nn-engine's
# torchvision-form AlexNet at batch 128, 224x224 synthetic data, fp32 on
# Vulkan, eager and with the step captured and replayed (ms/step, images/s,
# peak device memory, per-layer times), then
# PyTorch's fp32, TF32 and bf16 channels-last figures from the same run
# with the ratios, and PyTorch's per-layer table.
#
#   bench/run-alexnet.sh [--build DIR] [--no-build] [--batch 128] [--steps 20] [--device vulkan]
#
# --no-build runs what DIR already holds (a build copied to a GPU machine
# without glslc). Anything after `--` goes to bench_alexnet as is (e.g.
# -- --seed-form --classes 10 for a quick check on lavapipe, whose 128 MiB
# binding limit the torchvision form's 144 MiB weight exceeds).
set -uo pipefail
cd "$(dirname "$0")/.."

build=build
make_it=1
batch=128
steps=20
device=vulkan
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=$2; shift 2 ;;
        --no-build) make_it=0; shift ;;
        --batch) batch=$2; shift 2 ;;
        --steps) steps=$2; shift 2 ;;
        --device) device=$2; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        *) echo "usage: $0 [--build DIR] [--no-build] [--batch B] [--steps N] [--device D] [-- bench_alexnet options]" >&2
           exit 2 ;;
    esac
done
if [ "$make_it" = 1 ]; then
    make -s -j"$(nproc)" BUILD="$build" lib "$build/bench/bench_alexnet" || exit 1
fi
status=0
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') AlexNet training step, nn-engine on $device"
log=$(mktemp)
"$build/bench/bench_alexnet" --device "$device" --batch "$batch" --steps "$steps" "${extra[@]}" | tee "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
result=$(grep '^RESULT ' "$log" | tail -n 1)
captured=$(grep '^RESULT_CAPTURED ' "$log" | tail -n 1)
rm -f "$log"
ours_ms=$(echo "$result" | sed -n 's/.*ms_per_step=\([0-9.]*\).*/\1/p')
ours_peak=$(echo "$result" | sed -n 's/.*peak_mib=\([0-9.]*\).*/\1/p')
ours_captured_ms=$(echo "$captured" | sed -n 's/.*ms_per_step=\([0-9.]*\).*/\1/p')

echo "== PyTorch peer (same machine, same run)"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    python3 bench/torch_alexnet.py --batch "$batch" --steps "$steps" ${ours_ms:+--ours-ms "$ours_ms"} \
        ${ours_captured_ms:+--ours-captured-ms "$ours_captured_ms"} ${ours_peak:+--ours-peak-mib "$ours_peak"} \
        || status=1
else
    echo "(no PyTorch with CUDA here: nn-engine only)"
fi
exit $status
