"""theorycheck.tails: stated tail bounds, and the Gaussian condition-number tail against Monte Carlo."""
import math

import numpy as np
import pytest
from scipy import special, stats

from theorycheck import checks
from theorycheck.errors import InvalidInputError
from theorycheck.tails import (CHEN_DONGARRA_C, NullTest, TailBound, bennett_tail, chi_square_z,
                               gaussian_condition_tail,
                               hadamard_ratio_tail, mean_deviation_bound, sphere_cap_tail, sphere_gap_tail,
                               wishart_eigenvalue_tail)


@pytest.mark.parametrize("shape, x", [((4, 3), 20.0), ((4, 3), 60.0), ((5, 5), 200.0), ((3, 6), 30.0)])
def test_gaussian_condition_tail_covers_the_monte_carlo_rate_and_decays_at_its_power(shape, x):
    """P[kappa_2(G) > x] from 2e5 Gaussian draws (the point estimate plus 4 binomial standard
    errors) lies below the bound; the bound falls like x^-(|m - n| + 1)."""
    rng = np.random.default_rng(7)
    s = np.linalg.svd(rng.standard_normal((200_000, *shape)), compute_uv=False)
    rate = float(np.mean(s[:, 0] / s[:, -1] > x))
    m, n = shape
    bound = gaussian_condition_tail(m, n, x)
    assert rate + 4 * math.sqrt(max(rate, 1e-6) / s.shape[0]) < bound < 1
    power = abs(m - n) + 1
    assert gaussian_condition_tail(m, n, 10 * x) == pytest.approx(bound / 10 ** power)


def test_gaussian_condition_tail_is_the_theorems_formula_and_one_below_its_range():
    # 4 x 3: power 2, normalization max(m, n) / 2 = 2
    assert gaussian_condition_tail(4, 3, 1e15) == pytest.approx(
        (CHEN_DONGARRA_C * 2 / 1e15) ** 2 / math.sqrt(2 * math.pi))
    assert gaussian_condition_tail(4, 3, 3.0) == 1.0       # y = 1.5 < |m - n| + 1 = 2
    assert gaussian_condition_tail(3, 4, 1e15) == gaussian_condition_tail(4, 3, 1e15)


@pytest.mark.parametrize("args, fragment", [((1, 3, 10.0), "integers >= 2"), ((4, 3.0, 10.0), "integers >= 2"),
                                            ((4, 3, 0.0), "positive finite"), ((4, 3, math.nan), "positive finite")])
