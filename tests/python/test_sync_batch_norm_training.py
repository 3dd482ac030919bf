"""Issue 24's --sync-bn criterion as written, through the Python API a user
takes: a small CNN with two BatchNorm2d layers, converted with
SyncBatchNorm.convert_sync_batchnorm and trained with DistributedOptimizer
(SGD, momentum 0.9, lr 0.05, and 0.5 where the loss falls five-fold) for 20
steps on 2 ranks of 32 rows each, follows the same script in one process at
batch 64 (same seed, same rows): every step's global mean loss to 1e-5
relative, the final weights to 1e-4 and the running statistics to 1e-5. With
plain BatchNorm2d per rank the same comparison fails, so the test can."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nn_engine.distributed as dist

STEPS = 20

# argv: MODE ("sync": SyncBatchNorm over the ranks, "local": BatchNorm2d per rank, "one": one process at the
# global batch), OUT (rank 0's .npz: each step's global mean loss and the final state_dict), LR, STEPS.
TRAIN_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import nn_engine as nn
    import nn_engine.distributed as dist

    mode, out, lr, steps = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    GLOBAL_BATCH, CLASSES, SIZE = 64, 10, 13  # 13x13: odd sizes, a max pool that drops a row and a column
    if mode != "one":
        dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    batch = GLOBAL_BATCH // world
    nn.set_device("cpu")
    nn.manual_seed(7)
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, CLASSES))
    if mode == "sync":
        model = dist.SyncBatchNorm.convert_sync_batchnorm(model)
    optimizer = nn.SGD(model.parameters(), lr=lr, momentum=0.9)
    if world > 1:
        dist.broadcast_parameters(model, src=0)
        optimizer = dist.DistributedOptimizer(optimizer)
    criterion = nn.CrossEntropyLoss()
    # Every process draws the same global batches: a class's pattern plus noise, off-centre and scaled, so the
    # batch statistics matter and the loss falls.
    rng = np.random.default_rng(11)
    patterns = rng.standard_normal((CLASSES, 1, SIZE, SIZE)).astype(np.float32)
    losses = []
    for step in range(steps):
        labels = rng.integers(0, CLASSES, GLOBAL_BATCH)
        images = (3 * patterns[labels] + rng.standard_normal((GLOBAL_BATCH, 1, SIZE, SIZE)) + 2).astype(np.float32)
        mine = slice(rank * batch, (rank + 1) * batch)
        optimizer.zero_grad()
        loss = criterion(model(nn.Tensor(images[mine])), labels[mine])
        loss.backward()
        optimizer.step()
        mean_loss = nn.Tensor(loss.numpy().reshape(1).copy(), track=False)
        if world > 1:
            dist.all_reduce(mean_loss, dist.ReduceOp.AVG)  # equal shares: the global batch's mean loss
        losses.append(float(mean_loss.numpy()[0]))
        nn.end_batch()
    if rank == 0:
        np.savez(out, losses=np.array(losses, np.float64), **model.state_dict())
    if mode != "one":
        dist.destroy_process_group()
    print(f"rank {rank} ok", flush=True)  # one write: the ranks share mpirun's stdout
""")


def _train(tmp_path, mode, lr, steps=STEPS):
    script = tmp_path / "train_small_cnn.py"
    script.write_text(TRAIN_SCRIPT)
    out = tmp_path / f"{mode}.npz"
    ranks = [] if mode == "one" else ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.run([*ranks, sys.executable, str(script), mode, str(out), str(lr), str(steps)],
                       capture_output=True, text=True, timeout=180, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    with np.load(out) as run:
        return run["losses"], {key: run[key] for key in run.files if key != "losses"}


def _loss_gap(got, want):
    """The largest relative difference of the per-step losses."""
    return float(np.max(np.abs(got - want) / np.abs(want)))


def _state_gap(got, want, names):
    """The largest max|got - want| / max|want| over the named tensors."""
    return max(float(np.max(np.abs(got[n].astype(np.float64) - want[n])) / np.max(np.abs(want[n]))) for n in names)


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not found (openmpi-bin)")
@pytest.mark.parametrize("lr", [0.05, 0.5])
def test_sync_batch_norm_two_ranks_of_32_follow_one_process_of_64(tmp_path, lr):
    if not dist.is_available():
        pytest.skip("libnnengine was built without MPI")
    one_losses, one = _train(tmp_path, "one", lr)
    sync_losses, sync = _train(tmp_path, "sync", lr)
    local_losses, local = _train(tmp_path, "local", lr)
    assert len(one_losses) == STEPS and np.all(np.isfinite(one_losses)), one_losses
    assert one_losses[-1] < 0.95 * one_losses[0], f"the model does not learn: {one_losses}"
    statistics = [n for n in one if n.endswith(("running_mean", "running_var"))]
    weights = [n for n in one if n.endswith(("weight", "bias"))]
    assert len(statistics) == 4 and len(weights) == 10, sorted(one)
    assert sorted(sync) == sorted(one), (sorted(sync), sorted(one))
    assert np.array_equal(sync["1.num_batches_tracked"], one["1.num_batches_tracked"])

    assert _loss_gap(sync_losses, one_losses) <= 1e-5, (sync_losses, one_losses)
    assert _state_gap(sync, one, weights) <= 1e-4, "SyncBatchNorm 2x32's final weights"
    assert _state_gap(sync, one, statistics) <= 1e-5, "SyncBatchNorm 2x32's running statistics"

    # Per-rank BatchNorm normalizes each half by its own statistics: the same comparison fails by far.
    assert _loss_gap(local_losses, one_losses) > 1e-3, (local_losses, one_losses)
    assert _state_gap(local, one, statistics) > 1e-3, "per-rank running statistics equal the global batch's"
