"""claims.glls24.kernel's width slopes: the per-trial slope interval is each trial's own log-log
slope with the one-sample Student-t interval of their mean, blind to each trial's level; bad input
gets a clear error."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from claims.glls24.kernel import per_trial_width_slope_interval, width_slope_interval
from theorycheck.errors import InvalidInputError

WIDTHS = [256, 1024, 4096]


def power_laws(exponents, levels, widths=WIDTHS):
    """width -> ``levels_k * m^{exponents_k}`` per trial k."""
    return {m: np.asarray(levels) * float(m) ** np.asarray(exponents) for m in widths}


def test_exact_power_laws_give_each_trials_exponent():
    exponents = [-1.2, -1.0, -0.9, -0.7]
    fit = per_trial_width_slope_interval(power_laws(exponents, [1.0, 3.0, 0.2, 7.0]), 0.99)
    np.testing.assert_allclose(fit["slopes"], exponents, rtol=1e-12)
    assert fit["slope"] == pytest.approx(np.mean(exponents), rel=1e-12)
    assert fit["dof"] == len(exponents) - 1


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), trials=st.integers(2, 20), confidence=st.floats(0.5, 0.9999))
def test_interval_is_the_one_sample_t_interval_of_the_trials_slopes(seed, trials, confidence):
    rng = np.random.default_rng(seed)
    values = {m: np.exp(rng.standard_normal(trials)) for m in WIDTHS}
    fit = per_trial_width_slope_interval(values, confidence)
    expected = [stats.linregress(np.log(WIDTHS), np.log([values[m][k] for m in WIDTHS])).slope
                for k in range(trials)]
    np.testing.assert_allclose(fit["slopes"], expected, rtol=1e-9, atol=1e-12)
    interval = stats.ttest_1samp(expected, 0.0).confidence_interval(confidence)
    assert fit["lower"] == pytest.approx(interval.low, rel=1e-9, abs=1e-12)
    assert fit["upper"] == pytest.approx(interval.high, rel=1e-9, abs=1e-12)
    assert fit["stderr"] == pytest.approx(stats.sem(expected), rel=1e-9, abs=1e-15)


def test_trial_levels_do_not_enter():
    rng = np.random.default_rng(1)
    values = {m: np.exp(rng.standard_normal(8)) for m in WIDTHS}
    levels = np.exp(5 * rng.standard_normal(8))
    scaled = {m: v * levels for m, v in values.items()}
    a, b = per_trial_width_slope_interval(values, 0.95), per_trial_width_slope_interval(scaled, 0.95)
    np.testing.assert_allclose(a["slopes"], b["slopes"], rtol=1e-9, atol=1e-12)


def test_agrees_with_the_paired_fit_in_the_mean_slope():
    """With the same widths for every trial the paired regression's slope is the trials' mean slope
    (only their intervals differ)."""
    rng = np.random.default_rng(2)
    values = {m: np.exp(rng.standard_normal(6)) for m in WIDTHS}
    assert per_trial_width_slope_interval(values, 0.95)["slope"] == pytest.approx(
        width_slope_interval(values, 0.95, paired=True)["slope"], rel=1e-12)


@pytest.mark.parametrize("values, message", [
    ({256: [1.0, 2.0], 1024: [1.0]}, "same number of trials"),
    ({256: [1.0, 2.0], 1024: [0.0, 1.0]}, "positive"),
    ({256: [1.0], 1024: [0.5]}, "at least 2 widths and 2 trials"),
    ({256: [1.0, 2.0]}, "at least 2 widths and 2 trials"),
])
def test_bad_input_is_named(values, message):
    with pytest.raises(InvalidInputError, match=message):
        per_trial_width_slope_interval(values, 0.95)
