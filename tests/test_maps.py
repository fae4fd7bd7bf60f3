"""theorycheck.maps: Clopper-Pearson intervals, the logistic transition, estimate maps, records."""
import warnings

import numpy as np
import pytest
from scipy import stats

from theorycheck.context import ClaimContext
from theorycheck.errors import InvalidInputError
from theorycheck.maps import (MAP_PREFIX, MapWarning, clopper_pearson, covariate_rate_map, estimate_map, interval_power,
                              logistic_transition, mean_difference_interval, mean_interval,
                              rate_map, record_map)


@pytest.mark.parametrize("k, n", [(0, 10), (10, 10), (7, 20), (45, 60), (1, 1)])
def test_clopper_pearson_matches_scipy(k, n):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert clopper_pearson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-14)


def test_clopper_pearson_known_values():
    # the textbook pair: 0 of 10 -> [0, 1 - 0.025^(1/10)]; the beta-quantile form for 7 of 20
    lo, hi = clopper_pearson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** 0.1, rel=1e-10)
    lo, hi = clopper_pearson(7, 20, 0.9)
    assert lo == pytest.approx(stats.beta.ppf(0.05, 7, 14), rel=1e-10)
    assert hi == pytest.approx(stats.beta.ppf(0.95, 8, 13), rel=1e-10)


def simulated(seed, crossing=4.0, steepness=1.5, K=80, level=0.5):
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 10.0, 11)
    p = 1 / (1 + np.exp(-steepness * (x - crossing)))
    return x, [rng.random(K) < pi for pi in p], crossing + np.log(level / (1 - level)) / steepness


@pytest.mark.parametrize("level", [0.5, 0.85])
def test_logistic_transition_recovered(level):
    x, outcomes, truth = simulated(3, level=level)
    m = rate_map(x, outcomes, level=level, parameter="x")
    t = m.transition
    assert t.bracketed and t.lower < t.estimate < t.upper
    assert t.lower <= truth <= t.upper
    assert abs(t.estimate - truth) < 0.5
    assert m.lower[0] <= m.rate[0] <= m.upper[0]


def test_logistic_interval_covers_in_most_seeds():
    x, _, truth = simulated(0)
    covered = [(lambda t: t.lower <= truth <= t.upper)(rate_map(x, simulated(s)[1], level=0.5).transition)
               for s in range(20)]
    assert sum(covered) >= 16   # nominal 95%: 19 of 20 expected


def test_log_transition_recovered():
    rng = np.random.default_rng(5)
    x = np.array([1.0, 2, 4, 8, 16, 32, 64])
    p = 1 / (1 + np.exp(-2.0 * (np.log(x) - np.log(8.0))))
    m = rate_map(x, [rng.random(100) < pi for pi in p], level=0.5, x_transform="log")
    t = m.transition
    assert t.bracketed and t.lower <= 8.0 <= t.upper and "log x" in t.method


def test_covariate_map_groups_by_quantiles_and_recovers_the_transition():
    """Instances with a recorded covariate (not a set grid): equal-count groups at their
    medians; a decreasing success curve crossing 0.5 at x = 0.3 is recovered."""
    rng = np.random.default_rng(7)
    v = rng.uniform(0.05, 1.0, 800)
    outcomes = rng.random(800) < 1 / (1 + np.exp(-8.0 * (0.3 - v)))
    m = covariate_rate_map(v, outcomes, bins=8, level=0.5, parameter="rho")
    assert m.trials == [100] * 8 and np.all(np.diff(m.grid) > 0)
    order = np.argsort(v)
    assert m.grid[0] == pytest.approx(np.median(v[order[:100]]))
    assert m.successes[0] == int(outcomes[order[:100]].sum())
    t = m.transition
    assert t.bracketed and t.detail["slope"] < 0 and t.lower <= 0.3 <= t.upper

def test_separated_grid_gives_a_finite_transition_between_the_points():
    t = logistic_transition([1, 2, 3, 4], [0, 0, 10, 10], [10] * 4, level=0.5)
    assert t.bracketed and 2.0 <= t.lower < t.estimate < t.upper <= 3.0


def test_non_bracketing_grid_flagged_and_recorded(tc_stub):
    x, outcomes, _ = simulated(1, crossing=20.0)     # the rate never reaches the level
    m = rate_map(x, outcomes, level=0.5, parameter="x")
    assert not m.transition.bracketed and m.transition.estimate is None
    with pytest.warns(MapWarning, match="does not bracket"):
        record = record_map(tc_stub, "far", m, region={"description": "x >= 30", "lower": 30})
    assert record["bracketed"] is False
    assert tc_stub.measurements[MAP_PREFIX + "far"]["summary"].count("NOT BRACKETED") == 1


