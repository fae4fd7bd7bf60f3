"""Calibration (issue 31): Clopper-Pearson bounds against scipy, the normal tail model and its
check, claim and control rows, the merged table and its page, the structured ``Calibrated``
record, ``theorycheck list -v``, the sweep's prediction from the table, and one end-to-end
``theorycheck calibrate`` of a tiny paper."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from theorycheck import Calibrated, Control, DeclarationError, TailBound, checks, claim, sweep
from theorycheck import calibrate as cal
from theorycheck.cli import main
from theorycheck.errors import InvalidInputError, UsageError
from theorycheck.tails import SIDES, NullTest

ROOT = Path(__file__).resolve().parents[1]


def cli(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "theorycheck", *args], cwd=cwd, text=True,
                          capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))


# -- the numbers -----------------------------------------------------------------------------
@pytest.mark.parametrize("failures, runs", [(0, 50), (1, 50), (3, 20), (7, 7), (0, 1)])
def test_clopper_pearson_upper_is_scipys_exact_interval(failures, runs):
    # a one-sided 95% bound is the upper end of the two-sided 90% exact interval
    expected = stats.binomtest(failures, runs).proportion_ci(0.90, method="exact").high
    assert cal.clopper_pearson_upper(failures, runs) == pytest.approx(expected, rel=1e-9)
    assert cal.clopper_pearson_upper(0, 0) == 1.0


def test_zero_failures_in_fifty_seeds_bound_the_rate_at_the_rule_of_three():
    assert cal.clopper_pearson_upper(0, 50) == pytest.approx(1 - 0.05 ** (1 / 50))


def test_normal_tail_is_phi_of_minus_the_margin_in_sigmas():
    margins = np.random.default_rng(1).normal(3.0, 1.0, 60)
    tail = cal.normal_tail(margins)
    sigmas = margins.mean() / margins.std(ddof=1)
    assert tail["model"] == "normal" and tail["sigmas"] == pytest.approx(sigmas)
    assert tail["tail"] == pytest.approx(stats.norm.sf(sigmas))
    assert tail["tail"] < tail["tail_upper"] < 0.05
    assert tail["normality_p"] == pytest.approx(stats.shapiro(margins).pvalue)


def test_normal_tail_upper_bound_covers_the_true_rate():
    """Over many samples of 20 normal margins, the 95% bound is below the true rate
    Phi(-mu/sigma) in at most about 5% of them."""
    rng = np.random.default_rng(7)
    truth = stats.norm.sf(2.5)
    below = sum(cal.normal_tail(rng.normal(2.5, 1.0, 20))["tail_upper"] < truth
                for _ in range(300))
    assert below <= 0.05 * 300 + 3 * np.sqrt(300 * 0.05 * 0.95)


def test_normal_model_is_rejected_or_absent_where_it_does_not_apply():
    skewed = np.random.default_rng(2).exponential(1.0, 200)
    assert cal.normal_tail(skewed)["model"] == "rejected"
    assert cal.normal_tail(np.ones(30))["model"] == "no spread"
    assert cal.normal_tail([1.0, 2.0, 3.0])["model"] == "too few"
    row = cal.decision_row("d", list(skewed), [True] * 200)  # no kind: no log-ratio model
    assert row["bound_from"] == "clopper-pearson" and row["bound"] == cal.clopper_pearson_upper(0, 200)


def _log_normal_margins(rng, size, mu=-3.0, sigma=0.5):
    """at_most margins 1 - v / t of a log-normal ratio v / t = exp(N(mu, sigma^2))."""
    return 1.0 - np.exp(rng.normal(mu, sigma, size))


def test_a_log_normal_ratio_is_modelled_on_its_log():
    margins = _log_normal_margins(np.random.default_rng(21), 200)
    assert cal.normal_tail(margins)["model"] == "rejected"
    row = cal.decision_row("d", list(margins), [True] * 200, kind="at_most")
    logged = cal.normal_tail(np.log(1.0 - margins) * -1.0)
    assert row["bound_from"] == "log-normal tail" and row["model"] == "log-normal"
    assert row["bound"] == pytest.approx(logged["tail_upper"]) and row["bound"] < 1e-4
    # at_least: the ratio is 1 + m; skewed margins whose log is skewed too stay counted
    gamma = 1.0 + np.random.default_rng(22).gamma(0.3, 1.0, 200)
    assert cal.log_ratio_tail(gamma, "at_least")["model"] == "rejected"
    assert cal.decision_row("d", list(gamma), [True] * 200, kind="at_least")["bound_from"] == \
        "clopper-pearson"
    assert cal.log_ratio_tail(margins, "slope") is None  # no ratio for this kind
    assert cal.log_ratio_tail(np.append(margins, 1.0), "at_most") is None  # ratio 0


def test_a_decision_declared_on_the_log_scale_is_modelled_on_the_log_only():
    """A positive ratio spread over a decade, exp(N(3, 0.3^2)): its linear margins pass the
    normality check and give a tail of a few 1e-3 that the ratio cannot reach; declared
    ``scale="log"``, the row is the log-normal model's (the choice is the declaration, not the
    smaller bound), and the declaration travels from the check through the run's records."""
    rng = np.random.default_rng(31)
    ratios = np.exp(rng.normal(3.0, 0.3, 60))
    decisions = [dict(checks.at_least("rank", r, 1.0, scale="log").to_json(), role="precondition")
                 for r in ratios]
    assert all(d["detail"]["scale"] == "log" for d in decisions)
    assert "scale" not in checks.at_least("rank", 2.0, 1.0).to_json()["detail"]
    (declared,) = cal._decision_rows([{"decisions": [d]} for d in decisions], ("precondition",))
    assert declared["scale"] == "log" and declared["bound_from"] == "log-normal tail"
    assert declared["bound"] == pytest.approx(cal.normal_tail(np.log(ratios))["tail_upper"])
    # the same margins undeclared: the linear normal model decides when it is accepted
    undeclared = cal.decision_row("rank", list(ratios - 1.0), [True] * 60, kind="at_least")
    assert undeclared["bound_from"] == "normal tail" and undeclared["bound"] > 1e-3 > 1e-15 > declared["bound"]
    # declared, and the log is not normal either, at half a standard deviation from 0 (Cantelli no
    # better than the count): counted, and the row says the declared model failed
    skewed = np.expm1(np.random.default_rng(32).gamma(0.3, 1.0, 200))     # log ratio gamma: skewed
    row = cal.decision_row("rank", list(skewed), [True] * 200, kind="at_least", log_scale=True)
    assert row["model"] == "log-normal rejected" and row["bound_from"] == "clopper-pearson"


