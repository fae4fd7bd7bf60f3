"""Tests of the token-selection analysis: token choices (`theorycheck.data.selection`), support
tokens and local optimality (`theorycheck.solvers.support`), directions against references
(`theorycheck.optim.directions`) and the regularization path (`theorycheck.solvers.regularization_path`)."""
import math

import numpy as np
import pytest
import torch

from theorycheck.data.selection import selected_tokens, stable_tokens, token_assignments
from theorycheck.errors import InvalidInputError
from theorycheck.models import TokenSelection
from theorycheck.optim import Iterate
from theorycheck.optim.directions import (
    certificate_bound,
    direction_metrics,
    divergence_curves,
    lp_unit,
    norms_along,
    unit,
)
from theorycheck.solvers import solve_wsvm
from theorycheck.solvers.regularization_path import lp_regularization_path
from theorycheck.solvers.support import locally_optimal, safe_gap, support_tokens

# One instance, n = 1, T = 3, d = 2: query x_0 = (0, 1), x_1 = (1, 1), x_2 = (-1, 1).  For
# alpha = (1,) the W-SVM constraints are (1, 0) W (0, 1)^T >= 1 and (2, 0) W (0, 1)^T >= 1, so
# W_mm = E_{01} with margins m_0 = 1 (support) and m_2 = 2.
X1 = np.array([[[0.0, 1.0], [1.0, 1.0], [-1.0, 1.0]]])
ALPHA = np.array([1])
W_MM = np.array([[0.0, 1.0], [0.0, 0.0]])


# ---------------------------------------------------------------- token choices


def test_selected_tokens_is_the_argmax_of_the_logits():
    # W = I: logits <x_t, x_0> = (1, 1, 1) tie -> token 0; W = E_{01}: logits x_t[0] = (0, 1, -1)
    W = np.stack([np.eye(2), W_MM])
    assert selected_tokens(np.stack([X1, X1]), W).tolist() == [[0], [1]]
    assert selected_tokens(X1[None], -W_MM[None]).tolist() == [[2]]


def test_selected_tokens_rejects_mismatched_shapes():
    with pytest.raises(InvalidInputError):
        selected_tokens(X1[None], np.eye(3)[None])


def test_stable_tokens_reads_the_trailing_checkpoints():
    t = np.array([0, 10, 20, 30])
    tokens = np.array([[[0], [2]], [[1], [2]], [[1], [0]], [[1], [2]]])       # C = 4, J = 2, n = 1
    alpha = np.array([[1], [2]])
    assert stable_tokens(t, tokens, alpha, fraction=0.3).tolist() == [True, True]     # t >= 21: t = 30
    assert stable_tokens(t, tokens, alpha, fraction=0.7).tolist() == [True, False]    # t >= 9: run 2 left at 20
    assert stable_tokens(t, tokens, alpha, fraction=1.0).tolist() == [False, False]   # every t


def test_stable_tokens_rejects_bad_input():
    with pytest.raises(InvalidInputError):
        stable_tokens(np.arange(3), np.zeros((4, 1, 1), int), np.zeros((1, 1), int))
    with pytest.raises(InvalidInputError):
        stable_tokens(np.arange(4), np.zeros((4, 1, 1), int), np.zeros((1, 1), int), fraction=1.5)


def test_token_assignments_lists_every_choice_in_order():
    assert token_assignments(2, 2).tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert token_assignments(3, 1).tolist() == [[0], [1], [2]]
    assert len(np.unique(token_assignments(3, 3), axis=0)) == 27


def test_token_assignments_rejects_empty_choices():
    with pytest.raises(InvalidInputError):
        token_assignments(0, 2)


# ---------------------------------------------------------------- support tokens, local optimality


def test_the_hand_instance_has_the_stated_wsvm_solution():
    assert np.allclose(solve_wsvm(X1, ALPHA).W, W_MM, atol=1e-6)


def test_support_tokens_are_the_tight_constraints():
    assert support_tokens(X1, ALPHA, W_MM).tolist() == [[True, False, False]]
    assert support_tokens(X1, ALPHA, 0.5 * W_MM, tol=0.6).tolist() == [[True, False, True]]   # m = 0.5, 1
    assert support_tokens(X1, ALPHA, 0.5 * W_MM, tol=0.01).tolist() == [[False, False, True]]


def test_local_optimality_compares_the_support_tokens_scores():
    assert locally_optimal(X1, np.array([[0.0, 1.0, 2.0]]), ALPHA, W_MM)       # support token 0 below
    assert not locally_optimal(X1, np.array([[2.0, 1.0, 0.0]]), ALPHA, W_MM)   # support token 0 above
    assert not locally_optimal(X1, np.array([[1.0, 1.0, 0.0]]), ALPHA, W_MM)   # a tie is not below


def test_safe_gap_is_the_margin_excess_of_the_higher_scoring_tokens():
    assert safe_gap(X1, np.array([[0.0, 1.0, 2.0]]), ALPHA, W_MM) == pytest.approx(1.0)   # m_2 - 1
    assert safe_gap(X1, np.array([[2.0, 1.0, 0.0]]), ALPHA, W_MM) == pytest.approx(0.0)   # m_0 - 1
    assert safe_gap(X1, np.array([[0.0, 1.0, 0.5]]), ALPHA, W_MM) == math.inf


def test_support_measures_reject_bad_shapes():
    with pytest.raises(InvalidInputError):
        support_tokens(X1, ALPHA, np.eye(3))
    with pytest.raises(InvalidInputError):
        locally_optimal(X1, np.zeros(3), ALPHA, W_MM)
    with pytest.raises(InvalidInputError):
        safe_gap(X1, np.zeros((2, 3)), ALPHA, W_MM)


