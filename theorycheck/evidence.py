"""The evidence class of each negative control, detected from what it computed.

A control is *independent* when it computed something its claim did not: a conclusion it
breaks read other data than the claim's decision of the same name (another digest of the
compared arrays), or compared them with another array reference (a reference recomputed under
a perturbation).  Shared runs of its own (other cache keys) are named in the reason, but do not
count by themselves: a run under another label that returns the claim's numbers computed
nothing new.  It is a
*discrimination* check otherwise: the claim's own numbers judged against a stricter scalar
threshold or a stronger statement.  A discrimination check shows that the check can fail; only
an independent control shows that the theorem's conclusion fails when its reason is removed.
The class is detected from the run, never read from the control's declared ``kind`` (a
wrong-p ``statement`` control that recomputes its reference is independent).
"""
from __future__ import annotations

__all__ = ["INDEPENDENT", "DISCRIMINATION", "evidence_class", "classify_controls"]

INDEPENDENT = "independent"
DISCRIMINATION = "discrimination"


def _reads(case: dict) -> dict[str, dict]:
    return {d["name"]: d.get("detail", {}).get("reads", {}) for d in case.get("decisions", [])}


def _run_keys(case: dict) -> set[str]:
    return {r["key"] for r in case.get("shared_runs", [])}


def evidence_class(claim: dict, control: dict) -> tuple[str, str]:
    """(class, why) of one control record against its claim's (results.json entries; the
    control's ``breaks`` name the conclusions compared)."""
    breaks = control.get("breaks", [])
    runs = len(_run_keys(control) - _run_keys(claim))
    via = f" (through {runs} shared run(s) of its own)" if runs else ""
    own, theirs = _reads(claim), _reads(control)
    for name in breaks:
        mine, other = own.get(name, {}), theirs.get(name, {})
        if not other:
            continue
        if other.get("data") != mine.get("data"):
            return INDEPENDENT, f"{name!r} reads other data than the claim's{via}"
        if other.get("reference") != mine.get("reference") and other.get("reference_size", 1) > 1:
            return INDEPENDENT, f"{name!r} compares with another array reference{via}"
    same = " although it ran shared runs of its own" if runs else ""
    return DISCRIMINATION, f"re-judges the claim's own numbers (same data, a scalar criterion){same}"


def classify_controls(claim: dict) -> int | None:
    """Set ``evidence`` and ``evidence_reason`` on each control record of the results entry
    ``claim`` and ``independent_controls`` on the claim; returns that count, or None when the
    claim or one of its controls did not decide (deselected, an error): then a control that did
    not run gets ``evidence`` None and the count covers those that ran."""
    count, complete = 0, bool(claim.get("decisions"))
    for control in claim["controls"]:
        if not control.get("decisions") or not claim.get("decisions"):
            control.update(evidence=None, evidence_reason="no decisions recorded")
            complete = False
            continue
        kind, why = evidence_class(claim, control)
        control.update(evidence=kind, evidence_reason=why)
        count += kind == INDEPENDENT
    claim["independent_controls"] = count
    return count if complete else None