def test_a_declared_log_scale_keeps_ratios_below_the_float_resolution():
    """A final loss of 1e-28 +- a decade against a target of 1e-10, declared ``scale="log"``: its
    margin ``1 - measured / target`` is exactly 1 at every seed (no spread), but the log ratios
    formed from the records (`record_log_ratio`: ``log(target / max measured)``) are the model's."""
    from theorycheck.margins import record_log_ratio

    rng = np.random.default_rng(35)
    losses = [10.0 ** rng.normal(-28.0, 0.4, 3) for _ in range(60)]
    decisions = [dict(checks.at_most("loss reaches epsilon", x, 1e-10, scale="log").to_json(),
                      role="conclusion") for x in losses]
    assert {d["margin"] for d in decisions} == {1.0}
    logs = [np.log(1e-10 / x.max()) for x in losses]
    assert [record_log_ratio(d) for d in decisions] == pytest.approx(logs, rel=1e-12)
    (row,) = cal._decision_rows([{"decisions": [d]} for d in decisions], ("conclusion",))
    assert row["bound_from"] == "log-normal tail"
    assert row["bound"] == pytest.approx(cal.normal_tail(logs)["tail_upper"]) and row["bound"] < 1e-12
    # at_least with a margin: the ratio (measured + 2 margin) / (bound + margin), as from the margin
    record = checks.at_least("rank", [3.0, 5.0], 2.0, margin=0.5).to_json()
    assert record_log_ratio(record) == pytest.approx(np.log(1.0 + record["margin"]))
    assert record_log_ratio(checks.slope("s", [1, 2, 4], [1, 2, 4], window=(1, 4), at_least=0.5).to_json()) is None


@pytest.mark.parametrize("draw, true_rate", [
    (lambda rng, n: 20.0 - (rng.pareto(2.2, n) + 1.0), 20.0 ** -2.2),        # no fourth moment
    (lambda rng, n: 50.0 - np.exp(1.5 * rng.standard_normal(n)), stats.norm.sf(np.log(50.0) / 1.5)),
])
def test_cantelli_bound_covers_the_true_rate_of_heavy_left_tails(draw, true_rate):
    """Over 1000 samples of 50 margins whose left tail is heavy, the bound falls below the true
    P[X < 0] at most at its nominal 5% (plus 3 binomial standard errors)."""
    rng = np.random.default_rng(34)
    below = [cal.cantelli_tail(draw(rng, 50)) < true_rate for _ in range(1000)]
    assert np.mean(below) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 1000)


def test_cantelli_is_the_bound_after_the_shape_models_are_rejected():
    """Round-off errors against a tolerance 1e4 above them: margins 1 - err/tol, skewed on both
    scales; 50 of them at thousands of standard deviations are bounded by Cantelli's inequality
    (at the limits, with the kurtosis's degrees of freedom) and not by the count."""
    rng = np.random.default_rng(35)
    errors = 1e-16 * rng.choice([0.0, 1.0, 2.0, 4.0], size=50, p=[0.55, 0.3, 0.1, 0.05])
    margins = list(1.0 - (errors + 1e-17) / 1e-12)
    row = cal.decision_row("closed form equals autograd", margins, [True] * 50, kind="at_most")
    assert row["normality_p"] < cal.NORMALITY_ALPHA and row["model"] == row["bound_from"] == "Cantelli"
    assert row["bound"] == cal.cantelli_tail(margins) < 1e-6 < cal.clopper_pearson_upper(0, 50)
    m = np.array(margins)
    n, mean, sd = 50, m.mean(), m.std(ddof=1)
    dof = 2 / (2 / 49 + max(stats.kurtosis(m, bias=False), 0) / 50)
    low, high = mean - stats.t.ppf(0.975, 49) * sd / np.sqrt(n), sd * np.sqrt(dof / stats.chi2.ppf(0.025, dof))
    assert row["bound"] == pytest.approx(high ** 2 / (high ** 2 + low ** 2), rel=1e-9)
    # an accepted model is never replaced, and no spread or a failure leaves counting
    normal = cal.decision_row("x", list(rng.normal(5.0, 1.0, 50)), [True] * 50, kind="at_least")
    assert normal["bound_from"] == "normal tail"
    assert cal.cantelli_tail([1.0] * 50) is None and cal.cantelli_tail([1.0, 2.0]) is None
    failed = cal.decision_row("x", margins[:-1] + [-0.1], [True] * 49 + [False], kind="at_most")
    assert failed["bound_from"] == "clopper-pearson"


def test_a_stated_tail_bound_is_the_decisions_bound_unless_a_failure_contradicts_it():
    """A full-rank test against round-off, its margin spanning decades (log of the ratio not
    normal): counted without the statement; with a TailBound declared at every seed the row takes
    the stated probability, and the declaration travels from the check through the records."""
    skewed = np.expm1(np.random.default_rng(33).gamma(0.3, 1.0, 60))
    stated = TailBound(1e-20, "condition-number tail of a Gaussian draw")
    decisions = [dict(checks.at_least("rank", 1.0 + r, 1.0, scale="log", tail_bound=stated).to_json(),
                      role="precondition") for r in skewed]
    assert decisions[0]["detail"]["tail_bound"] == {"probability": 1e-20,
                                                    "reason": "condition-number tail of a Gaussian draw"}
    (row,) = cal._decision_rows([{"decisions": [d]} for d in decisions], ("precondition",))
    assert row["bound_from"] == row["model"] == "stated bound" and row["bound"] == 1e-20
    assert row["margin_min"] == pytest.approx(skewed.min())
    # one seed without the declaration (a run kept from before it): no stated bound
    (mixed,) = cal._decision_rows([{"decisions": [d]} for d in decisions[:-1]]
                                  + [{"decisions": [dict(decisions[-1], detail={})]}], ("precondition",))
    assert mixed["bound_from"] == "clopper-pearson"
    # a failure contradicts the statement: counted, and said
    failed = cal.decision_row("rank", list(skewed) + [-0.5], [True] * 60 + [False], kind="at_least",
                              stated=1e-20)
    assert failed["model"] == "stated bound contradicted" and failed["bound_from"] == "clopper-pearson"
    with pytest.raises(InvalidInputError, match="tail_bound must be a theorycheck.tails.TailBound"):
        checks.at_least("rank", 2.0, 1.0, tail_bound=1e-20)


def _null_rows(statistics_per_seed, test):
    """The row of a two-sided NullTest decision recorded once per seed on these statistics."""
    decisions = [dict(checks.at_most("z family", np.abs(z), test.critical, tail_bound=test.tail_bound).to_json(),
                      role="conclusion") for z in statistics_per_seed]
    (row,) = cal._decision_rows([{"decisions": [d]} for d in decisions], ("conclusion",))
    return row


@settings(max_examples=50, deadline=None)
@given(level=st.floats(1e-8, 0.5), count=st.integers(1, 10_000),
       law=st.sampled_from([("normal", None), ("t", 3.0), ("t", 40.0)]), sided=st.sampled_from(SIDES))
def test_a_null_tests_critical_value_spends_its_level_evenly_over_the_family(level, count, law, sided):
    """Bonferroni: each statistic's rejection probability under the null is level / count."""
    test = NullTest(level, count, null=law[0], df=law[1], sided=sided)
    dist = stats.norm() if law[0] == "normal" else stats.t(law[1])
    each = (2 if sided == "two" else 1) * dist.sf(test.critical)
    assert each * count == pytest.approx(level, rel=1e-6)
    assert test.tail_bound.probability == level and test.tail_bound.null == test.spec


