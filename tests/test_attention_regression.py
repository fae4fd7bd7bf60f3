"""Tests of the softmax self-attention regression model, the balanced-factorization solvers and
the block-preconditioned optimizer, against independent references (autograd, explicit loops,
brute force)."""
import numpy as np
import pytest
import scipy.linalg
import scipy.stats
import torch

from theorycheck.errors import DeclarationError, InvalidInputError, ReferenceComputationError
from theorycheck.models.attention_regression import (
    EmpiricalAttentionRegression,
    PopulationAttentionRegression,
    attention_outputs,
    balance_regularizer,
    balance_regularizer_gradient,
    balanced_point,
    in_sample_loss,
    ols_estimate,
    population_gradient,
    population_loss,
)
from theorycheck.optim import GD, Preconditioned
from theorycheck.solvers.balanced_factorization import (
    _newton_system,
    _skew_basis,
    brute_force_projection,
    local_constants,
    manifold_point,
    procrustes_objective,
    project_to_manifold,
    symmetry_defect,
    weighted_procrustes,
)

torch.set_num_threads(1)
F64 = torch.float64


def problem(seed=0, d=3, k=4):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((d, d))
    Sigma = A @ A.T / d + np.eye(d)
    Sigma /= np.linalg.eigvalsh(Sigma)[-1]
    B = rng.standard_normal((k, d))
    return rng, Sigma, 0.2 * B / np.linalg.norm(B, 2)


def test_attention_matches_explicit_loops():
    rng = np.random.default_rng(1)
    X, K = rng.standard_normal((5, 3)), rng.standard_normal((3, 3))
    a = attention_outputs(torch.tensor(X), torch.tensor(K)).numpy()
    for i in range(5):
        w = np.exp([X[j] @ K @ X[i] for j in range(5)])   # x_j^T K x_i, self included
        np.testing.assert_allclose(a[i], (w / w.sum()) @ X, rtol=1e-13)


def test_closed_form_gradients_equal_autograd():
    rng, Sigma, W = problem()
    V, K = (torch.tensor(rng.standard_normal(s)) for s in [(4, 3), (3, 3)])
    S, Wt = torch.tensor(Sigma), torch.tensor(W)
    auto = torch.func.grad(lambda p: population_loss(p[0], p[1], S, Wt, 0.1), )((V, K))
    for g, h in zip(population_gradient(V, K, S, Wt), auto):
        torch.testing.assert_close(g, h, rtol=1e-13, atol=1e-14)
    auto = torch.func.grad(lambda p: balance_regularizer(p[0], p[1], S))((V, K))
    for g, h in zip(balance_regularizer_gradient(V, K, S), auto):
        torch.testing.assert_close(g, h, rtol=1e-13, atol=1e-14)


def test_population_loss_is_the_weighted_factorization_loss():
    rng, Sigma, W = problem()
    V, K = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))
    root = scipy.linalg.sqrtm(Sigma).real
    expected = np.linalg.norm((V @ Sigma @ K - W) @ root) ** 2 + 4 * 0.01
    value = population_loss(*(torch.tensor(x) for x in (V, K, Sigma, W)), 0.1)
    assert float(value) == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("det", [1, -1])
def test_balanced_points_are_global_minima(det):
    rng, Sigma, W = problem(2)
    R = scipy.stats.ortho_group.rvs(3, random_state=rng)
    R = R if np.linalg.det(R) * det > 0 else R @ np.diag([1, 1, -1])
    V, K = manifold_point(W, Sigma, R)
    Vt, Kt = balanced_point(torch.tensor(W), torch.tensor(Sigma), torch.tensor(R))
    # the two SVDs may differ in the signs of singular vectors (another R): compare invariants
    for a, b in [(V, K), (Vt.numpy(), Kt.numpy())]:
        np.testing.assert_allclose(a @ Sigma @ b, W, atol=1e-14)
        np.testing.assert_allclose(a.T @ a, Sigma @ b @ b.T @ Sigma, atol=1e-14)
    model = PopulationAttentionRegression(torch.tensor(Sigma)[None], torch.tensor(W)[None], 0.1)
    grads = model.gradient({"V": Vt[None], "K": Kt[None]})
    assert max(float(g.abs().max()) for g in grads.values()) < 1e-14
    assert float(model.loss({"V": Vt[None], "K": Kt[None]})) == pytest.approx(0.04, rel=1e-13)


