"""The report: one view model rendered by the html, markdown and terminal templates; plots
named by their content so that a re-render draws only what changed."""
import html
import json
import re

import numpy as np
import pytest
from matplotlib.colors import to_hex

from tests.report_samples import (claim_with_every_kind_of_control, one_claim_results,
                                  sample_results)
from theorycheck import checks
from theorycheck.report import rerender, render_terminal, write_report
from theorycheck.report.plots import (REJUDGES, REPEATS, control_overlays, plot_figure, plot_key,
                                      render_claim_plots)
from theorycheck.report.render import render_html, render_markdown
from theorycheck.report.view import decision_view, report_view


def with_role(d: checks.Decision) -> dict:
    d.role = "conclusion"
    return d.to_json()


def test_bound_decision_shows_its_worst_element_and_slack():
    view = decision_view(with_role(checks.at_most("b", [1.0, 3.0, 2.0], [2.5, 2.5, 2.5])))
    assert view["worst"] == "element 1 of 3: measured 3 vs bound 2.5; slack -0.5 (-0.2 of |bound|)"
    view = decision_view(with_role(checks.at_least("b", 4.0, 1.0)))
    assert view["worst"] == "measured 4 vs bound 1; slack 3 (3 of |bound|)"


def test_a_bound_broadcast_over_trials_is_matched_to_the_worst_element():
    """A bound per time (3,) against values per (time, trial) (2, 3): element 4 is (1, 1)."""
    measured = [[1.0, 1.0, 1.0], [1.0, 5.0, 1.0]]
    view = decision_view(with_role(checks.at_most("b", measured, [2.0, 3.0, 4.0])))
    assert view["worst"] == "element 4 of 6: measured 5 vs bound 3; slack -2 (-0.667 of |bound|)"


def test_close_decision_shows_the_element_nearest_its_allowed_error():
    view = decision_view(with_role(checks.close("c", [1.0, 2.1, 3.0], [1.0, 2.0, 3.0], rtol=0.01)))
    assert view["worst"].startswith("element 1 of 3: measured 2.1 vs 2; |error| 0.1, allowed 0.02")
    fro = decision_view(with_role(checks.close("f", np.eye(2) * 1.01, np.eye(2), rtol=0.05,
                                               norm="fro")))
    assert fro["worst"].startswith("relative Frobenius error 0.01") and "allowed 0.05" in fro["worst"]


def test_slope_decision_shows_window_points_and_r2():
    t = np.arange(12.0)
    d = with_role(checks.slope("s", t, np.exp(-t), window=(2, 8), x_transform="linear",
                               y_transform="log", at_least=-2.0, at_most=-0.5, min_r2=0.99))
    view = decision_view(d)
    assert view["fit"] == ("window [2, 8] (7 points, log y against linear x); slope -1, "
                           "R^2 = 1")
    assert view["worst"] == "least slack 0.01 (R^2 - floor)"


def test_nonfinite_fit_is_shown_not_a_crash():
    d = with_role(checks.slope("s", [1.0, 2.0, 3.0], [1.0, 1.0, 1.0], window=(1, 3),
                               at_least=0.5))
    d["detail"]["r2"] = "nan"
    assert "R^2 = nan" in decision_view(d)["fit"]


def test_binomial_monotone_and_holds_say_what_they_counted():
    assert decision_view(with_role(checks.binomial("p", [True] * 9 + [False], p=0.5)))[
        "worst"].startswith("9 of 10 trials; p-value")
    assert decision_view(with_role(checks.holds("h", [True, False])))["worst"] == \
        "1 of 2 true; first false at element 1"


def test_a_monotone_check_says_its_worst_step_in_words():
    """The check records the least step along the direction (-1.9e-07 here is no increase at
    all); the report says which way the worst step went and what the tolerance allows."""
    passing = decision_view(with_role(checks.monotone("m", [1.0, 1.0 - 1.9e-7, 0.5],
                                                      increasing=False, tol=7.1e-15)))
    assert (passing["measured"], passing["reference"]) == (
        "no increase; smallest decrease 1.9e-07", "increase up to 7.1e-15 (tol)")
    assert passing["worst"] == ("least slack 1.9e-07 at the step between elements 0 and 1; "
                                "no step beyond the tolerance")
    failing = decision_view(with_role(checks.monotone("m", [3.0, 2.0, 2.5], increasing=False)))
    assert (failing["measured"], failing["reference"]) == ("largest increase 0.5",
                                                           "no increase allowed (tol 0)")
    assert failing["worst"] == ("least slack -0.5 at the step between elements 1 and 2; "
                                "1 step(s) beyond the tolerance")
    rising = decision_view(with_role(checks.monotone("m", [[1.0, 2.0], [0.5, 3.0]],
                                                     increasing=True, tol=0.1)))
    assert rising["measured"] == "largest decrease 0.5" and "step [0, 0]" in rising["worst"]
    assert "largest increase 0.5 vs no increase allowed" in render_terminal(
        monotone_failure(sample_results()))