def test_a_null_tests_level_covers_a_correlated_family_and_its_fit_is_checked():
    """Coverage, by simulation: families of 20 equicorrelated N(0, 1) statistics (rho 0.5, as
    the entries of one estimated matrix) are falsely rejected at most at the level (Bonferroni
    needs only the marginals); the calibration takes the level where the pooled statistics fit
    the null or lie inside it (a conservative test), and not where they lie outside it (a
    standard error underestimated by a third, heavy tails: its margins are then modelled as any decision's) or are too few to
    check (counted)."""
    rng = np.random.default_rng(2026)
    test = NullTest(0.05, 20)
    shared = rng.standard_normal((40_000, 1))
    families = np.sqrt(0.5) * shared + np.sqrt(0.5) * rng.standard_normal((40_000, 20))
    rejected = np.mean(np.abs(families).max(axis=1) > test.critical)
    assert rejected <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 40_000)
    strict = NullTest(1e-4, 20)
    fits = _null_rows(rng.standard_normal((60, 20)), strict)
    assert fits["model"] == fits["bound_from"] == "stated bound" and fits["bound"] == 1e-4
    assert fits["null_p"] >= cal.NORMALITY_ALPHA
    for wrong in (1.5 * rng.standard_normal((60, 20)), rng.standard_t(3, (60, 20))):
        wrong = np.clip(wrong, -strict.critical, strict.critical)  # every seed passes: only the fit decides
        row = _null_rows(wrong, strict)
        assert row["null_p"] < cal.NORMALITY_ALPHA and row["bound_from"] != "stated bound", row
    # a tail too heavy for the level but too thin a part of the law for KS: 3% of the statistics
    # at 3.5 (the null puts 1% beyond 2.58)
    body = np.abs(rng.standard_normal(1200))
    body[:36] = 3.5
    assert stats.kstest(body, lambda x: 2 * stats.norm.cdf(x) - 1).pvalue >= cal.NORMALITY_ALPHA
    assert _null_rows(body.reshape(60, 20), strict)["null_p"] < cal.NORMALITY_ALPHA
    # a conservative test (statistics stochastically inside the null's: an overestimated standard
    # error) keeps its level
    assert _null_rows(0.7 * rng.standard_normal((60, 20)), strict)["bound_from"] == "stated bound"
    few = _null_rows(rng.standard_normal((3, 2)), strict)
    assert few["model"] == "null unchecked" and few["bound_from"] == "clopper-pearson" and few["null_p"] is None


def test_a_null_test_outside_its_rejection_region_or_malformed_is_a_clear_error():
    test = NullTest(1e-4, 5, null="t", df=15, sided="lower")
    checks.at_least("t family", [0.3, -1.0], -test.critical, tail_bound=test.tail_bound)
    for bad in (lambda: checks.at_most("t family", [0.3], test.critical, tail_bound=test.tail_bound),
                lambda: checks.at_least("t family", [0.3], -test.critical, margin=0.1, tail_bound=test.tail_bound),
                lambda: checks.at_least("t family", [0.3], -3.0, tail_bound=test.tail_bound)):
        with pytest.raises(InvalidInputError, match="NullTest is decided by at_least"):
            bad()
    for kwargs, what in ((dict(level=0.0, count=3), "level"), (dict(level=0.1, count=0), "count"),
                         (dict(level=0.1, count=3, null="t"), "df is required"),
                         (dict(level=0.1, count=3, df=4), "df is required"),
                         (dict(level=0.1, count=3, null="cauchy"), "null must be"),
                         (dict(level=0.1, count=3, sided="left"), "sided must be")):
        with pytest.raises(InvalidInputError, match=what):
            NullTest(**kwargs)


def test_an_unknown_scale_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="scale must be one of"):
        checks.at_most("x", 1.0, 2.0, scale="logit")


def test_a_control_breaking_one_ratio_conclusion_is_modelled_on_the_ratio_it_breaks():
    """The control's conclusion at_most(v, 1) fails with v log-normal above 1: its miss (v <= 1)
    is modelled on log v."""
    ratios = np.exp(np.random.default_rng(26).normal(1.5, 0.4, 200))
    runs = []
    for v in ratios:
        broken = dict(checks.at_most("a", v, 1.0).to_json(), role="conclusion")
        control = {"outcome": "failed_as_expected", "decisions": [broken],
                   "failed_preconditions": [], "name": "wrong", "kind": "reference", "breaks": ["a"]}
        claim_case = dict(_case("passed", {"a": 1.0}), id="toy.thm1.x", controls=[control])
        runs.append({"claims": [claim_case]})
    row = cal.calibrate_rows(runs, list(range(1000, 1200)))["toy.thm1.x"]["controls"]["wrong"]
    (declared,) = row["decisions"]
    assert cal.normal_tail([1.0 - v for v in ratios])["model"] == "rejected"
    assert declared["bound_from"] == "log-normal tail" and declared["kind"] == "at_most"
    assert declared["bound"] == pytest.approx(cal.normal_tail(np.log(ratios))["tail_upper"])


def test_log_normal_tail_covers_the_true_rate():
    """Over 300 samples of 30 log-normal ratios (log mean -1, sd 0.4), the 95% bound is below
    the true rate P[ratio > 1] = Phi(-2.5) in at most about 5%."""
    rng = np.random.default_rng(25)
    truth = stats.norm.sf(2.5)
    below = sum(cal.log_ratio_tail(_log_normal_margins(rng, 30, -1.0, 0.4), "at_most")["tail_upper"]
                < truth for _ in range(300))
    assert below <= 0.05 * 300 + 3 * np.sqrt(300 * 0.05 * 0.95)


def _binomial_records(successes, trials, p=0.8, alpha=0.05):
    return [dict(checks.binomial("b", np.arange(trials) < k, p=p, alpha=alpha).to_json(),
                 role="conclusion") for k in successes]


def test_pooled_trials_bounds_the_failure_rate_at_the_pooled_rate_lower_bound():
    records = _binomial_records([58, 60, 59, 60] * 5, 60)
    model = cal.pooled_trials(records)
    low = 1 - cal.clopper_pearson_upper(3 * 5, 60 * 20)
    c = checks.critical_count(60, 0.8, 0.05)
    assert model["model"] == "pooled trials" and model["rate"] == pytest.approx(1 - 15 / 1200)
    assert model["tail_upper"] == pytest.approx(stats.binom.cdf(c, 60, low))
    passes = cal.pooled_trials(records, side="passes")  # a control that must fail the test
    assert passes["tail_upper"] == pytest.approx(
        stats.binom.sf(c, 60, cal.clopper_pearson_upper(1185, 1200)))
    with pytest.raises(ValueError, match="side"):
        cal.pooled_trials(records, side="misses")


def test_pooled_trials_covers_the_true_failure_rate():
    """Over 200 calibrations of 20 seeds x 20 trials at theta = 0.9 (test of P >= 0.8 at 5%),
    the bound falls below the true failure rate in at most about 5%."""
    rng = np.random.default_rng(23)
    c = checks.critical_count(20, 0.8, 0.05)
    truth = stats.binom.cdf(c, 20, 0.9)
    below = sum(cal.pooled_trials(_binomial_records(rng.binomial(20, 0.9, 20), 20))["tail_upper"]
                < truth for _ in range(200))
    assert below <= 0.05 * 200 + 3 * np.sqrt(200 * 0.05 * 0.95)


