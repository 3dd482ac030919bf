#!/usr/bin/env bash
# The Windows build's tests under Wine (issue 27): builds `make windows`,
# runs build-win/tests/nn_tests.exe under wine64 (on Vulkan too where Wine's
# Vulkan reaches a driver, else the Vulkan tests are skipped and it says so),
# then trains LeNet-5 with nnengine.exe and with the Linux build of the same
# GEMM (built-in, 1 thread, same seed) and compares their losses. Skips, with
# the reason, where mingw-w64 or Wine is missing. Last line: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

skip() {
    echo "skipped: $1"
    echo "0 passed, 0 failed"
    exit 0
}

wine=$(command -v wine64 || command -v wine || { [ -x /usr/lib/wine/wine64 ] && echo /usr/lib/wine/wine64; })
[ -n "$wine" ] || skip "Wine is not installed (make windows-deps installs wine64); the Windows build was not run"
command -v x86_64-w64-mingw32-gcc >/dev/null ||
    skip "mingw-w64 is not installed (make windows-deps); the Windows build was not made"

jobs=$(nproc 2>/dev/null || echo 2)
if ! make -s -j"$jobs" windows >/dev/null; then
    echo "FAIL make windows"
    echo "0 passed, 1 failed"
    exit 1
fi

# A prefix of our own (never ~/.wine); created on the first run.
export WINEPREFIX="$PWD/build-win/wine-prefix" WINEDEBUG=-all
passed=0
failed=0

echo "== Windows build: C tests under Wine ($("$wine" --version 2>/dev/null))"
devices=$("$wine" build-win/nnengine.exe devices 2>&1 | tr -d '\r')
if echo "$devices" | grep -qE '^vulkan +[0-9]'; then
    echo "Vulkan under Wine: $(echo "$devices" | grep -E '^vulkan +[0-9]' | head -n 1)"
    vulkan=1
else
    echo "Vulkan under Wine: not reachable, the Vulkan tests are skipped (nnengine.exe devices says:"
    echo "$devices" | grep -A1 -E '^vulkan' | sed 's/^/    /'
    echo ")"
    vulkan=0
fi
log=$(mktemp)
NN_ENGINE_TEST_VULKAN=$vulkan "$wine" build-win/tests/nn_tests.exe 2>&1 | tr -d '\r' | tee "$log"
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
rm -f "$log"
if [ -z "$summary" ]; then
    echo "FAIL nn_tests.exe gave no summary (crashed?)"
    failed=$((failed + 1))
else
    passed=$((passed + $(echo "$summary" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$summary" | cut -d' ' -f3)))
fi

# LeNet-5 on Fashion-MNIST: nnengine.exe against the Linux build with the
# same built-in GEMM, one thread, the same seed, step by step.
data=/usr/share/datasets/fashion-mnist
echo "== Windows build: LeNet-5 under Wine against the Linux build"
if [ ! -e "$data/train-images-idx3-ubyte.gz" ]; then
    echo "skipped: $data is missing (make deps installs dataset-fashion-mnist)"
elif ! make -s -j"$jobs" BUILD=build/noblas BLAS=0 cli >/dev/null; then
    echo "FAIL make BUILD=build/noblas BLAS=0 cli"
    failed=$((failed + 1))
else
    python3 scripts/compare-windows-lenet.py "$wine" build/noblas/nnengine build-win/nnengine.exe "$data"
    case $? in
    0) passed=$((passed + 1)) ;;
    *) failed=$((failed + 1)) ;;
    esac
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
