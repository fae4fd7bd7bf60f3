"""What the report shows, computed once from a results document for every view.

The html, markdown and terminal templates render the same view: an overview (per paper:
claims by verdict, controls, errata, provenance mix, wall time), then per paper a table of
its claims and, per claim, the docstring, the decisions with their worst element and slack
(the window and R^2 of a slope fit), the controls with the conclusions each broke, the
counterexample of a statement refuted as written beside its corrected claim, and the
command that reruns the claim; and the section "Where the theorems hold": every boundary map
(`theorycheck.maps`) recorded by a claim, with its one-line summary and plot.  Nothing here
formats html: the templates escape.
"""
from __future__ import annotations

import inspect
import json
import math
from collections import Counter
from itertools import groupby

import numpy as np

from ..checks import non_finite_text
from ..results_layout import MAP_PREFIX, claim_unit, map_records
from .plots import plot_key
from .results import CLAIM_OUTCOMES, CONTROL_OUTCOMES

VERDICT_MARK = {"passed": "PASS", "failed": "FAIL", "hypotheses_not_met": "HYPOTHESES NOT MET",
                "error": "ERROR", "skipped": "SKIP", "not_run": "NOT RUN",
                "failed_as_expected": "failed as expected",
                "passed_unexpectedly": "PASSED UNEXPECTEDLY", "misfired": "MISFIRED"}
#: outcomes that need a reader's attention (the failure filter shows only these)
BAD_OUTCOMES = frozenset({"failed", "hypotheses_not_met", "error", "passed_unexpectedly",
                          "misfired"})
PROVENANCES = ("stated", "derived", "inferred")


def short(value, limit: int = 120) -> str:
    """A value for a table cell: floats to 4 significant digits, long lists elided."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list) and len(value) > 6:
        head = ", ".join(short(v, 20) for v in value[:6])
        return f"[{head}, ... ({len(value)} values)]"
    if isinstance(value, list):
        return "[" + ", ".join(short(v, 20) for v in value) + "]"
    text = json.dumps(value) if isinstance(value, dict) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- decisions -------------------------------------------------------------------------------
def _flat(value) -> np.ndarray | None:
    """``value`` as a flat float array, or None when it is not numeric."""
    try:
        return np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError):
        return None


def _element(values: np.ndarray | None, index: int):
    """Element ``index`` of a flattened value, or its only element when it is a scalar."""
    if values is None or values.size == 0:
        return None
    return float(values[index if values.size > 1 else 0])


def _bound_like(d: dict) -> np.ndarray | None:
    """The bound broadcast to the measured value's shape (a bound may be one number or a series
    broadcast over trials), flattened like ``_flat(d["measured"])``."""
    bound = _flat(d.get("reference"))
    try:
        measured = np.asarray(d["measured"], dtype=float)
        return np.broadcast_to(np.asarray(d.get("reference"), dtype=float), measured.shape).ravel()
    except (TypeError, ValueError):
        return bound


def _bound_worst(d: dict) -> str:
    """at_most / at_least: the element with the least slack, its bound and the slack."""
    detail = d.get("detail", {})
    if "worst_slack" not in detail:
        return ""
    i = int(detail.get("worst_index", 0))
    measured, bound = _flat(d["measured"]), _bound_like(d)
    size = 1 if measured is None else measured.size
    m, b, slack = _element(measured, i), _element(bound, i), detail["worst_slack"]
    where = f"element {i} of {size}: " if size > 1 else ""
    slack = _number(slack)
    relative = (f" ({slack / abs(b):.3g} of |bound|)"
                if b not in (None, 0.0) and math.isfinite(b) and slack is not None else "")
    return f"{where}measured {short(m)} vs bound {short(b)}; slack {short(slack)}{relative}"


def _close_worst(d: dict) -> str:
    """close: the element closest to (or furthest beyond) its allowed error."""
    tol, detail = d.get("tolerance", {}), d.get("detail", {})
    rtol, atol = float(tol.get("rtol", 0.0)), float(tol.get("atol", 0.0))
    if tol.get("norm") == "fro":
        scale = _number(detail.get("reference_norm")) or 0.0
        allowed = rtol + (atol / scale if scale else math.inf)
        return (f"relative Frobenius error {short(d['measured'])} (absolute "
                f"{short(detail.get('abs_error'))}); allowed {short(allowed)}")
    measured, expected = _flat(d["measured"]), _flat(d.get("reference"))
    if measured is None or expected is None or measured.size == 0:
        return ""
    expected = np.broadcast_to(expected, measured.shape) if expected.size == 1 else expected
    if expected.shape != measured.shape:
        return ""
    err = np.abs(measured - expected)
    allowed = atol + rtol * np.abs(expected)
    excess = np.where(np.isfinite(err), err - allowed, np.inf)
    i = int(np.argmax(excess))
    where = f"element {i} of {measured.size}: " if measured.size > 1 else ""
    return (f"{where}measured {short(float(measured[i]))} vs {short(float(expected[i]))}; "
            f"|error| {short(float(err[i]))}, allowed {short(float(allowed[i]))}, slack "
            f"{short(float(allowed[i] - err[i]))}")


def _number(value) -> float | None:
    """A recorded number as a float (``"nan"``/``"inf"`` strings included), else None."""
    try:
        return float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _slope_worst(d: dict) -> str:
    """slope: the least slack among the slope's range, its relative error and the R^2 floor."""
    tol, fit = d.get("tolerance", {}), d.get("detail", {})
    b, expected, r2 = _number(d["measured"]), _number(d.get("reference")), _number(fit.get("r2"))
    if b is None:
        return ""
    slacks = []
    if "at_least" in tol:
        slacks.append(("slope - lower end", b - tol["at_least"]))
    if "at_most" in tol:
        slacks.append(("upper end - slope", tol["at_most"] - b))
    if "rtol" in tol and expected:
        slacks.append(("rtol - |slope/expected - 1|", tol["rtol"] - abs(b / expected - 1)))
    if "min_r2" in tol and r2 is not None:
        slacks.append(("R^2 - floor", r2 - tol["min_r2"]))
    if not slacks:
        return ""
    label, value = min(slacks, key=lambda s: s[1] if math.isfinite(s[1]) else -math.inf)
    return f"least slack {short(value)} ({label})"