def test_over_dispersed_counts_get_the_beta_binomial_model():
    """Trials sharing an instance: a per-seed rate drawn from Beta(2, 0.2) (mean 0.91).  The
    pooled model is rejected, the beta-binomial model accepted, and its bound is at least the
    true failure rate of the test of P >= 0.5 over 40 trials."""
    rng = np.random.default_rng(24)
    counts = rng.binomial(40, rng.beta(2.0, 0.2, 50))
    records = _binomial_records(counts, 40, p=0.5)
    model = cal.pooled_trials(records)
    truth = stats.betabinom.cdf(checks.critical_count(40, 0.5, 0.05), 40, 2.0, 0.2)
    assert model["model"] == "beta-binomial" and model["dispersion_p"] < cal.NORMALITY_ALPHA
    assert truth <= model["tail_upper"] < 1
    row = cal.decision_row("b", [1.0] * 50, [True] * 50, kind="binomial", pooled=model)
    assert row["bound_from"] == "beta-binomial"
    assert row["bound"] == pytest.approx(min(model["tail_upper"], cal.clopper_pearson_upper(0, 50)))
    assert cal.pooled_trials(records[:5])["model"] == "too few"


def test_beta_binomial_bound_covers_the_true_failure_rate():
    """Over 100 calibrations of 50 seeds x 20 trials with Beta(8, 0.6) rates (test of P >= 0.6
    at 5%, true failure rate 7.9e-4), the bound falls below the truth in at most about 5%."""
    rng = np.random.default_rng(27)
    n, c = np.full(50, 20), np.full(50, checks.critical_count(20, 0.6, 0.05))
    truth = stats.betabinom.cdf(c[0], 20, 8.0, 0.6)
    models = [cal.beta_binomial_trials(rng.binomial(n, rng.beta(8.0, 0.6, 50)), n, c) for _ in range(100)]
    assert sum(m["model"] == "beta-binomial" for m in models) >= 95
    below = sum(m["tail_upper"] < truth for m in models if m["model"] == "beta-binomial")
    assert below <= 0.05 * 100 + 3 * np.sqrt(100 * 0.05 * 0.95)


def test_counts_no_beta_binomial_fits_are_counted():
    """Half the seeds at every trial, half near a rate of 0.5 over 200 trials: no Beta law of the
    rates gives those counts (the normal scores of their probability-integral transforms fail
    Shapiro-Wilk), so the decision is counted."""
    rng = np.random.default_rng(5)
    counts = np.where(np.arange(30) % 2 == 0, 200, rng.binomial(200, 0.5, 30))
    records = _binomial_records(counts, 200, p=0.3)
    model = cal.pooled_trials(records)
    assert model["model"] == "over-dispersed" and model["tail_upper"] is None
    row = cal.decision_row("b", [1.0] * 30, [True] * 30, kind="binomial", pooled=model)
    assert row["bound_from"] == "clopper-pearson" and row["model"] == "over-dispersed"


def test_beta_binomial_bound_of_a_control_that_must_fail_the_test():
    """side="passes": the bound on passing the test (a control's miss) from over-dispersed
    counts far below the test's rate is small and at least the fitted model's own pass rate."""
    rng = np.random.default_rng(26)
    k = rng.binomial(40, rng.beta(0.5, 4.0, 40))
    n, c = np.full(40, 40), np.full(40, checks.critical_count(40, 0.9, 0.05))
    model = cal.beta_binomial_trials(k, n, c, side="passes")
    a, b = model["a"], model["b"]
    assert model["model"] == "beta-binomial"
    assert stats.betabinom.sf(c[0], 40, a, b) <= model["tail_upper"] < 1e-2


def test_decision_row_uses_the_tail_without_failures_and_counts_them_otherwise():
    margins = list(np.random.default_rng(3).normal(6.0, 1.0, 50))
    fine = cal.decision_row("d", margins, [True] * 50)
    assert fine["bound_from"] == "normal tail" and fine["bound"] < 1e-3
    failed = cal.decision_row("d", margins[:-1] + [-0.1], [True] * 49 + [False])
    assert failed["bound_from"] == "clopper-pearson" and failed["failures"] == 1
    assert failed["bound"] == pytest.approx(cal.clopper_pearson_upper(1, 50))


def test_margins_far_from_one_or_not_finite_give_a_finite_row():
    margins = np.random.default_rng(12).normal(6.0, 1.0, 30)
    small = cal.decision_row("d", list(margins), [True] * 30)
    huge = cal.decision_row("d", list(margins * 1e200), [True] * 30)  # x^2 overflows float64
    assert huge["sigmas"] == pytest.approx(small["sigmas"])
    assert huge["bound"] == pytest.approx(small["bound"]) and huge["bound_from"] == "normal tail"
    assert huge["margin_sd"] == pytest.approx(1e200 * small["margin_sd"])
    with_inf = cal.decision_row("d", list(margins[:-1]) + [float("inf")], [True] * 30)
    assert with_inf["bound_from"] == "clopper-pearson" and np.isfinite(with_inf["margin_mean"])
    json.dumps(with_inf, allow_nan=False)


# -- rows from runs --------------------------------------------------------------------------
def _decision(name, margin, role="conclusion"):
    """A recorded decision with this margin: at_least(margin, 0), whose margin is the slack."""
    return dict(checks.at_least(name, margin, 0.0).to_json(), role=role)


def _case(outcome, margins, role="conclusion", **extra):
    decisions = [_decision(n, m, role) for n, m in margins.items()]
    return {"outcome": outcome, "decisions": decisions, "failed_preconditions": [], **extra}


def _runs(n, rng):
    runs = []
    for _ in range(n):
        a, b = rng.normal(5.0, 1.0), rng.normal(6.0, 1.0)
        control = _case("failed_as_expected", {"a": -a, "b": b}, name="wrong", kind="reference",
                        breaks=["a"])
        runs.append({"claims": [dict(_case("passed", {"a": a, "b": b}), id="toy.thm1.x",
                                     controls=[control])]})
    return runs


def test_claim_bound_is_the_union_of_its_decisions_and_a_control_row_its_miss_bound():
    runs = _runs(50, np.random.default_rng(4))
    rows = cal.calibrate_rows(runs, list(range(1000, 1050)))
    claim_row = rows["toy.thm1.x"]["claim"]
    parts = {p["name"]: p for p in claim_row["decisions"]}
    assert claim_row["seeds"] == "1000-1049" and claim_row["failures"] == 0
    assert parts["a"]["bound_from"] == parts["b"]["bound_from"] == "normal tail"
    assert claim_row["bound"] == pytest.approx(parts["a"]["bound"] + parts["b"]["bound"])
    assert claim_row["weakest"] == "a" and claim_row["within_budget"] == (claim_row["bound"] <= 3e-4)
    control = rows["toy.thm1.x"]["controls"]["wrong"]
    (declared,) = control["decisions"]
    assert declared["name"] == "fails as declared" and declared["margin_mean"] > 4
    assert declared["bound_from"] == "normal tail" and control["bound"] == declared["bound"]
    assert control["budget"] == cal.CONTROL_BUDGET