def monotone_failure(results: dict) -> dict:
    """The sample run with its failing claim's first conclusion a failing monotone check."""
    claim = results["claims"][2]
    claim["decisions"][0] = with_role(checks.monotone("loss falls", [3.0, 2.0, 2.5],
                                                      increasing=False))
    return results


def test_overview_counts_are_the_summary_counts_per_paper_and_in_total():
    results = sample_results()
    view = report_view(results)
    total = view["total"]
    summary = results["summary"]
    assert total["claim_outcomes"] == summary["claim_outcomes"]
    assert total["control_outcomes"] == summary["control_outcomes"]
    assert (total["claims"], total["controls"], total["errata"]) == (
        summary["claims"], summary["controls"], summary["discrepancies"])
    toy = next(p for p in view["papers"] if p["key"] == "toy")["overview"]
    assert toy["provenance"] == {"stated": 1, "derived": 1, "inferred": 1}
    assert toy["claim_outcomes"]["failed"] == 1 and toy["errata"] == 1 and toy["bad"]
    # only outcomes that occurred get a column, besides the three a reader always looks for
    assert view["claim_columns"] == ["passed", "failed", "hypotheses_not_met"]
    assert "misfired" not in view["control_columns"] and "error" in view["control_columns"]


def article(page: str, claim_id: str) -> str:
    return re.search(rf"<article[^>]*id=\"{re.escape(claim_id)}\">(.*?)</article>", page, re.S).group(1)


def test_html_shows_docstring_escaped_rerun_errata_and_broken_conclusions():
    page = render_html(sample_results())
    good = article(page, "toy.thm1.loss_rate")
    assert "&lt;W_t, x&gt; &gt;= 0" in good and "<W_t" not in good  # the math, escaped
    assert "    L(W_t) &lt;= L(W_0) * exp(-c t)" in good  # indentation kept (pre)
    assert "pytest claims/toy/test_toy.py::test_loss_rate --tc-tier quick --tc-seed 3" in good
    # the erratum's counterexample sits beside the claim that corrects it
    assert "Corrects <a href=\"#toy.thm1.DISCREPANCY_rate\">" in good
    assert "measured rate exceeds the printed one: [1, 0.7] vs 0.5" in good
    assert "window [2, 8] (7 points" in good and "R^2 = 1" in good
    assert '<span class="broke">log-loss slope (broke)</span>' in good
    bad = article(page, "toy.lem2.direction")
    assert '<span class="held">iterate matches the SVM solution (held)</span>' in bad
    assert "RuntimeError: the control crashed &lt;here&gt;" in bad
    assert "warning: the bound lies below float64 resolution" in bad
    # the claim's own error comes before its controls
    assert bad.index("ClaimFailure") < bad.index("Negative controls")
    assert 'class="claim problem"' in page and 'id="only-problems"' in page
    assert "http://" not in page and "https://" not in page  # nothing from the network


def test_html_flags_partial_runs_and_renders_baseline_and_sweep_sections():
    results = sample_results()
    assert 'id="partial"' not in render_html(results)
    results.update(partial=True, partial_reason="-k loss", commit="abc1234",
                   baseline={"path": "reports/baseline-quick.json", "commit": "0ff1ce",
                             "tier": "quick", "seed": 0},
                   baseline_diff=[{"id": "toy.thm1.loss_rate", "what": "log-loss slope",
                                   "old": -1.0, "new": -0.9, "rel_change": 0.1}],
                   seed_sweep=[{"id": "toy.thm1.loss_rate", "kind": "claim", "runs": 20,
                                "control": None, "passes": 17, "predicted_pass_rate": 0.95,
                                "failure_rate": 0.15, "flaky": True},
                               {"id": "toy.thm1.loss_rate", "kind": "control",
                                "control": "slow_step", "runs": 20, "passes": 1,
                                "predicted_pass_rate": 0.0, "failure_rate": 0.95,
                                "flaky": True}])
    page = render_html(results)
    assert 'id="partial"' in page and 'data-partial="true"' in page and "abc1234" in page
    assert "Partial run (-k loss)" in page and "reports/baseline-quick.json" in page
    assert "<code>toy.thm1.loss_rate</code></a> control slow_step" in page
    assert 'id="baseline"' in page and "0.1" in page
    assert 'id="seed-sweep"' in page and "FLAKY" in page
    text = render_terminal(results)
    assert "partial run (-k loss)" in text and "FLAKY claim toy.thm1.loss_rate: 17 of 20" in text
    assert "FLAKY control toy.thm1.loss_rate control slow_step: 1 of 20" in text
    assert "control slow_step | control | 20 | 1 | 0 | 0.95 | FLAKY" in render_markdown(results)
    assert "CHANGED toy.thm1.loss_rate: log-loss slope -1 -> -0.9" in text