def _fit(d: dict) -> str:
    """The fit window, its number of points, the transforms and R^2 of a slope decision."""
    fit = d.get("detail", {})
    if d["kind"] != "slope" or "window" not in fit:
        return ""
    lo, hi = fit["window"]
    axes = f"{fit.get('y_transform', '?')} y against {fit.get('x_transform', '?')} x"
    return (f"window [{short(lo)}, {short(hi)}] ({fit.get('n_points', '?')} points, {axes}); "
            f"slope {short(d['measured'])}, R^2 = {short(fit.get('r2'))}")


def _power_text(detail: dict) -> str:
    """The test's power at the framework's alternative, and the claim's reason when it is low."""
    if "power" not in detail:
        return ""
    text = f"; power {short(detail['power'])} at the alternative"
    if detail.get("low_power_reason"):
        text += f" (below 0.8: {detail['low_power_reason']})"
    return text


def _binomial_worst(d: dict) -> str:
    detail = d.get("detail", {})
    power = detail.get("power_80_at")
    power_text = ("too few trials: the test cannot reject" if power is None
                  else f"80% power at p1 = {short(power)}")
    return (f"{detail.get('successes')} of {detail.get('trials')} trials; p-value "
            f"{short(detail.get('p_value'))}; {power_text}{_power_text(detail)}")


def _test_worst(d: dict) -> str:
    detail = d.get("detail", {})
    size = detail.get("samples", detail.get("n"))
    return (f"n = {size}; p-value {short(detail.get('p_value'))}; false-rejection rate "
            f"{short(detail.get('reject_prob_at_null'))}{_power_text(detail)}")


def _monotone_numbers(d: dict) -> tuple[str, str] | None:
    """monotone, in words (the check records the least step along the stated direction, which
    passes at ``>= -tol``): the largest step against the direction, or, when there is none, the
    smallest step along it; and the step against the direction the tolerance allows."""
    worst, tol = _number(d["measured"]), _number(d.get("tolerance", {}).get("tol"))
    if worst is None or tol is None:
        return None
    along, against = (("increase", "decrease") if d["tolerance"].get("direction") == "increasing"
                      else ("decrease", "increase"))
    measured = (f"largest {against} {short(-worst)}" if worst < 0
                else f"no {against}; smallest {along} {short(worst)}")
    allowed = f"{against} up to {short(tol)} (tol)" if tol > 0 else f"no {against} allowed (tol 0)"
    return measured, allowed