def _two_element_control_runs(rng, seeds, steady_mean=0.010, steady_sd=0.0025, noisy_sd=0.03):
    """A control breaking at_most(gaps, 0) over two elements: one gap steadily above 0, one
    noisy around 0 -- the control misses only when both are <= 0."""
    runs = []
    for _ in range(seeds):
        gaps = [rng.normal(0.0, noisy_sd), rng.normal(steady_mean, steady_sd)]
        broken = dict(checks.at_most("gap", gaps, 0.0).to_json(), role="conclusion")
        control = {"outcome": "failed_as_expected" if max(gaps) > 0 else "passed", "decisions": [broken],
                   "failed_preconditions": [], "name": "wrong", "kind": "reference", "breaks": ["gap"]}
        runs.append({"claims": [dict(_case("passed", {"a": 1.0}), id="toy.thm1.x", controls=[control])]})
    return runs


def test_a_control_is_bounded_through_its_steadiest_element_with_bonferroni():
    """The miss needs every element to hold, so the steady element bounds it; its bound is the
    element's own model at confidence 1 - 0.05/2, and sharper than the model of the maximum."""
    rng = np.random.default_rng(31)
    runs = _two_element_control_runs(rng, 80)
    row = cal.calibrate_rows(runs, list(range(1000, 1080)))["toy.thm1.x"]["controls"]["wrong"]
    (declared,) = row["decisions"]
    assert declared["bound_from"].startswith("least element (gap [1]): ")
    element = declared["element"]
    assert element["name"] == "gap [1]"
    steady = [float(r["claims"][0]["controls"][0]["decisions"][0]["measured"][1]) for r in runs]
    expected = cal.normal_tail(steady, confidence=1 - 0.05 / 2)["tail_upper"]
    assert element["bound"] == pytest.approx(min(expected, cal.clopper_pearson_upper(0, 80, 1 - 0.05 / 2)))
    assert declared["bound"] == element["bound"] < cal.normal_tail(
        [max(r["claims"][0]["controls"][0]["decisions"][0]["measured"]) for r in runs])["tail_upper"]
    assert row["bound"] == declared["bound"] <= cal.CONTROL_BUDGET


def test_the_least_element_bound_covers_the_true_miss_rate():
    """Over repeated blocks, the least-element bound is below the true miss rate (about
    P[N(0.01, 0.005) <= 0] / 2) in at most about 5% of them."""
    true_miss = stats.norm.cdf(0, 0.01, 0.005) * 0.5
    low = 0
    for block in range(60):
        rng = np.random.default_rng(5000 + block)
        runs = _two_element_control_runs(rng, 50, steady_sd=0.005)
        row = cal.calibrate_rows(runs, list(range(1000, 1050)))["toy.thm1.x"]["controls"]["wrong"]
        low += row["bound"] < true_miss
    assert low <= 8


def test_a_conclusion_whose_element_count_varies_is_not_split():
    rng = np.random.default_rng(2)
    runs = _two_element_control_runs(rng, 30)
    extra = dict(checks.at_most("gap", [0.5, 0.5, 0.5], 0.0).to_json(), role="conclusion")
    runs[0]["claims"][0]["controls"][0]["decisions"] = [extra]
    assert cal._element_columns([r["claims"][0]["controls"][0] for r in runs], ["gap"]) == []


def test_element_margins_are_the_per_element_rooms_whose_least_is_the_margin():
    from theorycheck.margins import element_margins, record_margin
    record = checks.at_most("gap", [0.2, -0.1, 0.05], 0.0).to_json()
    assert element_margins(record).tolist() == pytest.approx([-0.2, 0.1, -0.05])
    assert element_margins(record).min() == record_margin(record)
    close = checks.close("c", [1.0, 2.0], [1.0, 2.1], rtol=0.1).to_json()
    assert element_margins(close).min() == pytest.approx(record_margin(close))
    slope = checks.slope("s", [1, 2, 4, 8], [1, 0.5, 0.25, 0.125], window=(1, 8), at_most=-0.5).to_json()
    assert element_margins(slope).tolist() == [record_margin(slope)]


def test_a_failure_without_a_failing_decision_is_bounded_by_counting():
    runs = _runs(50, np.random.default_rng(5))
    runs[0]["claims"][0]["outcome"] = "error"
    row = cal.calibrate_rows(runs, list(range(1000, 1050)))["toy.thm1.x"]["claim"]
    assert row["failures"] == 1 and not row["within_budget"]
    assert row["bound"] == pytest.approx(cal.clopper_pearson_upper(1, 50))


def test_decisions_without_a_tail_model_share_one_count():
    runs = _runs(50, np.random.default_rng(9))
    for run in runs:  # two boolean decisions: no margin to model
        run["claims"][0]["decisions"] += [dict(checks.holds(n, True).to_json(), role="conclusion")
                                          for n in ("p", "q")]
    row = cal.calibrate_rows(runs, list(range(1000, 1050)))["toy.thm1.x"]["claim"]
    modelled = sum(p["bound"] for p in row["decisions"] if p["bound_from"] == "normal tail")
    # the union (tails + one count) exceeds the count alone, which bounds every failure too
    assert 0 < modelled and row["bound"] == pytest.approx(cal.clopper_pearson_upper(0, 50))


def _structural(name, margin, computed_before):
    """An at_least decision recorded after ``computed_before`` computations of its case."""
    decision = _decision(name, margin, role="precondition")
    return dict(decision, detail={**decision["detail"], "computed_before": computed_before})


def test_a_decision_made_before_any_computation_is_seed_independent():
    runs = _runs(50, np.random.default_rng(10))
    for run in runs:  # fixed by the configuration: the same margin at every seed
        run["claims"][0]["decisions"].append(_structural("k < p", 2.0, computed_before=0))
    row = cal.calibrate_rows(runs, list(range(1000, 1050)))["toy.thm1.x"]["claim"]
    parts = {p["name"]: p for p in row["decisions"]}
    assert parts["k < p"]["bound_from"] == parts["k < p"]["model"] == "seed-independent"
    assert parts["k < p"]["bound"] == 0.0
    # the claim's bound is its tails' union, not the count a margin without spread forces
    assert row["bound"] == pytest.approx(parts["a"]["bound"] + parts["b"]["bound"])
    assert row["bound"] < cal.clopper_pearson_upper(0, 50)


@pytest.mark.parametrize("computed_before, bound_from", [(0, "seed-independent"),
                                                         (2, "clopper-pearson")])
