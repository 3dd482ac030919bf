"""The threading rule from Python: threads sharing the default context take
turns at the library (one lock around every call), so forward, backward and
reads from several threads give what one thread gives, and never crash.

The workload runs in a child process so that a crash (what concurrent calls
into one context did before the rule) is a failed test, not a dead runner."""
import os
import subprocess
import sys

import numpy as np

WORKLOAD = r"""
import sys, threading
import numpy as np
import nn_engine as nn

THREADS, ROUNDS = 6, 200
sys.setswitchinterval(1e-6)  # threads interleave at every chance
rng = np.random.default_rng(7)
w_host = rng.standard_normal((97, 33)).astype(np.float32)
inputs = [rng.standard_normal((31, 97)).astype(np.float32) for _ in range(THREADS)]
w = nn.Tensor(w_host, requires_grad=True, track=False)
losses = [[] for _ in range(THREADS)]
errors = []

def work(i):
    try:
        for _ in range(ROUNDS):
            x = nn.Tensor(inputs[i])
            y = x @ w
            loss = (y * y).sum()
            loss.backward()
            losses[i].append(loss.item())
    except Exception as error:  # reported by the parent
        errors.append(repr(error))

threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
for t in threads: t.start()
for t in threads: t.join()
np.save(sys.argv[1], np.array(losses, dtype=np.float64))
np.save(sys.argv[2], w.grad.numpy())
print("errors:", errors)
"""


def test_threads_share_the_default_context(tmp_path):
    losses_file, grad_file = tmp_path / "losses.npy", tmp_path / "grad.npy"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    run = subprocess.run([sys.executable, "-c", WORKLOAD, str(losses_file), str(grad_file)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-2000:]}"
    assert "errors: []" in run.stdout, run.stdout
    # Independent reference: the same sums in float64 with numpy.
    rng = np.random.default_rng(7)
    w = rng.standard_normal((97, 33))
    xs = [rng.standard_normal((31, 97)).astype(np.float32).astype(np.float64) for _ in range(6)]
    w = w.astype(np.float32).astype(np.float64)
    losses = np.load(losses_file)
    for i, x in enumerate(xs):
        np.testing.assert_allclose(losses[i], np.full(200, ((x @ w) ** 2).sum()), rtol=1e-5)
    want_grad = sum(200 * 2 * x.T @ (x @ w) for x in xs)
    # 1200 float32 accumulations in the order the threads took turns: each
    # adds up to 2^-24 of the running sum, so about 1200 * 6e-8 = 7e-5 of
    # the gradient's scale at worst.
    error = np.abs(np.load(grad_file) - want_grad).max() / np.abs(want_grad).max()
    assert error < 1e-4, error
