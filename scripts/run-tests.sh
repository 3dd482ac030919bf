#!/usr/bin/env bash
# Builds and runs the C suite in four variants, then the Python package's
# pytest suite, and prints the grand total as the last line. Exit status is
# non-zero if any build or test fails.
set -uo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc 2>/dev/null || echo 2)
total_passed=0
total_failed=0
status=0

# Each section's heading; its wall time is printed with its counts, to see
# where the suite's minutes go.
section_started=$SECONDS
section() {
    echo "== $1"
    section_started=$SECONDS
}

# A step that could not run or report counts as one failure.
fail_step() {
    echo "$1"
    status=1
    total_failed=$((total_failed + 1))
}

run_variant() {
    local label=$1; shift
    section "$label"
    if ! make -s -j"$jobs" "$@" lib cli examples >/dev/null; then
        fail_step "build failed: make $*"
        return
    fi
    local log
    log=$(mktemp)
    make -s "$@" check 2>&1 | tee "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    count_summary "$label" "$log"
}

# Adds a run's "N passed, N failed" line (the last one in $2) to the totals.
count_summary() {
    local label=$1 log=$2 summary
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    rm -f "$log"
    if [ -z "$summary" ]; then
        fail_step "no summary from the $label run (crashed?)"
        return
    fi
    echo "   ($label: $((SECONDS - section_started)) s)"
    total_passed=$((total_passed + $(echo "$summary" | cut -d' ' -f1)))
    total_failed=$((total_failed + $(echo "$summary" | cut -d' ' -f3)))
}

# The command line's tests run against one variant's build/nnengine; their
# last line is "N passed, N failed" too.
run_cli_tests() {
    local label=$1 binary=$2
    section "$label"
    local log
    log=$(mktemp)
    python3 tests/cli/test_cli.py "$binary" 2>&1 | tee "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    count_summary "$label" "$log"
}

# Data parallelism (issue 24): 2 ranks under mpirun on the CPU; the script
# says it skips when mpirun or the build's MPI is missing.
run_dist_tests() {
    section "data parallel (mpirun -n 2, CPU)"
    local log
    log=$(mktemp)
    python3 tests/dist/test_dist.py build/nnengine 2>&1 | tee "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    count_summary "data parallel" "$log"
}

if pkg-config --exists openblas; then
    run_variant "OpenBLAS GEMM" BUILD=build BLAS=1
    run_cli_tests "command line (OpenBLAS build)" build/nnengine
    run_dist_tests
else
    fail_step "OpenBLAS not found: libopenblas-dev is missing (make deps installs it)"
fi
# The Vulkan tests (on lavapipe in CI) run in the OpenBLAS and the ASan
# builds; the built-in GEMM variants differ only in CPU GEMM code, so they
# skip them on purpose (NN_ENGINE_TEST_VULKAN=0) to keep CI short.
NN_ENGINE_TEST_VULKAN=0 run_variant "built-in blocked GEMM" BUILD=build/noblas BLAS=0
NN_ENGINE_TEST_VULKAN=0 run_variant "built-in GEMM, baseline SSE2 kernels" BUILD=build/sse2 BLAS=0 GEMM_KERNELS=baseline
# The sanitizers check the host code: the parity test runs each kernel's
# first variant and 1 in 3 of the rest there (all of them above).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
LSAN_OPTIONS=suppressions=$PWD/tests/lsan-mesa.supp NN_TESTS_PARITY_SAMPLE=3 \
    run_variant "AddressSanitizer + UBSan (built-in GEMM)" BUILD=build/asan BLAS=0 SANITIZE=1
# NN_ENGINE_CLI_QUICK: AlexNet's 8-epoch CPU run would take minutes under
# the sanitizers; there it trains one short epoch (the same code paths).
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 NN_ENGINE_CLI_QUICK=1 \
LSAN_OPTIONS=suppressions=$PWD/tests/lsan-mesa.supp \
    run_cli_tests "command line under AddressSanitizer + UBSan" build/asan/nnengine

