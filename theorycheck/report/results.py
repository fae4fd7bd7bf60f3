"""``results.json``: one record per claim, its controls nested inside.

Shape (see ``schema.json`` beside this file, which the tests validate against; the file name,
case and unit ids, map names, schema and reader are :mod:`theorycheck.results_layout`'s)::

    {"schema_version", "tier", "device", "dtype", "seed", "started", "wall_time_s",
     "theorycheck_version", "environment": {...}, "summary": {...},
     (optional: "commit", "partial", "baseline_diff", "seed_sweep"),
     "papers": {key: {"authors", "title", "arxiv", "year", "note", "expected_ids", "citation"}
                     | null (a paper key no claims package declared)},
     "claims": [{"id", "paper", "source", "kind", "statement", "corrected_by", "provenance",
                 "doc" (the claim function's docstring), "module", "function", "outcome", "error_kind", "duration_s", "cpu_s", "peak_rss_mb",
                 "cost" ({"wall_s", "cpu_s", "peak_rss_mb"}: the claim's case and its controls),
                 "sizes", "seeds", "measurements",
                 "decisions" (each with its "role"), "failed_conclusions",
                 "failed_preconditions", "plots", "message", "shared_runs",
                 "controls": [{"name", "description", "kind", "breaks", "outcome",
                               "error_kind", "duration_s", "cpu_s", "peak_rss_mb", "sizes",
                               "seeds", "decisions",
                               "failed_conclusions", "failed_preconditions", "measurements",
                               "message", "shared_runs", "plots"}]}]}

A control's ``plots`` are the curves it recorded; the report draws them on the claim's plot
of the same name.

``shared_runs``: the shared runs the case used, ``{"name", "key", "config", "sizes", "seed",
"source"}`` with source memo | disk | computed (see :mod:`theorycheck.cache`).

``cpu_s``: the process CPU seconds of the case's call, every thread; ``peak_rss_mb``: the
resident peak over it in MiB (None where the system does not report it).  A shared run counts
toward the first case that uses it.

Claim outcomes: passed | failed | hypotheses_not_met | error | skipped | not_run.
Control outcomes: failed_as_expected | passed_unexpectedly | misfired | error | skipped | not_run.
"""
from __future__ import annotations

import platform
from collections import Counter

from ..results_layout import SCHEMA_VERSION, load_results, validate_results, variant_id

__all__ = ["all_good", "assemble_results", "load_results", "summarize", "validate_results",
           "summary_counts", "SCHEMA_VERSION"]

CLAIM_OUTCOMES = ("passed", "failed", "hypotheses_not_met", "error", "skipped", "not_run")
CONTROL_OUTCOMES = ("failed_as_expected", "passed_unexpectedly", "misfired", "error", "skipped",
                    "not_run")
#: what every case (claim or control) carries from its run; defaults for a case that did not run
_CASE_FIELDS = {"outcome": "not_run", "error_kind": None, "duration_s": 0.0, "cpu_s": 0.0,
                "peak_rss_mb": None, "sizes": {},
                "seeds": {}, "measurements": {}, "decisions": [], "failed_conclusions": [],
                "failed_preconditions": [], "message": None, "shared_runs": [],
                "computations": []}


def _environment() -> dict:
    import numpy
    import scipy
    import torch

    try:
        import cvxpy

        cvxpy_version = cvxpy.__version__
    except ImportError:  # cvxpy is optional on GPU hosts that compute references elsewhere
        cvxpy_version = None
    return {"python": platform.python_version(), "platform": platform.platform(),
            "numpy": numpy.__version__, "scipy": scipy.__version__, "torch": torch.__version__,
            "cvxpy": cvxpy_version}


def _case_fields(record: dict | None) -> dict:
    """The fields of one case's run (the defaults of a case that did not run)."""
    return {key: (record.get(key, default) if record else default)
            for key, default in _CASE_FIELDS.items()}


def _control_entry(name: str, control: dict, record: dict | None) -> dict:
    return dict({"name": name}, **control, **_case_fields(record),
                plots=record["plots"] if record else [])


def _claim_entry(spec: dict, cases: dict[str, dict]) -> dict:
    own = cases.get("claim")
    entry = {key: spec.get(key) for key in ("id", "paper", "source", "kind", "statement",
                                            "corrected_by", "provenance", "doc", "module",
                                            "function", "nature", "constants", "calibration",
                                            "calibration_records", "single_evidence",
                                            "over_budget")}
    entry.update(_case_fields(own), plots=own["plots"] if own else [],
                 controls=[_control_entry(name, control, cases.get(variant_id(name)))
                           for name, control in spec["controls"].items()])
    return entry


def assemble_results(*, runtime, started: str, version: str, wall_time_s: float,
                     records: list[dict]) -> dict:
    """Group the per-case records of a run into the results document."""
    specs: dict[str, dict] = {}
    cases: dict[str, dict[str, dict]] = {}
    papers: dict[str, dict | None] = {}
    for record in records:
        specs[record["id"]] = record["spec"]
        cases.setdefault(record["id"], {})[record["variant"]] = record
        papers[record["spec"]["paper"]] = record.get("paper_info")
    claims = [_claim_entry(specs[cid], cases[cid]) for cid in sorted(specs)]
    results = dict(schema_version=SCHEMA_VERSION, **runtime.to_json(), started=started,
                   wall_time_s=round(wall_time_s, 3), theorycheck_version=version,
                   environment=_environment(), papers=dict(sorted(papers.items())), claims=claims)
    results["summary"] = summary_counts(results)
    return results


def summary_counts(results: dict) -> dict:
    """The run's counts: claims and controls by outcome, discrepancies."""
    claims = Counter(c["outcome"] for c in results["claims"])
    controls = Counter(k["outcome"] for c in results["claims"] for k in c["controls"])
    return {"claims": len(results["claims"]),
            "discrepancies": sum(c["kind"] == "discrepancy" for c in results["claims"]),
            "claim_outcomes": {o: claims.get(o, 0) for o in CLAIM_OUTCOMES},
            "controls": sum(controls.values()),
            "control_outcomes": {o: controls.get(o, 0) for o in CONTROL_OUTCOMES}}


def all_good(results: dict) -> bool:
    """Every claim passed and every control failed as expected."""
    s = results["summary"]
    return (s["claim_outcomes"]["passed"] == s["claims"]
            and s["control_outcomes"]["failed_as_expected"] == s["controls"])


def summarize(results: dict) -> str:
    """The run's one-line summary: tier, device, claims and controls by outcome."""
    s = results["summary"]
    claims = ", ".join(f"{v} {k}" for k, v in s["claim_outcomes"].items() if v)
    controls = ", ".join(f"{v} {k}" for k, v in s["control_outcomes"].items() if v)
    return (f"theorycheck ({results['tier']} tier, {results['device']}): {s['claims']} claims "
            f"({claims}); {s['controls']} controls ({controls})")
