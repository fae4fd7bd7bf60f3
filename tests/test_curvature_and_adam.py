"""Dense Hessian and Lanczos top eigenvalues agree; flattening round-trips; Adam equals
torch.optim.Adam and runs trial by trial."""
import numpy as np
import pytest
import torch

from theorycheck.errors import UsageError
from theorycheck.models import Activation, GlobalAttentionNet
from theorycheck.optim import Adam
from theorycheck.solvers import dense_hessian, flatten_params, top_hessian_eigenvalues, unflatten_params

torch.set_num_threads(1)


def problem(K=2):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(K, 8, 3, generator=g, dtype=torch.float64)
    y = torch.randn(K, 8, generator=g, dtype=torch.float64)
    params = {"a": torch.rand(K, 3, generator=g, dtype=torch.float64) + 0.5,
              "W1": torch.randn(K, 3, 2, generator=g, dtype=torch.float64),
              "W2": torch.randn(K, 2, generator=g, dtype=torch.float64)}
    return GlobalAttentionNet(X, y, Activation("softplus", 2.0)), params


def test_lanczos_equals_dense_hessian():
    model, params = problem()
    top = top_hessian_eigenvalues(model, params, k=2)
    for k in range(2):
        sub = model.restrict([k])
        H = dense_hessian(sub, {b: v[k:k + 1] for b, v in params.items()})
        assert torch.allclose(H, H.T, atol=1e-12)
        dense = np.sort(np.linalg.eigvalsh(H.numpy()))[::-1][:2]
        assert np.allclose(top[k], dense, rtol=1e-9, atol=1e-11)
    with pytest.raises(UsageError, match="one trial"):
        dense_hessian(model, params)


def test_flatten_round_trip():
    model, params = problem()
    flat = flatten_params(model, params)
    assert flat.shape == (2, 3 + 6 + 2)
    back = unflatten_params(model, flat, params)
    assert all(torch.equal(back[b], params[b]) for b in model.blocks)


def test_adam_equals_torch_adam_and_is_trial_by_trial():
    model, params = problem()
    step = Adam(model, 0.01)
    ours = dict(params)
    leaves = {b: v.clone().requires_grad_(True) for b, v in params.items()}
    reference = torch.optim.Adam(list(leaves.values()), lr=0.01)
    for t in range(20):
        ours = step(t, ours)
        reference.zero_grad()
        model.loss(leaves).sum().backward()
        reference.step()
    for b in model.blocks:
        assert torch.allclose(ours[b], leaves[b].detach(), rtol=1e-10, atol=1e-12)
    single = Adam(model.restrict([1]), 0.01)
    alone = {b: v[1:2] for b, v in params.items()}
    for t in range(20):
        alone = single(t, alone)
    assert all(torch.allclose(alone[b], ours[b][1:2], atol=1e-13) for b in model.blocks)


def test_cosine_schedule_decays_to_zero_and_rejects_bad_input():
    from theorycheck.errors import DeclarationError
    from theorycheck.optim import cosine_schedule

    sched = cosine_schedule(10)
    assert sched(0) == 1.0 and abs(sched(5) - 0.5) < 1e-15 and sched(10) == 0.0 == sched(20)
    model, params = problem()
    last = Adam(model, 0.01, schedule=sched)
    current = dict(params)
    for t in range(11):
        before, current = current, last(t, current)
    assert all(torch.equal(before[b], current[b]) for b in model.blocks)   # lr 0 at t = 10
    with pytest.raises(DeclarationError, match="steps >= 1"):
        cosine_schedule(0)