def test_empirical_gradient_in_cache_chunks_equals_the_whole_batch(monkeypatch):
    """EmpiricalAttentionRegression.gradient over trials in chunks (CACHE_BUDGET) gives the
    whole-batch gradient: each trial's arithmetic is its own."""
    import theorycheck.models.attention_regression as module

    g = torch.Generator().manual_seed(11)
    X, Y = torch.randn(9, 3, 40, 3, generator=g, dtype=F64), torch.randn(9, 3, 40, 4, generator=g, dtype=F64)
    params = {"V": 0.3 * torch.randn(9, 4, 3, generator=g, dtype=F64),
              "K": 0.3 * torch.randn(9, 3, 3, generator=g, dtype=F64)}
    model = EmpiricalAttentionRegression(X, Y, 0.25, torch.eye(3, dtype=F64).expand(9, 3, 3))
    monkeypatch.setattr(module, "CACHE_BUDGET", 2 * 3 * 40 * 40 * 8)      # two trials a chunk
    chunked = model.gradient(params)
    monkeypatch.setattr(module, "CACHE_BUDGET", 2**40)                    # one chunk
    whole = model.gradient(params)
    for block in ("V", "K"):
        torch.testing.assert_close(chunked[block], whole[block], rtol=1e-14, atol=1e-16)


def test_ols_recovers_noiseless_map():
    rng, Sigma, W = problem()
    X = rng.standard_normal((50, 3))
    np.testing.assert_allclose(ols_estimate(torch.tensor(X), torch.tensor(X @ W.T)).numpy(), W,
                               atol=1e-13)


def test_projection_beats_brute_force_and_satisfies_first_order_condition():
    rng, Sigma, W = problem(3)
    V0, K0 = manifold_point(W, Sigma, scipy.stats.ortho_group.rvs(3, random_state=rng))
    for _ in range(5):
        V, K = V0 + 0.05 * rng.standard_normal(V0.shape), K0 + 0.05 * rng.standard_normal(K0.shape)
        p = project_to_manifold(V, K, Sigma, W, rng)
        brute = brute_force_projection(V, K, Sigma, W, rng, samples=5000)
        assert p.distance <= brute.distance + 1e-12
        assert symmetry_defect(V, K, p, Sigma) < 1e-8


def _procrustes_problem(rng, d, condition):
    """(D, A, G) with A = Sigma^{-1}-like of the given condition number and a random G."""
    D = np.sort(rng.uniform(0.1, 2.0, d))[::-1]
    Q = scipy.stats.ortho_group.rvs(d, random_state=rng)
    return D, Q @ np.diag(np.geomspace(1.0, condition, d)) @ Q.T, rng.standard_normal((d, d))


@pytest.mark.parametrize("d", [3, 5])
def test_newton_system_is_the_pullback_derivatives(d):
    """g and H of w -> f(R expm(sum_k w_k E_k)) against central differences of the objective."""
    rng = np.random.default_rng(40 + d)
    D, A, G = _procrustes_problem(rng, d, 10.0)
    R = scipy.stats.ortho_group.rvs(d, random_state=rng)
    E = _skew_basis(d)
    g, H = _newton_system(R, D, A, G, E)
    f = lambda w: procrustes_objective(R @ scipy.linalg.expm(np.tensordot(w, E, 1)), D, A, G)  # noqa: E731
    h, unit = 1e-4, np.eye(len(E))
    np.testing.assert_allclose(g, [(f(h * e) - f(-h * e)) / (2 * h) for e in unit], atol=1e-7)
    second = [[(f(h * (a + b)) - f(h * (a - b)) - f(h * (b - a)) + f(-h * (a + b))) / (4 * h * h) for b in unit]
              for a in unit]
    np.testing.assert_allclose(H, second, atol=1e-6)


def test_weighted_procrustes_closed_form_when_the_weight_is_isotropic():
    """A = c I: f(R) = c tr D - 2 <G, R>, minimized by polar(G) (orthogonal Procrustes)."""
    rng = np.random.default_rng(45)
    D, _, G = _procrustes_problem(rng, 4, 1.0)
    starts = scipy.stats.ortho_group.rvs(4, size=4, random_state=rng)
    R, _ = weighted_procrustes(D, 2.5 * np.eye(4), G, starts)
    np.testing.assert_allclose(R, scipy.linalg.polar(G)[0], atol=1e-10)


