#!/usr/bin/env bash
# The CPU pool on a shared machine (issue 26): one LeNet-5 epoch on
# Fashion-MNIST with the default threads against --threads 1 (and 2), on an
# idle host and with one other busy process (a shell loop at nice 0, killed at
# the end). Each configuration runs 3 times, the three taking turns; the figure
# is the median images/s of the epoch line.
#
#   bench/run-busy-threads.sh [--binary BUILD/nnengine] [--data DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

binary=build/nnengine
data=/usr/share/datasets/fashion-mnist
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary=$2; shift 2 ;;
        --data) data=$2; shift 2 ;;
        *) echo "usage: $0 [--binary BUILD/nnengine] [--data DIR]" >&2; exit 2 ;;
    esac
done

busy=
trap '[ -n "$busy" ] && kill "$busy" 2>/dev/null; true' EXIT
quiet=() # builds before issue 26 have no --quiet (nor a summary to hide)
"$binary" train --help | grep -q -- --quiet && quiet=(--quiet)
rate() { # $@: the flags; prints the img/s of a one-epoch run
    "$binary" train lenet5 --data "$data" --epochs 1 --device cpu "${quiet[@]}" "$@" 2>/dev/null |
        sed -n 's/.* \([0-9][0-9]*\) img\/s$/\1/p'
}
median() { tr ' ' '\n' | grep . | sort -n | sed -n 2p; }
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"
for host in idle busy; do
    if [ "$host" = busy ]; then
        nice -n 0 sh -c 'while :; do :; done' &
        busy=$!
    fi
    # The configurations take turns, so a change in the host's load reaches all three.
    declare -A runs=([default]="" [1]="" [2]="")
    for _ in 1 2 3; do
        for threads in default 1 2; do
            flags=()
            [ "$threads" != default ] && flags=(--threads "$threads")
            runs[$threads]+=" $(rate "${flags[@]}")"
        done
    done
    for threads in default 1 2; do
        echo "$host host, threads $threads: median $(echo "${runs[$threads]}" | median) img/s (runs:${runs[$threads]})"
    done
    if [ -n "$busy" ]; then kill "$busy"; busy=; fi
done