def test_markdown_follows_the_html():
    md = render_markdown(sample_results())
    assert "| all papers | 4 | 2 | 1 | 1 | 5 |" in md
    assert "statement of toy.thm1.loss_rate \\| with a pipe" in md  # pipes escaped in tables
    assert "rerun: `pytest claims/toy/test_toy.py::test_loss_rate --tc-tier quick --tc-seed 3`" in md
    assert "    L(W_t) <= L(W_0) * exp(-c t)" in md
    assert "| FAILED | conclusion | iterate matches the SVM solution | close |" in md


def test_terminal_lists_each_problem_with_its_numbers_and_rerun_command():
    text = render_terminal(sample_results())
    assert "toy      3 claims (2 passed, 1 failed, 0 hypotheses not met)" in text
    assert "FAIL toy.lem2.direction" in text and "slack -0.08" in text
    assert "control same_run: PASSED UNEXPECTEDLY" in text
    assert "rerun: pytest claims/toy/test_toy.py::test_direction" in text
    assert "toy.thm1.loss_rate" not in text  # nothing to say about a claim that is fine


def test_plots_are_named_by_content_and_only_changed_ones_are_redrawn(tmp_path):
    results = sample_results()
    assert render_claim_plots(results, tmp_path / "a", tmp_path / "cache") == 1
    (image,) = results["claims"][0]["images"]
    assert (tmp_path / "a" / image).stat().st_size > 1000
    assert render_claim_plots(results, tmp_path / "a", tmp_path / "cache") == 0
    # a new report folder takes the unchanged plot from the cache
    assert render_claim_plots(results, tmp_path / "b", tmp_path / "cache") == 0
    assert (tmp_path / "b" / image).read_bytes() == (tmp_path / "a" / image).read_bytes()
    # the control's curve is part of what the plot draws: changing it redraws, stale goes
    results["claims"][0]["controls"][0]["plots"][0]["curves"][0]["y"][3] = 0.5
    assert render_claim_plots(results, tmp_path / "a", tmp_path / "cache") == 1
    (new,) = results["claims"][0]["images"]
    assert new != image and not (tmp_path / "a" / image).exists()


def test_rerender_keeps_results_json_unless_the_plots_changed(tmp_path):
    out = write_report(sample_results(), tmp_path / "latest")
    stamp = (out / "results.json").stat().st_mtime_ns
    (out / "report.html").unlink()
    rerender(out / "results.json")
    assert (out / "report.html").exists() and (out / "results.json").stat().st_mtime_ns == stamp
    rerender(out / "results.json", results=json.loads((out / "results.json").read_text()))
    assert (out / "results.json").stat().st_mtime_ns == stamp
    moved = rerender(out / "results.json", tmp_path / "elsewhere")
    assert json.loads((moved / "results.json").read_text())["claims"][0]["images"]
    assert (moved / json.loads((moved / "results.json").read_text())["claims"][0]["images"][0]).exists()


def test_every_view_escapes_nothing_it_should_not():
    """The html escapes recorded text; the markdown and terminal views do not."""
    results = sample_results()
    results["claims"][2]["message"] = "a < b & c"
    assert html.escape("a < b & c") in render_html(results)
    assert "a < b & c" in render_markdown(results) and "&lt;" not in render_terminal(results)


def test_a_control_overlays_only_its_measured_curves_on_the_claims_plot_of_that_name():
    claim = sample_results()["claims"][0]
    plot = claim["controls"][0]["plots"][0]
    plot["curves"].append(dict(plot["curves"][0], style="bound", label="its bound"))
    assert [c["label"] for c in control_overlays(claim, "loss")] == ["control slow_step: L"]
    assert control_overlays(claim, "another plot") == []


