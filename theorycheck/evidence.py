"""The evidence class of each negative control, read from the lineage of what it decided.

Each case logs the computations it ran (:mod:`theorycheck.lineage`: shared runs, random
streams, solver calls, trajectory runs, each identified by its inputs), and each decision
records how many of them had been logged when it was made.  A control is **independent**
when a conclusion it broke (one it declares in ``breaks`` that failed; all it declares when
none failed) was decided after a computation that its claim's case did not run: an event
whose identity is absent from the claim's log.  That is a training run, a solver call, a
draw or a shared run with a changed input -- other data, other dynamics, another
initialization, another reference program.  Everything else is **discrimination**: the
claim's own computations judged again (rescaled, shifted, reversed, subsetted, read at
another step, against a stricter bound, through a flipped boolean or another formula), which
shows that the check can fail, not that the theorem's conclusion fails when its reason is
removed.  No arithmetic on the claim's numbers logs an event, so no reshaping of them makes
a control independent.

What this can and cannot enforce (see docs/writing-claims.md, "Evidence classes"):

* it is *precedence*, not data flow: a conclusion decided after a new computation is taken to
  read it.  A control that runs something new and then re-judges old numbers is classed
  independent; the report names the computation that made the difference, so a reader can
  see whether the broken conclusion depends on it;
* only computations made through ``tc.use``, ``tc.rng``/``tc.seed`` and the library's
  declared solvers and runs are seen: a control that recomputes in plain numpy from the
  claim's own draws is classed discrimination (route the computation through a shared run);
* identity is by inputs, so a "new" computation on inputs that differ in a way that cannot
  matter (an unused configuration key) still counts as new.

The class is detected from the run, never read from the control's declared ``kind``.
"""
from __future__ import annotations

__all__ = ["INDEPENDENT", "DISCRIMINATION", "evidence_class", "classify_controls",
           "describe_computation"]

INDEPENDENT = "independent"
DISCRIMINATION = "discrimination"


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _broken(control: dict) -> list[dict]:
    """The control's decisions of the conclusions it broke (declared and failed), or of every
    conclusion it declares when none of them failed."""
    declared = [d for d in control.get("decisions", [])
                if d.get("role") == "conclusion" and d["name"] in control.get("breaks", [])]
    failed = [d for d in declared if not d["passed"]]
    return failed or declared


def _config_change(event: dict, before: dict) -> str:
    mine = event.get("detail", {}).get("config", {})
    theirs = before.get("detail", {}).get("config", {})
    changed = [f"{k}={mine.get(k)!r} (the claim's: {theirs.get(k)!r})"
               for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)]
    return ", ".join(changed) or "another cache key (tier, seed or code)"


def describe_computation(event: dict, claim_events: list[dict]) -> str:
    """A reader's line for a computation of a control that its claim did not run: what it
    is and, when the claim ran the same program, which of its inputs differ."""
    kind, name = event["kind"], _short(event["name"])
    if kind == "draw":
        return f"a draw from the random stream {event['name']!r}, which the claim does not use"
    same = [e for e in claim_events if e["kind"] == kind and e["name"] == event["name"]]
    label = {"shared_run": "shared run", "solver": "solver call", "trajectory": "trajectory run"}[kind]
    if not same:
        return f"{label} {name}, which the claim does not run"
    if kind == "shared_run":
        return f"{label} {name} with {_config_change(event, same[0])}"
    changed = sorted({k for e in same for k, v in event["inputs"].items() if e["inputs"].get(k) != v})
    return f"{label} {name} on other {', '.join(changed)} than the claim's"


def evidence_class(claim: dict, control: dict) -> tuple[str, str, list[str]]:
    """(class, why, lineage) of one control record against its claim's (results.json
    entries): ``lineage`` lists the computations of its own that preceded a broken
    conclusion (empty for discrimination)."""
    claim_events = claim.get("computations", [])
    known = {e["id"] for e in claim_events}
    events = control.get("computations", [])
    new = [i for i, e in enumerate(events) if e["id"] not in known]
    for decision in _broken(control):
        before = decision.get("detail", {}).get("computed_before", 0)
        used = [events[i] for i in new if i < before]
        if used:
            lineage = [describe_computation(e, claim_events) for e in used]
            return INDEPENDENT, f"{decision['name']!r} was decided after {lineage[0]}", lineage
    if new:
        return DISCRIMINATION, (f"its {len(new)} computation(s) of its own came after every "
                                "conclusion it breaks, so none of them can have been read"), []
    return DISCRIMINATION, "re-judges the claim's own computations (it ran nothing the claim did not)", []


def classify_controls(claim: dict) -> int | None:
    """Set ``evidence``, ``evidence_reason`` and ``evidence_lineage`` on each control record
    of the results entry ``claim`` and ``independent_controls`` on the claim; returns that
    count, or None when the claim or one of its controls did not decide (deselected, an
    error): then a control that did not run gets ``evidence`` None and the count covers
    those that ran."""
    count, complete = 0, bool(claim.get("decisions"))
    for control in claim["controls"]:
        if not control.get("decisions") or not claim.get("decisions"):
            control.update(evidence=None, evidence_reason="no decisions recorded", evidence_lineage=[])
            complete = False
            continue
        kind, why, lineage = evidence_class(claim, control)
        control.update(evidence=kind, evidence_reason=why, evidence_lineage=lineage)
        count += kind == INDEPENDENT
    claim["independent_controls"] = count
    return count if complete else None
