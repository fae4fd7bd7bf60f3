"""Unit tests of the certified W-SVM / u-SVM solvers and the orthonormal closed form."""

import dataclasses

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from claims.vdt24.setup import counterexample, counterexample_local_opt, example1, gaussian_dm, orthonormal
from theorycheck.errors import InvalidInputError
from theorycheck.solvers import (
    InfeasibleProgramError,
    SolverAccuracyError,
    clear_cache,
    constraint_values,
    dual_curvature,
    hull_distance,
    margin,
    solve_lp_wsvm,
    solve_margin_program,
    solve_usvm,
    solve_usvm_batch,
    solve_wsvm,
    solve_wsvm_batch,
    stationarity_multipliers,
    wsvm_constraint_factors,
    wsvm_orthonormal_closed_form,
)

TOL = 1e-6


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def assert_certified(solution):
    cert = solution.certificate
    assert cert.ok, cert.failures()
    assert cert.min_constraint >= 1 - TOL


# ----------------------------------------------------------------------------- W-SVM


@pytest.mark.parametrize("seed", range(5))
def test_wsvm_primal_and_dual_agree_on_example1(seed):
    data = example1([seed])
    primal = solve_wsvm(data.X[0], data.opt[0], method="primal")
    dual = solve_wsvm(data.X[0], data.opt[0], method="dual")
    assert_certified(primal)
    assert_certified(dual)
    assert rel(primal.W, dual.W) <= 1e-5
    np.testing.assert_array_equal(primal.constraint_index, dual.constraint_index)
    assert rel(primal.multipliers, dual.multipliers) <= 1e-4


def test_wsvm_certificate_matches_its_definition():
    data = example1([0])
    X, opt = data.X[0], data.opt[0]
    solution = solve_wsvm(X, opt)
    index = solution.constraint_index
    assert index.shape == (data.n * (data.T - 1), 2)
    assert np.all(index[:, 1] != opt[index[:, 0]])
    # constraint (i, t): (x_{i,opt_i} - x_{i,t})^T W x_{i,0}
    values = np.array([(X[i, opt[i]] - X[i, t]) @ solution.W @ X[i, 0] for i, t in index])
    assert values.min() == pytest.approx(solution.certificate.min_constraint, abs=1e-12)
    lam = solution.multipliers
    combination = sum(l * np.outer(X[i, opt[i]] - X[i, t], X[i, 0]) for l, (i, t) in zip(lam, index))
    np.testing.assert_allclose(combination, solution.W, atol=1e-10)
    active = values < 1 + 1e-6
    assert np.all(lam[~active] <= 1e-6 * lam.max())  # inactive constraints carry no weight
    assert np.sum(lam) == pytest.approx(solution.norm**2, rel=1e-6)  # strong duality
    distance, _ = hull_distance(*wsvm_constraint_factors(X, opt)[:2])
    assert solution.norm == pytest.approx(1 / distance, rel=1e-5)  # ||W_mm|| = 1 / dist(0, conv F)


@pytest.mark.parametrize("seed", range(3))
def test_stationarity_multipliers_recover_the_kkt_multipliers_from_W(seed):
    data = example1([seed])
    A, B, _ = wsvm_constraint_factors(data.X[0], data.opt[0])
    primal = solve_wsvm(data.X[0], data.opt[0], method="primal")
    lam = stationarity_multipliers(A, B, primal.W)
    assert np.all(lam >= 0)
    np.testing.assert_allclose(lam, primal.multipliers, rtol=1e-4, atol=1e-6 * lam.max())
    assert margin.certify(A, B, primal.W, lam, "nnls").ok
    E = np.random.default_rng(seed).standard_normal(primal.W.shape)
    off = primal.W + 0.01 * np.linalg.norm(primal.W) * E / np.linalg.norm(E)
    assert margin.certify(A, B, off, stationarity_multipliers(A, B, off), "nnls").stationarity > 1e-3


