"""Issue 21's three blocks written with the C API (tests/io/nn_blocks.c)
trained for 100 SGD steps from PyTorch's initial weights on the same
batches: every step's loss matches PyTorch's (tests/reference_blocks.py) to
1e-4 relative on the CPU, and on Vulkan (lavapipe) too."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import save_file

from conftest import FIXTURE

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import reference_blocks as ref  # noqa: E402

BLOCKS_PROGRAM = FIXTURE.parent / "nn_blocks"


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
@pytest.mark.parametrize("block", sorted(ref.BLOCKS))
def test_c_block_trains_in_lock_step_with_pytorch(tmp_path, block, device):
    if not BLOCKS_PROGRAM.exists():
        pytest.fail(f"{BLOCKS_PROGRAM} is missing: run `make io-fixture` first")
    model, xs, ys = ref.make(block, seed=2100 + len(block))
    weights, data, out = tmp_path / "w.safetensors", tmp_path / "data.bin", tmp_path / "losses.bin"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(weights))
    with open(data, "wb") as f:
        f.write(xs.astype("<f4").tobytes())
        f.write(ys.astype("<i4").tobytes())
    done = subprocess.run([str(BLOCKS_PROGRAM), block, str(weights), str(data), str(ref.STEPS), str(out)],
                          capture_output=True, text=True, env=dict(os.environ, NN_IO_FIXTURE_DEVICE=device))
    assert done.returncode == 0, done.stderr
    losses = np.fromfile(out, dtype="<f4")
    want = ref.torch_losses(model, xs, ys)
    np.testing.assert_allclose(losses, want, rtol=1e-4, atol=1e-6)
