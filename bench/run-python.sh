#!/usr/bin/env bash
# Python per-call overhead benchmark for bench/README.md ("Python" section).
# PyTorch: build/bench-venv's (PyPI, made by bench/run-cpu.sh) when present,
# else Debian's python3-torch in build/py-env (scripts/python-env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
make -s -j"$(nproc)" BUILD=build lib
if [ -x build/bench-venv/bin/python ] && build/bench-venv/bin/python -c "import torch" 2>/dev/null; then
    py=build/bench-venv/bin/python
else
    py=$(scripts/python-env.sh)
fi
echo "== $(date -u +%Y-%m-%d) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
NN_ENGINE_LIBRARY="$PWD/build/libnnengine.so" PYTHONPATH="$PWD/python" \
    "$py" bench/python_relu_overhead.py "$@"