@pytest.mark.parametrize("condition", [10.0, 1e3])
def test_weighted_procrustes_meets_the_first_and_second_order_conditions(condition):
    """From Haar starts, at weights of condition 10 and 10^3 (where the majorize-minimize step
    alone contracts by about 1 - 10^-3 per iteration and did not converge in 20000 iterations):
    R orthogonal, R^T grad f symmetric to the tolerance and the Hessian on O(d) positive
    definite (a local minimum); at condition 10 also no larger than the best of 20000
    Haar-random rotations (at 10^3 the landscape has many local minima, and a start finds its
    own)."""
    rng = np.random.default_rng(46)
    for _ in range(3):
        D, A, G = _procrustes_problem(rng, 3, condition)
        R, value = weighted_procrustes(D, A, G, scipy.stats.ortho_group.rvs(3, size=6, random_state=rng))
        np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-13)
        S = R.T @ (2 * (D[:, None] * R) @ A - 2 * G)
        assert np.max(np.abs(S - S.T)) <= 1e-11 * max(1.0, np.max(np.abs(G)))
        assert np.linalg.eigvalsh(_newton_system(R, D, A, G, _skew_basis(3))[1])[0] > 0
        if condition < 100:
            sampled = scipy.stats.ortho_group.rvs(3, size=20000, random_state=rng)
            assert value <= min(procrustes_objective(Q, D, A, G) for Q in sampled) + 1e-12


def test_projection_of_a_manifold_point_is_itself():
    rng, Sigma, W = problem(4)
    V, K = manifold_point(W, Sigma, scipy.stats.ortho_group.rvs(3, random_state=rng))
    assert project_to_manifold(V, K, Sigma, W, rng).distance < 1e-7


def _reg_model(Sigma, W, lam):
    return PopulationAttentionRegression(torch.tensor(Sigma)[None], torch.tensor(W)[None], 0.1, lam)


def test_local_constants_are_homogeneous_and_tangent_directions_flat():
    rng, Sigma, W = problem(5)
    R = scipy.stats.ortho_group.rvs(3, random_state=rng)
    one = local_constants(_reg_model(Sigma, W, 0.25), *manifold_point(W, Sigma, R), Sigma)
    two = local_constants(_reg_model(Sigma, 2 * W, 0.25), *manifold_point(2 * W, Sigma, R), Sigma)
    assert one.tangent_residual < 1e-12 and one.alpha > 0
    assert two.alpha / one.alpha == pytest.approx(2, rel=1e-8)
    assert two.mu_max / one.mu_max == pytest.approx(2, rel=1e-8)
    assert local_constants(_reg_model(Sigma, W, 0.0), *manifold_point(W, Sigma, R), Sigma).alpha < 1e-12


def test_preconditioned_with_identity_equals_gd_and_preconditions_the_named_block():
    rng, Sigma, W = problem()
    S, Wt = torch.tensor(Sigma)[None], torch.tensor(W)[None]
    model = PopulationAttentionRegression(S, Wt, 0.1)
    p = {"V": torch.tensor(rng.standard_normal((1, 4, 3))), "K": torch.tensor(rng.standard_normal((1, 3, 3)))}
    a, b = Preconditioned(model, 0.1)(0, p), GD(model, 0.1)(0, p)
    for blk in p:
        torch.testing.assert_close(a[blk], b[blk], rtol=1e-13, atol=1e-15)
    P = torch.linalg.inv(S)
    c = Preconditioned(model, 0.1, {"K": P})(0, p)
    torch.testing.assert_close(c["K"], p["K"] - 0.1 * P @ model.gradient(p)["K"])
    torch.testing.assert_close(c["V"], a["V"])
    with pytest.raises(DeclarationError):
        Preconditioned(model, 0.1, {"Q": P})


def test_empirical_model_averages_batches():
    rng, Sigma, W = problem()
    X, Y = torch.tensor(rng.standard_normal((1, 2, 5, 3))), torch.tensor(rng.standard_normal((1, 2, 5, 4)))
    p = {"V": torch.tensor(rng.standard_normal((1, 4, 3))), "K": torch.tensor(rng.standard_normal((1, 3, 3)))}
    value = EmpiricalAttentionRegression(X, Y).loss(p)
    expected = in_sample_loss(X[0], Y[0], p["V"][0], p["K"][0]).mean()
    torch.testing.assert_close(value[0], expected)
    with pytest.raises(DeclarationError):
        EmpiricalAttentionRegression(X, Y, lam=0.25)


