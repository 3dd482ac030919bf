#!/usr/bin/env bash
# Issue 34's whole-step measurements on a GPU with Vulkan and PyTorch (CUDA)
# in one call: GPT-2 small (bench_transformer_step --model gpt: 12 layers,
# width 768, 12 heads, context 1024, batch 8) and vit-tiny (--model vit,
# batch 256) in each precision, then PyTorch's step on the same lines
# (torch_transformer_step.py). Outputs go to OUT/transformer-*.txt as well
# as stdout.
#
#   bench/run-transformer.sh [--bin DIR] [--out DIR] [--precisions "fp32 fp16"] [--models "gpt vit"]
#
# DIR holds bench_transformer_step (default build/bench).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/bench
out=build/transformer-results
precisions="fp32 fp16"
models="gpt vit"
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --precisions) precisions=$2; shift 2 ;;
        --models) models=$2; shift 2 ;;
        *) echo "run-transformer.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
: > "$out/transformer-ours.txt"
for model in $models; do
    for precision in $precisions; do
        "$bin/bench_transformer_step" --model "$model" --precision "$precision" | tee -a "$out/transformer-ours.txt"
    done
done
(ours=$(realpath "$out/transformer-ours.txt") && cd bench && python3 torch_transformer_step.py "$ours") | tee "$out/transformer-torch.txt"
