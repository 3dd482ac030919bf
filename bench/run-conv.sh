#!/usr/bin/env bash
# Issue 33's measurements on a GPU with Vulkan and PyTorch (CUDA) in one
# call: per model, each distinct convolution's three kernels next to
# cuDNN's (bench_conv_layers + torch_conv_layers.py; fp32 against fp32 with
# TF32 off, fp16 against bf16 channels-last) and each distinct BatchNorm's
# kernels next to PyTorch's (bench_norm_layers + torch_norm_layers.py,
# fp32), then the whole training step
# (bench_zoo_step: eager and captured, peak memory; torch_zoo_step.py:
# fp32 eager with its peak memory, fp32 CUDA graph, bf16 autocast
# channels-last). Outputs go to OUT/<model>-*.txt as well as stdout.
#
#   bench/run-conv.sh [--bin DIR] [--out DIR] [--models "resnet18 resnet18-cifar resnet50 mobilenet_v2 alexnet"]
#                     [--precisions "fp32 fp16"] [--no-layers] [--no-steps] [--no-torch]
#
# DIR holds bench_conv_layers, bench_norm_layers and bench_zoo_step (default build/bench).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/bench
out=build/conv-results
models="resnet18 resnet18-cifar resnet50 mobilenet_v2 alexnet"
precisions="fp32 fp16"
layers=1 steps=1 torch=1
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --models) models=$2; shift 2 ;;
        --precisions) precisions=$2; shift 2 ;;
        --no-layers) layers=0; shift ;;
        --no-steps) steps=0; shift ;;
        --no-torch) torch=0; shift ;;
        *) echo "usage: $0 [--bin DIR] [--out DIR] [--models M] [--precisions P] [--no-layers] [--no-steps] [--no-torch]" >&2
           exit 2 ;;
    esac
done
mkdir -p "$out"
status=0
# A GPU just started runs its first 20-30 s of work at a fraction of its
# clock (the H200 on 2026-11-29, nvidia-smi: 570-1080 MHz under load, then
# 1980; bench/README.md): about 30 s of discarded steps first (45 at most on
# a slower device), so the first model's figures are not that.
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') warm-up (discarded)"
timeout 45 "$bin/bench_zoo_step" --model resnet18 --batch 128 --size 224 --channels 3 --classes 1000 --steps 400 > /dev/null 2>&1 || true
for m in $models; do
    case $m in
        resnet18-cifar) shape="--size 28 --channels 1 --classes 10" ;;
        *) shape="--size 224 --channels 3 --classes 1000" ;;
    esac
    batch=128
    [ "$m" = resnet50 ] && batch=64
    for p in $precisions; do
        if [ "$layers" = 1 ]; then
            echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $m $p: each convolution"
            "$bin/bench_conv_layers" --model "$m" --batch $batch $shape --precision "$p" > "$out/$m-layers-$p.txt" || status=1
            grep -v '^conv ' "$out/$m-layers-$p.txt"
            if [ "$torch" = 1 ]; then
                half=""
                [ "$p" != fp32 ] && half=--half
                python3 bench/torch_conv_layers.py "$out/$m-layers-$p.txt" $half | tee "$out/$m-layers-$p-cudnn.txt" || status=1
            fi
            if [ "$p" = fp32 ] && [ "$m" != alexnet ]; then
                echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $m: each BatchNorm"
                "$bin/bench_norm_layers" --model "$m" --batch $batch $shape > "$out/$m-norms.txt" || status=1
                grep -v '^norm ' "$out/$m-norms.txt"
                if [ "$torch" = 1 ]; then
                    python3 bench/torch_norm_layers.py "$out/$m-norms.txt" | tee "$out/$m-norms-torch.txt" || status=1
                fi
            fi
        fi
        if [ "$steps" = 1 ]; then
            echo "== $(date -u '+%Y-%m-%d %H:%M UTC') $m $p: the training step"
            "$bin/bench_zoo_step" --model "$m" --batch $batch $shape --precision "$p" --steps 20 \
                | tee "$out/$m-step-$p.txt" || status=1
        fi
    done
    if [ "$steps" = 1 ] && [ "$torch" = 1 ]; then
        python3 bench/torch_zoo_step.py --model "$m" --batch $batch --steps 20 | tee "$out/$m-step-torch.txt" || status=1
    fi
done
exit $status