# Adds pytest's counts (the summary line in $2) to the totals; errors count
# as failures.
count_pytest_summary() {
    local label=$1 log=$2 summary passed failed errors
    summary=$(grep -E '^=*[ ]*[0-9]+ (passed|failed|errors?|skipped)' "$log" | tail -n 1)
    rm -f "$log"
    if [ -z "$summary" ]; then
        fail_step "no summary from $label (crashed?)"
        return
    fi
    echo "   ($label: $((SECONDS - section_started)) s)"
    passed=$(echo "$summary" | grep -oE '[0-9]+ passed' | cut -d' ' -f1)
    failed=$(echo "$summary" | grep -oE '[0-9]+ failed' | cut -d' ' -f1)
    errors=$(echo "$summary" | grep -oE '[0-9]+ errors?' | cut -d' ' -f1)
    total_passed=$((total_passed + ${passed:-0}))
    total_failed=$((total_failed + ${failed:-0} + ${errors:-0}))
}

# ---- Python package (python/nn_engine, issue 4): pytest against
# build/libnnengine.so in the virtual environment of scripts/python-env.sh;
# its pass/fail counts join the grand total.
run_python_tests() {
    section "Python package (pytest, reference: Debian's PyTorch)"
    local py
    if ! py=$(scripts/python-env.sh) || ! make -s -j"$jobs" BUILD=build lib >/dev/null; then
        fail_step "Python test setup failed (scripts/python-env.sh or make lib)"
        return
    fi
    local log
    log=$(mktemp)
    NN_ENGINE_LIBRARY="$PWD/build/libnnengine.so" PYTHONPATH="$PWD/python" \
        "$py" -m pytest -q -p no:cacheprovider tests/python 2>&1 | tee "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    count_pytest_summary "pytest tests/python" "$log"
}
run_python_tests

# ---- io (issues 7, 25, 40): the fuzz corpora (safetensors headers, IDX
# files, images, training states, windowed operations) replayed under
# ASan+UBSan (one test), and the interop tests of
# tests/io/ (pytest: onnx, onnxruntime, safetensors, PyTorch) against the C
# fixture; both join the grand total.
run_io_tests() {
    section "io: fuzz corpora (libFuzzer regression)"
    if make -s BUILD=build fuzz-regress >/dev/null 2>&1; then
        echo "ok   fuzz corpora: $(ls tests/fuzz/corpus | wc -l) safetensors headers," \
            "$(ls tests/fuzz/corpus_idx | wc -l) IDX files, $(ls tests/fuzz/corpus_image | wc -l) images," \
            "$(ls tests/fuzz/corpus_state | wc -l) training state, $(ls tests/fuzz/corpus_ops | wc -l) operations," \
            "$(ls tests/fuzz/corpus_onnx | wc -l) ONNX files"
        total_passed=$((total_passed + 1))
    else
        fail_step "FAIL fuzz corpora: run 'make fuzz-regress' to see the input"
    fi
    echo "   (fuzz corpora: $((SECONDS - section_started)) s)"
    section "io: checkpoint and ONNX interop (pytest)"
    local py log
    if ! py=$(scripts/python-env.sh) || ! make -s -j"$jobs" BUILD=build io-fixture lib cli >/dev/null; then
        fail_step "io interop setup failed (scripts/python-env.sh or make io-fixture lib cli)"
        return
    fi
    log=$(mktemp)
    # Some interop tests drive the Python package too (exported preprocessing).
    NN_IO_FIXTURE="$PWD/build/tests/nn_io_fixture" NN_ENGINE_CLI="$PWD/build/nnengine" \
        NN_ENGINE_LIBRARY="$PWD/build/libnnengine.so" PYTHONPATH="$PWD/python" \
        "$py" -m pytest -q -p no:cacheprovider tests/io 2>&1 | tee "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    count_pytest_summary "pytest tests/io" "$log"
}
run_io_tests

# ---- Windows (issue 27): the mingw-w64 build's C tests and LeNet-5 under
# Wine (scripts/run-windows-tests.sh says what it skips and why).
run_windows_tests() {
    section "Windows build under Wine"
    local log
    log=$(mktemp)
    scripts/run-windows-tests.sh 2>&1 | tee "$log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    count_summary "Windows build under Wine" "$log"
}
run_windows_tests

echo "all variants:"
echo "$total_passed passed, $total_failed failed"
exit $status
