"""gsb26's stated bounds: the Hessian's spectral gap at the manifold
(`test_manifold.KERNEL_GAP`: ratio >= 1 / (10 kappa(Sigma)^3 kappa(W*))) holds on instances far
outside the recipe's range, `near_manifold_points` keeps its points in the light-tail region
by redrawing only the directions that leave it, Lemma 4's forward-error allowance
(`test_estimators.ratio_roundoff`) covers the round-off of its ratios and eps' far outside the
recipe's conditioning, and Theorem 5's whitened covariance deviations stay within
`covariance_critical` at its level."""
import numpy as np
import pytest
import scipy.stats
import torch

from claims.gsb26.gradient_bias import (
    covariance_critical,
    light_tail_redraw_bound,
    near_manifold_points,
    whitened_deviation,
)
from claims.gsb26.sampling import second_moment_deviations
from claims.gsb26.setup import Problem, gaussian_rows, haar_rotations, regularized_model, score_tail, well_conditioned
from claims.gsb26.test_estimators import NORM_RATIO_ROUNDOFF, norm_ratios, sample_covariance_bound
from claims.gsb26.test_manifold import KERNEL_GAP
from theorycheck.solvers import dense_hessian, manifold_point
from theorycheck.solvers.gaussian_moments import softmax_weight_second_moments_exact


def _gap_ratio(problem, R, lam):
    V, K = manifold_point(problem.W, problem.Sigma, R)
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)   # noqa: E731
    ev = np.linalg.eigvalsh(dense_hessian(regularized_model(problem, lam, t),
                                          {"V": t(V)[None], "K": t(K)[None]}).numpy())
    kernel = 3 if lam > 0 else 9
    return np.sort(np.abs(ev))[kernel] / ev[-1]


@pytest.mark.parametrize("lam", [0.0, 0.25, 1.0])
def test_kernel_gap_lower_bound_holds_on_ill_conditioned_instances(lam):
    rng = np.random.default_rng(112900)
    for _ in range(6):
        Q = np.linalg.qr(rng.standard_normal((3, 3)))[0]
        kappa, kappa_w = 10 ** rng.uniform(0, 2), 10 ** rng.uniform(0, 3)
        Sigma = Q @ np.diag(np.geomspace(1 / kappa, 1, 3)) @ Q.T
        U, Vw = np.linalg.qr(rng.standard_normal((4, 3)))[0], np.linalg.qr(rng.standard_normal((3, 3)))[0]
        W = 0.3 * U @ np.diag(np.geomspace(1, 1 / kappa_w, 3)) @ Vw.T
        ratio = _gap_ratio(Problem((Sigma + Sigma.T) / 2, W), haar_rotations(rng, 3, 1)[0], lam)
        assert ratio >= 1 / (10 * kappa ** 3 * kappa_w)
    assert KERNEL_GAP.probability < 1e-5


def test_light_tail_points_redraw_only_the_directions_that_leave_the_region():
    rng = np.random.default_rng(112901)
    problem, seed = well_conditioned(rng), 112902
    radii = [0.0] + [3.0] * 20                      # far enough out that some directions cross 1/2
    V, K, bounds = near_manifold_points(problem, np.random.default_rng(seed), radii)
    V1, K1, bounds1 = near_manifold_points(problem, np.random.default_rng(seed), radii, light_tail=True)
    before = np.array([score_tail(k, problem.Sigma) for k in K])
    after = np.array([score_tail(k, problem.Sigma) for k in K1])
    assert (before >= 0.5).any() and (after < 0.5).all()
    kept = before < 0.5
    assert np.array_equal(K[kept], K1[kept]) and np.array_equal(V[kept], V1[kept])
    np.testing.assert_allclose(np.sqrt(((V1 - V1[0]) ** 2).sum((1, 2))
                                       + np.einsum("pji,jl,pli->p", K1 - K1[0], problem.Sigma, K1 - K1[0])),
                               bounds1, rtol=1e-12, atol=1e-15)
    assert light_tail_redraw_bound(well_conditioned, 0.2).probability < 1e-20


