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


# Another thread's end_batch() between a handle's check and its C call: the
# check is hooked to let the other thread run right there (it waits for the
# library lock, which the call holds) and then a stress of both at random.
END_BATCH_RACE = r"""
import sys, threading
import numpy as np
import nn_engine as nn
from nn_engine import _context

rng = np.random.default_rng(3)
host = rng.standard_normal((37, 11)).astype(np.float32)
want = np.maximum(host, 0)
x = nn.Tensor(host, track=False)
y = nn.relu(x)
ender = threading.Thread(target=nn.end_batch)
original_get = _context.Handle.get

def get_then_let_the_other_thread_end_the_step(handle):
    ptr = original_get(handle)
    if handle is y._h and not ender.is_alive():
        ender.start()
        ender.join(timeout=0.5)  # ends the step now unless the call holds the lock
    return ptr

_context.Handle.get = get_then_let_the_other_thread_end_the_step
with _context.keep_step():  # this thread's read must not end the step itself (that would keep y)
    read = y.sync()
    _context.Handle.get = original_get
    ender.join()
    assert np.array_equal(read, want), "read a freed tensor"
    try:
        y.sync()
        raise AssertionError("a result of an ended step was read")
    except RuntimeError as error:
        assert "end_batch" in str(error), error

sys.setswitchinterval(1e-6)
stop, reads, refused = threading.Event(), [0], [0]

def reader():
    while not stop.is_set():
        try:
            z = nn.relu(x)
            assert np.array_equal(z.sync(), want)
            assert z.shape == (37, 11)
            reads[0] += 1
        except RuntimeError as error:  # the other thread ended the step first
            assert "end_batch" in str(error), error
            refused[0] += 1

def ender_loop():
    for _ in range(3000):
        nn.end_batch()
    stop.set()

threads = [threading.Thread(target=reader), threading.Thread(target=reader), threading.Thread(target=ender_loop)]
for t in threads: t.start()
for t in threads: t.join()
print("reads", reads[0], "refused", refused[0])
"""


def test_end_batch_in_another_thread_never_frees_a_tensor_under_a_call():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    run = subprocess.run([sys.executable, "-c", END_BATCH_RACE], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"exit {run.returncode}: {run.stdout[-1000:]} {run.stderr[-2000:]}"
    assert run.stdout.startswith("reads ") and int(run.stdout.split()[1]) > 0, run.stdout