@pytest.mark.parametrize("radius", [1.0, 2.0])
def test_wsvm_on_orthonormal_tokens_matches_closed_form(radius):
    data = orthonormal(range(3), n=6, T=4, d=32, radius=radius)
    for k in range(data.K):
        closed = wsvm_orthonormal_closed_form(data.X[k], data.opt[k])
        assert np.sum(closed**2) == pytest.approx(6 * 3 / 4 / radius**4, rel=1e-12)
        for method in ("primal", "dual"):
            solution = solve_wsvm(data.X[k], data.opt[k], method=method)
            assert_certified(solution)
            assert rel(solution.W, closed) <= 1e-6
            assert abs(solution.norm**2 - 4.5 / radius**4) <= 1e-6
            np.testing.assert_allclose(solution.multipliers, 1 / (4 * radius**4), rtol=1e-6)


def test_closed_form_refuses_non_orthogonal_tokens():
    data = example1([0])
    with pytest.raises(ValueError, match="orthogonal"):
        wsvm_orthonormal_closed_form(data.X[0], data.opt[0])


def test_closed_form_derived_symbolically():
    """Solve the KKT system of a tiny orthogonal instance (n=2, T=3, radius r) with sympy.

    With every constraint active, W = sum_k lambda_k F_k and <F_k, W> = 1 is a linear system in
    lambda; its solution lambda = 1/(T r^4) > 0 satisfies all KKT conditions, hence is optimal.
    """
    r = sp.symbols("r", positive=True)
    n, T, opt = 2, 3, [0, 2]  # sample 0: the query is the optimal token
    d = n * T
    basis = sp.eye(d)
    x = [[r * basis[:, i * T + t] for t in range(T)] for i in range(n)]
    pairs = [(i, t) for i in range(n) for t in range(T) if t != opt[i]]
    F = [(x[i][opt[i]] - x[i][t]) * x[i][0].T for i, t in pairs]
    lam = sp.symbols(f"lambda0:{len(F)}")
    W = sp.zeros(d, d)
    for l, f in zip(lam, F):
        W += l * f
    solution = sp.solve([(f.T * W).trace() - 1 for f in F], lam, dict=True)
    assert len(solution) == 1
    assert all(sp.simplify(value - 1 / (T * r**4)) == 0 for value in solution[0].values())
    W_kkt = W.subs(solution[0])
    closed = sp.zeros(d, d)
    for i in range(n):
        mean = sum(x[i], sp.zeros(d, 1)) / T
        closed += (x[i][opt[i]] - mean) * x[i][0].T / r**4
    assert sp.simplify(W_kkt - closed) == sp.zeros(d, d)
    assert sp.simplify((W_kkt.T * W_kkt).trace() - sp.Rational(n * (T - 1), T) / r**4) == 0

    # the numeric closed form on a rotated copy of the same instance (tokens Q x, W -> Q W Q^T)
    radius = 1.5
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((d + 2, d)))[0]
    X = np.stack([np.stack([Q @ np.array(v.subs(r, radius), dtype=float)[:, 0] for v in row]) for row in x])
    expected = Q @ np.array(W_kkt.subs(r, radius), dtype=float) @ Q.T
    np.testing.assert_allclose(wsvm_orthonormal_closed_form(X, np.array(opt)), expected, atol=1e-12)
    assert rel(solve_wsvm(X, np.array(opt)).W, expected) <= 1e-6


def test_counterexample_values():
    data = counterexample()
    X, opt = data.X[0], data.opt[0]
    expected_mm = np.zeros((3, 3))
    expected_mm[:, 2] = [-0.3, 0.1, 0.0]
    expected_alpha = np.zeros((3, 3))
    expected_alpha[:, 2] = [1.0, 0.0, 0.0]
    for method in ("primal", "dual"):
        W_mm = solve_wsvm(X, opt, method=method).W
        W_alpha = solve_wsvm(X, counterexample_local_opt(), method=method).W
        np.testing.assert_allclose(W_mm, expected_mm, atol=1e-7)
        np.testing.assert_allclose(W_alpha, expected_alpha, atol=1e-7)
        cosine = np.sum(W_mm * W_alpha) / np.linalg.norm(W_mm) / np.linalg.norm(W_alpha)
        assert cosine == pytest.approx(-3 / np.sqrt(10), abs=1e-6)
        assert round(cosine, 4) == -0.9487


