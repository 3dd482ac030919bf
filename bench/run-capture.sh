#!/usr/bin/env bash
# Issue 6's benchmark: one LeNet-5 epoch on Fashion-MNIST, nn-engine with
# the step captured and replayed (the CLI's default) and eager
# (--no-capture), next to PyTorch eager and with the whole step in a CUDA
# graph, at batch 64 and 256, in one run; prints the ratios and the peak
# device memory at batch 256.
#
#   bench/run-capture.sh [--build DIR] [--data DIR] [--device vulkan|cpu] [--epochs N] [--batches 64,256] [--no-torch]
#
# nn-engine's figure is the median of the epochs after the first (the first
# builds pipelines and records the step); PyTorch's is the median of its
# epochs after warm-up. Test accuracies after the last epoch are printed for
# both nn-engine modes (they train identically).
set -uo pipefail
cd "$(dirname "$0")/.."

build=build
data=/usr/share/datasets/fashion-mnist
device=vulkan
epochs=5
batches=64,256
torch=1
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=$2; shift 2 ;;
        --data) data=$2; shift 2 ;;
        --device) device=$2; shift 2 ;;
        --epochs) epochs=$2; shift 2 ;;
        --batches) batches=$2; shift 2 ;;
        --no-torch) torch=0; shift ;;
        *) echo "usage: $0 [--build DIR] [--data DIR] [--device vulkan|cpu] [--epochs N] [--batches 64,256] [--no-torch]" >&2
           exit 2 ;;
    esac
done
[ -x "$build/nnengine" ] || { echo "$0: $build/nnengine is missing (make cli)" >&2; exit 2; }
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

echo "== $(date -u '+%Y-%m-%d %H:%M UTC') LeNet-5, Fashion-MNIST, $epochs epochs, device $device"
for batch in ${batches//,/ }; do
    for mode in capture eager; do
        flag=""
        [ "$mode" = eager ] && flag=--no-capture
        "$build/nnengine" train lenet5 --data "$data" --device "$device" --epochs "$epochs" --batch "$batch" \
            $flag --log "$logs/$mode-$batch.json" > "$logs/$mode-$batch.out" \
            2> "$logs/$mode-$batch.err" || { echo "nnengine failed:"; cat "$logs/$mode-$batch.err"; exit 1; }
    done
done
grep -h "Vulkan device\|^device" "$logs"/capture-*.err | head -1
if [ "$torch" = 1 ]; then
    python3 bench/torch_lenet_cuda_epoch.py --data "$data" --epochs "$epochs" --batches "$batches" \
        > "$logs/torch.txt" || { echo "the PyTorch peer failed"; cat "$logs/torch.txt"; }
fi
python3 - "$logs" "$batches" <<'PY'
import json, os, re, statistics, sys
logs, batches = sys.argv[1], sys.argv[2].split(",")
torch = {}
path = os.path.join(logs, "torch.txt")
if os.path.exists(path):
    for line in open(path):
        print(line.rstrip())
        m = re.search(r"batch (\d+) (eager|cuda-graph): median epoch ([\d.]+) ms", line)
        if m:
            torch[(m.group(1), m.group(2))] = float(m.group(3))
for b in batches:
    for mode in ("capture", "eager"):
        rows = [json.loads(l) for l in open(os.path.join(logs, f"{mode}-{b}.json"))]
        times = [r["seconds"] * 1000 for r in rows]
        median = statistics.median(times[1:] or times)
        mem = [l.strip() for l in open(os.path.join(logs, f"{mode}-{b}.err")) if "peak device memory" in l]
        ratios = "".join(f", {median / torch[(b, t)]:.3f}x PyTorch {t}" for t in ("eager", "cuda-graph")
                         if (b, t) in torch)
        print(f"nn-engine lenet5 batch {b} {mode}: median epoch {median:.1f} ms{ratios} (epochs: "
              f"{', '.join(f'{t:.1f}' for t in times)}); test acc after {len(rows)} epochs "
              f"{100 * rows[-1]['test_acc']:.2f}%" + (f"; {mem[-1]}" if mem else ""))
PY
