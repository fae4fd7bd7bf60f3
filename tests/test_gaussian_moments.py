"""Closed-form Gaussian moments (sample covariance, softmax averages) and the debiased Monte Carlo
estimate of a squared bias, against independent Monte Carlo."""
import numpy as np
import pytest

from theorycheck.errors import DeclarationError
from theorycheck.solvers.gaussian_moments import (
    sample_covariance_chain_mean,
    sample_covariance_quadratic_mean,
    softmax_average_covariance_limit,
    softmax_average_mean_exact,
    softmax_average_mse_exact,
    softmax_average_mse_limit,
    softmax_weight_second_moment_bound,
    softmax_weight_second_moment_limit,
    softmax_weight_second_moment_slack,
    softmax_weight_average_moments_exact,
    softmax_weight_power_moments_exact,
    softmax_weight_second_moments_exact,
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


def test_sample_covariance_chain_mean_reduces_to_the_quadratic_mean():
    rng = np.random.default_rng(1)
    Sigma, A = _covariance(rng, 3), rng.standard_normal((3, 3))
    C = sample_covariance_chain_mean(Sigma, [A])
    assert C.shape == (2, 3, 3)
    for n in (1, 7, 1000):
        np.testing.assert_allclose(C[0] + C[1] / n, sample_covariance_quadratic_mean(Sigma, A, n), rtol=1e-13)
    np.testing.assert_array_equal(sample_covariance_chain_mean(Sigma, [])[0], Sigma)


def test_sample_covariance_chain_mean_against_monte_carlo():
    """Chains of 3 and 4 factors (non-symmetric M's) at n = 3, 4 10^5 draws: every entry's z of the
    Monte Carlo mean against the exact polynomial in 1/n within 5 (9 entries per chain; a normal
    tail of 5.7e-7 each: the test's seed is fixed), and the highest coefficient resolved (dropping
    C_{k-1}/n^{k-1} is more than 8 standard errors off)."""
    rng = np.random.default_rng(0)
    d, n, draws = 3, 3, 400000
    Sigma = _covariance(rng, d)
    mats = [rng.standard_normal((d, d)) for _ in range(3)]
    X = rng.standard_normal((draws, n, d)) @ np.linalg.cholesky(Sigma).T
    S = np.einsum("bni,bnj->bij", X, X) / n
    for k in (3, 4):
        samples = S
        for M in mats[:k - 1]:
            samples = samples @ M @ S
        mean, se = samples.mean(0), samples.std(0) / np.sqrt(draws)
        C = sample_covariance_chain_mean(Sigma, mats[:k - 1])
        exact = sum(C[j] / n ** j for j in range(k))
        assert np.all(np.abs(mean - exact) <= 5 * se)
        assert np.max(np.abs(mean - exact + C[-1] / n ** (k - 1)) / se) > 8


def test_sample_covariance_chain_mean_rejects_mismatched_shapes():
    with pytest.raises(DeclarationError, match="square of one size"):
        sample_covariance_chain_mean(np.eye(2), [np.eye(3)])


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


def test_softmax_average_covariance_limit_against_monte_carlo():
    """n Cov(a) against the sample covariance of 4000 softmax averages (the mean is Sigma u up to
    O(1/n)), entry by entry within 6% of its scale; the trace is the MSE limit."""
    rng = np.random.default_rng(3)
    Sigma = _covariance(rng, 2)
    u = np.array([0.2, -0.1])
    n = 400
    _, a = _softmax_samples(rng, u, Sigma, n, 4000)
    limit = softmax_average_covariance_limit(u, Sigma)
    assert n * np.cov(a.T) == pytest.approx(limit, abs=0.06 * np.abs(limit).max())
    assert np.trace(limit) == pytest.approx(softmax_average_mse_limit(u, Sigma), rel=1e-14)
    assert softmax_average_covariance_limit(np.stack([u, u]), Sigma).shape == (2, 2, 2)


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


def _softmax_rows(rng, Sigma, u, x, n, draws):
    """Monte Carlo of one softmax row: the fixed key x and n - 1 fresh keys N(0, Sigma)."""
    keys = rng.standard_normal((draws, n - 1, len(u))) @ np.linalg.cholesky(Sigma).T
    scores = np.concatenate([np.full((draws, 1), u @ x), keys @ u], 1)
    s = np.exp(scores - scores.max(1, keepdims=True))
    s /= s.sum(1, keepdims=True)
    average = s[:, :1] * x + np.einsum("rn,rnd->rd", s[:, 1:], keys)
    return s, average, ((average - Sigma @ u) ** 2).sum(1)


@pytest.mark.parametrize("scale, n", [(0.5, 2), (0.5, 5), (1.2, 3), (1.2, 20)])
def test_exact_softmax_moments_against_monte_carlo(scale, n):
    """The quadrature moments within 5 Monte Carlo standard errors (q = 0.07 and 0.40)."""
    rng = np.random.default_rng(1)
    Sigma = _covariance(rng, 3)
    u, x = scale * rng.standard_normal(3), rng.multivariate_normal(np.zeros(3), Sigma)
    s, average, squared_error = _softmax_rows(rng, Sigma, u, x, n, 200000)
    fresh, own = softmax_weight_second_moments_exact(u @ Sigma @ u, u @ x, n)
    mean = softmax_average_mean_exact(x, u, Sigma, n)
    for exact, samples in [(fresh, (s[:, 1:] ** 2).mean(1)), (own, s[:, 0] ** 2),
                           (softmax_average_mse_exact(x, u, Sigma, n), squared_error),
                           *((mean[k], average[:, k]) for k in range(3))]:
        assert abs(samples.mean() - exact) <= 5 * samples.std() / np.sqrt(len(samples))


def test_exact_softmax_average_takes_a_sequence_of_key_counts():
    """A sequence of n gives the values of each n alone (the union grid's extra nodes add
    round-off), the mean as rows (len(n), d)."""
    rng = np.random.default_rng(4)
    Sigma = _covariance(rng, 3)
    u, x = 0.8 * rng.standard_normal(3), rng.standard_normal(3)
    ns = [3, 40, 10**6]
    assert softmax_average_mse_exact(x, u, Sigma, ns) == pytest.approx(
        [softmax_average_mse_exact(x, u, Sigma, n) for n in ns], rel=1e-11)
    means = softmax_average_mean_exact(x, u, Sigma, ns)
    assert means.shape == (3, 3)
    assert means == pytest.approx(np.array([softmax_average_mean_exact(x, u, Sigma, n) for n in ns]), rel=1e-11)


def test_exact_softmax_moments_tend_to_their_limits_and_to_uniform_weights():
    """n -> infinity: n^2 E s_j^2 -> e^q and n E||a - Sigma u||^2 -> e^q (tr Sigma + ||Sigma u||^2),
    to O(1/n); q -> 0 (equal weights): E s_j^2 = E s_0^2 = 1/n^2 when the fixed score is 0."""
    rng = np.random.default_rng(2)
    Sigma = _covariance(rng, 3)
    u, x = 0.6 * rng.standard_normal(3), rng.standard_normal(3)
    q = u @ Sigma @ u
    n = 10**9
    fresh, _ = softmax_weight_second_moments_exact(q, u @ x, n)
    assert n**2 * fresh == pytest.approx(softmax_weight_second_moment_limit(u, Sigma), rel=1e-5)
    assert n * softmax_average_mse_exact(x, u, Sigma, n) == pytest.approx(softmax_average_mse_limit(u, Sigma),
                                                                        rel=1e-5)
    assert softmax_weight_second_moments_exact(1e-10, 0.0, 7) == pytest.approx((1 / 49, 1 / 49), rel=1e-8)
    # E a -> Sigma u with a bias O(1/n): n (E a - Sigma u) settles
    bias = [k * (softmax_average_mean_exact(x, u, Sigma, k) - Sigma @ u) for k in (10**7, 10**9)]
    assert bias[1] == pytest.approx(bias[0], rel=1e-4, abs=1e-6 * np.linalg.norm(Sigma @ u))


def test_exact_softmax_moments_reject_bad_input():
    with pytest.raises(DeclarationError, match="n >= 2"):
        softmax_weight_second_moments_exact(1.0, 0.0, 1)
    with pytest.raises(DeclarationError, match="q > 0"):
        softmax_weight_second_moments_exact(0.0, 0.0, 5)
    with pytest.raises(DeclarationError, match="q > 0"):
        softmax_average_mse_exact(np.ones(2), np.zeros(2), np.eye(2), 5)
    with pytest.raises(DeclarationError, match="softmax_average_mean_exact: needs an integer number of keys"):
        softmax_average_mean_exact(np.ones(2), np.ones(2), np.eye(2), [5, 1])
    with pytest.raises(DeclarationError, match="non-empty sequence"):
        softmax_average_mse_exact(np.ones(2), np.ones(2), np.eye(2), [])


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


def test_softmax_weight_second_moment_slack_is_a_floor_of_the_exact_slack():
    """The proven floor lies below 1 - exact / bound on a grid of score variances, scores and n
    (the quadrature's exact moments), and it is tight within a factor 2 somewhere on both sides
    (q -> 0 with tau = 0: the floor 1/n, the slack about 2/n)."""
    ratios = {False: [], True: []}
    for q in (1e-6, 1e-2, 0.5, 2.0):
        for tau in (-6.0, -1.0, 0.0, 1.0, 6.0):
            for n in (3, 10, 320):
                moments = dict(zip((False, True), softmax_weight_second_moments_exact(q, tau, n)))
                for own, exact in moments.items():
                    slack = 1 - exact / softmax_weight_second_moment_bound(q, tau, n, self_weight=own)
                    ratios[own].append(slack / softmax_weight_second_moment_slack(q, tau, n, self_weight=own))
    for own in ratios:
        assert min(ratios[own]) >= 1.0 and min(ratios[own]) < 2.0


def _three_key_weights(q, tau, nodes=120):
    """(s_0, s_1, s_2, quadrature weight) on a product Gauss-Hermite grid over the two fresh scores
    of n = 3 keys: an independent route to the moments (no Laplace transform)."""
    z, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    a1, a2 = np.meshgrid(np.sqrt(q) * z, np.sqrt(q) * z, indexing="ij")
    total = np.exp(tau) + np.exp(a1) + np.exp(a2)
    return np.exp(tau) / total, np.exp(a1) / total, np.exp(a2) / total, np.outer(w, w)


@pytest.mark.parametrize("q, tau", [(0.3, 0.5), (1.2, -0.4)])
def test_power_moments_against_a_product_quadrature(q, tau):
    """E s_j^m, E s_0^m (m up to 16) and the moments of X = (s_1^2 + s_2^2)/2 for n = 3 keys equal a
    two-dimensional Gauss-Hermite quadrature over the fresh scores; at m = 2 the power moments
    equal `softmax_weight_second_moments_exact` (another quadrature of the same integrals)."""
    s0, s1, s2, weight = _three_key_weights(q, tau)
    powers = np.array([2, 4, 8, 16])
    fresh = softmax_weight_power_moments_exact(q, tau, 3, powers)
    own = softmax_weight_power_moments_exact(q, tau, 3, powers, self_weight=True)
    for m, f, o in zip(powers, fresh, own):
        assert f == pytest.approx(np.sum(weight * s1 ** m), rel=1e-9)
        assert o == pytest.approx(np.sum(weight * s0 ** m), rel=1e-9)
    assert np.array([fresh[0], own[0]]) == pytest.approx(softmax_weight_second_moments_exact(q, tau, 3), rel=1e-11)
    mean_square = (s1 ** 2 + s2 ** 2) / 2
    expected = [np.sum(weight * mean_square ** r) for r in (1, 2, 3, 4)]
    assert softmax_weight_average_moments_exact(q, tau, 3, 4) == pytest.approx(expected, rel=1e-9)


def test_average_moments_against_monte_carlo():
    """E X^r (r <= 8) for X the mean of s_j^2 over the n - 1 = 9 fresh keys, within 5 Monte Carlo
    standard errors, and E X = E s_j^2."""
    rng = np.random.default_rng(3)
    q, tau, n = 1.5, 1.0, 10
    scores = rng.normal(0.0, np.sqrt(q), (200000, n - 1))
    weights = np.exp(scores) / (np.exp(tau) + np.exp(scores).sum(1))[:, None]
    X = (weights ** 2).mean(1)
    moments = softmax_weight_average_moments_exact(q, tau, n, 8)
    assert moments[0] == pytest.approx(softmax_weight_second_moments_exact(q, tau, n)[0], rel=1e-11)
    for r, exact in enumerate(moments, start=1):
        samples = X ** r
        assert abs(samples.mean() - exact) <= 5 * samples.std() / np.sqrt(len(samples))


def test_average_moments_over_several_n_equal_one_n_at_a_time():
    """A sequence of n gives one row per n, equal to the scalar calls (the union grid adds only
    negligible nodes)."""
    ns = [10, 40, 320]
    rows = softmax_weight_average_moments_exact(2.0, -0.5, ns, 6)
    assert rows.shape == (3, 6)
    for row, n in zip(rows, ns):
        assert row == pytest.approx(softmax_weight_average_moments_exact(2.0, -0.5, n, 6), rel=1e-12)


def test_power_and_average_moments_reject_bad_input():
    with pytest.raises(DeclarationError, match="powers must be integers >= 1"):
        softmax_weight_power_moments_exact(1.0, 0.0, 5, [0, 2])
    with pytest.raises(DeclarationError, match="powers must be integers >= 1"):
        softmax_weight_power_moments_exact(1.0, 0.0, 5, [2.5])
    with pytest.raises(DeclarationError, match="order must be a positive integer"):
        softmax_weight_average_moments_exact(1.0, 0.0, 5, 0)
    with pytest.raises(DeclarationError, match="n >= 2"):
        softmax_weight_average_moments_exact(1.0, 0.0, 1, 1)
    with pytest.raises(DeclarationError, match="n >= 2"):
        softmax_weight_average_moments_exact(1.0, 0.0, [10, 1], 1)