def _monotone_worst(d: dict) -> str:
    """monotone: the step with the least slack (its step along the direction plus ``tol``),
    where it is, and how many steps go beyond the tolerance."""
    detail = d.get("detail", {})
    index = detail.get("worst_step_index") or []
    where = (f"the step between elements {index[0]} and {index[0] + 1}" if len(index) == 1
             else f"step {index} (along the checked axis)")
    worst, tol = _number(d["measured"]), _number(d.get("tolerance", {}).get("tol")) or 0.0
    slack = "" if worst is None else f" {short(worst + tol)}"
    beyond = detail.get("n_violations", 0)
    return f"least slack{slack} at {where}; " + (f"{beyond} step(s) beyond the tolerance"
                                                 if beyond else "no step beyond the tolerance")


def _holds_worst(d: dict) -> str:
    detail = d.get("detail", {})
    if "n_true" not in detail:
        return ""
    text = f"{detail['n_true']} of {detail['n']} true"
    flat = _flat(d["measured"])
    if flat is not None and flat.size > 1 and not d["passed"]:
        text += f"; first false at element {int(np.argmin(flat))}"
    return text


WORST = {"at_most": _bound_worst, "at_least": _bound_worst, "close": _close_worst,
         "slope": _slope_worst, "binomial": _binomial_worst, "monotone": _monotone_worst,
         "holds": _holds_worst, "wald": _test_worst, "chi_square": _test_worst}


def tolerance_text(d: dict) -> str:
    return ", ".join(f"{k}={short(v, 30)}" for k, v in d.get("tolerance", {}).items())


def _worst_text(d: dict) -> str:
    """The decision's worst element, or, for one refused on a non-finite input, that input."""
    refused = non_finite_text(d.get("detail") or {})
    worst = WORST.get(d["kind"])
    return refused or (worst(d) if worst else "")


def _numbers_text(d: dict) -> tuple[str, str]:
    """The decision's measured value and reference as the report shows them: in words where
    the recorded numbers would mislead (a monotone check's signed least step), else the
    numbers."""
    words = _monotone_numbers(d) if d["kind"] == "monotone" else None
    return words or (short(d["measured"]),
                     "" if d.get("reference") is None else short(d["reference"]))


def decision_view(d: dict) -> dict:
    """One decision as the report shows it."""
    measured, reference = _numbers_text(d)
    return {"name": d["name"], "role": d.get("role") or "", "kind": d["kind"],
            "passed": d["passed"], "mark": "ok" if d["passed"] else "FAILED",
            "measured": measured, "reference": reference,
            "tolerance": tolerance_text(d), "worst": _worst_text(d),
            "fit": _fit(d), "warnings": list(d.get("warnings") or [])}


# -- controls and claims ---------------------------------------------------------------------
def _calibrated_text(case: dict) -> str:
    """The calibration table's bound of a claim (false failure) or control (miss), when the run
    has its row (`theorycheck.calibrate.attach_bounds`), with the claim's declared reason where
    its bound is over the budget (``@claim(over_budget=...)``)."""
    row = case.get("calibrated")
    if not row:
        return ""
    weakest = f"; weakest part: {row['weakest']}" if row.get("weakest") else ""
    declared = (f"; over budget by design: {case['over_budget']}"
                if case.get("over_budget") and not row["within_budget"] else "")
    return row["text"] + weakest + declared


def control_view(k: dict) -> dict:
    """A control: what it perturbs, the conclusions it declares and those it actually broke."""
    failed = set(k.get("failed_conclusions", []))
    return {"name": k["name"], "kind": k["kind"], "description": k["description"],
            "outcome": k["outcome"], "mark": VERDICT_MARK[k["outcome"]],
            "bad": k["outcome"] in BAD_OUTCOMES or k["outcome"] == "not_run",
            "breaks": list(k["breaks"]), "broke": [b for b in k["breaks"] if b in failed],
            "failed_preconditions": list(k.get("failed_preconditions", [])),
            "decisions": [decision_view(d) for d in k.get("decisions", [])],
            "message": k.get("message") if k["outcome"] != "failed_as_expected" else None,
            "duration_s": k.get("duration_s", 0.0), "calibrated": _calibrated_text(k),
            "evidence": evidence_label(k), "evidence_reason": k.get("evidence_reason") or ""}


def evidence_label(k: dict) -> str:
    """A control's evidence class (`theorycheck.evidence`) with, for an independent one, its
    lineage: the computations of its own that the conclusion it broke was decided after."""
    kind = k.get("evidence") or ""
    lineage = k.get("evidence_lineage") or []
    return f"{kind}: {'; '.join(lineage)}" if kind and lineage else kind


