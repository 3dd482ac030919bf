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


def run_two_ranks(script, text):
    """Runs the script under mpirun -n 2; each rank prints "rank R ok" when its checks pass."""
    script.write_text(text)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2", sys.executable, str(script)],
                       capture_output=True, text=True, timeout=180, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "rank 0 ok" in p.stdout and "rank 1 ok" in p.stdout, p.stdout


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not found (openmpi-bin)")
def test_two_ranks_reduce_broadcast_and_average_gradients(tmp_path):
    if not dist.is_available():
        pytest.skip("libnnengine was built without MPI")
    run_two_ranks(tmp_path / "ranks.py", RANKS_SCRIPT)


ACCUMULATE_SCRIPT = textwrap.dedent("""
    import numpy as np
    import nn_engine as nn
    import nn_engine.distributed as dist
    from nn_engine import SGD
    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    # Four parameters of 700,001 values: four buckets, the first two averaged during backward once half the
    # values are copied. Loss sum(w_i * x_i): each gradient is its x_i; x of each rank and pass its own.
    sizes = [700001] * 4
    w0 = [np.random.default_rng(i).standard_normal(m).astype(np.float32) for i, m in enumerate(sizes)]
    ws = [nn.Tensor(w.copy(), requires_grad=True, track=False) for w in w0]
    opt = dist.DistributedOptimizer(SGD(ws, lr=0.5))
    def xs(step, rank, backward):
        return [np.random.default_rng((step, rank, backward, i)).standard_normal(m).astype(np.float32)
                for i, m in enumerate(sizes)]
    want = [w.astype(np.float64) for w in w0]
    for step, passes in enumerate([1, 2, 1, 3]):
        opt.zero_grad()
        for backward in range(passes):  # several backward passes accumulate before the update
            loss = sum((w * nn.Tensor(x)).sum() for w, x in zip(ws, xs(step, r, backward)))
            loss.backward()
        opt.step()
        nn.end_batch()
        for i in range(len(sizes)):
            mean = sum(xs(step, q, b)[i].astype(np.float64) for q in range(n) for b in range(passes)) / n
            want[i] -= 0.5 * mean
            got = ws[i].numpy()
            assert np.allclose(got, want[i], rtol=0, atol=1e-5), (step, i, np.abs(got - want[i]).max())
    dist.destroy_process_group()
    print(f"rank {r} ok", flush=True)
""")


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not found (openmpi-bin)")
def test_two_ranks_average_gradients_accumulated_over_several_backward_passes(tmp_path):
    if not dist.is_available():
        pytest.skip("libnnengine was built without MPI")
    run_two_ranks(tmp_path / "accumulate.py", ACCUMULATE_SCRIPT)


def test_sync_batch_norm_converts_models_and_needs_a_job_to_train():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    names = sorted(model.state_dict())
    converted = dist.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model and isinstance(model[1], dist.SyncBatchNorm), model
    assert sorted(model.state_dict()) == names  # torch's state_dict names stay
    x = nn.Tensor(np.random.default_rng(0).standard_normal((2, 3, 7, 5)).astype(np.float32))
    with pytest.raises(RuntimeError, match="SyncBatchNorm: not in a job"):
        model(x)
    model.eval()  # the running statistics: plain BatchNorm, no job needed
    bn = nn.BatchNorm2d(4)
    bn.training = False
    h = model[0](x)
    assert np.allclose(model[1](h).numpy(), bn(h).numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="process_group must be None"):
        dist.SyncBatchNorm(4, process_group="group")


SYNC_BN_SCRIPT = textwrap.dedent("""
    import numpy as np
    import torch
    import nn_engine as nn
    import nn_engine.distributed as dist
    dist.init_process_group("mpi")
    r = dist.get_rank()
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((6, 3, 5, 7)) * 2 + 1).astype(np.float32)  # the global batch; 3 images a rank
    g = rng.standard_normal(x.shape).astype(np.float32)
    bn = dist.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm2d(3))
    bn.weight = nn.Tensor(np.array([0.5, -1.5, 2.0], np.float32), requires_grad=True, track=False)
    mine = nn.Tensor(x[3 * r:3 * r + 3].copy(), requires_grad=True)
    y = bn(mine)
    (y * nn.Tensor(g[3 * r:3 * r + 3])).sum().backward()
    tbn = torch.nn.BatchNorm2d(3)
    tbn.weight.data = torch.tensor(bn.weight.numpy())
    tx = torch.tensor(x, requires_grad=True)
    ty = tbn(tx)
    (ty * torch.tensor(g)).sum().backward()
    assert np.allclose(y.numpy(), ty.detach().numpy()[3 * r:3 * r + 3], atol=1e-5), "y"
    assert np.allclose(mine.grad.numpy(), tx.grad.numpy()[3 * r:3 * r + 3], atol=1e-5), "dx"
    assert np.allclose(bn.running_mean.numpy(), tbn.running_mean.numpy(), atol=1e-6), "running_mean"
    assert np.allclose(bn.running_var.numpy(), tbn.running_var.numpy(), atol=1e-6), "running_var"
    nn.end_batch()
    dist.destroy_process_group()
    print(f"rank {r} ok", flush=True)  # one write: the ranks share mpirun's stdout
""")


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not found (openmpi-bin)")
def test_sync_batch_norm_over_two_ranks_is_torch_batch_norm_over_both_halves(tmp_path):
    if not dist.is_available():
        pytest.skip("libnnengine was built without MPI")
    run_two_ranks(tmp_path / "sync_bn.py", SYNC_BN_SCRIPT)


CUSTOM_OPTIMIZER_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import nn_engine as nn
    import nn_engine.distributed as dist
    sys.path.insert(0, EXAMPLES)
    from custom_ops import Signum  # a user's optimizer: its update a custom kernel
    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    sizes = [1031, 7]
    w0 = [np.random.default_rng(i).standard_normal(m).astype(np.float32) for i, m in enumerate(sizes)]
    ws = [nn.Tensor(w.copy(), requires_grad=True, track=False) for w in w0]
    opt = dist.DistributedOptimizer(Signum(ws, lr=0.25, momentum=0.5))
    def xs(step, rank):
        return [np.random.default_rng((step, rank, i)).standard_normal(m).astype(np.float32)
                for i, m in enumerate(sizes)]
    want, momentum = [w.astype(np.float64) for w in w0], [np.zeros(m) for m in sizes]
    for step in range(3):
        opt.zero_grad()
        loss = sum((w * nn.Tensor(x)).sum() for w, x in zip(ws, xs(step, r)))
        loss.backward()
        opt.step()
        nn.end_batch()
        for i in range(len(sizes)):  # the average gradient's Signum update, on every rank
            mean = sum(xs(step, q)[i].astype(np.float64) for q in range(n)) / n
            momentum[i] = 0.5 * momentum[i] + 0.5 * mean
            want[i] -= 0.25 * np.sign(momentum[i])
            assert np.allclose(ws[i].numpy(), want[i], rtol=0, atol=1e-6), (step, i)
    dist.destroy_process_group()
    print(f"rank {r} ok", flush=True)
""")


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not found (openmpi-bin)")
def test_two_ranks_average_gradients_for_a_users_optimizer(tmp_path):
    """Issue 37: a CustomOptimizer gets data parallelism's averaged gradients as the built-in ones do."""
    if not dist.is_available():
        pytest.skip("libnnengine was built without MPI")
    examples = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
    run_two_ranks(tmp_path / "custom_optimizer.py", CUSTOM_OPTIMIZER_SCRIPT.replace("EXAMPLES", repr(examples)))
