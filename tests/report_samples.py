"""A results document with every situation the report has to show, for the report tests.

Two papers: ``toy`` with a passing claim (a plot, a control that drew its own curve on it),
a statement refuted as written and corrected by that claim, and a failing claim whose
controls passed unexpectedly and crashed; ``demo`` with a claim whose hypotheses did not hold.
The decisions come from the real check functions, so their details are the real ones.
:func:`one_claim_results`: a run of that passing claim with every kind of control a plot
has to show (one inside its axes, one far outside, one re-judging, one repeating it).
"""
from __future__ import annotations

import copy

import numpy as np

from theorycheck import checks
from theorycheck.report.results import SCHEMA_VERSION, summary_counts


def decision(d: checks.Decision, role: str) -> dict:
    d.role = role
    return d.to_json()


def curve_plot(name: str, label: str, y) -> dict:
    t = list(range(len(y)))
    return {"name": name, "title": name, "xlabel": "iteration t", "ylabel": "loss",
            "xscale": "linear", "yscale": "log",
            "curves": [{"label": label, "style": "measured", "x": t, "y": list(map(float, y))}]}


def case(outcome: str, decisions: list[dict], **extra) -> dict:
    return dict({"outcome": outcome, "error_kind": None, "duration_s": 0.5, "sizes": {"n": 4},
                 "seeds": {"data": 7}, "measurements": {}, "decisions": decisions,
                 "failed_conclusions": [d["name"] for d in decisions
                                        if not d["passed"] and d["role"] == "conclusion"],
                 "failed_preconditions": [d["name"] for d in decisions
                                          if not d["passed"] and d["role"] == "precondition"],
                 "message": None, "shared_runs": [], "plots": []}, **extra)


def control(name: str, kind: str, breaks: list[str], outcome: str, decisions: list[dict],
            **extra) -> dict:
    return dict(case(outcome, decisions, **extra), name=name, kind=kind, breaks=breaks, description=f"perturbation {name}")


def claim_entry(cid: str, outcome: str, decisions: list[dict], controls: list[dict], *,
                kind: str = "claim", corrected_by: str | None = None, provenance: str = "derived",
                doc: str = "", plots: list[dict] = ()) -> dict:
    paper = cid.split(".")[0]
    return dict(case(outcome, decisions), id=cid, paper=paper, source="Theorem 1", kind=kind,
                statement=f"statement of {cid} | with a pipe", corrected_by=corrected_by,
                provenance=provenance, doc=doc, module=f"claims.{paper}.test_{paper}",
                function=f"test_{cid.rsplit('.', 1)[-1]}", plots=list(plots), controls=controls)


DOC = """The loss decays like exp(-c t) while <W_t, x> >= 0.

    L(W_t) <= L(W_0) * exp(-c t)      (Theorem 1, eq. (3))

Pass: the fitted slope of log L over t in [2, 8] lies in [-2, -0.5]."""