def test_a_hypothesis_control_violating_a_configuration_fact_cannot_miss(computed_before, bound_from):
    """The control's failed precondition decided before any computation at every seed: it
    violates the hypothesis whatever the draws (another, seeded precondition varies)."""
    rng = np.random.default_rng(13)
    runs = []
    for _ in range(50):
        decisions = [_structural("n1 >= s0", -0.5, computed_before),
                     _structural("sigma_min > 0", rng.normal(3.0, 1.0), computed_before=4)]
        control = {"outcome": "failed_as_expected", "decisions": decisions,
                   "failed_preconditions": ["n1 >= s0"], "name": "narrow", "kind": "hypothesis",
                   "breaks": []}
        runs.append({"claims": [dict(_case("passed", {"a": 1.0}), id="toy.thm1.x",
                                     controls=[control])]})
    row = cal.calibrate_rows(runs, list(range(1000, 1050)))["toy.thm1.x"]["controls"]["narrow"]
    part = next(p for p in row["decisions"] if p["name"] == "violates a hypothesis")
    assert part["bound_from"] == bound_from and part["margin_mean"] == pytest.approx(0.5)


@pytest.mark.parametrize("seeded_before, bound_from", [(0, "seed-independent"), (1, "clopper-pearson")])
def test_only_computations_that_carry_the_seed_make_a_decision_seeded(seeded_before, bound_from):
    """Decided after solver calls or a seedless run (``computed_before`` 3) but no draw:
    seed-independent; after a draw as well: counted."""
    runs = _runs(50, np.random.default_rng(12))
    for run in runs:
        decision = _structural("k < p", 2.0, computed_before=3)
        decision["detail"]["seeded_before"] = seeded_before
        run["claims"][0]["decisions"].append(decision)
    row = cal.calibrate_rows(runs, list(range(1000, 1050)))["toy.thm1.x"]["claim"]
    part = next(p for p in row["decisions"] if p["name"] == "k < p")
    assert part["bound_from"] == bound_from


@pytest.mark.parametrize("computed_before, margins, model", [
    (0, [2.0] * 49 + [2.5], "lineage contradicted"),  # lineage says fixed, numbers differ
    (3, [2.0] * 50, "no spread"),                      # decided after a draw: counted
])
def test_a_decision_after_a_computation_or_with_varying_margins_is_counted(
        computed_before, margins, model):
    runs = _runs(50, np.random.default_rng(11))
    for run, margin in zip(runs, margins):
        run["claims"][0]["decisions"].append(_structural("k < p", margin, computed_before))
    row = cal.calibrate_rows(runs, list(range(1000, 1050)))["toy.thm1.x"]["claim"]
    part = next(p for p in row["decisions"] if p["name"] == "k < p")
    assert part["model"] == model and part["bound_from"] == "clopper-pearson"
    assert row["bound"] == pytest.approx(cal.clopper_pearson_upper(0, 50))


def test_control_misses_are_counted_with_their_bound():
    runs = _runs(50, np.random.default_rng(6))
    control = runs[3]["claims"][0]["controls"][0]
    control["outcome"] = "passed_unexpectedly"
    control["decisions"][0] = _decision("a", 0.2)
    row = cal.calibrate_rows(runs, list(range(1000, 1050)))["toy.thm1.x"]["controls"]["wrong"]
    assert row["failures"] == 1 and row["bound"] == pytest.approx(cal.clopper_pearson_upper(1, 50))
    assert row["outcomes"] == {"failed_as_expected": 49, "passed_unexpectedly": 1}
    assert not row["within_budget"]


# -- the table -------------------------------------------------------------------------------
def test_a_row_whose_decisions_changed_since_calibration_is_marked_stale():
    rows = cal.calibrate_rows(_runs(20, np.random.default_rng(6)), list(range(1000, 1020)))
    table = {"tier": "quick", "claims": rows}
    (run,) = _runs(1, np.random.default_rng(7))
    claim_case = run["claims"][0]
    claim_case["decisions"][1] = _decision("b, renamed", 1.0)
    cal.attach_bounds(dict(run, tier="quick"), table)
    assert claim_case["calibrated"]["changed_decisions"] == ["b", "b, renamed"]
    assert "STALE, decisions changed since: b, b, renamed" in claim_case["calibrated"]["text"]
    assert "STALE" not in claim_case["controls"][0]["calibrated"]["text"]


def test_table_merges_by_claim_id_and_is_written_atomically(tmp_path):
    rows = cal.calibrate_rows(_runs(50, np.random.default_rng(8)), list(range(1000, 1050)))
    other = {"toy.thm2.y": dict(rows["toy.thm1.x"])}
    path = tmp_path / "calibration-quick.json"
    cal.write_table(path, cal.merge_table(cal.load_table(path), other, "quick"))
    cal.write_table(path, cal.merge_table(cal.load_table(path), rows, "quick", commit="abc"))
    table = cal.load_table(path)
    assert list(table["claims"]) == ["toy.thm1.x", "toy.thm2.y"]
    assert table["claims"]["toy.thm1.x"]["commit"] == "abc"
    assert table["claims"]["toy.thm2.y"]["commit"] is None
    assert [p.name for p in tmp_path.iterdir()] == ["calibration-quick.json"]  # no leftovers
    with pytest.raises(UsageError, match="full tier"):
        cal.merge_table(cal.merge_table({}, rows, "full"), rows, "quick")
    page = cal.table_markdown([table])
    assert "## quick tier" in page and "`toy.thm1.x`" in page and "control `wrong`" in page


def test_calibrate_keeps_rows_another_calibrate_wrote_while_its_seeds_ran(tmp_path, monkeypatch):
    """The table is read again after the seeds ran: a second ``theorycheck calibrate`` that
    finished meanwhile keeps its rows (a lost update before)."""
    from theorycheck import cli as cli_module

    out = tmp_path / "calibration-quick.json"
    other = cal.calibrate_rows(_runs(20, np.random.default_rng(11)), list(range(3000, 3020)))

    def runs_while_another_writes(seeds, args, work, jobs, progress):
        cal.write_table(out, cal.merge_table(cal.load_table(out), {"toy.thm2.y": other["toy.thm1.x"]},
                                             "quick"))
        return {s: work / f"seed{s}" / "results.json" for s in seeds}

    monkeypatch.setattr(sweep, "run_seeds", runs_while_another_writes)
    monkeypatch.setattr(sweep, "load_runs", lambda found: [
        dict(r, tier="quick", commit="abc") for r in _runs(len(found), np.random.default_rng(12))])
    monkeypatch.setattr(cli_module, "_calibration_targets", lambda names, claims_dir: ([{"id": "toy.thm1.x"}], []))
    main(["calibrate", "toy.thm1.x", "--seeds", "1000-1019", "--out", str(out),
          "--markdown", str(tmp_path / "calibration.md"), "--runs", str(tmp_path / "runs")])
    assert list(cal.load_table(out)["claims"]) == ["toy.thm1.x", "toy.thm2.y"]


@pytest.mark.parametrize("content", ["{oops", '{"version": 99, "claims": {}}', "[]"])
def test_a_file_that_is_no_table_is_a_usage_error(tmp_path, content):
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(UsageError, match="not a calibration table"):
        cal.load_table(path)


