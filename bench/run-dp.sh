#!/usr/bin/env bash
# Data-parallel throughput (issue 24): images/s of `nnengine train` at N ranks
# (one GPU each) for LeNet-5 and resnet18-cifar on Fashion-MNIST; compare with
# bench/torch_ddp.py. Models that take photos (AlexNet) are refused under
# mpirun until the image loader shards.
#   bench/run-dp.sh [N=2] [DATA=/usr/share/datasets/fashion-mnist] [DEVICE=auto]
set -euo pipefail
ranks=${1:-2}
data=${2:-/usr/share/datasets/fashion-mnist}
device=${3:-auto}
bin=${NNENGINE:-build/nnengine}
mpirun=(mpirun --allow-run-as-root --oversubscribe)
for spec in "lenet5 64" "resnet18-cifar 128"; do
    read -r model batch <<<"$spec"
    for n in 1 "$ranks"; do
        log=$(mktemp)
        "${mpirun[@]}" -n "$n" "$bin" train "$model" --data "$data" --device "$device" --epochs 2 \
            --batch "$batch" --quiet --log "$log" >/dev/null
        # the second epoch: warm (capture recorded, memory reserved)
        ips=$(tail -1 "$log" | python3 -c 'import json,sys; print(round(json.loads(sys.stdin.read())["images_per_s"]))')
        echo "$model ranks=$n batch/rank=$batch images/s=$ips"
        rm -f "$log"
    done
done