def rerun_command(c: dict, results: dict) -> str:
    """The pytest command that reruns a claim and its controls with this run's settings."""
    target = claim_unit(c) or f"-k {c['id'].rsplit('.', 1)[-1]}"
    return f"pytest {target} --tc-tier {results['tier']} --tc-seed {results['seed']}"


def counterexample(d: dict) -> list[dict]:
    """The conclusions of a discrepancy (the numbers refuting the statement as written)."""
    return [decision_view(x) for x in d.get("decisions", []) if x.get("role") == "conclusion"]


def claim_mark(c: dict) -> str:
    """The verdict as a reader should read it: a discrepancy that passed exhibits its
    counterexample, so the paper's statement as written is REFUTED."""
    if c["kind"] == "discrepancy" and c["outcome"] == "passed":
        return "REFUTED"
    return VERDICT_MARK[c["outcome"]]


def evidence_text(c: dict) -> str:
    """How many controls recompute something of their own (`theorycheck.evidence`), or the
    claim's declared reason for having none."""
    count = c.get("independent_controls")
    if count is None:
        return ""
    text = f"{count} of {len(c['controls'])} controls independent"
    if count == 0 and c.get("single_evidence"):
        text += f" (declared: {c['single_evidence']})"
    elif count == 0:
        text += " (none recomputes: only discrimination checks)"
    return text


def plot_caption(key: dict) -> str:
    """The line under a plot saying what it shows of the controls (``key``:
    :func:`theorycheck.report.plots.plot_key`)."""
    parts = []
    if key["drawn"]:
        parts.append(f"controls drawn, one colour and legend entry each: {', '.join(key['drawn'])}")
    if key["below"]:
        parts.append("their whole curves in the lower panel (they leave the claim's axes): "
                     + ", ".join(key["below"]))
    if key["left_out"]:
        parts.append("not drawn: " + ", ".join(f"{name} ({why})" for name, why in key["left_out"]))
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "." if text else ""


def plots_view(c: dict) -> list[dict]:
    """Per plot file of a claim (``images``, drawn by `theorycheck.report.plots`): the file,
    what it shows of the controls (:func:`theorycheck.report.plots.plot_key`) and the caption
    saying so."""
    images, plots = list(c.get("images") or []), c.get("plots") or []
    if len(images) != len(plots):  # not drawn by this version: no key to give
        return [{"image": image, "drawn": [], "below": [], "left_out": [], "caption": ""}
                for image in images]
    keys = [plot_key(c, plot) for plot in plots]
    return [dict(key, image=image, caption=plot_caption(key)) for image, key in zip(images, keys)]


def claim_view(c: dict, results: dict) -> dict:
    controls = [control_view(k) for k in c["controls"]]
    refutes = [x for x in results["claims"]
               if x["kind"] == "discrepancy" and x.get("corrected_by") == c["id"]]
    return {"id": c["id"], "paper": c["paper"], "source": c["source"], "kind": c["kind"],
            "statement": c["statement"], "provenance": c["provenance"],
            "outcome": c["outcome"], "mark": claim_mark(c),
            "nature": c.get("nature") or "theorem",
            "calibration": list(c.get("calibration") or []),
            "calibrated": _calibrated_text(c),
            "evidence": evidence_text(c),
            "independent_controls": c.get("independent_controls"),
            "bad": c["outcome"] in BAD_OUTCOMES or any(k["bad"] for k in controls),
            "doc": inspect.cleandoc(c.get("doc") or ""), "corrected_by": c.get("corrected_by"),
            "message": c.get("message") if c["outcome"] != "passed" else None,
            "failed_preconditions": c.get("failed_preconditions", []),
            "decisions": [decision_view(d) for d in c["decisions"]],
            "measurements": [(k, short(v)) for k, v in c["measurements"].items()],
            "images": list(c.get("images", [])), "plots": plots_view(c), "controls": controls,
            "refutes": [{"id": x["id"], "source": x["source"], "statement": x["statement"],
                         "outcome": x["outcome"], "mark": claim_mark(x),
                         "numbers": counterexample(x)} for x in refutes],
            "counterexample": counterexample(c) if c["kind"] == "discrepancy" else [],
            "rerun": rerun_command(c, results),
            "wall_s": c.get("wall_s", c.get("duration_s", 0.0)
                            + sum(k.get("duration_s", 0.0) for k in c["controls"]))}


