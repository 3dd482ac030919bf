"""Sequential, Flatten, ReLU and Identity against torch.nn's: the state_dict
keys, a forward and backward after loading torch's weights, train/eval
reaching a BatchNorm inside, indexing and errors."""
import numpy as np
import pytest
import torch

import nn_engine as nn


def build_pair():
    ours = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Identity(),
                         nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(16, 5))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                 torch.nn.Identity(), torch.nn.AdaptiveAvgPool2d(2), torch.nn.Flatten(),
                                 torch.nn.Linear(16, 5))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def test_sequential_matches_torch_in_train_and_eval():
    ours, theirs = build_pair()
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    x = np.random.default_rng(3).standard_normal((2, 3, 7, 5)).astype(np.float32)
    for train in (True, False):
        ours.train(train)
        theirs.train(train)
        a, ta = nn.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out, tout = ours(a), theirs(ta)
        np.testing.assert_allclose(out.sync(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
        out.sum().backward()
        tout.sum().backward()
        np.testing.assert_allclose(a.grad.sync(), ta.grad.numpy(), rtol=1e-4, atol=1e-5)
    state = ours.state_dict()
    np.testing.assert_allclose(np.asarray(state["1.running_mean"]), theirs[1].running_mean.numpy(), rtol=1e-5)


def test_sequential_indexing_and_errors():
    ours, _ = build_pair()
    assert len(ours) == 7 and isinstance(ours[-1], nn.Linear) and isinstance(list(ours)[2], nn.ReLU)
    with pytest.raises(IndexError, match="out of range"):
        ours[7]
    with pytest.raises(TypeError, match="must be callable"):
        nn.Sequential(nn.ReLU(), 3)
    assert "(6): Linear(in_features=16, out_features=5, bias=True)" in repr(ours)