def test_record_structure_and_plot(tc_stub):
    x, outcomes, _ = simulated(2)
    m = rate_map(x, outcomes, level=0.5, parameter="d/n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", MapWarning)
        record = record_map(tc_stub, "rate", m, region={"description": "d/n >= 8", "lower": 8},
                            finding="d/n where the rate crosses 0.5")
    for key in ("map", "parameter", "grid", "estimate", "lower", "upper", "successes", "trials",
                "confidence", "level", "transition", "region", "bracketed", "summary", "name"):
        assert key in record
    assert record["map"] == "rate" and record["trials"] == [80] * 11
    t = m.transition
    assert tc_stub.measurements["finding: d/n where the rate crosses 0.5"] == [t.estimate, t.lower, t.upper]
    assert "d/n = " in record["summary"] and "K = 80" in record["summary"]
    styles = [c["style"] for c in tc_stub.plots[MAP_PREFIX + "rate"]["curves"]]
    assert styles == ["measured", "bound", "bound", "theory", "reference"]


def test_estimate_map_crossing_and_band():
    grid = [100, 200, 400, 800]
    est, lo, hi = [0.09, 0.05, 0.0, -0.01], [0.07, 0.02, -0.02, -0.03], [0.11, 0.08, 0.02, 0.01]
    m = estimate_map(grid, est, lo, hi, value=0.03, parameter="n")
    t = m.transition
    assert t.bracketed
    assert t.estimate == pytest.approx(200 + 200 * 0.02 / 0.05)
    assert t.lower == pytest.approx(100 + 100 * 0.04 / 0.05)        # lower edge, falling
    assert t.upper == pytest.approx(200 + 200 * 0.05 / 0.06)        # upper edge 0.08 -> 0.02
    m = estimate_map(grid, est, lo, [0.11, 0.08, 0.05, 0.04], value=0.03, parameter="n")
    assert m.transition.upper is None   # the band's upper edge never crosses: beyond the grid


def test_estimate_map_not_bracketed():
    m = estimate_map([1, 2, 3], [0.5, 0.4, 0.3], [0.4, 0.3, 0.2], [0.6, 0.5, 0.4], value=0.0)
    assert not m.transition.bracketed and m.transition.estimate is None


def test_intervals():
    rng = np.random.default_rng(0)
    a, b = rng.normal(1.0, 1.0, 50), rng.normal(0.0, 2.0, 40)
    diff, lo, hi = mean_difference_interval(a, b)
    res = stats.ttest_ind(a, b, equal_var=False)
    ci = res.confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((ci.low, ci.high), rel=1e-10)
    mean, lo, hi = mean_interval(a)
    ci = stats.ttest_1samp(a, 0.0).confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((ci.low, ci.high), rel=1e-10)


@pytest.mark.parametrize("lower, upper", [(0.0, None), (None, -0.75), (-1.25, -0.75)])
def test_interval_power_matches_simulation(lower, upper):
    """The non-central t power of 'the 95% t-interval of 8 draws lies inside [lower, upper]'
    against 20000 simulated decisions (exact for one end; the union bound for two)."""
    rng = np.random.default_rng(11)
    mean, sd, m = (0.03 if lower == 0.0 else -0.95), 0.05, 8
    draws = rng.normal(mean, sd, (20000, m))
    centre, half = draws.mean(1), stats.t.ppf(0.975, m - 1) * draws.std(1, ddof=1) / np.sqrt(m)
    inside = np.ones(20000, bool)
    if lower is not None:
        inside &= centre - half > lower
    if upper is not None:
        inside &= centre + half < upper
    power = interval_power(mean, sd, m, lower=lower, upper=upper)
    assert power == pytest.approx(inside.mean(), abs=0.015)
    assert interval_power(mean, 0.0, m, lower=lower, upper=upper) == 1.0

@pytest.mark.parametrize("call, message", [
    (lambda: rate_map([1, 2, 3], [np.ones(5, bool)] * 2, level=0.5), "3 grid values but 2"),
    (lambda: rate_map([], [], level=0.5), "empty grid"),
    (lambda: rate_map([1, 2], [np.ones(5, bool)] * 2, level=1.0), r"level must be in \(0, 1\)"),
    (lambda: rate_map([1, 2], [np.ones(5, bool)] * 2, level=0.0), r"level must be in \(0, 1\)"),
    (lambda: rate_map([2, 1], [np.ones(5, bool)] * 2, level=0.5), "strictly increasing"),
    (lambda: rate_map([1, 2], [np.ones(5, bool), np.ones(0, bool)], level=0.5), "no instances"),
    (lambda: estimate_map([1, 2], [0, 1], [0, 1], [0], value=0.5), "one length"),
    (lambda: estimate_map([], [], [], [], value=0.5), "empty grid"),
    (lambda: estimate_map([1, 2], [0, 1], [0.1, 1], [0, 1], value=0.5), "lower <= estimate"),
    (lambda: clopper_pearson(5, 3), "successes <= trials"),
    (lambda: clopper_pearson(1, 3, 1.5), r"confidence must be in \(0, 1\)"),
    (lambda: logistic_transition([1, 2], [1], [2, 2], level=0.5), "one length"),
    (lambda: rate_map([0, 1], [np.ones(5, bool)] * 2, level=0.5, x_transform="log"), "positive grid"),
    (lambda: rate_map([1, 2], [np.ones(5, bool)] * 2, level=0.5, x_transform="sqrt"), "x_transform"),
    (lambda: covariate_rate_map([1, 2, 3], [True, False], bins=2, level=0.5), "3 covariate values but 2"),
    (lambda: interval_power(0.0, 1.0, 8), "give lower, upper or both"),
    (lambda: interval_power(0.0, 1.0, 1, lower=0.0), "samples >= 2"),
    (lambda: covariate_rate_map([1, 2, 3], [True] * 3, bins=4, level=0.5), "bins must be between 2"),
    (lambda: covariate_rate_map([1, np.nan], [True] * 2, bins=2, level=0.5), "non-finite"),
    (lambda: covariate_rate_map([1, 1, 1, 1, 2, 3], [True] * 6, bins=3, level=0.5), "equal medians"),
])
def test_bad_input(call, message):
    with pytest.raises(InvalidInputError, match=message):
        call()