def test_wsvm_with_cross_attention_queries():
    data = example1([4])
    queries = np.random.default_rng(1).standard_normal((data.n, data.d))
    primal = solve_wsvm(data.X[0], data.opt[0], queries=queries, method="primal")
    dual = solve_wsvm(data.X[0], data.opt[0], queries=queries, method="dual")
    assert rel(primal.W, dual.W) <= 1e-5
    A, B, _ = wsvm_constraint_factors(data.X[0], data.opt[0], queries)
    assert constraint_values(A, B, dual.W).min() >= 1 - TOL
    assert rel(dual.W, solve_wsvm(data.X[0], data.opt[0]).W) > 0.1


def test_wsvm_batch_stacks_trials():
    data = example1(range(3))
    stacked = solve_wsvm_batch(data.X, data.opt)
    assert stacked.shape == (3, data.d, data.d)
    for k in range(3):
        np.testing.assert_array_equal(stacked[k], solve_wsvm(data.X[k], data.opt[k]).W)
    wrong = (data.opt + 1) % data.T
    assert rel(solve_wsvm_batch(data.X, wrong)[0], stacked[0]) > 0.5


def test_batch_solvers_take_arrays_and_check_their_shapes():
    data = example1(range(2))
    with pytest.raises(ValueError, match=r"X \(K, n, T, d\)"):
        solve_wsvm_batch(data.X[0], data.opt[0])
    with pytest.raises(ValueError, match="opt"):
        solve_wsvm_batch(data.X, data.opt[:, :-1])
    with pytest.raises(ValueError, match="y"):
        solve_usvm_batch(data.X, data.y[:, :-1], data.opt)


def test_solvers_import_no_data_module():
    """The references take arrays: importing the solvers loads no data generator or container."""
    import subprocess
    import sys

    code = "import sys, theorycheck.solvers; assert 'theorycheck.data' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# ----------------------------------------------------------------------------- failures


def with_duplicate_of_optimal_token(data, k):
    X = np.array(data.X)
    i, o = 0, data.opt[k, 0]
    X[k, i, (o + 1) % data.T] = X[k, i, o]
    return dataclasses.replace(data, X=X)


@pytest.mark.parametrize("method", ["primal", "dual"])
def test_infeasible_wsvm_raises_naming_data_set_and_trial(method):
    data = with_duplicate_of_optimal_token(example1(range(4)), 3)
    with pytest.raises(InfeasibleProgramError) as info:
        solve_wsvm_batch(data.X, data.opt, method=method, name=data.name)
    message = str(info.value)
    assert "W-SVM infeasible for data set 'example1(n=6,T=4,d=32,zeta=3)' trial 3" in message
    t = (data.opt[3, 0] + 1) % data.T
    assert f"(0, {t})" in message  # the zero constraint is named


def test_infeasible_through_a_combination_of_samples():
    rng = np.random.default_rng(0)
    q, a, b = rng.standard_normal((3, 5))
    X = np.stack([np.stack([q, a, a - b]), np.stack([q, a, a + b])])  # F_(0,2) = -F_(1,2)
    for method in ("primal", "dual"):
        with pytest.raises(InfeasibleProgramError, match=r"'hand-made'.*\(0, 2\), \(1, 2\)"):
            solve_wsvm(X, np.array([1, 1]), method=method, name="hand-made")


