"""Tests of minimization on l_p spheres (`theorycheck.solvers.sphere`)."""
import numpy as np
import pytest
import torch

from theorycheck.errors import SolverAccuracyError, UsageError
from theorycheck.solvers import lp_sphere_minimize, sphere_projected_gradient


def _linear(C):
    """f_j(W) = <C_j, W>: its minimum on ||W||_p = R is -R ||C||_q at
    W = -R sign(C)|C|^(q-1) / ||C||_q^(q-1) (equality in Hoelder's inequality)."""
    Ct = torch.as_tensor(C)

    def value_and_gradient(W):
        return (Ct * W).flatten(1).sum(1), Ct.expand_as(W).clone()
    return value_and_gradient


def _hoelder_minimizer(C, R, p):
    q = p / (p - 1)
    flat = C.reshape(len(C), -1)
    norm_q = (np.abs(flat) ** q[:, None]).sum(1) ** (1 / q)
    W = -R[:, None] * np.sign(flat) * np.abs(flat) ** (q[:, None] - 1) / norm_q[:, None] ** (q[:, None] - 1)
    return W.reshape(C.shape), -R * norm_q


def test_linear_objective_matches_the_hoelder_closed_form():
    rng = np.random.default_rng(0)
    C = rng.standard_normal((4, 3, 5))
    R, p = np.array([1.0, 2.0, 5.0, 0.5]), np.array([1.5, 2.0, 3.0, 4.0])
    res = lp_sphere_minimize(_linear(C), R, p, rng.standard_normal(C.shape), tol=1e-6)
    W_star, f_star = _hoelder_minimizer(C, R, p)
    assert res.converged and res.projected_gradient.max() <= 1e-6
    np.testing.assert_allclose(res.value, f_star, rtol=1e-12)
    np.testing.assert_allclose(res.W, W_star, atol=1e-5 * np.abs(W_star).max())
    norms = (np.abs(res.W.reshape(4, -1)) ** p[:, None]).sum(1) ** (1 / p)
    np.testing.assert_allclose(norms, R, rtol=1e-12)


def test_weights_do_not_move_the_minimizers():
    rng = np.random.default_rng(1)
    C = rng.standard_normal((2, 4, 4))
    R, p, W0 = np.array([1.0, 3.0]), np.array([1.75, 3.0]), rng.standard_normal(C.shape)
    a = lp_sphere_minimize(_linear(C), R, p, W0, tol=1e-7)
    b = lp_sphere_minimize(_linear(C), R, p, W0, weights=1 / R, tol=1e-7)
    np.testing.assert_allclose(a.W, b.W, atol=1e-6)


def test_projected_gradient_vanishes_only_at_a_kkt_point():
    C = np.random.default_rng(2).standard_normal((1, 3, 3))
    W_star, _ = _hoelder_minimizer(C, np.array([2.0]), np.array([3.0]))
    G, p = torch.as_tensor(C), torch.tensor([3.0])
    assert sphere_projected_gradient(torch.as_tensor(W_star), G, p)[0] <= 1e-12
    assert sphere_projected_gradient(torch.as_tensor(W_star + 0.1), G, p)[0] >= 1e-2


def test_a_custom_stopping_rule_is_used():
    rng = np.random.default_rng(3)
    C = rng.standard_normal((2, 3, 3))
    seen = []

    def rule(values, projected):
        seen.append(projected.max())
        return projected.max() <= 1e-2
    res = lp_sphere_minimize(_linear(C), np.ones(2), np.full(2, 2.0), rng.standard_normal(C.shape),
                             converged=rule)
    assert res.converged and seen[-1] <= 1e-2 and res.iterations == len(seen)


def test_non_convergence_raises_or_is_reported():
    rng = np.random.default_rng(4)
    C, W0 = rng.standard_normal((3, 4, 4)), rng.standard_normal((3, 4, 4))
    args = (_linear(C), np.ones(3), np.full(3, 3.0), W0)
    with pytest.raises(SolverAccuracyError, match="worst relative projected gradient"):
        lp_sphere_minimize(*args, tol=1e-14, max_iter=2)
    res = lp_sphere_minimize(*args, tol=1e-14, max_iter=2, strict=False)
    assert not res.converged and res.projected_gradient.max() > 1e-14


@pytest.mark.parametrize("R, p, W0, match", [
    (np.array([1.0, -1.0]), np.array([2.0, 2.0]), np.ones((2, 2, 2)), "radius"),
    (np.array([1.0, 1.0]), np.array([2.0, 1.0]), np.ones((2, 2, 2)), "exponent"),
    (np.array([1.0, 1.0]), np.array([2.0, 2.0]), np.stack([np.ones((2, 2)), np.zeros((2, 2))]), "non-zero"),
    (np.array([1.0, 1.0]), np.array([2.0, 2.0]), np.full((2, 2, 2), np.nan), "non-zero"),
    (np.array([1.0]), np.array([2.0, 2.0]), np.ones((2, 2, 2)), "shape"),
])
def test_bad_input_raises(R, p, W0, match):
    with pytest.raises(UsageError, match=match):
        lp_sphere_minimize(_linear(np.ones((2, 2, 2))), R, p, W0)
