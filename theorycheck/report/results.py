"""``results.json``: one record per claim, its controls nested inside.

Shape (see ``schema.json`` beside this file, which the tests validate against)::

    {"tier", "device", "dtype", "seed", "started", "wall_time_s", "theorycheck_version",
     "environment": {...}, "summary": {...},
     "claims": [{"id", "paper", "source", "kind", "statement", "corrected_by", "outcome",
                 "duration_s", "measurements", "decisions", "plots", "message", "shared_runs",
                 "controls": [{"name", "description", "outcome", "duration_s",
                               "decisions", "message", "shared_runs"}]}]}

``shared_runs``: the shared runs the case used, ``{"name", "key", "config", "sizes", "seed",
"source"}`` with source memo | disk | computed (see :mod:`theorycheck.cache`).

Claim outcomes: passed | failed | error | skipped | not_run.
Control outcomes: failed_as_expected | passed_unexpectedly | error | skipped | not_run.
"""
from __future__ import annotations

import json
import platform
from collections import Counter
from pathlib import Path

CLAIM_OUTCOMES = ("passed", "failed", "error", "skipped", "not_run")
CONTROL_OUTCOMES = ("failed_as_expected", "passed_unexpectedly", "error", "skipped", "not_run")
SCHEMA_PATH = Path(__file__).with_name("schema.json")


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


def _control_entry(name: str, description: str, record: dict | None) -> dict:
    if record is None:
        return {"name": name, "description": description, "outcome": "not_run",
                "duration_s": 0.0, "decisions": [], "message": None, "shared_runs": []}
    return {"name": name, "description": description, "outcome": record["outcome"],
            "duration_s": record["duration_s"], "decisions": record["decisions"],
            "measurements": record["measurements"], "message": record.get("message"),
            "shared_runs": record.get("shared_runs", [])}


def _claim_entry(spec: dict, cases: dict[str, dict]) -> dict:
    own = cases.get("claim")
    entry = {key: spec[key] for key in ("id", "paper", "source", "kind", "statement", "corrected_by")}
    entry.update(
        outcome=own["outcome"] if own else "not_run",
        duration_s=own["duration_s"] if own else 0.0,
        measurements=own["measurements"] if own else {},
        decisions=own["decisions"] if own else [],
        plots=own["plots"] if own else [],
        message=own.get("message") if own else None,
        shared_runs=own.get("shared_runs", []) if own else [],
        controls=[_control_entry(name, desc, cases.get(f"control-{name}"))
                  for name, desc in spec["controls"].items()],
    )
    return entry


def assemble_results(*, runtime, started: str, version: str, wall_time_s: float,
                     records: list[dict]) -> dict:
    """Group the per-case records of a run into the results document."""
    specs: dict[str, dict] = {}
    cases: dict[str, dict[str, dict]] = {}
    for record in records:
        specs[record["id"]] = record["spec"]
        cases.setdefault(record["id"], {})[record["variant"]] = record
    claims = [_claim_entry(specs[cid], cases[cid]) for cid in sorted(specs)]
    results = dict(runtime.to_json(), started=started, wall_time_s=round(wall_time_s, 3),
                   theorycheck_version=version, environment=_environment(), claims=claims)
    results["summary"] = summary_counts(results)
    return results


def summary_counts(results: dict) -> dict:
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
    s = results["summary"]
    claims = ", ".join(f"{v} {k}" for k, v in s["claim_outcomes"].items() if v)
    controls = ", ".join(f"{v} {k}" for k, v in s["control_outcomes"].items() if v)
    return (f"theorycheck ({results['tier']} tier, {results['device']}): {s['claims']} claims "
            f"({claims}); {s['controls']} controls ({controls})")


def load_results(path: str | Path) -> dict:
    """Read a results.json and check it against the schema (a clear error if it does not fit)."""
    results = json.loads(Path(path).read_text())
    validate_results(results)
    return results


def validate_results(results: dict) -> None:
    """Raise ``ValueError`` naming the first place where ``results`` breaks the schema."""
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    try:
        jsonschema.validate(results, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(map(str, exc.absolute_path)) or "<root>"
        raise ValueError(f"results.json does not fit the schema at {where}: {exc.message}") from None