def test_spent_seeds_are_refused_by_name():
    with pytest.raises(UsageError, match="seeds 15-19 are spent"):
        cal.check_unspent(range(15, 30), "--seeds")
    cal.check_unspent(range(20, 30), "--seeds")
    assert cal.format_seeds([5, 1, 2, 3, 9, 10]) == "1-3,5,9-10"


# -- the structured record -------------------------------------------------------------------
GOOD = dict(decision="gap", threshold=0.05, calibration_seeds="1000-1049",
            validation_seeds="2000-2049", how="mean - 6 sd of the margins")


@pytest.mark.parametrize("change, fragment", [
    ({"validation_seeds": "1040-1089"}, "share seeds [1040"),
    ({"calibration_seeds": "10-59"}, "spent seeds [10"),
    ({"validation_seeds": "20-x"}, "validation_seeds: seeds '20-x'"),
    ({"how": " "}, "how must say"),
    ({"threshold": float("nan")}, "finite number or a description"),
    ({"decision": ""}, "decision must name"),
    ({"tier": "medium"}, "tier must be one of ['quick', 'full']"),
])
def test_calibrated_record_names_what_is_wrong_at_declaration(change, fragment):
    record = Calibrated(**{**GOOD, **change})
    assert any(fragment in p for p in record.problems()), record.problems()
    with pytest.raises(DeclarationError, match="toy.thm9.calibrated"):
        claim("toy.thm9.calibrated", source="Theorem 9", statement="s", provenance="stated",
              controls={"c": Control("reference", ["gap"], "d")}, calibration=[record])(lambda tc: None)


def test_calibrated_record_is_listed_beside_plain_text():
    from theorycheck.claim import registry

    claim("toy.thm9.recorded", source="Theorem 9", statement="s", provenance="stated",
          controls={"c": Control("reference", ["gap"], "d")},
          calibration=["an older note", Calibrated(**GOOD)])(lambda tc: None)
    spec = registry.pop("toy.thm9.recorded").to_json()
    assert spec["calibration"][0] == "an older note"
    assert "calibrated on seeds 1000-1049, validated on seeds 2000-2049" in spec["calibration"][1]
    assert spec["calibration_records"] == [{**GOOD, "tier": "quick"}]
    assert Calibrated(**GOOD).problems() == []


# -- the sweep -------------------------------------------------------------------------------
def _sweep_runs(failures: int, control_misses: int = 0) -> list[dict]:
    runs = []
    for i in range(20):
        control = _case("passed_unexpectedly" if i < control_misses else "failed_as_expected",
                        {"a": -1.0}, name="wrong", kind="reference", breaks=["a"])
        case = _case("failed" if i < failures else "passed", {"a": -0.1 if i < failures else 1.0})
        runs.append({"claims": [dict(case, id="toy.thm1.x", controls=[control])]})
    return runs


def _table(claim_bound: float, control_bound: float) -> dict:
    return {"claims": {"toy.thm1.x": {"claim": {"bound": claim_bound},
                                      "controls": {"wrong": {"bound": control_bound}}}}}


def test_sweep_predicts_from_the_table_and_flags_only_inconsistent_counts():
    claim_entry, control_entry = sweep.aggregate(_sweep_runs(1, 1), _table(0.05, 0.05))
    assert claim_entry["prediction"] == "calibration" and claim_entry["predicted_pass_rate"] == 0.95
    assert not claim_entry["flaky"] and not control_entry["flaky"]  # 1 in 20 at rate 0.05
    claim_entry, control_entry = sweep.aggregate(_sweep_runs(1, 1), _table(3e-4, 1e-3))
    assert claim_entry["flaky"] and control_entry["flaky"]
    assert claim_entry["worst_margins"] == {"a": -0.1}
    assert any("worst margins a -0.1" in line for line in sweep.format_sweep([claim_entry]))


def test_sweep_without_a_row_keeps_the_statistical_prediction():
    claim_entry, control_entry = sweep.aggregate(_sweep_runs(1, 1))
    assert claim_entry["prediction"] == "statistical tests" and claim_entry["flaky"]
    assert control_entry["flaky"]  # no row: any miss


# -- through the command line ----------------------------------------------------------------
PAPER = '''
from theorycheck import Control, claim


@claim("toy.thm1.noisy_mean", source="Theorem 1", statement="The mean of 400 normals is near 0.",
       provenance="stated", constants={"bound": 0.5},
       over_budget="a handful of seeds bounds the rate by counting alone",
       controls={"shifted": Control("reference", breaks=["|mean| <= bound"],
                                    description="the draws shifted by 1")})
def test_noisy_mean(tc):
    shift = 1.0 if tc.control == "shifted" else 0.0
    draws = tc.rng("draws").normal(shift, 1.0, 400)
    tc.conclusion.at_most("|mean| <= bound", abs(draws.mean()), 0.5)
'''


def test_calibrate_end_to_end_then_list_and_report_show_the_bounds(pytester, monkeypatch, capsys):
    package = pytester.mkpydir("claims")
    (package / "toy").mkdir()
    (package / "toy" / "__init__.py").write_text("")
    (package / "toy" / "test_toy.py").write_text(PAPER)
    run = cli("calibrate", "toy", "--seeds", "1000-1004", "-n", "2", cwd=pytester.path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "toy.thm1.noisy_mean: false-failure bound" in run.stdout
    table = json.loads((pytester.path / "reports/calibration-quick.json").read_text())
    row = table["claims"]["toy.thm1.noisy_mean"]["claim"]
    assert row["seeds"] == "1000-1004" and row["runs"] == 5 and row["failures"] == 0
    (part,) = row["decisions"]
    assert part["margin_min"] > 0 and part["model"] == "too few"  # 5 seeds: counted only
    assert row["bound"] == pytest.approx(cal.clopper_pearson_upper(0, 5))
    assert "`toy.thm1.noisy_mean`" in (pytester.path / "docs/calibration.md").read_text()
    monkeypatch.chdir(pytester.path)  # the rest in this process: list answers from the manifest
    assert main(["list", "-v"]) == 0
    listed = capsys.readouterr().out
    assert "quick tier: false-failure bound 0.45 (5 seeds 1000-1004; OVER budget 3e-04)" in listed
    assert "over budget by design: a handful of seeds bounds the rate by counting alone" in listed
    assert "miss bound 0.45" in listed
    for args, error in ((["--seeds", "5-30"], "seeds 5-19 are spent"),
                        (["nope", "--seeds", "30"], "no claim or paper named 'nope'")):
        with pytest.raises(SystemExit, match=error):
            main(["calibrate", *args])
    # in its own process: another test of this worker may have imported the project's claims package
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "claims")
    md = (pytester.path / "reports/latest/report.md").read_text()
    assert "Calibrated: false-failure bound 0.45 (5 seeds 1000-1004" in md
    assert "over budget by design: a handful of seeds bounds the rate by counting alone" in md
    assert "calibrated: miss bound 0.45" in md