@pytest.mark.parametrize("kappa", [10.0, 1e3])
def test_norm_ratio_allowance_covers_the_round_off(kappa):
    rng = np.random.default_rng(119900)
    for n in (10, 200):
        for _ in range(100):
            Q = np.linalg.qr(rng.standard_normal((3, 3)))[0]
            Sigma = Q @ np.diag(np.geomspace(1 / kappa, 1, 3)) @ Q.T
            problem = Problem((Sigma + Sigma.T) / 2, np.zeros((4, 3)))
            X = rng.standard_normal((n, 3)) @ np.linalg.cholesky(problem.Sigma).T
            thetas = (rng.standard_normal((20, 4, 3)), rng.standard_normal((20, 3, 3)))
            found = norm_ratios(problem, X.T @ X / n, thetas)
            # the exact ratios lie within 1 -/+ eps'; the computed ones exceed it by round-off only,
            # which stays far inside the allowance (and above the old tc.tol('accumulated'))
            excess = max(np.max(np.abs(found["primal"] - 1)) - found["eps"],
                         np.max(np.abs(found["dual"] - 1)) - found["eps_dual"])
            assert excess <= 1e-2 * found["allowance"]
            # and the extremal points attain eps' up to round-off far inside the same allowance
            shortfall = max(abs(abs(found["primal"][-1] - 1) - found["eps"]),
                            abs(abs(found["dual"][-1] - 1) - found["eps_dual"]))
            assert shortfall <= 1e-2 * found["allowance"]
            assert found["allowance"] >= 2.0**10 * 2.0**-53
    assert NORM_RATIO_ROUNDOFF.probability == 0.0


def test_sample_covariance_preconditions_state_their_wishart_tails():
    """Lemma 4's preconditions eps' < 1 and eps'_dual < 1 at the claim's n = 200, d = 3: stated far
    inside the budget, and (at n = 12, where they fail often) at least the Monte Carlo rate."""
    assert sample_covariance_bound(200, 3, "dual").probability < 1e-6
    assert sample_covariance_bound(200, 3, "primal").probability < 1e-10
    Z = np.random.default_rng(119901).standard_normal((20000, 12, 3))
    eigenvalues = np.linalg.eigvalsh(np.swapaxes(Z, 1, 2) @ Z / 12)
    assert np.mean(eigenvalues[:, 0] <= 0.5) <= sample_covariance_bound(12, 3, "dual").probability
    assert np.mean(eigenvalues[:, -1] >= 2.0) <= sample_covariance_bound(12, 3, "primal").probability


def test_covariance_critical_holds_its_level_and_is_conservative():
    """At a loose level (0.05, where a Monte Carlo can see it) the whitened deviation of the mean of
    Sigma_hat over 60 rows exceeds `covariance_critical` on at most 0.05 of 4000 draws per entry
    (the binomial's 1e-6 upper quantile); at the claim's level the critical values lie beyond the
    normal quantile (Markov on exact moments is conservative) by less than a factor 1.6."""
    rng = np.random.default_rng(122900)
    Sigma = well_conditioned(rng).Sigma
    draws, rows, level = 4000, 60, 0.05
    X = gaussian_rows(rng, Sigma, (draws, rows))
    deviation = np.einsum("bni,bnj->bij", X, X) / rows - Sigma
    whitened = np.array([whitened_deviation(Sigma, D) for D in deviation])
    critical = covariance_critical(3, rows, level)
    assert ((np.abs(whitened) > critical).mean(0) <= scipy.stats.binom.ppf(1 - 1e-6, draws, level) / draws).all()
    many = 40000 * 10
    tight = covariance_critical(3, many, 5e-5 / 30)
    normal = scipy.stats.norm.isf(5e-5 / 60) * np.sqrt(np.where(np.eye(3, dtype=bool), 2.0, 1.0) / many)
    assert (tight >= normal).all() and (tight <= 1.6 * normal).all()


@pytest.mark.parametrize("q", [1e-3, 1e-5, 1e-7])
def test_second_moment_deviations_hold_for_concentrated_weights(q):
    """Lemma 9's proven deviations stay finite and positive where a tiny score variance q
    concentrates X so far that the variance is lost to the raw moments' cancellation (then
    Chebyshev on its upper bound; found by the unseen sweep seed 772766973), and they cover a
    Monte Carlo mean's actual deviation there."""
    n, draws = 320, 625
    t_other, t_own = second_moment_deviations(q, 0.0, (n,), (draws,), 1e-6)[0]
    fresh, own = softmax_weight_second_moments_exact(q, 0.0, n)
    assert 0 < t_other < 0.02 * fresh and 0 < t_own < 0.2 * own
    rng = np.random.default_rng(7)
    scores = np.concatenate([np.zeros((draws, 1)), np.sqrt(q) * rng.standard_normal((draws, n - 1))], 1)
    s = np.exp(scores - scores.max(1, keepdims=True))
    s /= s.sum(1, keepdims=True)
    assert abs((s[:, 1:] ** 2).mean() - fresh) <= t_other
    assert abs((s[:, 0] ** 2).mean() - own) <= t_own
