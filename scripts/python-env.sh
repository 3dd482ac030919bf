#!/usr/bin/env bash
# Sets up the Python test environment in build/py-env and prints its python.
# Debian gives NumPy, pytest, Pillow and PyTorch (python3-torch 1.13, CPU only:
# PyPI's torch wheels pull gigabytes of CUDA libraries, too much for CI); the
# virtual environment sees them (--system-site-packages) and adds onnx and
# onnxruntime (and safetensors, for the checkpoint tests of issue 7) from
# PyPI, which Debian 12 does not package; tensorboard (its event reader checks
# the CLI's --tensorboard files) and matplotlib (nn_engine.plot) from PyPI too
# (issue 26). Idempotent: a
# second run only checks that everything imports.
set -euo pipefail
cd "$(dirname "$0")/.."

env_dir=${NN_PY_ENV:-build/py-env}
# dataset-fashion-mnist: the lock-step test trains on real images when present.
scripts/install-deps.sh python3 python3-venv python3-numpy python3-pytest python3-pil \
    python3-torch python3-torchvision dataset-fashion-mnist >&2

# Debian's interpreter, whose dist-packages hold those packages (another
# python3 earlier on PATH, e.g. from pyenv, would not see them).
system_python=/usr/bin/python3
if [ ! -x "$env_dir/bin/python" ] ||
    ! grep -q "^home = /usr/bin$" "$env_dir/pyvenv.cfg" 2>/dev/null; then
    echo "creating $env_dir ($system_python -m venv --system-site-packages)" >&2
    rm -rf "$env_dir"
    "$system_python" -m venv --system-site-packages "$env_dir" >&2
fi
py="$env_dir/bin/python"
if ! "$py" -c 'import onnx, onnxruntime, safetensors, tensorboard, matplotlib' 2>/dev/null; then
    echo "installing onnx, onnxruntime, safetensors, tensorboard and matplotlib into $env_dir from PyPI" >&2
    # Keep Debian's NumPy: its torch is built against NumPy 1.x and breaks
    # when pip pulls NumPy 2 in as a dependency of onnx.
    numpy_version=$("$system_python" -c 'import numpy; print(numpy.__version__)')
    echo "numpy==$numpy_version" > "$env_dir/constraints.txt"
    "$py" -m pip install --quiet --disable-pip-version-check \
        -c "$env_dir/constraints.txt" onnx onnxruntime safetensors tensorboard matplotlib >&2
fi
"$py" -c 'import numpy, pytest, torch, onnx, onnxruntime, safetensors, PIL, tensorboard, matplotlib
torch.from_numpy(numpy.zeros(1, dtype=numpy.float32))' >&2
echo "$py"