# ---------------------------------------------------------------- directions


def test_unit_divides_every_matrix_by_its_frobenius_norm():
    W = torch.tensor([[[3.0, 0.0], [0.0, 4.0]], [[0.0, 2.0], [0.0, 0.0]]], dtype=torch.float64)
    expected = torch.tensor([[[0.6, 0.0], [0.0, 0.8]], [[0.0, 1.0], [0.0, 0.0]]], dtype=torch.float64)
    assert torch.allclose(unit(W), expected)
    with pytest.raises(InvalidInputError):
        unit(torch.ones(3))


def test_lp_unit_divides_by_the_entrywise_lp_norm():
    A = np.ones((2, 2))
    assert np.allclose(lp_unit(A, 2.0), A / 2)
    assert np.allclose(lp_unit(A, 1.5), A / 4 ** (1 / 1.5))
    with pytest.raises(InvalidInputError):
        lp_unit(np.zeros((2, 2)), 2.0)


def test_norms_along_uses_each_runs_exponent():
    W = np.array([[[[3.0, 4.0]], [[1.0, 1.0]]], [[[0.0, 2.0]], [[2.0, 2.0]]]])    # C = 2, J = 2, (1, 2)
    p = np.array([2.0, 3.0])
    expected = [[5.0, 2 ** (1 / 3)], [2.0, 2 * 2 ** (1 / 3)]]
    assert np.allclose(norms_along(W, p), expected)
    with pytest.raises(InvalidInputError):
        norms_along(W, np.array([2.0]))


def test_divergence_curves_vanish_along_the_reference_and_reach_two_opposite_it():
    R = np.array([[[1.0, 2.0], [0.0, -1.0]], [[0.5, 0.0], [3.0, 1.0]]])             # J = 2
    p = np.array([2.0, 3.0])
    W = np.stack([4.0 * R, -R])                                                     # C = 2
    D = divergence_curves(W, R, p)
    assert np.allclose(D[0], 0.0, atol=1e-15)
    assert np.allclose(D[1], 2.0)
    with pytest.raises(InvalidInputError):
        divergence_curves(W, R[:1], p)


def test_direction_metrics_measure_norm_and_alignment():
    W = torch.tensor([[[3.0, 0.0], [0.0, 4.0]]], dtype=torch.float64)
    ref = torch.tensor([[[2.0, 0.0], [0.0, 0.0]]], dtype=torch.float64)
    it = Iterate(0, {"W": W}, {"W": W})
    metrics = direction_metrics(ref)
    assert float(metrics["W_norm"](it)) == pytest.approx(5.0)
    assert float(metrics["W_alignment"](it)) == pytest.approx(0.6)


def test_certificate_bound_by_hand():
    norms = np.array([[1.0], [2.0], [3.0]])
    align = np.array([[0.5], [0.9], [0.95]])
    # head 1 (1 - 0.5) = 0.5; increments 1/(2*1) = 0.5 and 0.5 + 1/(2*2) = 0.75
    assert np.allclose(certificate_bound(norms, align, 1.0, 0), [[1.0 / 2], [1.25 / 3]])
    assert np.allclose(certificate_bound(norms, align, np.array([[2.0]]), 1), [[(2 * 0.1 + 4 / 4) / 3]])
    with pytest.raises(InvalidInputError):
        certificate_bound(norms, align, 1.0, 2)


# ---------------------------------------------------------------- regularization path


def _scalar_model():
    """n = 1, T = 2, d = 1: x = (1, 2), u = y = 1, so L(W) = exp(-(1 + sigmoid(W))) decreases in W
    and the minimizer over |W| <= R is W = R."""
    X = torch.tensor([[[[1.0], [2.0]]]], dtype=torch.float64)
    return TokenSelection(X, torch.ones(1, 1, dtype=torch.float64), torch.ones(1, 1, dtype=torch.float64))


def test_regularization_path_of_a_decreasing_loss_is_the_ball_edge():
    model = _scalar_model().tiled(2)
    R, p = np.array([1.0, 3.0]), np.array([2.0, 1.5])
    up, down = np.ones((2, 1, 1)), -np.ones((2, 1, 1))
    path = lp_regularization_path(model, R, p, [down, up], tol=1e-6)
    assert np.allclose(path.W[:, 0, 0], R)
    assert path.start.tolist() == [1, 1]
    excess = model.log_excess_loss({"W": torch.as_tensor(path.W)}).numpy()
    assert np.allclose(path.log_excess, excess)


def test_regularization_path_minimizes_on_the_sphere():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1, 3, 4, 3))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    model = TokenSelection(torch.as_tensor(X), torch.ones(1, 3, dtype=torch.float64),
                           torch.as_tensor(rng.standard_normal((1, 3))))
    starts = [rng.standard_normal((1, 3, 3)) for _ in range(3)]
    path = lp_regularization_path(model, np.array([4.0]), np.array([1.75]), starts, tol=1e-6)
    assert path.projected_gradient[0] <= 1e-6
    assert np.sum(np.abs(path.W) ** 1.75) ** (1 / 1.75) == pytest.approx(4.0)
    for W0 in starts:
        on_sphere = 4.0 * W0 / np.sum(np.abs(W0) ** 1.75) ** (1 / 1.75)
        assert path.log_excess[0] <= float(model.log_excess_loss({"W": torch.as_tensor(on_sphere)})[0])


def test_regularization_path_rejects_mismatched_problems():
    with pytest.raises(InvalidInputError):
        lp_regularization_path(_scalar_model(), np.array([1.0, 2.0]), np.array([2.0, 2.0]),
                               [np.ones((2, 1, 1))], tol=1e-6)
