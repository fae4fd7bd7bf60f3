"""Closed-form Gaussian moments (sample covariance, softmax averages) and the debiased Monte Carlo
estimate of a squared bias, against independent Monte Carlo."""
import numpy as np
import pytest

from theorycheck.errors import DeclarationError
from theorycheck.solvers.gaussian_moments import (
    sample_covariance_quadratic_mean,
    softmax_average_mse_limit,
    softmax_weight_second_moment_bound,
    softmax_weight_second_moment_limit,
)
from theorycheck.solvers.monte_carlo import debiased_squared_norm


def _covariance(rng, d):
    A = rng.standard_normal((d, d))
    return A @ A.T / d + np.eye(d)


def test_sample_covariance_quadratic_mean_against_monte_carlo():
    rng = np.random.default_rng(0)
    d, n, draws = 3, 5, 200000
    Sigma = _covariance(rng, d)
    A = rng.standard_normal((d, d))               # not symmetric: the A^T term matters
    X = rng.standard_normal((draws, n, d)) @ np.linalg.cholesky(Sigma).T
    S = np.einsum("bni,bnj->bij", X, X) / n
    samples = S @ A @ S
    mean, se = samples.mean(0), samples.std(0) / np.sqrt(draws)
    exact = sample_covariance_quadratic_mean(Sigma, A, n)
    assert np.all(np.abs(mean - exact) <= 5 * se)
    # the 1/n term is resolved: dropping it is many standard errors off
    assert np.max(np.abs(mean - Sigma @ A @ Sigma) / se) > 20


def test_sample_covariance_quadratic_mean_rejects_no_samples():
    with pytest.raises(DeclarationError, match="n = 0"):
        sample_covariance_quadratic_mean(np.eye(2), np.eye(2), 0)


def _softmax_samples(rng, u, Sigma, n, batches):
    X = rng.standard_normal((batches, n, len(u))) @ np.linalg.cholesky(Sigma).T
    scores = X @ u
    w = np.exp(scores - scores.max(1, keepdims=True))
    w /= w.sum(1, keepdims=True)
    return w, (w[..., None] * X).sum(1)


def test_softmax_limits_against_monte_carlo():
    rng = np.random.default_rng(1)
    Sigma = _covariance(rng, 2)
    u = np.array([0.3, -0.2])
    n = 400
    w, a = _softmax_samples(rng, u, Sigma, n, 4000)
    second = n ** 2 * (w ** 2).mean()
    mse = n * ((a - Sigma @ u) ** 2).sum(1).mean()
    assert second == pytest.approx(softmax_weight_second_moment_limit(u, Sigma), rel=0.02)
    assert mse == pytest.approx(softmax_average_mse_limit(u, Sigma), rel=0.06)
    # batched over leading dimensions
    assert softmax_average_mse_limit(np.stack([u, u]), Sigma).shape == (2,)


def test_softmax_second_moment_bound_holds_and_is_not_vacuous():
    rng = np.random.default_rng(2)
    Sigma = _covariance(rng, 2)
    K = 0.3 * rng.standard_normal((2, 2))
    x = rng.standard_normal(2)
    u = K @ x
    q, tau = u @ Sigma @ u, x @ u
    for n in (5, 20):
        fresh = rng.standard_normal((100000, n - 1, 2)) @ np.linalg.cholesky(Sigma).T
        scores = np.concatenate([np.full((100000, 1), tau), fresh @ u], 1)
        w = np.exp(scores - scores.max(1, keepdims=True))
        w /= w.sum(1, keepdims=True)
        other = softmax_weight_second_moment_bound(q, tau, n)
        own = softmax_weight_second_moment_bound(q, tau, n, self_weight=True)
        assert (w[:, 1] ** 2).mean() <= other and (w[:, 0] ** 2).mean() <= own
        assert (w[:, 1] ** 2).mean() >= 0.3 * other
    with pytest.raises(DeclarationError, match="n = 2"):
        softmax_weight_second_moment_bound(q, tau, 2)


def test_debiased_squared_norm_is_unbiased():
    rng = np.random.default_rng(3)
    bias = np.array([0.02, -0.01, 0.0])
    estimates, plain = [], []
    for _ in range(2000):
        groups = bias + 0.1 * rng.standard_normal((5, 3))
        result = debiased_squared_norm(groups)
        estimates.append(result.estimate)
        plain.append(result.mean @ result.mean)
    truth = bias @ bias
    se = np.std(estimates) / np.sqrt(len(estimates))
    assert abs(np.mean(estimates) - truth) <= 4 * se
    assert np.mean(plain) - truth > 10 * se           # the uncorrected norm is biased upwards


def test_debiased_squared_norm_needs_two_groups():
    with pytest.raises(DeclarationError, match="at least 2"):
        debiased_squared_norm(np.ones((1, 3)))
