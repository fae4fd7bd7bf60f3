"""Claim patterns (theorycheck.patterns), the binomial check's power and the round-off
tolerance policy, on a claim context built directly (no pytest run needed)."""
import math
import sys

import numpy as np
import pytest
import torch
from hypothesis import strategies as st
from scipy import stats

from theorycheck import Control, UsageError, roundoff
from theorycheck.checks import binomial, binomial_power_point
from theorycheck.claim import ClaimSpec
from theorycheck.context import ClaimContext
from theorycheck.patterns import directional_convergence, per_instance, property_search
from theorycheck.runtime import Runtime
from theorycheck.tolerance import UNIT_ROUNDOFF


def context(dtype: str = "float64", seed: int = 0) -> ClaimContext:
    spec = ClaimSpec(id="toy.patterns.case", paper="toy", source="Lemma 1", statement="s",
                     controls={"c": Control("reference", breaks=["x"], description="d")},
                     provenance="derived")
    return ClaimContext(spec, None, Runtime(dtype=dtype, seed=seed))


# -- binomial power ------------------------------------------------------------------------
@pytest.mark.parametrize("n, p, alpha", [(20, 0.95, 0.05), (100, 0.95, 0.05), (200, 0.9, 0.01)])
def test_binomial_power_point_is_where_the_exact_test_rejects_with_probability_08(n, p, alpha):
    p1 = binomial_power_point(n, p, alpha)
    k = np.arange(n + 1)
    c = k[stats.binom.cdf(k, n, p) < alpha].max()            # the rejection region k <= c
    assert 0 < p1 < p
    assert stats.binom.cdf(c, n, p1) == pytest.approx(0.8, abs=1e-9)
    assert stats.binom.cdf(c, n, p1 - 0.01) > 0.8 > stats.binom.cdf(c, n, p1 + 0.01)


def test_binomial_power_point_is_none_when_the_test_cannot_reject():
    # one trial at p = 0.95: P[Bin(1, 0.95) = 0] = 0.05 is not below alpha = 0.05
    assert binomial_power_point(1, 0.95, 0.05) is None
    assert "too few trials: the test cannot reject" in binomial("one", [True], p=0.95).summary()


def test_binomial_records_and_shows_its_power():
    decision = binomial("event", [True] * 58 + [False] * 2, p=0.95)
    assert decision.passed
    assert decision.detail["power_80_at"] == pytest.approx(binomial_power_point(60, 0.95, 0.05))
    assert "80% power against p1 = 0.85" in decision.summary()


# -- property_search -------------------------------------------------------------------------
def test_property_search_finds_a_counterexample_and_records_the_worst_instance():
    tc = context()
    held = property_search(tc, "x below 1000", st.integers(0, 10_000), lambda x: 1000 - x,
                           max_examples=200)
    assert not held
    (decision,) = tc.decisions
    assert decision.role == "conclusion" and decision.name == "x below 1000"
    worst = tc.measurements["x below 1000: worst instance"]
    assert worst > 1000 and tc.measurements["x below 1000: worst margin"] == 1000 - worst


def test_property_search_that_holds_passes_and_is_reproducible_from_the_claim_seed():
    runs = []
    for _ in range(2):
        tc = context(seed=3)
        assert property_search(tc, "square", st.floats(-10, 10), lambda x: x * x,
                               max_examples=50, role="precondition")
        assert tc.decisions[0].role == "precondition"
        runs.append((tc.measurements["square: worst instance"], tc.seeds))
    assert runs[0] == runs[1] and "square" in runs[0][1]


def test_property_search_passes_a_stated_tail_bound_to_its_decision():
    from theorycheck.tails import TailBound

    tc = context()
    bound = TailBound(0.0, "x * x >= 0 is exact in floating point")
    assert property_search(tc, "square", st.floats(-10, 10), lambda x: x * x, max_examples=20,
                           tail_bound=bound)
    assert tc.decisions[0].detail["tail_bound"] == {"probability": 0.0, "reason": bound.reason}


def test_property_search_examples_do_not_depend_on_the_modules_imported(tmp_path, monkeypatch):
    """hypothesis draws from the literals of imported non-test modules; a search must not."""
    def examples():
        seen = []
        tc = context(seed=5)
        property_search(tc, "seen", st.floats(-1e6, 1e6), lambda x: seen.append(x) or 1.0,
                        max_examples=300)
        return seen

    before = examples()
    literals = ", ".join(f"{v!r}" for v in (3.25, -7.5, 12345.678, 1e-7, 999.0, -0.125) * 3)
    (tmp_path / "tc_literal_module.py").write_text(f"VALUES = [{literals}]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import tc_literal_module  # noqa: F401  (a local module: hypothesis would mine its literals)
    try:
        assert examples() == before
    finally:
        monkeypatch.delitem(sys.modules, "tc_literal_module")


def test_property_search_counts_a_nan_margin_as_the_worst():
    tc = context()
    assert not property_search(tc, "nan", st.integers(0, 5), lambda x: math.nan if x == 3 else 1.0,
                               max_examples=50)
    assert not tc.decisions[0].finite


# -- per_instance ----------------------------------------------------------------------------
def test_per_instance_records_the_values_and_accepts_by_the_binomial_test():
    tc = context()
    values = np.arange(30.0)
    assert per_instance(tc, "value >= 2", values, values >= 2, p=0.85)
    assert tc.measurements["value >= 2: per instance"] == pytest.approx(values)
    assert tc.decisions[-1].detail["successes"] == 28
    assert not per_instance(tc, "value >= 10", values, values >= 10, p=0.85)


# -- directional_convergence -----------------------------------------------------------------
def test_directional_convergence_compares_over_the_window_and_draws_the_curve():
    t = np.arange(1, 1001, dtype=float)
    deviation = np.log(t + 1) / t
    tc = context()
    assert directional_convergence(tc, "rate", t, deviation, lambda s: 2 * np.log(s + 1) / s,
                                   window=(10, 1000))
    assert not directional_convergence(tc, "too fast", t, deviation, 1 / t, window=(10, 1000))
    assert [c["label"] for c in tc.plots["rate"]["curves"]] == ["1 - alignment", "rate bound"]
    with pytest.raises(ValueError, match="no time in window"):
        directional_convergence(tc, "empty", t, deviation, 1 / t, window=(2000, 3000))


# -- round-off tolerances --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", torch.float64, np.float64, np.dtype("float64")])
def test_roundoff_accepts_every_spelling_of_a_dtype(dtype):
    assert roundoff(dtype, 4) == 4 * 2.0**-53 == 4 * np.finfo(np.float64).eps / 2


def test_unit_roundoff_is_half_the_machine_epsilon():
    for name in ("float64", "float32", "float16"):
        assert UNIT_ROUNDOFF[name] == np.finfo(name).eps / 2
    assert UNIT_ROUNDOFF["bfloat16"] == torch.finfo(torch.bfloat16).eps / 2


def test_roundoff_refuses_integer_types_and_bad_factors():
    with pytest.raises(UsageError, match="no unit round-off for dtype 'int64'"):
        roundoff(torch.int64)
    with pytest.raises(ValueError, match="positive"):
        roundoff("float64", 0)


def test_tc_roundoff_follows_the_run_dtype():
    assert context("float32").roundoff(10) == 10 * 2.0**-24
    assert context("float64").roundoff(10) == 10 * 2.0**-53