def test_inaccurate_answer_raises_solver_accuracy_error(monkeypatch):
    """A 1% random perturbation of the exact answer must fail the certificate."""
    clear_cache()
    exact = margin.METHODS["dual"]

    def perturbed(A, B):
        W, lam, status = exact(A, B)
        noise = np.random.default_rng(0).standard_normal(W.shape)
        return W + 0.01 * np.linalg.norm(W) * noise / np.linalg.norm(noise), lam, status

    monkeypatch.setitem(margin.METHODS, "dual", perturbed)
    data = example1([0])
    with pytest.raises(SolverAccuracyError, match="trial 0.*failed its certificate"):
        solve_wsvm(data.X[0], data.opt[0], name=data.name, trial=0)


def test_unknown_method_and_bad_shapes_are_rejected():
    data = example1([0])
    with pytest.raises(ValueError, match="method"):
        solve_wsvm(data.X[0], data.opt[0], method="simplex")
    with pytest.raises(ValueError, match="shape"):
        solve_wsvm(data.X, data.opt)
    with pytest.raises(ValueError, match="opt"):
        solve_wsvm(data.X[0], data.opt[0] + data.T)


# ----------------------------------------------------------------------------- cache


def test_cache_returns_the_same_read_only_solution():
    clear_cache()
    data = example1([1])
    first = solve_wsvm(data.X[0], data.opt[0])
    second = solve_wsvm(data.X[0], data.opt[0], name="another name")
    assert first.W is second.W and first.certificate is second.certificate
    assert not first.W.flags.writeable
    clear_cache()
    assert solve_wsvm(data.X[0], data.opt[0]).W is not first.W


# ----------------------------------------------------------------------------- u-SVM


@pytest.mark.parametrize("seed", range(3))
def test_usvm_primal_and_dual_agree_on_dm(seed):
    data = gaussian_dm([seed])
    Z, y = data.instance(0).optimal_tokens(), data.y[0]
    primal = solve_usvm(Z, y, method="primal")
    dual = solve_usvm(Z, y, method="dual")
    assert_certified(primal)
    assert_certified(dual)
    assert rel(primal.u, dual.u) <= 1e-6
    assert np.min(y * (Z @ primal.u)) >= 1 - TOL
    assert primal.margin == pytest.approx(1 / np.linalg.norm(primal.u))
    # dual: u = sum_i lambda_i y_i z_i
    np.testing.assert_allclose(dual.u, Z.T @ (dual.multipliers * y), atol=1e-12)


def test_usvm_batch_uses_optimal_tokens():
    data = gaussian_dm(range(2))
    stacked = solve_usvm_batch(data.X, data.y, data.opt)
    assert stacked.shape == (2, data.d)
    np.testing.assert_array_equal(stacked[1], solve_usvm(data.instance(1).optimal_tokens(), data.y[1]).u)
    other = solve_usvm_batch(data.X, data.y, 1 - data.opt)
    cosine = np.sum(other[0] * stacked[0]) / np.linalg.norm(other[0]) / np.linalg.norm(stacked[0])
    assert cosine < 0.5


def test_usvm_infeasible_raises():
    z = np.array([1.0, 2.0, 0.0])
    Z = np.stack([z, z, np.array([0.0, 0.0, 1.0])])
    with pytest.raises(InfeasibleProgramError, match="u-SVM infeasible for data set 'dm' trial 2"):
        solve_usvm(Z, np.array([1.0, -1.0, 1.0]), name="dm", trial=2)