def legend(ax) -> list[str]:
    return [text.get_text() for text in ax.get_legend().get_texts()]


def test_each_control_has_one_colour_and_one_legend_entry():
    claim = claim_with_every_kind_of_control()
    fig = plot_figure(claim["plots"][0], control_overlays(claim, "loss"))
    top, whole = fig.axes
    assert legend(top) == ["L(W_t)", "control slow_step", "control far (whole, below)"]
    assert legend(whole) == ["control far"]
    far = [line for line in top.get_lines() if line.get_ydata()[0] >= 1e6]
    assert len(far) == 2 and far[0].get_color() == far[1].get_color()
    assert far[0].get_color() != next(line for line in top.get_lines()
                                      if line.get_label() == "control slow_step").get_color()


def test_no_control_takes_the_colour_of_one_of_the_claims_curves():
    claim = claim_with_every_kind_of_control()
    plot = claim["plots"][0]
    plot["curves"] += [dict(plot["curves"][0], label=f"query {i}") for i in range(5)]
    lines = plot_figure(plot, control_overlays(claim, "loss")).axes[0].get_lines()
    own = {to_hex(line.get_color()) for line in lines[:6]}
    controls = {to_hex(line.get_color()) for line in lines[6:]}
    assert len(own) == 6 and len(controls) == 2 and not own & controls


def test_a_control_that_only_rejudges_or_repeats_the_claims_numbers_draws_nothing():
    claim = claim_with_every_kind_of_control()
    assert {c["control"] for c in control_overlays(claim, "loss")} == {"slow_step", "far"}
    key = plot_key(claim, claim["plots"][0])
    assert key["drawn"] == ["slow_step", "far"] and key["below"] == ["far"]
    assert key["left_out"] == [("stricter", REJUDGES), ("same_run", REPEATS)]
    # the same statement control, had it recomputed, would draw its own curve
    claim["controls"][2]["evidence"] = "independent"
    assert "stricter" in plot_key(claim, claim["plots"][0])["drawn"]


def test_no_control_curve_is_dropped_for_being_off_the_claims_axes():
    """A control curve entirely outside the claim's axes is drawn whole in the second panel,
    inside that panel's limits; the claim's panel keeps the claim's axes."""
    claim = claim_with_every_kind_of_control()
    plot = claim["plots"][0]
    top, whole = plot_figure(plot, control_overlays(claim, "loss")).axes
    assert top.get_ylim()[1] < 10  # the claim's axes: its loss starts at 1
    far_y = [c["y"] for c in claim["controls"][1]["plots"][0]["curves"][:2]]
    drawn = [list(line.get_ydata()) for line in whole.get_lines()]
    assert all(y in drawn for y in far_y)
    low, high = whole.get_ylim()
    assert low <= min(map(min, far_y)) and max(map(max, far_y)) <= high
    # with every control inside the claim's axes there is one panel
    claim["controls"] = claim["controls"][:1]
    assert len(plot_figure(plot, control_overlays(claim, "loss")).axes) == 1


def test_a_log_axis_within_one_decade_keeps_labelled_ticks():
    """Minor ticks are off, except where a log axis holds fewer than two major ticks."""
    plot = {"name": "gap", "title": "gap", "xlabel": "n", "ylabel": "gap", "xscale": "log",
            "yscale": "log", "curves": [{"label": "gap", "style": "measured",
                                         "x": [16.0, 32.0, 64.0], "y": [0.1, 0.05, 0.025]}]}
    ax = plot_figure(plot).axes[0]
    ax.figure.canvas.draw()
    assert len(ax.xaxis.get_minorticklocs()) >= 2 and len(ax.yaxis.get_minorticklocs()) >= 2
    plot["curves"][0]["x"] = [1.0, 10.0, 100.0]
    plot["curves"][0]["y"] = [1.0, 0.1, 0.01]
    ax = plot_figure(plot).axes[0]
    assert len(ax.xaxis.get_minorticklocs()) == 0 == len(ax.yaxis.get_minorticklocs())


def test_the_report_says_under_each_plot_what_it_shows_of_the_controls(tmp_path):
    out = write_report(one_claim_results(), tmp_path / "latest")
    page = (out / "report.html").read_text()
    caption = re.search(r'<figcaption class="plot-key"([^>]*)>(.*?)</figcaption>', page, re.S)
    assert caption.group(1).strip() == ('data-drawn="slow_step,far" data-below="far" '
                                        'data-left-out="stricter,same_run"')
    assert "Controls drawn, one colour and legend entry each: slow_step, far" in caption.group(2)
    assert "not drawn: stricter (re-judges the claim&#39;s numbers" in caption.group(2)
    assert "Controls drawn, one colour and legend entry each" in (out / "report.md").read_text()


