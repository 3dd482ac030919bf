"""nn_engine.capture: a captured and replayed training step gives exactly the
eager step's results (weights and losses, bit for bit), takes new inputs as
NumPy arrays or Tensors, and refuses what a replay cannot honour."""
import numpy as np
import pytest

import nn_engine as nn
from test_lockstep_torch import LeNet, batches


def train(captured, steps=6, as_tensors=False):
    nn.manual_seed(11)
    model = LeNet()
    opt = nn.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)

    def train_step(x, y):
        opt.zero_grad()
        loss = nn.softmax_ce(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step = nn.capture(train_step) if captured else None
    losses = []
    for xb, yb in batches()[:steps]:
        if as_tensors:
            xb, yb = nn.Tensor(xb), nn.Tensor(yb, dtype=np.int32)
        else:
            yb = yb.astype(np.int32)
        if captured:
            loss = step(xb, yb)
        else:
            x = xb if as_tensors else nn.Tensor(xb)
            y = yb if as_tensors else nn.Tensor(yb, dtype=np.int32)
            loss = train_step(x, y)
        losses.append(loss.item())
        if not captured:
            nn.end_batch()
    weights = [p.sync() for p in model.parameters()]
    return losses, weights, step


@pytest.mark.parametrize("as_tensors", [False, True], ids=["numpy-inputs", "tensor-inputs"])
def test_replay_equals_eager(as_tensors):
    eager_losses, eager_weights, _ = train(False, as_tensors=as_tensors)
    losses, weights, step = train(True, as_tensors=as_tensors)
    assert step.command_count > 10  # LeNet's step, recorded (17 kernels on an H200, which fuses more)
    assert losses == eager_losses  # exactly
    for w, e in zip(weights, eager_weights):
        np.testing.assert_array_equal(w, e)
    assert len(set(losses)) == len(losses)  # each replay trained on its own batch


def test_decorator_and_misuse():
    layer = nn.Linear(4, 3)

    @nn.capture
    def forward(x, scale):
        return nn.scale(layer(x), scale)

    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    first = forward(x, 2.0).sync()
    second = forward(x, 2.0)  # recorded
    np.testing.assert_array_equal(second.sync(), first)
    third = forward(x + 1, 2.0)  # replayed on new data
    assert third is second
    np.testing.assert_allclose(third.sync(), 2.0 * (layer(nn.Tensor(x + 1)).sync()), rtol=1e-6)
    with pytest.raises(ValueError, match="not a tensor and differs"):
        forward(x, 3.0)
    with pytest.raises(ValueError, match="shape"):
        forward(np.ones((3, 4), dtype=np.float32), 2.0)
    with pytest.raises(TypeError, match="recorded with 2 arguments"):
        forward(x)

    @nn.capture
    def reads(x):
        y = nn.relu(x)
        y.sync()  # not allowed while recording
        return y

    reads(x)
    with pytest.raises(RuntimeError, match="read after nn_replay"):
        reads(x)


def test_exceptions_in_the_step_reach_the_caller():
    """What train_step raises comes out of the call, through the library's
    step runner; the failed call counts for nothing, and a failed recording
    is dropped (the context records nothing more)."""
    layer = nn.Linear(4, 3)

    class StepFailed(Exception):
        pass

    calls = []
    fail_on = {1, 3}

    @nn.capture
    def forward(x):
        calls.append(len(calls) + 1)
        y = layer(x)
        if calls[-1] in fail_on:
            raise StepFailed(f"call {calls[-1]}")
        return y

    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    with pytest.raises(StepFailed, match="call 1"):
        forward(x)  # a warm-up: not counted
    forward(x)  # the warm-up
    with pytest.raises(StepFailed, match="call 3"):
        forward(x)  # recorded, then dropped
    assert forward.command_count == 0
    np.testing.assert_array_equal(nn.relu(nn.Tensor(x)).sync(), np.maximum(x, 0))  # not recording
    recorded = forward(x)
    assert forward.command_count > 0
    assert forward(x + 1) is recorded  # replayed: train_step is not called
    assert calls == [1, 2, 3, 4]
    np.testing.assert_allclose(recorded.sync(), layer(nn.Tensor(x + 1)).sync(), rtol=1e-6)


@pytest.mark.parametrize("where", ["inside", "outside"])
def test_a_scheduler_steps_inside_or_beside_a_captured_step_as_eagerly(where):
    """lr_scheduler's classes are C schedules: stepped inside the captured
    function, the replay advances the device's counter and rates; stepped
    beside it, the kernel runs eagerly before the replayed update reads the
    rate. Either way the weights equal the eager run's bit for bit."""
    def run(captured):
        nn.manual_seed(5)
        model = LeNet()
        opt = nn.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        sched = nn.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=8, cycle_momentum=False)

        def train_step(x, y):
            opt.zero_grad()
            loss = nn.softmax_ce(model(x), y)
            loss.backward()
            opt.step()
            if where == "inside":
                sched.step()
            return loss

        step = nn.capture(train_step) if captured else train_step
        for xb, yb in batches()[:6]:
            x, y = nn.Tensor(xb), nn.Tensor(yb.astype(np.int32), dtype=np.int32)
            step(x, y).item()
            if where == "outside":
                sched.step()
            nn.end_batch()
        return [p.sync() for p in model.parameters()]

    for got, want in zip(run(True), run(False)):
        np.testing.assert_array_equal(got, want)
