"""Cell counts of hyperplane arrangements against the closed forms, exact 1-d counts, a
non-generic arrangement, the sawtooth construction, and bad input."""
import numpy as np
import pytest

from theorycheck.errors import UsageError
from theorycheck.solvers import (central_cells, count_cells, general_position_cells,
                                 grid_construction, grid_lower_bound, relu_network_regions)


@pytest.mark.parametrize("s,m", [(1, 4), (2, 5), (3, 5)])
def test_generic_counts_equal_the_closed_forms(s, m):
    rng = np.random.default_rng(s * 10 + m)
    W, b = rng.standard_normal((m, s)), rng.standard_normal(m)
    assert count_cells(W, b) == general_position_cells(m, s)
    assert count_cells(W, 0 * b) == central_cells(m, s)


def test_one_dimension_counts_distinct_breakpoints():
    W = np.array([[1.0], [2.0], [-1.0], [3.0]])
    b = np.array([0.0, -2.0, 1.0, 0.5])     # breakpoints 0, 1, 1, -1/6: three distinct
    assert count_cells(W, b) == 4


def test_parallel_lines_lose_cells():
    rng = np.random.default_rng(0)
    W = np.vstack([np.tile([[1.0, 2.0]], (3, 1)), rng.standard_normal((3, 2))])
    b = np.concatenate([[0.0, 1.0, 2.0], rng.standard_normal(3)])
    assert count_cells(W, b) == 19 < general_position_cells(6, 2)


def test_network_regions_use_the_attended_visible_units():
    rng = np.random.default_rng(1)
    W1, b, w2 = rng.standard_normal((4, 5)), rng.standard_normal(5), rng.standard_normal(5)
    a = np.array([0.0, 0.7, 0.0, 0.0])
    assert relu_network_regions(W1, b, w2, a) == 6
    w2[0] = 0.0
    assert relu_network_regions(W1, b, w2, a) == 5
    assert relu_network_regions(W1, b, w2, np.zeros(4)) == 1


def test_grid_construction_attains_q_plus_one_to_the_s():
    support = np.array([1.0, 0.0, 1.0])
    W1, b, w2 = grid_construction(7, support)
    assert relu_network_regions(W1, b, w2, support) == 16 == (7 // 2 + 1) ** 2
    assert grid_lower_bound(7, 2) == 9


def test_closed_forms_by_hand_and_bad_input():
    assert general_position_cells(4, 2) == 11 and central_cells(4, 2) == 8
    assert central_cells(5, 1) == 2 and grid_lower_bound(10, 2) == 25
    with pytest.raises(UsageError, match="zero normal"):
        count_cells(np.zeros((1, 2)), np.zeros(1))
    with pytest.raises(UsageError, match="n1 >= s"):
        grid_construction(1, np.ones(2))


@pytest.mark.parametrize("pair_weights, scale, regions", [
    ((1.0, -1.0), -1.0, 2),   # relu(x) - relu(-x) = x: the kinks cancel, only the y-line is left
    ((1.0, -0.5), 2.0, 2),    # relu(x) - 0.5 relu(2x) = 0: cancels too
    ((1.0, 1.0), -1.0, 4),    # relu(x) + relu(-x) = |x|: a real boundary
    ((1.0, 0.5), 3.0, 4),     # same hyperplane twice, kinks add up: one boundary, not two
])
def test_coinciding_units_draw_a_boundary_only_when_their_kinks_do_not_cancel(pair_weights, scale, regions):
    """Two units on the same line x = 0 (one scaled by ``scale``) and a unit on y = 0: the
    function is linear across x = 0 exactly when w_1 ||n_1|| + w_2 ||n_2|| = 0."""
    W1 = np.array([[1.0, scale, 0.0], [0.0, 0.0, 1.0]])   # columns: units; rows: coordinates
    w2 = np.array([*pair_weights, 1.0])
    assert relu_network_regions(W1, np.zeros(3), w2, np.ones(2)) == regions