def test_gaussian_condition_tail_refuses_bad_input(args, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        gaussian_condition_tail(*args)


def test_tail_bound_validates_and_unions_over_draws():
    bound = TailBound(1e-20, "condition-number tail")
    three = bound.times(3)
    assert three.probability == pytest.approx(3e-20)
    assert three.reason == "3 draws, union bound: condition-number tail"
    assert bound.times(1) == bound
    assert TailBound(0.6, "r").times(2).probability == 1.0
    for probability in (-0.1, 1.5, math.nan, True, "1e-3"):
        with pytest.raises(InvalidInputError, match="probability must be a number in"):
            TailBound(probability, "r")
    with pytest.raises(InvalidInputError, match="reason must say"):
        TailBound(1e-3, " ")
    with pytest.raises(InvalidInputError, match="count must be a positive integer"):
        bound.times(0)


@pytest.mark.parametrize("check", [
    lambda bound: checks.close("identity", 1.0, 1.0, rtol=1e-12, tail_bound=bound),
    lambda bound: checks.close("identity", np.eye(2), np.eye(2), rtol=1e-12, norm="fro", tail_bound=bound),
    lambda bound: checks.at_most("error", 0.5, 1.0, tail_bound=bound),
    lambda bound: checks.holds("kept by construction", [True, True], tail_bound=bound),
])
def test_a_stated_bound_travels_in_the_decision_detail_and_must_be_a_tail_bound(check):
    bound = TailBound(0.0, "exact in binary floating point: both sides are the same operations")
    assert check(bound).detail["tail_bound"] == {"probability": 0.0, "reason": bound.reason}
    assert "tail_bound" not in check(None).detail
    with pytest.raises(InvalidInputError, match="tail_bound must be a theorycheck.tails.TailBound, got float"):
        check(0.0)


def test_holds_refuses_a_tests_level():
    level = NullTest(1e-4, 3)
    with pytest.raises(InvalidInputError, match="not by holds"):
        checks.holds("z below", [True], tail_bound=level.tail_bound)


@pytest.mark.parametrize("d, eps", [(3, 0.01), (10, 0.01), (10, 0.002), (32, 0.005)])
def test_sphere_gap_tail_covers_the_monte_carlo_rate_of_near_ties(d, eps):
    """P[|x_a^T v - x_b^T v| <= eps] from 4e5 pairs of uniform unit vectors: the bound for one
    pair is not below it (the point estimate less 4 binomial standard errors; at d = 3 the bound
    is exact to first order in eps) and within a factor 3 of it."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 400_000, d))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    rate = float(np.mean(np.abs(x[0, :, 0] - x[1, :, 0]) <= eps))       # v = e_1
    bound = sphere_gap_tail(d, 1, eps)
    assert rate - 4 * math.sqrt(rate / x.shape[1]) <= bound < 3 * rate
    assert sphere_gap_tail(d, 5, eps) == pytest.approx(5 * bound)


def test_sphere_gap_tail_is_the_uniform_density_at_d_3_and_refuses_bad_input():
    assert sphere_gap_tail(3, 1, 0.01) == pytest.approx(2 * 0.01 * 0.5)   # x^T v uniform on [-1, 1]
    assert sphere_gap_tail(3, 10**6, 0.1) == 1.0
    for args, fragment in [((2, 1, 0.1), "d must be an integer >= 3"), ((3, 0, 0.1), "pairs must be"),
                           ((3, 1, -1.0), "eps must be"), ((3, 1, math.inf), "eps must be")]:
        with pytest.raises(InvalidInputError, match=fragment):
            sphere_gap_tail(*args)


@pytest.mark.parametrize("d, r", [(3, 0.2), (5, 0.5), (10, 0.9)])
def test_sphere_cap_tail_is_the_monte_carlo_rate_of_near_coincident_pairs(d, r):
    """P[||x_a - x_b|| <= r] from 4e5 pairs of uniform unit vectors: the cap probability is exact,
    so the bound for one pair lies within 4 binomial standard errors of the rate."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 400_000, d))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    rate = float(np.mean(np.linalg.norm(x[0] - x[1], axis=-1) <= r))
    bound = sphere_cap_tail(d, 1, r)
    assert abs(bound - rate) <= 4 * math.sqrt(bound * (1 - bound) / x.shape[1])
    assert sphere_cap_tail(d, 3, r) == pytest.approx(3 * bound)


def test_sphere_cap_tail_is_half_the_cap_height_at_d_3_and_refuses_bad_input():
    assert sphere_cap_tail(3, 1, 0.2) == pytest.approx(0.2**2 / 4)     # x^T y uniform on [-1, 1]
    assert sphere_cap_tail(2, 10**9, 1.0) == 1.0
    for args, fragment in [((1, 1, 0.1), "d must be an integer >= 2"), ((3, 0, 0.1), "pairs must be"),
                           ((3, 1, -0.1), "r must be"), ((3, 1, 2.0), "r must be")]:
        with pytest.raises(InvalidInputError, match=fragment):
            sphere_cap_tail(*args)


@pytest.mark.parametrize("k, x", [(2, 1e-2), (3, 1e-2), (4, 3e-3), (6, 1e-3)])
def test_hadamard_ratio_tail_covers_the_monte_carlo_rate_of_near_dependent_rows(k, x):
    """P[|det G| / prod ||g_i|| <= x] from 2e5 Gaussian k x k draws (point estimate plus 4
    binomial standard errors) lies below the bound, which is linear in x."""
    G = np.random.default_rng(11).standard_normal((200_000, k, k))
    ratio = np.abs(np.linalg.det(G)) / np.prod(np.linalg.norm(G, axis=2), axis=1)
    rate = float(np.mean(ratio <= x))
    bound = hadamard_ratio_tail(k, x)
    assert rate - 4 * math.sqrt(max(rate, 1e-6) / ratio.size) < bound < 1
    assert hadamard_ratio_tail(k, x / 10) == pytest.approx(bound / 10)


def test_hadamard_ratio_tail_closed_forms_and_bad_input():
    assert hadamard_ratio_tail(1, 0.5) == 0.0 and hadamard_ratio_tail(2, 1e-3) == 1e-3
    # k = 3: 2 c_3 E[1/F_2] = 1 * B(1/2, 1/2) / B(1, 1/2) = pi / 2
    assert hadamard_ratio_tail(3, 1e-3) == pytest.approx(math.pi / 2 * 1e-3)
    for args in [(0, 0.1), (2, -1.0), (2, math.nan)]:
        with pytest.raises(InvalidInputError):
            hadamard_ratio_tail(*args)
def test_mean_deviation_bound_is_markov_and_chebyshev_at_low_orders_and_tightens_with_the_order():
    # variance only: Chebyshev, t = sqrt(var / (n level))
    assert mean_deviation_bound([4.0], 100, 1e-2) == pytest.approx(math.sqrt(4.0 / (100 * 1e-2)))
    # N(0, 1): the sum of n is N(0, n), E S^4 = 3 n^2, so t = (3 / level)^(1/4) / sqrt(n) at order 4
    assert mean_deviation_bound([1, 0, 3], 25, 1e-4) == pytest.approx((3 / 1e-4) ** 0.25 / 5)
    # Rademacher X (mu_4 = 1): E S^4 = n + 3 n (n - 1), exactly
    assert mean_deviation_bound([1, 0, 1], 10, 1e-3) == pytest.approx((280 / 1e-3) ** 0.25 / 10)
    # z^4 - 3 of a standard normal: the higher orders approach the normal quantile (4.9 at 1e-6 two-sided)
    central = [96, 9504, 1907712]
    assert mean_deviation_bound(central, 10**6, 1e-6) < mean_deviation_bound(central[:1], 10**6, 1e-6)
    for args, fragment in [(([1.0], 0, 0.1), "n must be"), (([1.0], 5, 1.5), "level must be"),
                           (([0.0], 5, 0.1), "positive variance")]:
        with pytest.raises(InvalidInputError, match=fragment):
            mean_deviation_bound(*args)


def test_mean_deviation_bound_covers_the_monte_carlo_rate_of_fourth_powers():
    """|mean(z^4) - 3| over 200 standard normals beyond the order-8 bound at level 0.05: the rate
    over 2e4 repetitions stays below the level."""
    rng = np.random.default_rng(3)
    central = [sum(math.comb(r, j) * math.prod(range(4 * j - 1, 0, -2)) * (-3) ** (r - j) for j in range(r + 1))
               for r in range(2, 9)]
    t = mean_deviation_bound(central, 200, 0.05)
    rate = float(np.mean(np.abs((rng.standard_normal((20_000, 200)) ** 4).mean(1) - 3) >= t))
    assert rate < 0.05


def test_bennett_tail_is_the_formula_covers_a_bounded_mean_and_refuses_bad_input():
    u = 2.0 * 0.1 / 0.5
    assert bennett_tail(50, 0.5, 2.0, 0.1) == pytest.approx(math.exp(-(50 * 0.5 / 4.0) * ((1 + u) * math.log1p(u) - u)))
    # Bernoulli(0.1) means of 400: X - E X <= 0.9, variance 0.09; the rate of exceeding 0.05 is below the bound
    rng = np.random.default_rng(4)
    rate = float(np.mean((rng.random((20_000, 400)) < 0.1).mean(1) - 0.1 >= 0.05))
    assert rate <= bennett_tail(400, 0.09, 0.9, 0.05) < 0.05
    assert bennett_tail(1, 1.0, 1.0, 1e-9) == pytest.approx(1.0)
    for args, fragment in [((0, 1.0, 1.0, 1.0), "n must be"), ((5, -1.0, 1.0, 1.0), "positive finite"),
                           ((5, 1.0, math.inf, 1.0), "positive finite")]:
        with pytest.raises(InvalidInputError, match=fragment):
            bennett_tail(*args)


@pytest.mark.parametrize("n, d, x, side", [(20, 3, 6.0, "lower"), (20, 3, 40.0, "upper"), (12, 2, 4.0, "lower"),
                                           (40, 3, 14.0, "lower"), (30, 4, 6.0, "lower")])
def test_wishart_eigenvalue_tail_covers_the_monte_carlo_rate(n, d, x, side):
    """The bound is at least the Monte Carlo rate of the event (20,000 Wishart draws) and within a
    factor 20 of it."""
    Z = np.random.default_rng(7).standard_normal((20000, n, d))
    eigenvalues = np.linalg.eigvalsh(np.swapaxes(Z, 1, 2) @ Z)
    rate = np.mean(eigenvalues[:, 0] <= x) if side == "lower" else np.mean(eigenvalues[:, -1] >= x)
    bound = wishart_eigenvalue_tail(n, d, x, side)
    assert rate <= bound < 1.0
    assert bound < 20 * rate          # within a decade or so of the truth here


def test_wishart_eigenvalue_tail_is_the_chi_square_tail_at_d_1_and_refuses_bad_input():
    assert wishart_eigenvalue_tail(50, 1, 60.0, "upper") == pytest.approx(stats.chi2.sf(60.0, 50), rel=1e-6)
    assert wishart_eigenvalue_tail(200, 3, 100.0) < 1e-6     # Lemma 4's eps'_dual < 1 at n = 200
    for args in [(0, 3, 1.0), (5, 3, -1.0), (5, 3, 1.0, "middle")]:
        with pytest.raises(InvalidInputError):
            wishart_eigenvalue_tail(*args)


def test_chi_square_z_is_the_probability_integral_transform():
    """Exact where the tails are representable (both sides of the mean); beyond, the Chernoff
    bound keeps z finite, increasing and below the exact value (the bound of a log tail)."""
    df = 600
    for T in (420.0, 580.0, 610.0, 800.0, 1200.0):
        expected = stats.norm.isf(stats.chi2.sf(T, df)) if T > df else stats.norm.ppf(stats.chi2.cdf(T, df))
        assert chi_square_z(T, df) == pytest.approx(expected, rel=1e-9, abs=1e-9)
    far = [chi_square_z(T, df) for T in (6e3, 6e4, 6e5)]
    assert all(np.isfinite(far)) and far[0] < far[1] < far[2]
    # the Chernoff bound's z is at most the exact one, checked where scipy still resolves the tail
    for T in (900.0, 3000.0):
        t = T / df
        assert -special.ndtri_exp(-0.5 * df * (t - 1 - np.log(t))) <= chi_square_z(T, df)
    assert chi_square_z(10.0, df) < -20


@pytest.mark.parametrize("statistic, df, match", [(-1.0, 3, "statistic"), (float("nan"), 3, "statistic"),
                                                   (1.0, 0, "df"), (1.0, True, "df")])
def test_chi_square_z_rejects_bad_input(statistic, df, match):
    with pytest.raises(InvalidInputError, match=match):
        chi_square_z(statistic, df)
