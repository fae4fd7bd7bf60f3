"""The statistical decisions of theorycheck.checks: power at the framework's alternative,
Wald and chi-square tests (false-rejection rate and power checked by simulation)."""
import numpy as np
import pytest
from scipy import stats

from theorycheck.checks import ALTERNATIVE_GAP, POWER, binomial, binomial_power, chi_square, wald
from theorycheck.errors import InvalidInputError


def test_binomial_records_its_power_at_p0_minus_015_and_warns_when_underpowered():
    weak = binomial("rate", [True] * 5, p=0.85)          # the review's K = 5
    assert weak.detail["alternative"] == pytest.approx(0.85 - ALTERNATIVE_GAP)
    assert weak.detail["power"] < POWER and weak.warnings
    assert "power" in weak.warnings[0]
    excused = binomial("rate", [True] * 5, p=0.85, low_power="each instance is a full training run")
    assert not excused.warnings and excused.detail["low_power_reason"].startswith("each")
    strong = binomial("rate", [True] * 120, p=0.85)
    assert strong.detail["power"] >= POWER and not strong.warnings


def test_binomial_power_matches_a_simulation():
    rng = np.random.default_rng(0)
    n, p = 60, 0.9
    rejections = [not binomial("r", rng.random(n) < p - ALTERNATIVE_GAP, p=p).passed
                  for _ in range(2000)]
    assert np.mean(rejections) == pytest.approx(binomial_power(n, p, 0.05), abs=0.03)


@pytest.mark.parametrize("direction", ["at_least", "at_most"])
def test_wald_rejects_at_its_level_under_the_null_and_with_its_power_at_the_alternative(direction):
    rng = np.random.default_rng(1)
    n, sign = 100, (1 if direction == "at_least" else -1)
    null = [not wald("m", rng.normal(0.0, 1.0, n), **{direction: 0.0}).passed for _ in range(3000)]
    assert np.mean(null) == pytest.approx(0.05, abs=0.012)
    shifted = [wald("m", rng.normal(-sign * 0.5, 1.0, n), **{direction: 0.0}) for _ in range(1000)]
    assert np.mean([not d.passed for d in shifted]) == pytest.approx(shifted[0].detail["power"], abs=0.03)
    assert shifted[0].detail["reject_prob_at_null"] == 0.05


def test_chi_square_power_and_level_by_simulation():
    rng = np.random.default_rng(2)
    probs = np.array([0.25, 0.25, 0.5])
    null = [not chi_square("fit", rng.multinomial(200, probs), probs).passed for _ in range(3000)]
    assert np.mean(null) == pytest.approx(0.05, abs=0.012)
    decision = chi_square("fit", rng.multinomial(200, probs), probs)
    w = 0.3   # an alternative at Cohen's w = 0.3
    alt = probs + w * np.sqrt(probs) * np.array([1, -1, 0]) / np.sqrt(2) * np.sqrt(probs.min() / probs)
    alt = alt / alt.sum()
    effect = np.sqrt(np.sum((alt - probs) ** 2 / probs))
    expected_power = stats.ncx2.sf(stats.chi2.ppf(0.95, 2), 2, 200 * effect ** 2)
    rejections = np.mean([not chi_square("fit", rng.multinomial(200, alt), probs).passed
                          for _ in range(2000)])
    assert rejections == pytest.approx(expected_power, abs=0.04)
    assert decision.detail["power"] == pytest.approx(stats.ncx2.sf(stats.chi2.ppf(0.95, 2), 2, 200 * 0.09))


@pytest.mark.parametrize("call, fragment", [
    (lambda: wald("m", np.ones(40), at_least=0.0), "no spread"),
    (lambda: wald("m", np.arange(10.0), at_least=0.0), "n >= 30"),
    (lambda: wald("m", np.arange(40.0)), "exactly one of"),
    (lambda: chi_square("c", [1, 2, 3], [0.5, 0.5, 0.0]), "positive and sum to 1"),
    (lambda: chi_square("c", [1, 2], [0.5, 0.5]), "expected counts below 5"),
])
def test_statistical_checks_name_bad_input(call, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        call()