def paper_overview(claims: list[dict]) -> dict:
    """One row of the overview: the counts the run's summary has, for one paper."""
    outcomes = Counter(c["outcome"] for c in claims)
    controls = Counter(k["outcome"] for c in claims for k in c["controls"])
    provenance = Counter(c["provenance"] for c in claims)
    return {"claims": len(claims), "claim_outcomes": {o: outcomes.get(o, 0) for o in CLAIM_OUTCOMES},
            "controls": sum(controls.values()),
            "control_outcomes": {o: controls.get(o, 0) for o in CONTROL_OUTCOMES},
            "errata": sum(c["kind"] == "discrepancy" for c in claims),
            "independent_evidence": sum(bool(c["independent_controls"]) for c in claims),
            "provenance": {p: provenance.get(p, 0) for p in PROVENANCES},
            "wall_s": sum(c["wall_s"] for c in claims),
            "bad": any(c["bad"] for c in claims)}


def _paper_info(results: dict, paper: str) -> dict:
    info = results.get("papers", {}).get(paper)
    if not info:
        return {"citation": "(paper not registered: declare it with theorycheck.paper)",
                "pending": [], "expected": 0}
    return {"citation": info["citation"], "pending": list(info.get("pending") or []),
            "expected": len(info["expected_ids"])}


def _columns(outcomes: tuple[str, ...], always: int, counts: dict[str, int]) -> list[str]:
    """The overview's outcome columns: the first ``always`` outcomes, and the others that
    occurred in this run (a column of zeros says nothing)."""
    return [o for i, o in enumerate(outcomes) if i < always or counts[o]]


def maps_view(results: dict) -> list[dict]:
    """Per recorded map (section "Where the theorems hold"): its claim, name, kind, summary line,
    whether the grid brackets the transition, the stated region and the plot's file."""
    out = []
    for c in sorted(results["claims"], key=lambda c: (c["paper"], c["id"])):
        plots = [p["name"] for p in c.get("plots", [])]
        images = list(c.get("images") or [])
        for name, record in map_records(c):
            plot = MAP_PREFIX + name
            image = images[plots.index(plot)] if plot in plots and len(images) == len(plots) else None
            region = record.get("region") or {}
            out.append({"claim": c["id"], "paper": c["paper"], "name": name, "kind": record["map"],
                        "outcome": c["outcome"], "mark": claim_mark(c),
                        "summary": record.get("summary") or "",
                        "bracketed": bool(record.get("bracketed")),
                        "region": region.get("description") or "", "image": image})
    return out


def run_warnings(results: dict) -> list[str]:
    """The run-level warnings a report shows above everything: inputs the run could not use
    (``run_warnings``: a malformed baseline, ...), the strict findings on its claims and
    controls (``run_findings``: no independent control, a control with its claim's numbers)
    and shards merged across commits or library versions (``mixed_provenance``)."""
    mixed = results.get("mixed_provenance") or {}
    lines = list(results.get("run_warnings") or []) + list(results.get("run_findings") or [])
    if mixed:
        lines.append("merged from runs of different " + "; ".join(
            f"{k} ({' vs '.join(map(str, v))})" for k, v in mixed.items()) + " (--allow-mixed)")
    return lines


def report_view(results: dict) -> dict:
    """Everything the templates render."""
    papers = []
    ordered = sorted(results["claims"], key=lambda c: (c["paper"], c["id"]))
    for paper, group in groupby(ordered, key=lambda c: c["paper"]):
        claims = [claim_view(c, results) for c in group]
        papers.append({"key": paper, **_paper_info(results, paper), "claims": claims,
                       "overview": paper_overview(claims),
                       "not_met": [c for c in claims if c["outcome"] == "hypotheses_not_met"],
                       "errata": [c for c in claims if c["kind"] == "discrepancy"]})
    total = paper_overview([c for p in papers for c in p["claims"]])
    return {"results": results, "papers": papers, "total": total,
            "claim_columns": _columns(CLAIM_OUTCOMES, 3, total["claim_outcomes"]),
            "control_columns": _columns(CONTROL_OUTCOMES, 1, total["control_outcomes"]),
            "provenances": PROVENANCES, "marks": VERDICT_MARK,
            "partial": bool(results.get("partial")),
            "baseline_diff": results.get("baseline_diff") or [],
            "run_warnings": run_warnings(results),
            "maps": maps_view(results),
            "seed_sweep": results.get("seed_sweep") or []}