def test_empirical_gradient_closed_form_equals_autograd_with_per_trial_lambda():
    rng, Sigma, W = problem(6)
    X, Y = torch.tensor(rng.standard_normal((3, 2, 7, 3))), torch.tensor(rng.standard_normal((3, 2, 7, 4)))
    p = {"V": torch.tensor(rng.standard_normal((3, 4, 3))), "K": torch.tensor(rng.standard_normal((3, 3, 3)))}
    S = torch.tensor(Sigma).expand(3, 3, 3)
    model = EmpiricalAttentionRegression(X, Y, lam=torch.tensor([0.0, 0.25, 1.0], dtype=F64), reg_Sigma=S)
    auto = torch.func.grad(lambda q: model.loss(q).sum())(p)
    for b in ("V", "K"):
        torch.testing.assert_close(model.gradient(p)[b], auto[b], rtol=1e-12, atol=1e-13)
    one = EmpiricalAttentionRegression(X[1:2], Y[1:2], lam=0.25, reg_Sigma=S[1:2])
    torch.testing.assert_close(model.restrict([1]).loss({b: v[1:2] for b, v in p.items()}),
                               one.loss({b: v[1:2] for b, v in p.items()}))
    with pytest.raises(DeclarationError):
        EmpiricalAttentionRegression(X, Y, lam=torch.tensor([0.1, 0.2]), reg_Sigma=S)
    with pytest.raises(DeclarationError):
        EmpiricalAttentionRegression(X, Y, lam=torch.tensor([0.1, -0.2, 0.0]), reg_Sigma=S)


def test_warm_started_projection_equals_multi_start_and_softest_mode_attains_alpha():
    rng, Sigma, W = problem(7)
    V, K = manifold_point(W, Sigma, scipy.stats.ortho_group.rvs(3, random_state=rng))
    V, K = V + 0.01 * rng.standard_normal(V.shape), K + 0.01 * rng.standard_normal(K.shape)
    full = project_to_manifold(V, K, Sigma, W, rng)
    V2 = V + 1e-4 * rng.standard_normal(V.shape)
    warm = project_to_manifold(V2, K, Sigma, W, rng, random_starts=0, starts=(full.R,), polar_starts=False)
    assert warm.distance == pytest.approx(project_to_manifold(V2, K, Sigma, W, rng).distance, rel=1e-9)
    with pytest.raises(ReferenceComputationError):
        project_to_manifold(V, K, Sigma, W, rng, random_starts=0, polar_starts=False)
    c = local_constants(_reg_model(Sigma, W, 0.25), full.V, full.K, Sigma)
    u = c.modes[:, 0]
    metric = scipy.linalg.block_diag(np.eye(12), np.kron(Sigma, np.eye(3)))
    H = torch.func.hessian(lambda x: _reg_model(Sigma, W, 0.25).loss(
        {"V": x[:12].reshape(1, 4, 3), "K": x[12:].reshape(1, 3, 3)}).sum())(
        torch.tensor(np.concatenate([full.V.ravel(), full.K.ravel()]))).numpy()
    assert u @ H @ u / (u @ metric @ u) == pytest.approx(c.alpha, rel=1e-8)


def test_manifold_functions_name_a_wide_wstar_and_mismatched_shapes():
    """k < d (W* cannot have full column rank) and Sigma / R of the wrong size are named, not a
    raw numpy matmul error."""
    rng = np.random.default_rng(0)
    wide = rng.standard_normal((3, 5))
    with pytest.raises(InvalidInputError, match=r"k >= d .* got shape \(3, 5\)"):
        manifold_point(wide, np.eye(5), np.eye(5))
    with pytest.raises(InvalidInputError, match=r"k >= d"):
        project_to_manifold(np.zeros((3, 5)), np.zeros((5, 5)), np.eye(5), wide, rng)
    tall = rng.standard_normal((5, 3))
    with pytest.raises(InvalidInputError, match=r"Sigma must be \(d, d\) = \(3, 3\)"):
        manifold_point(tall, np.eye(4), np.eye(3))
    with pytest.raises(InvalidInputError, match=r"R must be \(d, d\)"):
        manifold_point(tall, np.eye(3), np.eye(2))
