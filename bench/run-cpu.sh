#!/usr/bin/env bash
# CPU benchmarks for bench/README.md: GEMM GFLOP/s and one LeNet-5 training
# step at batch 64, with OpenBLAS and with the built-in GEMM, next to PyTorch
# (from PyPI, installed into build/bench-venv on first use: a large download,
# so it is kept out of `make test` and CI). Run it on an otherwise idle machine.
#
#   bench/run-cpu.sh [--threads T] [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."

threads=$(nproc)
quick=""
while [ $# -gt 0 ]; do
    case "$1" in
        --threads) threads=$2; shift 2 ;;
        --quick) quick=--quick; shift ;;
        *) echo "usage: $0 [--threads T] [--quick]" >&2; exit 2 ;;
    esac
done
steps=300
[ -n "$quick" ] && steps=50

scripts/install-deps.sh python3-venv
make -s -j"$(nproc)" BUILD=build BLAS=1 lib bench
make -s -j"$(nproc)" BUILD=build/noblas BLAS=0 lib bench

. bench/torch-venv.sh

echo "== $(date -u +%Y-%m-%d) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $threads threads"
# One after the other, never piped: run at once, the two would share the cores.
table=$(mktemp)
trap 'rm -f "$table"' EXIT
for variant in build build/noblas; do
    "$variant/bench/bench_gemm" --threads "$threads" $quick > "$table"
    echo "== GEMM, $(grep -o 'device: .*' "$table") (GFLOP/s; ratio = nn-engine / PyTorch)"
    "$venv/bin/python" bench/torch_gemm.py --threads "$threads" < "$table"
done
echo "== LeNet-5 training step"
ours_blas=$(build/bench/bench_lenet_step --threads "$threads" --steps "$steps")
ours_builtin=$(build/noblas/bench/bench_lenet_step --threads "$threads" --steps "$steps")
torch_line=$("$venv/bin/python" bench/torch_lenet_step.py --threads "$threads" --steps "$steps")
printf '%s\n%s\n%s\n' "$ours_blas" "$ours_builtin" "$torch_line"
ms() { sed -E 's/.*: ([0-9.]+) ms\/step.*/\1/' <<<"$1"; }
awk -v a="$(ms "$ours_blas")" -v b="$(ms "$ours_builtin")" -v t="$(ms "$torch_line")" 'BEGIN {
    printf "PyTorch time / nn-engine time: %.2fx with OpenBLAS, %.2fx with the built-in GEMM\n", t / a, t / b }'
