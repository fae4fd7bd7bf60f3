"""The token-selection loss in score/logit coordinates against torch autograd on the parameters."""
import numpy as np
import pytest
import torch

from theorycheck.models import score_coordinates as sc
from theorycheck.models.token_selection import log_loss, logits, loss_autograd_reference, token_scores


def instance(seed, K=2, n=3, T=2, d=5, scale=0.7):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((K, n, T, d)) / np.sqrt(d)
    y = rng.choice([-1.0, 1.0], size=(K, n))
    u, W = rng.standard_normal((K, d)), scale * rng.standard_normal((K, d, d))
    opt = rng.integers(0, T, size=(K, n))
    return X, y, u, W, opt


def coordinates(X, y, u, W, opt):
    X_t, y_t = torch.as_tensor(X), torch.as_tensor(y)
    gamma = token_scores(X_t, y_t, torch.as_tensor(u)).numpy()
    z = logits(X_t, torch.as_tensor(W)).numpy()
    return gamma, z, np.arange(X.shape[2]) == opt[..., None]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_loss_equals_the_model(seed):
    X, y, u, W, opt = instance(seed)
    gamma, z, is_opt = coordinates(X, y, u, W, opt)
    expected = log_loss(*(torch.as_tensor(a) for a in (X, y, u, W))).numpy()
    np.testing.assert_allclose(sc.log_loss(gamma, z, is_opt), expected, rtol=1e-13)


@pytest.mark.parametrize("seed", [0, 1])
def test_gradient_norms_equal_autograd(seed):
    X, y, u, W, opt = instance(seed)
    gamma, z, is_opt = coordinates(X, y, u, W, opt)
    u_t = torch.as_tensor(u).requires_grad_()
    W_t = torch.as_tensor(W).requires_grad_()
    loss = loss_autograd_reference(torch.as_tensor(X), torch.as_tensor(y), u_t, W_t)
    g_u, g_W = torch.autograd.grad(loss.sum(), (u_t, W_t))
    expected_u = (g_u.norm(dim=-1) / loss).detach().numpy()
    expected_W = (g_W.flatten(1).norm(dim=-1) / loss).detach().numpy()
    got_u, got_W = sc.gradient_norms_over_loss(gamma, z, y, X, is_opt)
    np.testing.assert_allclose(got_u, expected_u, rtol=1e-10)
    np.testing.assert_allclose(got_W, expected_W, rtol=1e-10)


@pytest.mark.parametrize("seed", [0, 1])
def test_hessian_norm_equals_the_autograd_hessian(seed):
    """The reduced 2nT x 2nT eigenproblem gives the spectral norm of the d + d^2 Hessian."""
    X, y, u, W, opt = instance(seed, K=1, n=2, d=8, scale=0.5)
    d = X.shape[-1]
    X_t, y_t = torch.as_tensor(X), torch.as_tensor(y)

    def loss(theta):
        return loss_autograd_reference(X_t, y_t, theta[None, :d], theta[d:].reshape(1, d, d))[0]

    theta = torch.as_tensor(np.concatenate([u[0], W[0].ravel()]))
    direct = float(torch.linalg.eigvalsh(torch.func.hessian(loss)(theta)).abs().max() / loss(theta))
    gamma, z, is_opt = coordinates(X, y, u, W, opt)
    reduced = sc.hessian_norm_over_loss(gamma[None], z[None], y, X, is_opt)[0, 0]
    assert reduced == pytest.approx(direct, rel=1e-9)


def test_uphill_points_move_by_the_length_and_raise_the_loss():
    """The uphill point is at distance ``length`` from theta in (u, W) and, for a short length,
    raises log L by length * ||grad L||/L to first order."""
    X, y, u, W, opt = instance(3, K=1)
    gamma, z, is_opt = coordinates(X, y, u, W, opt)
    length = np.array([1e-6])
    up_gamma, up_z = sc.uphill_points(gamma[None], z[None], y, X, is_opt, length)
    rise = sc.segment_log_ratios(gamma[None], z[None], up_gamma, up_z, is_opt, [1.0])[0, 0, 0]
    g_u, g_W = sc.gradient_norms_over_loss(gamma, z, y, X, is_opt)
    assert rise == pytest.approx(length[0] * np.hypot(g_u, g_W)[0], rel=1e-4)
    assert sc.segment_log_ratios(gamma, z, up_gamma[0], up_z[0], is_opt, [0.0])[0] == pytest.approx(0.0)


def test_chunks_of_points_give_the_values_of_one_batch_bitwise(monkeypatch):
    X, y, u, W, opt = instance(5, K=3, n=4, T=2, d=6)
    rng = np.random.default_rng(5)
    gamma = rng.standard_normal((23, 3, 4, 2)) * np.linspace(0.1, 20, 23)[:, None, None, None]
    z = rng.standard_normal((23, 3, 4, 2)) * 3
    is_opt = np.arange(2) == opt[..., None]
    length = rng.uniform(0.5, 2.0, 23)

    def everything():
        up = sc.uphill_points(gamma, z, y, X, is_opt, length)
        return (*sc.gradient_norms_over_loss(gamma, z, y, X, is_opt), *up,
                sc.segment_log_ratios(gamma, z, *up, is_opt, [0.5, 1.0]),
                sc.hessian_norm_over_loss(gamma, z, y, X, is_opt))
    whole = everything()
    monkeypatch.setattr(sc, "CHUNK_BYTES", 3 * gamma[0].nbytes)   # a few points a chunk, or one
    for chunked, one_batch in zip(everything(), whole):
        assert chunked.shape == one_batch.shape and np.array_equal(chunked, one_batch)
