#!/usr/bin/env bash
# Python's LeNet-5 loop (examples/train_lenet.py: nn_engine.data.DataLoader,
# nn_engine.Metrics, one optimizer step per batch) against `nnengine train
# lenet5`, one Fashion-MNIST epoch each (60,000 images, batch 64, CPU), at the
# same thread counts (issue 26: Python within 1.5x of the CLI's epoch time).
# The two take turns, RUNS times per thread count; the figure is the median
# training seconds of the epoch (60,000 / the epoch line's images/s; the
# evaluation after it is not timed), and the ratio Python / CLI.
#
#   bench/run-python-vs-cli.sh [--threads "1 2 16"] [--runs 3] [--data DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

threads_list="1 2 $(nproc)"
runs=3
data=/usr/share/datasets/fashion-mnist
while [ $# -gt 0 ]; do
    case "$1" in
        --threads) threads_list=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --data) data=$2; shift 2 ;;
        *) echo "usage: $0 [--threads \"T1 T2 ...\"] [--runs N] [--data DIR]" >&2; exit 2 ;;
    esac
done

make -s -j"$(nproc)" BUILD=build BLAS=1 lib cli
py=${PYTHON:-$(scripts/python-env.sh)}
export NN_ENGINE_LIBRARY="$PWD/build/libnnengine.so" PYTHONPATH="$PWD/python:$PWD/examples"

seconds() { # the epoch line's images/s as seconds for the 60,000 images
    sed -n 's/.* \([0-9][0-9]*\) \(img\|images\)\/s$/\1/p' | awk '{ printf "%.3f", 60000 / $1 }'
}
cli() { build/nnengine train lenet5 --data "$data" --epochs 1 --device cpu --threads "$1" --quiet 2>/dev/null | seconds; }
python_loop() {
    "$py" examples/train_lenet.py --idx "$data" --epochs 1 --device cpu --threads "$1" 2>/dev/null | seconds
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg); $("$py" --version)"
for threads in $threads_list; do
    cli_runs="" python_runs=""
    for _ in $(seq "$runs"); do # taking turns, so a change in the host's load reaches both
        cli_runs+=" $(cli "$threads")"
        python_runs+=" $(python_loop "$threads")"
    done
    c=$(echo "$cli_runs" | median) p=$(echo "$python_runs" | median)
    echo "threads $threads: CLI median ${c} s (runs:$cli_runs), Python median ${p} s (runs:$python_runs), Python / CLI $(awk -v p="$p" -v c="$c" 'BEGIN { printf "%.2f", p / c }')"
done
