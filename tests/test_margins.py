"""The margin of every check kind: its sign agrees with the verdict, its scale is the one
:mod:`theorycheck.margins` states, and it stays finite."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy import stats

from theorycheck import checks

finite = st.floats(-1e6, 1e6, allow_nan=False)
positive = st.floats(1e-6, 1e3)


def agrees(decision) -> bool:
    return decision.margin is not None and math.isfinite(decision.margin) and (
        (decision.margin >= 0) == decision.passed)


def test_close_margin_is_one_minus_the_worst_error_over_its_tolerance():
    d = checks.close("c", [1.0, 2.0], [1.0, 2.1], atol=0.2)
    assert d.passed and d.margin == pytest.approx(1 - 0.1 / 0.2)
    failed = checks.close("c", 3.0, 2.0, atol=0.5)
    assert not failed.passed and failed.margin == pytest.approx(1 - 1.0 / 0.5)
    fro = checks.close("f", np.eye(2) * 1.01, np.eye(2), rtol=0.02, norm="fro")
    assert fro.margin == pytest.approx(0.5)


def test_bound_margin_is_the_slack_over_the_thresholds_magnitude():
    d = checks.at_most("m", 0.5, 1.0)
    assert d.margin == pytest.approx(0.5)
    d = checks.at_least("l", [2.0, 0.5], 1.0, margin=0.25)
    assert not d.passed and d.margin == pytest.approx((0.5 - 1.0 + 0.25) / (1.0 + 0.25))
    d = checks.at_most("r", 2.1, 2.0, rmargin=0.1)
    assert d.margin == pytest.approx((2.0 + 0.2 - 2.1) / 2.2)
    assert checks.at_most("zero", 0.0, 0.0).margin == 0.0
    assert checks.at_least("in units", 0.25, 0.0).margin == 0.25  # no scale: the slack itself


def test_margins_are_affine_in_the_measured_value():
    """The tail model needs it: the margin moves with the statistic at a fixed rate."""
    values = np.array([11.0, 14.0, 30.0])
    margins = [checks.at_least("x", v, 10.0).margin for v in values]
    assert np.allclose(margins, (values - 10.0) / 10.0)


def test_monotone_margin_is_the_worst_step_against_the_tolerance():
    d = checks.monotone("mono", [3.0, 2.0, 2.5], increasing=False, tol=0.1)
    assert not d.passed and d.margin == pytest.approx((-0.5 + 0.1) / 0.1)
    assert checks.monotone("mono", [1.0, 2.0, 4.0], increasing=True).margin == pytest.approx(0.5)


def test_slope_margin_is_the_distance_to_the_nearest_edge_over_the_width():
    x = np.logspace(0, 2, 10)
    y = x ** -1.0
    d = checks.slope("s", x, y, window=(1, 100), at_least=-1.5, at_most=-0.5)
    assert d.margin == pytest.approx(0.5)
    d = checks.slope("s", x, y, window=(1, 100), expected=-1.2, rtol=0.5)
    assert d.margin == pytest.approx((0.5 - abs(-1.0 / -1.2 - 1)) / 1.0)
    d = checks.slope("s", x, y, window=(1, 100), at_most=-1.25)
    assert not d.passed and d.margin == pytest.approx(-0.25 / 1.25)
    d = checks.slope("s", x, y, window=(1, 100), at_most=0.0)
    assert d.margin == pytest.approx(1.0)


def test_test_margins_are_the_statistic_distance_to_rejection():
    d = checks.binomial("b", [True] * 95 + [False] * 5, p=0.9)
    c = int(stats.binom.ppf(0.05, 100, 0.9))
    c = c if stats.binom.cdf(c, 100, 0.9) < 0.05 else c - 1
    assert d.margin == pytest.approx((95 - c - 1) / math.sqrt(100 * 0.09))
    w = checks.wald("w", np.linspace(0, 2, 40), at_least=0.5)
    assert w.margin == pytest.approx(w.detail["z"] - stats.norm.ppf(0.05))
    chi = checks.chi_square("x", [30, 70], [0.5, 0.5])
    assert not chi.passed and chi.margin == pytest.approx((chi.reference - chi.measured) / math.sqrt(2))


def test_holds_margin_is_minus_the_failing_fraction():
    assert checks.holds("h", [True, True]).margin == 0.0
    assert checks.holds("h", [True, False, False, True]).margin == -0.5


def test_non_finite_numbers_have_no_margin_and_json_carries_it():
    from theorycheck.margins import record_margin

    assert checks.close("n", math.nan, 1.0, atol=1.0).margin is None
    assert record_margin(checks.at_most("i", math.inf, 1.0).to_json()) is None
    record = checks.at_most("ok", [0.5, 0.25], 1.0).to_json()
    assert record["margin"] == pytest.approx(0.5) == record_margin(dict(record, margin=7.0))


@given(st.lists(finite, min_size=1, max_size=5), st.lists(finite, min_size=1, max_size=5),
       st.floats(0, 10), st.floats(0, 1))
def test_close_margin_sign_is_the_verdict(m, e, atol, rtol):
    n = min(len(m), len(e))
    if atol == 0 and rtol == 0:
        atol = 1.0
    assert agrees(checks.close("c", m[:n], e[:n], atol=atol, rtol=rtol))


@given(st.lists(finite, min_size=1, max_size=5), finite, st.floats(0, 10), st.floats(0, 1),
       st.booleans())
def test_bound_margin_sign_is_the_verdict(m, b, margin, rmargin, upper):
    check = checks.at_most if upper else checks.at_least
    assert agrees(check("b", m, b, margin=margin, rmargin=rmargin))


@given(st.lists(finite, min_size=2, max_size=6), st.floats(0, 10), st.booleans())
def test_monotone_margin_sign_is_the_verdict(series, tol, increasing):
    assert agrees(checks.monotone("m", series, increasing=increasing, tol=tol))


@given(st.integers(1, 60), st.integers(0, 60), st.floats(0.05, 1.0), st.floats(0.001, 0.3))
def test_binomial_margin_sign_is_the_verdict(n, k, p, alpha):
    k = min(k, n)
    assert agrees(checks.binomial("b", [True] * k + [False] * (n - k), p=p, alpha=alpha,
                                  low_power="a test"))


@given(st.floats(-3, 3), st.floats(-1, 1), st.floats(0.01, 1), st.floats(0.0, 0.99))
def test_slope_margin_sign_is_the_verdict(b, low, width, r2):
    x = np.arange(1.0, 9.0)
    y = np.exp(b * np.log(x)) * np.exp(0.05 * np.sin(7 * x))
    assert agrees(checks.slope("s", x, y, window=(1, 8), at_least=low, at_most=low + width,
                               min_r2=r2))
