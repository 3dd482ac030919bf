#!/usr/bin/env bash
# Data-parallel throughput (issue 24) at 1 and N ranks (one GPU each):
# - `nnengine train` end to end on Fashion-MNIST (LeNet-5 at batch 256 per
#   rank, resnet18-cifar at 128): the second epoch's images/s;
# - bench_data_parallel's captured step, alone and averaged, for
#   resnet18-cifar, AlexNet (3x224x224, batch 128) and LeNet-5 (batch 256).
# Compare with `torchrun --nproc_per_node N bench/torch_ddp.py --model M`.
#   bench/run-dp.sh [N=2] [DATA=/usr/share/datasets/fashion-mnist] [DEVICE=auto]
# NNENGINE and BENCH name the binaries (default build/nnengine, build/bench/bench_data_parallel).
set -euo pipefail
ranks=${1:-2}
data=${2:-/usr/share/datasets/fashion-mnist}
device=${3:-auto}
bin=${NNENGINE:-build/nnengine}
bench=${BENCH:-build/bench/bench_data_parallel}
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
for spec in "lenet5 256" "resnet18-cifar 128"; do
    read -r model batch <<<"$spec"
    for n in 1 "$ranks"; do
        log=$(mktemp)
        "${mpirun[@]}" -n "$n" "$bin" train "$model" --data "$data" --device "$device" --epochs 2 \
            --batch "$batch" --quiet --log "$log" >/dev/null
        # the second epoch: warm (capture recorded, memory reserved)
        ips=$(tail -1 "$log" | python3 -c 'import json,sys; print(round(json.loads(sys.stdin.read())["images_per_s"]))')
        echo "nnengine train $model ranks=$n batch/rank=$batch images/s=$ips"
        rm -f "$log"
    done
done
[ "$device" = auto ] && device=vulkan
for spec in "resnet18-cifar --batch 128" "alexnet --batch 128 --size 224 --channels 3" "lenet5 --batch 256"; do
    "${mpirun[@]}" -n "$ranks" "$bench" --device "$device" --model $spec --steps 20 | grep -A2 "data parallel,"
done