SHARED_PAPER = '''
from theorycheck import Control, claim, shared_run


@shared_run(sizes={"quick": {"n": 400}, "full": {"n": 4000}})
def draws(run):
    return run.rng("draws").normal(0.0, 1.0, run.sizes["n"])


CONTROLS = {"shifted": Control("reference", breaks=["|mean| <= bound"], description="shifted by 1")}


@claim("toy.thm1.mean", source="Theorem 1", statement="The mean is near 0.", provenance="stated",
       over_budget="a handful of seeds bounds the rate by counting alone", controls=CONTROLS)
def test_mean(tc):
    shift = 1.0 if tc.control == "shifted" else 0.0
    tc.conclusion.at_most("|mean| <= bound", abs(tc.use(draws).mean() + shift), 0.5)


@claim("toy.thm2.median", source="Theorem 2", statement="The median is near 0.", provenance="stated",
       over_budget="a handful of seeds bounds the rate by counting alone", controls=CONTROLS)
def test_median(tc):
    shift = 1.0 if tc.control == "shifted" else 0.0
    tc.conclusion.at_most("|mean| <= bound", abs(float(np.median(tc.use(draws))) + shift), 0.5)
'''


def _shared_sources(runs: Path, seed: int) -> set[str]:
    results = json.loads((runs / f"seed{seed}" / "results.json").read_text())
    return {use["source"] for c in results["claims"] for use in c["shared_runs"]}


def test_calibrate_reuses_shared_runs_only_from_a_cache_folder_it_is_given(pytester):
    """Without ``--cache-dir`` every seed computes its shared runs (and no cache folder is
    made); with it, a second claim calibrated on the same seed reads the run the first stored."""
    package = pytester.mkpydir("claims")
    (package / "toy").mkdir()
    (package / "toy" / "__init__.py").write_text("")
    (package / "toy" / "test_toy.py").write_text("import numpy as np\n" + SHARED_PAPER)
    cache = pytester.path / "calibration-cache"
    for claim_id, cache_args, runs, source in (
            ("toy.thm1.mean", [], "plain", {"computed"}),
            ("toy.thm1.mean", ["--cache-dir", str(cache)], "first", {"computed"}),
            ("toy.thm2.median", ["--cache-dir", str(cache)], "second", {"disk"})):
        run = cli("calibrate", claim_id, "--seeds", "1000", "--runs", runs, *cache_args,
                  cwd=pytester.path)
        assert run.returncode == 0, run.stdout + run.stderr
        assert _shared_sources(pytester.path / runs, 1000) == source
        assert cache.is_dir() == bool(cache_args)
    assert not (pytester.path / ".theorycheck-cache").exists()


def test_sweep_finds_its_table_by_tier_or_is_told_none(tmp_path, monkeypatch):
    from theorycheck.cli import _sweep_calibration

    monkeypatch.chdir(tmp_path)
    rows = cal.calibrate_rows(_runs(12, np.random.default_rng(10)), list(range(1000, 1012)))
    cal.write_table(tmp_path / "reports/calibration-full.json", cal.merge_table({}, rows, "full"))
    assert _sweep_calibration(None, ["claims", "--tc-tier", "full"])["tier"] == "full"
    assert _sweep_calibration(None, ["--tc-tier=quick"])["claims"] == {}  # no quick table yet
    assert _sweep_calibration("none", []) is None
    assert cal.calibrated_seeds(_sweep_calibration(None, ["--tc-tier", "full"])) == set(range(1000, 1012))
    with pytest.raises(UsageError, match="no such file"):
        _sweep_calibration("missing.json", [])


def _toy_claim_with_record(claim_file, decision: str, record_tier: str = "quick",
                           quick_only: str | None = None) -> None:
    """A toy claim whose `Calibrated` record names ``decision`` (of ``record_tier``); the claim
    also decides ``quick_only`` when it runs at the quick tier."""
    claim_file(f'''
from theorycheck import Calibrated


@claim("toy.thm1.recorded", source="Theorem 1", statement="3 squared is 9.", provenance="stated",
       calibration=[Calibrated(decision={decision!r}, threshold=1e-12, calibration_seeds="1000-1049",
                               validation_seeds="2000-2049", how="round-off", tier={record_tier!r})],
       controls={{"wrong": Control("reference", breaks=["3^2"], description="against 10")}})
def test_recorded(tc):
    tc.conclusion.close("3^2", 9.0, 10.0 if tc.control == "wrong" else 9.0, rtol=1e-12)
    if {quick_only!r} and tc.tier == "quick":
        tc.conclusion.close({quick_only!r}, 1.0, 1.0, rtol=1e-12)
''')


def _claim_run(pytester, tier: str = "quick"):
    return pytester.runpytest("-p", "no:cacheprovider", "--tc-no-report", "-m", "claim", "--tc-tier", tier)


def test_a_calibrated_record_must_name_a_recorded_decision(pytester, claim_file):
    _toy_claim_with_record(claim_file, "renamed")
    run = _claim_run(pytester)
    run.assert_outcomes(failed=1)
    run.stdout.fnmatch_lines(["*calibration records name ?'renamed'?, which the claim never recorded*"])


def test_a_calibrated_record_speaks_for_its_tier_only(pytester, claim_file):
    """A decision recorded only at the quick tier's sizes (e.g. a solve run at d <= 64) keeps its
    quick-tier record: the full tier does not ask for it, the quick tier does; a full-tier
    record is asked for at the full tier."""
    _toy_claim_with_record(claim_file, "small only", quick_only="small only")
    for tier in ("quick", "full"):
        _claim_run(pytester, tier).assert_outcomes(passed=1)
    _toy_claim_with_record(claim_file, "large only", record_tier="full")
    _claim_run(pytester, "quick").assert_outcomes(passed=1)
    run = _claim_run(pytester, "full")
    run.assert_outcomes(failed=1)
    run.stdout.fnmatch_lines(["*calibration records name ?'large only'?, which the claim never recorded*"])


def test_the_committed_page_is_the_committed_tables_rendered():
    tables = [cal.load_table(p) for p in sorted((ROOT / "reports").glob("calibration-*.json"))]
    assert tables, "reports/calibration-quick.json is committed"
    assert (ROOT / "docs" / "calibration.md").read_text() == cal.table_markdown(tables), (
        "docs/calibration.md is stale: `theorycheck calibrate` regenerates it with the table")


def test_a_control_breaking_a_binomial_and_a_bound_has_its_miss_bounded_by_the_binomial_trials():
    """A control misses only when every break passes, so the pooled trials of its one binomial
    break bound the miss even when its other break is a bound with no trial model."""
    rng = np.random.default_rng(7)
    cases = []
    for k in rng.binomial(48, 0.3, 20):
        binomial = _binomial_records([k], 48, p=0.95)[0]
        cases.append({"outcome": "failed_as_expected", "failed_preconditions": [],
                      "decisions": [binomial, _decision("ratio", rng.normal(0.2, 0.1))]})
    row = cal.control_row("toy.thm1.x", "dense", "hypothesis", ["b", "ratio"], cases, list(range(20)))
    declared = row["decisions"][0]
    assert declared["bound_from"] == "pooled trials"
    pooled = cal.pooled_trials([c["decisions"][0] for c in cases], side="passes")
    assert declared["bound"] == pytest.approx(pooled["tail_upper"]) and declared["bound"] < 1e-10
