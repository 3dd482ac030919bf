# Sourced by the CPU benchmarks: makes build/bench-venv with PyTorch and NumPy
# from PyPI on first use (a large download, so it is kept out of `make test`
# and CI) and sets $venv.
venv=build/bench-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch, numpy" 2>/dev/null; then
    echo "installing PyTorch from PyPI into $venv (once)..."
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q numpy torch
fi