# ----------------------------------------------------------------------------- properties


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 4),
    T=st.integers(2, 4),
    extra=st.integers(0, 4),
    eps=st.floats(0.0, 0.3),
)
def test_wsvm_feasible_and_certified_on_nearly_orthonormal_instances(seed, n, T, extra, eps):
    """Perturbed orthonormal tokens are linearly independent, so the W-SVM is feasible."""
    d = n * T + extra
    rng = np.random.default_rng(seed)
    X = orthonormal(rng, n=n, T=T, d=d).X[0] + eps * rng.standard_normal((n, T, d)) / np.sqrt(d)
    opt = rng.integers(T, size=n)
    dual = solve_wsvm(X, opt, method="dual")
    primal = solve_wsvm(X, opt, method="primal")
    for solution in (dual, primal):
        assert_certified(solution)
        assert np.all(solution.multipliers >= -TOL * solution.norm**2)
    assert rel(primal.W, dual.W) <= 1e-5


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 8), extra=st.integers(0, 6))
def test_usvm_margin_at_least_one_and_norm_minimal(seed, n, extra):
    """``Z`` has full row rank, so ``pinv(Z) y`` is feasible and ``||u_mm|| <= ||pinv(Z) y||``."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, n + extra))
    y = rng.choice([-1.0, 1.0], size=n)
    solution = solve_usvm(Z, y)
    assert_certified(solution)
    assert np.min(y * (Z @ solution.u)) >= 1 - TOL
    assert np.linalg.norm(solution.u) <= np.linalg.norm(np.linalg.pinv(Z) @ y) * (1 + 1e-6)


@pytest.mark.parametrize("solve", [lambda X, opt, **kw: solve_wsvm(X, opt, **kw),
                                   lambda X, opt, **kw: solve_lp_wsvm(X, opt, 1.5, **kw)],
                         ids=["wsvm", "lp_wsvm"])
@pytest.mark.parametrize("change, fragment", [
    (dict(queries=np.ones((4, 3))), r"queries must be one query per sample, shape \(n, d\) = \(4, 8\)"),
    (dict(queries=np.ones((3, 8))), r"queries must be one query per sample"),
    (dict(opt=np.zeros(3, dtype=int)), r"opt of shape \(n,\)"),
    (dict(opt=np.zeros(4)), "opt must hold integer token indices, got dtype float64"),
])
def test_wsvm_programs_name_bad_queries_and_token_indices(solve, change, fragment):
    """A query array of the wrong width or count, a wrong number of designated tokens or
    float token indices are named, not silently solved (an (8, 3) W) or a bare IndexError."""
    X = np.random.default_rng(0).standard_normal((4, 3, 8))
    args = dict(opt=np.zeros(4, dtype=int))
    args.update(change)
    with pytest.raises(InvalidInputError, match=fragment):
        solve(X, args.pop("opt"), **args)


# ----------------------------------------------------------------------------- dual curvature


@given(st.floats(-0.9, 0.9))
@settings(max_examples=25, deadline=None, derandomize=True)
def test_dual_curvature_of_two_constraints_matches_closed_form(c):
    """Two unit constraints a_k e_1^T with <a_1, a_2> = c: K = [[1, c], [c, 1]], lambda = 1/(1 + c)
    each, so Lambda^(1/2) K Lambda^(1/2) = K/(1 + c) has eigenvalues 1 and (1 - c)/(1 + c)."""
    A = np.array([[1.0, 0.0], [c, np.sqrt(1 - c * c)]])
    B = np.array([[1.0], [1.0]])
    solution = solve_margin_program(A, B, np.arange(2)[:, None])
    assert np.allclose(solution.multipliers, 1 / (1 + c), rtol=1e-6)
    assert dual_curvature(A, B, solution.multipliers) == pytest.approx(max(1.0, (1 - c) / (1 + c)), rel=1e-6)


def test_dual_curvature_is_at_least_one_and_ignores_inactive_constraints():
    data = example1([161])                  # two of its 18 constraints are inactive
    solution = solve_wsvm(data.X[0], data.opt[0])
    A, B, _ = wsvm_constraint_factors(data.X[0], data.opt[0])
    full = dual_curvature(A, B, solution.multipliers)
    active = solution.multipliers > 1e-9
    assert (~active).sum() == 2
    assert full >= 1 - 1e-9
    assert dual_curvature(A[active], B[active], solution.multipliers[active]) == pytest.approx(full, rel=1e-6)


@pytest.mark.parametrize("lam, fragment", [(np.array([1.0, -0.5]), "negative"), (np.ones(3), "shape (3,)")])
def test_dual_curvature_names_bad_multipliers(lam, fragment):
    with pytest.raises(InvalidInputError, match="multiplier") as raised:
        dual_curvature(np.eye(2), np.ones((2, 1)), lam)
    assert fragment in str(raised.value)