ONE_POINT_AND_HIDDEN_CONTROL = '''
@claim("toy.thm1.plots", source="Theorem 1", statement="A small number is small.", provenance="stated",
       controls={"big": Control("reference", breaks=["small"], description="a big number instead")})
def test_plots(tc):
    value = 1e6 if tc.control == "big" else 1.0
    tc.conclusion.at_most("small", value, 10.0)
    tc.curve("one", "a single point", [1.0], [value])
    tc.curve("two", "values", [1.0, 2.0], [value, value + 1])
'''


def test_a_one_point_curve_warns_and_a_control_curve_off_the_axes_is_drawn(pytester, claim_file):
    claim_file(ONE_POINT_AND_HIDDEN_CONTROL)
    run = pytester.runpytest("-p", "no:cacheprovider", "-W", "default",
                             "--tc-report-dir", "out")
    run.assert_outcomes(passed=1, xfailed=1)
    run.stdout.fnmatch_lines(["*CurveWarning*curve 'a single point' of plot 'one' has 1 point(s)*"])
    results = json.loads((pytester.path / "out" / "results.json").read_text())
    (claim,) = results["claims"]
    two = claim["plots"][[p["name"] for p in claim["plots"]].index("two")]
    assert plot_key(claim, two)["below"] == ["big"]
    assert 'data-below="big"' in (pytester.path / "out" / "report.html").read_text()


@pytest.mark.parametrize("yscale", ["log", "linear"])
def test_a_curve_with_infinite_or_nan_values_is_drawn_without_them(tmp_path, yscale):
    """A diverged run's curve (inf, nan) renders: the line breaks at the points it cannot draw
    (an infinite value used to overflow the log axis and crash the whole report)."""
    from theorycheck.report.plots import render_plot

    y = [1.0, 0.5, np.inf, np.nan, 0.1, -np.inf]
    plot = {"name": "loss", "title": "loss", "xlabel": "t", "ylabel": "L", "xscale": "linear",
            "yscale": yscale, "band": ["low", "high"],
            "curves": [{"label": "run", "style": "measured", "x": [0.0, 1, 2, 3, 4, 5], "y": y},
                       {"label": "low", "style": "bound", "x": [0.0, 1, 2, 3, 4, 5], "y": [0.5] * 5 + [np.inf]},
                       {"label": "high", "style": "bound", "x": [0.0, 1, 2, 3, 4, 5], "y": [2.0] * 6}]}
    path = render_plot(plot, tmp_path / "loss.png")
    assert path.stat().st_size > 0
    drawn = plot_figure(plot).axes[0].get_lines()[0].get_ydata()
    assert np.isnan(drawn[[2, 3, 5]]).all() and np.array_equal(drawn[[0, 1, 4]], [1.0, 0.5, 0.1])


@pytest.mark.parametrize("yscale", ["log", "linear"])
def test_a_control_curve_that_diverges_to_a_huge_finite_value_renders(tmp_path, yscale):
    """A diverging control run (gsb26 fig1's large_step reached 2.4e262 at seed 25013) leaves the
    claim's axes and is drawn whole below; beyond DRAWABLE_MAX its points break the line (they
    overflowed a log axis's tick decades and crashed the whole report)."""
    from theorycheck.report.plots import DRAWABLE_MAX, render_plot

    plot = {"name": "loss", "title": "loss", "xlabel": "t", "ylabel": "L", "xscale": "linear",
            "yscale": yscale, "curves": [{"label": "run", "style": "measured", "x": [0.0, 1, 2, 3],
                                          "y": [1.04, 1.03, 1.02, 1.015]}]}
    diverged = [{"control": "large_step", "label": "run", "style": "measured", "x": [0.0, 1, 2, 3],
                 "y": [1.02, 4e86, 2.4e262, np.inf]}]
    assert render_plot(plot, tmp_path / "loss.png", diverged).stat().st_size > 0
    whole = plot_figure(plot, diverged).axes[1]
    drawn = whole.get_lines()[-1].get_ydata()
    assert np.array_equal(drawn[:2], [1.02, 4e86]) and np.isnan(drawn[2:]).all()
    assert max(whole.get_ylim()) < DRAWABLE_MAX ** 1.1
