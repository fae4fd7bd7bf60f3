"""Tests of the certified l_p margin programs (`theorycheck.solvers.lp_margin`)."""
import numpy as np
import pytest

from theorycheck.errors import InfeasibleProgramError
from theorycheck.solvers import lp_certify, solve_lp_usvm, solve_lp_wsvm, solve_wsvm
from theorycheck.solvers.svm import wsvm_constraint_factors


def _instance(seed=1, n=4, T=5, d=8):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, T, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    return X, rng.integers(0, T, n)


@pytest.mark.parametrize("p", [1.25, 1.75, 2.0, 3.0])
def test_certificate_holds_at_machine_precision(p):
    X, opt = _instance()
    sol = solve_lp_wsvm(X, opt, p)
    assert sol.certificate.worst() <= 1e-10
    assert abs(sol.multipliers.sum() - sol.norm) <= 1e-10 * sol.norm


def test_p2_equals_the_frobenius_wsvm():
    X, opt = _instance(seed=2)
    # the W-SVM is certified to 1e-6 (CERTIFICATE_TOL), the polished l_p solution to ~1e-15
    W2, WF = solve_lp_wsvm(X, opt, 2.0).W, solve_wsvm(X, opt).W
    assert np.linalg.norm(W2 - WF) <= 1e-6 * np.linalg.norm(WF)


def test_a_perturbed_solution_fails_the_certificate():
    X, opt = _instance(seed=3)
    sol = solve_lp_wsvm(X, opt, 3.0)
    A, B, _ = wsvm_constraint_factors(X, opt)
    W = sol.W + 1e-3 * np.random.default_rng(0).standard_normal(sol.W.shape)
    cert = lp_certify(A, B, W, sol.multipliers, 3.0)
    assert not cert.ok


def test_duplicated_designated_token_is_infeasible():
    X, opt = _instance(seed=4)
    X[0, (opt[0] + 1) % X.shape[1]] = X[0, opt[0]]
    with pytest.raises(InfeasibleProgramError, match="Farkas"):
        solve_lp_wsvm(X, opt, 1.5, name="dup")


@pytest.mark.parametrize("p", [1.0, 0.5, np.inf])
def test_bad_p_raises(p):
    X, opt = _instance()
    with pytest.raises(ValueError, match="1 < p"):
        solve_lp_wsvm(X, opt, p)


def test_usvm_with_one_constraint_has_the_closed_form():
    """min ||u||_p s.t. a^T u >= 1 has u* = sign(a)|a|^(q-1) / ||a||_q^q (Hoelder equality)."""
    a = np.array([0.3, -1.2, 0.7])
    for p in (1.5, 3.0):
        q = p / (p - 1)
        u = solve_lp_usvm(a[None], np.array([1.0]), p).W[:, 0]
        expected = np.sign(a) * np.abs(a) ** (q - 1) / np.sum(np.abs(a) ** q)
        assert np.abs(u - expected).max() <= 1e-9


def test_certificate_judges_the_rescaled_dual_point():
    """lambda / ||S(lambda)||_q is dual feasible, so scaling the multipliers leaves the duality
    gap unchanged; a gap computed from sum(lambda) alone would report -1 here."""
    X, opt = _instance(seed=5)
    sol = solve_lp_wsvm(X, opt, 1.5)
    A, B, _ = wsvm_constraint_factors(X, opt)
    cert = lp_certify(A, B, sol.W, 2.0 * sol.multipliers, 1.5)
    assert abs(cert.duality_gap) <= 1e-10 and cert.stationarity <= 1e-10


def test_full_tier_instance_that_clarabel_fails_at_tight_tolerances():
    """An instance (the full tier's trial 11 of seed 0, p = 1.1) on which CLARABEL at 1e-10
    raised a solver error: the retry at default tolerances plus the polish certifies it."""
    from claims.jta24.setup import INSTANCES, PAPER, SIZES, instances
    from theorycheck.runtime import generator

    data, _ = instances(generator(0, PAPER, INSTANCES), SIZES["full"])     # the paper stream at seed 0
    sol = solve_lp_wsvm(data.X[11], data.opt[11], 1.1)
    assert sol.certificate.ok


@pytest.mark.parametrize("p", [1.25, 1.75, 3.0, 4.0])
def test_polish_corrects_a_wrong_active_set(p):
    """The polish starts from the solver's multipliers with one spurious active constraint (a
    multiplier 1e-3 of the largest on an inactive constraint) and one active constraint dropped
    (set to 0); the projected Newton iteration must still reach the KKT point to ~1e-12."""
    from theorycheck.solvers.lp_margin import _polish
    X, opt = _instance(seed=4)
    A, B, _ = wsvm_constraint_factors(X, opt)
    sol = solve_lp_wsvm(X, opt, p)
    lam = np.array(sol.multipliers)
    inactive, active = np.argmin(lam), np.argsort(lam)[-2]
    lam[inactive], lam[active] = 1e-3 * lam.max(), 0.0
    W, polished = _polish(A, B, sol.W, lam, p)
    assert lp_certify(A, B, W, polished, p).worst() <= 1e-11
    assert polished[inactive] == 0.0 and polished[active] > 0


@pytest.mark.parametrize("p", [1.25, 1.75, 3.0, 4.0])
def test_polish_stops_at_round_off_on_the_fixed_point(p, monkeypatch):
    """Newton converges in a few steps; the polish stops there (`POLISH_ROUNDOFF`) instead of running
    its 60 iterations of round-off moves, and lands where the 60 iterations do, to round-off."""
    from theorycheck.solvers import lp_margin
    X, opt = _instance(seed=5)
    A, B, _ = wsvm_constraint_factors(X, opt)
    W0, lam0, _ = lp_margin._solve_conic(A, B, p)
    steps = []
    newton = lp_margin._newton_step
    monkeypatch.setattr(lp_margin, "_newton_step", lambda *a: steps.append(1) or newton(*a))
    W, lam = lp_margin._polish(A, B, W0, lam0, p)
    early = len(steps)
    monkeypatch.setattr(lp_margin, "POLISH_ROUNDOFF", 0.0)            # the iteration without the rule
    W60, lam60 = lp_margin._polish(A, B, W0, lam0, p)
    assert early <= 8 < len(steps) - early
    assert np.abs(W - W60).max() <= 1e-13 * np.abs(W60).max()
    assert lp_certify(A, B, W, lam, p).worst() <= 1e-11