class _Stub:
    """The parts of a claim context a map uses (record, curve, band, shade, id)."""

    id = "demo.map.stub"
    spec = type("Spec", (), {"id": "demo.map.stub"})

    curve, band, shade = ClaimContext.curve, ClaimContext.band, ClaimContext.shade

    def __init__(self):
        self.measurements, self.plots = {}, {}

    def record(self, name, value):
        from theorycheck.checks import jsonable
        self.measurements[name] = jsonable(value)


@pytest.fixture
def tc_stub():
    return _Stub()


def test_report_section_where_the_theorems_hold(tc_stub, tmp_path):
    """A claim whose measurements hold a map gets a line and its plot (band filled, stated region
    shaded) in "Where the theorems hold" of report.md and report.html; results.json validates."""
    import json

    from tests.report_samples import sample_results
    from theorycheck.report import write_report
    from theorycheck.report.results import validate_results

    x, outcomes, _ = simulated(2)
    record = record_map(tc_stub, "rate", rate_map(x, outcomes, level=0.5, parameter="d/n"),
                        region={"description": "d/n >= 8", "lower": 8})
    results = sample_results()
    claim = results["claims"][0]
    claim["measurements"] = dict(claim.get("measurements") or {}, **tc_stub.measurements)
    claim["plots"] = list(claim.get("plots") or []) + list(tc_stub.plots.values())
    validate_results(json.loads(json.dumps(results)))
    out = write_report(results, tmp_path / "latest")
    md = (out / "report.md").read_text() if out.is_dir() else (tmp_path / "latest" / "report.md").read_text()
    section = md.split("## Where the theorems hold", 1)[1].split("\n## ", 1)[0]
    assert claim["id"] in section and record["summary"] in section and "map_rate" in section
    html = (tmp_path / "latest" / "report.html").read_text()
    assert 'id="maps"' in html and "Where the theorems hold" in html
    assert list((tmp_path / "latest" / "plots").glob("*map_rate*.png"))


def test_list_marks_the_claims_that_recorded_a_map(tmp_path, monkeypatch):
    import json as _json

    from theorycheck.cli import _claims_with_maps

    monkeypatch.chdir(tmp_path)
    assert _claims_with_maps() == {}
    run = tmp_path / "reports" / "latest"
    run.mkdir(parents=True)
    (run / "results.json").write_text(_json.dumps({"claims": [
        {"id": "p.a.mapped", "measurements": {"map: success vs d/n": {}, "other": 1}},
        {"id": "p.a.plain", "measurements": {"x": 1}}]}))
    assert _claims_with_maps() == {"p.a.mapped": ["success vs d/n"]}


def test_a_band_and_a_shaded_region_through_the_context(tc_stub):
    """`tc.band` records the two edges as bound curves the report fills between; `tc.shade`
    marks an x-range of a plot that has a curve, and refuses one that has none."""
    tc_stub.curve("p", "estimate", [1, 2, 3], [0.1, 0.5, 0.9])
    tc_stub.band("p", "95% interval", [1, 2, 3], [0.0, 0.4, 0.8], [0.2, 0.6, 1.0])
    tc_stub.shade("p", "stated region (x >= 2)", lower=2)
    plot = tc_stub.plots["p"]
    assert [(c["label"], c["style"]) for c in plot["curves"]] == [
        ("estimate", "measured"), ("95% interval, lower", "bound"), ("95% interval, upper", "bound")]
    assert plot["band"] == ["95% interval, lower", "95% interval, upper"]
    assert plot["span"] == {"lower": 2, "upper": None, "label": "stated region (x >= 2)"}
    with pytest.raises(InvalidInputError, match="plot 'q' has no curve yet"):
        tc_stub.shade("q", "region", lower=0)
