"""nn_engine.distributed (issue 24): outside a job every collective is
refused with the library's message; under `mpirun -n 2` all_reduce and
broadcast give numpy's sums of each rank's own values, and
DistributedOptimizer's step equals an SGD step on the mean of both ranks'
gradients (computed here with numpy)."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nn_engine as nn
import nn_engine.distributed as dist


def test_outside_a_job_rank_0_of_1_and_collectives_refused():
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    assert not dist.is_initialized()
    t = nn.Tensor(np.arange(7, dtype=np.float32), track=False)
    with pytest.raises(RuntimeError, match="nn_dist_all_reduce: not in a job: call nn_dist_init first"):
        dist.all_reduce(t)
    with pytest.raises(ValueError, match="op must be ReduceOp.SUM or ReduceOp.AVG, got 7"):
        dist.all_reduce(t, op=7)
    with pytest.raises(ValueError, match="backend must be 'mpi'"):
        dist.init_process_group("gloo")


RANKS_SCRIPT = textwrap.dedent("""
    import numpy as np
    import nn_engine as nn
    import nn_engine.distributed as dist
    from nn_engine import SGD
    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    assert n == 2
    values = [np.random.default_rng(seed).standard_normal(37).astype(np.float32) for seed in range(n)]
    t = nn.Tensor(values[r].copy(), track=False)
    dist.all_reduce(t)
    assert np.allclose(t.numpy(), values[0] + values[1], rtol=1e-6, atol=1e-6), "SUM"
    t = nn.Tensor(values[r].copy(), track=False)
    dist.all_reduce(t, dist.ReduceOp.AVG)
    assert np.allclose(t.numpy(), (values[0] + values[1]) / 2, rtol=1e-6, atol=1e-6), "AVG"
    b = nn.Tensor(values[r].copy(), track=False)
    dist.broadcast(b, src=1)
    assert np.array_equal(b.numpy(), values[1]), "broadcast"
    # One SGD step on w with loss sum(w * x_r): the gradient is x_r, averaged.
    w0 = np.random.default_rng(9).standard_normal(13).astype(np.float32)
    xs = [np.random.default_rng(20 + k).standard_normal(13).astype(np.float32) for k in range(n)]
    w = nn.Tensor(w0 + r, requires_grad=True, track=False)   # rank 1 starts elsewhere: broadcast fixes it
    dist.broadcast(w, src=0)
    opt = dist.DistributedOptimizer(SGD([w], lr=0.5))
    opt.zero_grad()
    loss = (w * nn.Tensor(xs[r])).sum()
    loss.backward()
    opt.step()
    nn.end_batch()
    want = w0 - 0.5 * (xs[0] + xs[1]) / 2
    assert np.allclose(w.numpy(), want, rtol=1e-6, atol=1e-6), (w.numpy(), want)
    dist.destroy_process_group()
    print(f"rank {r} ok", flush=True)  # one write: the ranks share mpirun's stdout
""")


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not found (openmpi-bin)")
def test_two_ranks_reduce_broadcast_and_average_gradients(tmp_path):
    if not dist.is_available():
        pytest.skip("libnnengine was built without MPI")
    script = tmp_path / "ranks.py"
    script.write_text(RANKS_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2", sys.executable, str(script)],
                       capture_output=True, text=True, timeout=180, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "rank 0 ok" in p.stdout and "rank 1 ok" in p.stdout, p.stdout