def sample_results() -> dict:
    t = np.arange(12.0)
    loss = np.exp(-1.0 * t)
    rate = decision(checks.slope("log-loss slope", t, loss, window=(2, 8), x_transform="linear",
                                 y_transform="log", at_least=-2.0, at_most=-0.5, min_r2=0.99),
                    "conclusion")
    bound = decision(checks.at_most("loss below bound", loss, 1.2 * np.exp(-0.9 * t)), "conclusion")
    slow = np.exp(-0.1 * t)
    slow_rate = decision(checks.slope("log-loss slope", t, slow, window=(2, 8),
                                      x_transform="linear", y_transform="log", at_least=-2.0,
                                      at_most=-0.5, min_r2=0.99), "conclusion")
    slow_bound = decision(checks.at_most("loss below bound", slow, 1.2 * np.exp(-0.9 * t)),
                          "conclusion")
    assumption = decision(checks.holds("data separable", True), "precondition")
    good = claim_entry(
        "toy.thm1.loss_rate", "passed", [assumption, rate, bound],
        [control("slow_step", "dynamics", ["log-loss slope"], "failed_as_expected",
                 [assumption, slow_rate, slow_bound], plots=[curve_plot("loss", "L", slow)])],
        doc=DOC, plots=[curve_plot("loss", "L(W_t)", loss)])
    refuted = claim_entry(
        "toy.thm1.DISCREPANCY_rate", "passed",
        [decision(checks.at_least("measured rate exceeds the printed one", [1.0, 0.7], 0.5),
                  "conclusion")],
        [control("honest", "statement", ["measured rate exceeds the printed one"],
                 "failed_as_expected",
                 [decision(checks.at_least("measured rate exceeds the printed one", 0.1, 0.5),
                           "conclusion")])],
        kind="discrepancy", corrected_by="toy.thm1.loss_rate", provenance="stated")
    close = decision(checks.close("iterate matches the SVM solution", [1.0, 2.1, 3.0],
                                  [1.0, 2.0, 3.0], rtol=0.01), "conclusion")
    warned = dict(decision(checks.at_most("gap", [1e-17, 2e-17], 1e-16), "conclusion"),
                  warnings=["the bound lies below float64 resolution over 3 of 5 points"])
    bad = claim_entry(
        "toy.lem2.direction", "failed", [close, warned],
        [control("same_run", "reference", ["iterate matches the SVM solution"],
                 "passed_unexpectedly",
                 [decision(checks.close("iterate matches the SVM solution", 1.0, 1.0, rtol=0.01),
                           "conclusion")]),
         control("crash", "dynamics", ["gap"], "error", [], error_kind="error",
                 message="RuntimeError: the control crashed <here>")],
        provenance="inferred", doc="Direction converges: W_t/||W_t|| -> W_mm/||W_mm||.")
    bad["message"] = "ClaimFailure: iterate matches the SVM solution failed"
    not_met = claim_entry(
        "demo.prop3.margin", "hypotheses_not_met",
        [decision(checks.holds("margin positive", [True, False, True]), "precondition"),
         decision(checks.binomial("trials reach the margin", [True] * 18 + [False] * 2, p=0.8),
                  "conclusion")],
        [control("no_margin", "hypothesis", ["trials reach the margin"], "not_run", [])],
        provenance="stated")
    results = {"schema_version": SCHEMA_VERSION, "tier": "quick", "device": "cpu",
               "dtype": "float64", "seed": 3, "started": "2026-01-01T00:00:00+00:00",
               "wall_time_s": 4.2, "theorycheck_version": "0.1.0", "environment": {},
               "papers": {"demo": None, "toy": {
                   "key": "toy", "authors": "A. Author", "title": "Toy", "arxiv": "2401.00001",
                   "year": 2024, "note": None,
                   "expected_ids": ["thm1.loss_rate", "thm1.DISCREPANCY_rate", "lem2.direction",
                                    "lem5.pending"],
                   "pending": ["lem5.pending"], "citation": 'A. Author, "Toy", arXiv 2401.00001.'}},
               "claims": [good, refuted, bad, not_met]}
    results["summary"] = summary_counts(results)
    return results


def curve(label: str, y, style: str = "measured") -> dict:
    """One recorded curve over x = 0, 1, ..."""
    return {"label": label, "style": style, "x": list(range(len(y))), "y": [float(v) for v in y]}


def claim_with_every_kind_of_control() -> dict:
    """The sample's passing claim (loss exp(-t) on a log axis, control slow_step inside its
    axes) with a control whose two curves lie far above the claim's axes, a statement control
    of discrimination evidence and a reference control that recorded the claim's own curve."""
    claim = sample_results()["claims"][0]
    t = np.arange(12.0)
    own = claim["plots"][0]["curves"]

    def drawing(name, kind, evidence, *curves):  # breaking the slope as slow_step does
        return control(name, kind, ["log-loss slope"], "failed_as_expected",
                       copy.deepcopy(claim["controls"][0]["decisions"]), evidence=evidence,
                       plots=[{"name": "loss", "curves": list(curves)}])

    claim["controls"] += [
        drawing("far", "dynamics", "independent", curve("L", 1e6 * 1.5 ** t),
                curve("L, second run", 2e6 * 1.5 ** t), curve("its bound", 1e9 + t, "bound")),
        drawing("stricter", "statement", "discrimination", curve("L", 0.5 * np.exp(-t))),
        drawing("same_run", "reference", "discrimination", dict(own[0], label="L"))]
    return claim


def one_claim_results() -> dict:
    """A run of the one claim :func:`claim_with_every_kind_of_control`: its report is the page
    of that claim."""
    results = sample_results()
    results["claims"] = [claim_with_every_kind_of_control()]
    results["summary"] = summary_counts(results)
    return results
