"""Claims as first-class objects: the ``@claim`` / ``@discrepancy`` decorators, negative
controls (:class:`Control`) and the claim registry.

A claim is a pytest test function decorated with :func:`claim`.  The decorator

* validates and registers the claim's identity (dotted id ``<paper>.<statement>.<what>``,
  source, one-line statement, provenance) and its **negative controls** -- a claim without a
  control, or a control that is not a :class:`Control`, is a :class:`DeclarationError` at
  import, i.e. at pytest collection;
* parametrises the test over ``claim`` plus one case per control; each control case is
  marked ``xfail(strict=True, raises=ClaimFailure)``, so a control that passes, or that
  fails for a reason other than the one it declares (:class:`ControlMisfire`), fails the
  suite;
* wraps the function so that, after it returns, the decisions recorded on its context are
  turned into a verdict (:meth:`theorycheck.context.ClaimContext.conclude`).

Every decision has a **role**: a *precondition* (the theorem's hypotheses hold on this
instance, ``tc.precondition.<check>``) or a *conclusion* (what the theorem asserts,
``tc.conclusion.<check>``).  A control declares its **kind** and the conclusions it
**breaks**; it fails as expected only when one of those conclusions fails with finite
values, with the preconditions failing (kind ``hypothesis``) or all holding (every other
kind).

A **discrepancy** (:func:`discrepancy`) encodes a paper's statement that is false as
written: it *passes* when it exhibits the counterexample, names the claim holding the
corrected statement (``corrected_by``), and is listed apart in the report as "refuted as
written".
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import pytest

from .errors import DeclarationError, ClaimFailure
from .results_layout import CLAIM_VARIANT, variant_id
from .runtime import TIERS
from .sizes import check_size_names

__all__ = [
    "Control",
    "Calibrated",
    "ClaimSpec",
    "CONTROL_KINDS",
    "PROVENANCE",
    "NATURES",
    "claim",
    "discrepancy",
    "registry",
    "CLAIM_VARIANT",
]

ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*\.[A-Za-z0-9_]+\.[A-Za-z0-9_]+$")
CONTROL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
KINDS = ("claim", "discrepancy")
#: what a negative control perturbs
CONTROL_KINDS = {
    "hypothesis": "violates an assumption of the theorem (a precondition must fail)",
    "reference": "replaces the reference quantity by a wrong one",
    "dynamics": "another optimizer, step size or initialization",
    "statement": "checks a stronger or different statement",
}
#: how sure the encoded statement is of the paper's
PROVENANCE = {
    "stated": "the surviving paper text states it",
    "derived": "reconstructed and verified",
    "inferred": "form or constants chosen where the paper's were lost",
}
#: what the paper's statement is, when it is weaker than a theorem about training: the report
#: prints the label beside the verdict
NATURES = {
    "theorem": "a statement about the model or its training, tested on instances",
    "figure reproduction": "a figure or table of the paper redrawn from closed forms or runs",
    "identity": "an identity or an equality by construction (a count, an algebraic fact)",
    "statement-proof inconsistency": "the statement and its proof disagree; both are computed",
}


@dataclass(frozen=True)
class Control:
    """A negative control: a perturbation under which named conclusions of the claim must fail.

    ``kind`` is one of :data:`CONTROL_KINDS`; ``breaks`` lists the names of the conclusion
    decisions the perturbation must make fail; ``constants`` names the numbers that define the
    perturbation (a step factor, a wrong p), the only numerals its ``description`` may use
    besides the claim's sizes and constants (no measured values: those go to the records).
    """

    kind: str
    breaks: tuple[str, ...]
    description: str
    constants: Mapping[str, float] = field(default_factory=dict, hash=False)

    def __init__(self, kind: str, breaks: Sequence[str], description: str = "",
                 constants: Mapping[str, float] | None = None):
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "breaks", tuple(breaks) if not isinstance(breaks, str) else (breaks,))
        object.__setattr__(self, "description", " ".join(str(description).split()))
        object.__setattr__(self, "constants", dict(constants or {}))

    def problems(self) -> list[str]:
        """What is wrong with this declaration (empty when it is valid)."""
        found = []
        if self.kind not in CONTROL_KINDS:
            found.append(f"kind {self.kind!r} is not one of {sorted(CONTROL_KINDS)}")
        if not self.breaks or not all(isinstance(b, str) and b.strip() for b in self.breaks):
            found.append("breaks must be a non-empty list of conclusion names")
        if not self.description:
            found.append("needs a description of its perturbation")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in self.constants.values()):
            found.append("constants must map names to numbers")
        return found

    def to_json(self) -> dict:
        return {"kind": self.kind, "breaks": list(self.breaks), "description": self.description,
                "constants": dict(self.constants)}


@dataclass(frozen=True)
class Calibrated:
    """How a threshold was set from data: on a *calibration* block of seeds, confirmed on a
    disjoint *validation* block (issue 31's protocol, docs/writing-claims.md "Calibrating a
    claim").  ``decision`` names the decision whose threshold it is, ``threshold`` its value
    (a number, or text such as ``"slope range [-1.25, -0.75]"``), the blocks are seed ranges
    like ``"1000-1049"`` outside the spent seeds 0-19, and ``how`` says how the threshold
    follows from the calibration block (e.g. "mean - 6 sd of the margins").  ``tier`` is the tier
    whose sizes the blocks ran at (quick by default): the record speaks for that tier only, and a
    claim run at that tier must record the decision it names."""

    decision: str
    threshold: float | str
    calibration_seeds: str
    validation_seeds: str
    how: str
    tier: str = "quick"

    def problems(self) -> list[str]:
        """What is wrong with this record (empty when it is valid)."""
        from .calibrate import SPENT_SEEDS
        from .errors import UsageError
        from .sweep import parse_seeds

        found = []
        if not isinstance(self.decision, str) or not self.decision.strip():
            found.append("decision must name the decision whose threshold was calibrated")
        number = isinstance(self.threshold, (int, float)) and not isinstance(self.threshold, bool)
        if not (number and math.isfinite(self.threshold)) and not (
                isinstance(self.threshold, str) and self.threshold.strip()):
            found.append(f"threshold must be a finite number or a description, got {self.threshold!r}")
        if not isinstance(self.how, str) or not self.how.strip():
            found.append("how must say how the threshold follows from the calibration block")
        if self.tier not in TIERS:
            found.append(f"tier must be one of {list(TIERS)}, got {self.tier!r}")
        blocks = {}
        for label in ("calibration_seeds", "validation_seeds"):
            try:
                blocks[label] = set(parse_seeds(getattr(self, label)))
            except UsageError as exc:
                found.append(f"{label}: {exc}")
                continue
            spent = sorted(blocks[label] & set(SPENT_SEEDS))
            if spent:
                found.append(f"{label} {getattr(self, label)!r} includes spent seeds {spent[:5]} "
                             f"(seeds {SPENT_SEEDS.start}-{SPENT_SEEDS.stop - 1} were looked at while "
                             "the claims were written)")
        if len(blocks) == 2 and blocks["calibration_seeds"] & blocks["validation_seeds"]:
            shared = sorted(blocks["calibration_seeds"] & blocks["validation_seeds"])
            found.append(f"the calibration and validation blocks share seeds {shared[:5]}: a "
                         "threshold is confirmed only on seeds it was not chosen on")
        return found

    def line(self) -> str:
        """The record as the report's calibration line."""
        return (f"{self.decision}: threshold {self.threshold} calibrated on seeds "
                f"{self.calibration_seeds}, validated on seeds {self.validation_seeds}, "
                f"{self.tier} tier ({self.how})")

    def to_json(self) -> dict:
        return {"decision": self.decision, "threshold": self.threshold,
                "calibration_seeds": self.calibration_seeds,
                "validation_seeds": self.validation_seeds, "how": self.how, "tier": self.tier}


@dataclass(frozen=True)
class ClaimSpec:
    """The identity of one executable claim, as shown by ``theorycheck list`` and the report."""

    id: str
    paper: str
    source: str
    statement: str
    controls: Mapping[str, Control]
    provenance: str
    kind: str = "claim"
    corrected_by: str | None = None
    sizes: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    module: str = ""
    function: str = ""
    doc: str = ""
    nature: str = "theorem"
    constants: Mapping[str, float] = field(default_factory=dict)
    calibration: tuple[str | Calibrated, ...] = ()
    single_evidence: str | None = None
    over_budget: str | None = None
    dtypes: tuple[str, ...] = ("float64",)

    def to_json(self) -> dict:
        return {
            "id": self.id, "paper": self.paper, "source": self.source, "kind": self.kind,
            "statement": self.statement, "corrected_by": self.corrected_by,
            "provenance": self.provenance, "sizes": {k: dict(v) for k, v in self.sizes.items()},
            "controls": {name: c.to_json() for name, c in self.controls.items()},
            "module": self.module, "function": self.function, "doc": self.doc,
            "nature": self.nature, "constants": dict(self.constants),
            "calibration": [c.line() if isinstance(c, Calibrated) else c for c in self.calibration],
            "calibration_records": [c.to_json() for c in self.calibration
                                    if isinstance(c, Calibrated)],
            "single_evidence": self.single_evidence,
            "over_budget": self.over_budget,
            "dtypes": list(self.dtypes),
        }


#: id -> ClaimSpec for every claim imported so far in this process
registry: dict[str, ClaimSpec] = {}


def _validate(spec: ClaimSpec) -> None:
    where = f"claim {spec.id!r} ({spec.module}.{spec.function})"
    if not ID_PATTERN.match(spec.id):
        raise DeclarationError(f"{where}: id must look like '<paper>.<statement>.<what>' "
                                    "(letters, digits, underscores; paper key lower case)")
    if spec.kind not in KINDS:
        raise DeclarationError(f"{where}: unknown kind {spec.kind!r}; use one of {KINDS}")
    if not spec.source.strip() or not spec.statement.strip():
        raise DeclarationError(f"{where}: source and statement must be non-empty")
    if not spec.controls:
        raise DeclarationError(f"{where}: declared without a negative control; every claim "
                                    "needs at least one perturbation under which its check must fail")
    for name, control in spec.controls.items():
        if not CONTROL_NAME.match(name):
            raise DeclarationError(f"{where}: control {name!r} needs an identifier-like name")
        if not isinstance(control, Control):
            raise DeclarationError(
                f"{where}: control {name!r} is {type(control).__name__} {control!r}; declare it "
                "as Control(kind, breaks=[<conclusion names>], description=...) with kind one of "
                f"{sorted(CONTROL_KINDS)}")
        problems = control.problems()
        if problems:
            raise DeclarationError(f"{where}: control {name!r}: " + "; ".join(problems))
    if spec.over_budget is not None and (not isinstance(spec.over_budget, str)
                                         or not spec.over_budget.strip()):
        raise DeclarationError(f"{where}: over_budget must say in words why the claim's "
                               f"false-failure rate cannot be brought within the budget, not "
                               f"{spec.over_budget!r}")
    if spec.nature not in NATURES:
        raise DeclarationError(f"{where}: nature {spec.nature!r} is not one of {sorted(NATURES)}")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in spec.constants.values()):
        raise DeclarationError(f"{where}: constants must map names to numbers")
    if spec.provenance not in PROVENANCE:
        raise DeclarationError(f"{where}: provenance {spec.provenance!r} is not one of "
                                    f"{sorted(PROVENANCE)} ({'; '.join(f'{k}: {v}' for k, v in PROVENANCE.items())})")
    if ("DISCREPANCY" in spec.id) != (spec.kind == "discrepancy"):
        raise DeclarationError(f"{where}: ids containing DISCREPANCY are declared with "
                                    "@discrepancy, and only those")
    if spec.kind == "discrepancy" and not spec.corrected_by:
        raise DeclarationError(f"{where}: a discrepancy must name the claim with the "
                                    "corrected statement (corrected_by=...)")
    for record in spec.calibration:
        if not isinstance(record, (str, Calibrated)):
            raise DeclarationError(f"{where}: calibration entries are text or Calibrated(decision=..., "
                                   f"threshold=..., calibration_seeds=..., validation_seeds=..., "
                                   f"how=...), got {type(record).__name__} {record!r}")
        problems = record.problems() if isinstance(record, Calibrated) else []
        if problems:
            raise DeclarationError(f"{where}: calibration record of {record.decision!r}: "
                                   + "; ".join(problems))
    unknown = set(spec.sizes) - {"quick", "full"}
    if unknown or (spec.sizes and set(spec.sizes) != {"quick", "full"}):
        raise DeclarationError(f"{where}: sizes must give exactly the tiers 'quick' and "
                                    f"'full' (got {sorted(spec.sizes)})")
    check_size_names(spec.sizes, where)
    previous = registry.get(spec.id)
    if previous is not None and (previous.module, previous.function) != (spec.module, spec.function):
        raise DeclarationError(f"{where}: id already declared by "
                                    f"{previous.module}.{previous.function}")


def claim(
    id: str,
    *,
    source: str,
    statement: str,
    controls: Mapping[str, Control],
    provenance: str,
    sizes: Mapping[str, Mapping[str, object]] | None = None,
    kind: str = "claim",
    corrected_by: str | None = None,
    nature: str = "theorem",
    constants: Mapping[str, float] | None = None,
    calibration: str | Calibrated | Sequence[str | Calibrated] = (),
    single_evidence: str | None = None,
    over_budget: str | None = None,
    dtypes: Sequence[str] = ("float64",),
) -> Callable:
    """Declare a pytest function as an executable claim.

    Parameters
    ----------
    id:
        ``<paperkey>.<statement>.<what>``, e.g. ``"vdt24.thm1.ngd_global_direction_rate"``.
    source:
        Where the paper states it, e.g. ``"Theorem 1"``.
    statement:
        One plain sentence saying what is claimed.
    controls:
        ``{name: Control(kind, breaks=[...], description=...)}``: the negative controls,
        perturbations under which the named conclusions must fail (see :class:`Control`).
    provenance:
        ``"stated"``, ``"derived"`` or ``"inferred"`` (see :data:`PROVENANCE`).
    sizes:
        ``{"quick": {...}, "full": {...}}``: the problem sizes of each tier; the context
        hands the current tier's dict to the function as ``tc.sizes``.  Common concepts take
        their names from :data:`theorycheck.sizes.VOCABULARY` (a synonym is refused).
    nature:
        What the paper's statement is (:data:`NATURES`): ``"theorem"`` by default; a
        ``"figure reproduction"``, an ``"identity"`` or a ``"statement-proof inconsistency"``
        is labelled so in the report.
    constants:
        ``{name: number}``: thresholds and factors of the criterion (e.g. ``{"faster": 2.0}``),
        the numerals the controls' descriptions may use besides the sizes.
    calibration:
        The history of the criterion: seeds tried, values seen, thresholds or windows chosen
        or moved and on which runs (say when a choice was not held out).  The report shows it;
        docstrings and descriptions carry no measured numbers.  A threshold set by the
        calibration protocol is a :class:`Calibrated` record naming its calibration and
        validation blocks of seeds (checked at declaration); text lines remain accepted.
    single_evidence:
        Why the claim has no *independent* control (one whose runs or arrays differ from the
        claim's), when it has none; the report prints it beside the verdict.
    over_budget:
        Why the claim's false-failure bound at the quick tier
        (``reports/calibration-quick.json``) cannot be brought within the claim budget
        (:data:`theorycheck.calibrate.CLAIM_BUDGET`): which decision keeps it over, why no
        design within the tier's cost reaches the budget, and what the verdict reports
        instead.  Declared exactly on the claims whose committed row is over budget (the
        conformance tests hold both directions); the report and ``theorycheck list -v`` print
        it beside the bound.
    dtypes:
        The ``--tc-dtype`` values the claim's tolerances and numerics are written for (default
        float64 only); under another dtype the claim and its controls skip, saying so.
    """
    def decorate(fn: Callable) -> Callable:
        spec = ClaimSpec(
            id=id, paper=id.split(".")[0], source=source, statement=" ".join(statement.split()),
            controls=dict(controls or {}), provenance=provenance, kind=kind,
            corrected_by=corrected_by,
            sizes={k: dict(v) for k, v in (sizes or {}).items()},
            module=fn.__module__, function=fn.__qualname__, doc=(fn.__doc__ or "").strip(),
            nature=nature, constants=dict(constants or {}),
            calibration=(calibration,) if isinstance(calibration, (str, Calibrated))
            else tuple(calibration),
            single_evidence=single_evidence,
            over_budget=" ".join(over_budget.split()) if isinstance(over_budget, str) else over_budget,
            dtypes=tuple(dtypes),
        )
        _validate(spec)
        registry[spec.id] = spec

        @functools.wraps(fn)
        def run_claim(*args, **kwargs):
            tc = kwargs.get("tc")
            if tc is None:
                raise DeclarationError(f"claim {spec.id!r}: the function must take the "
                                            "'tc' fixture")
            with tc.recording():
                fn(*args, **kwargs)
            tc.conclude()

        params = [pytest.param(None, id=CLAIM_VARIANT, marks=pytest.mark.claim)]
        for name, control in spec.controls.items():
            params.append(pytest.param(
                name, id=variant_id(name),
                marks=[pytest.mark.control,
                       pytest.mark.xfail(strict=True, raises=ClaimFailure,
                                         reason=f"{control.kind} control: {control.description}")],
            ))
        run_claim.__theorycheck_claim__ = spec
        return pytest.mark.parametrize("tc", params, indirect=True)(run_claim)

    return decorate


def discrepancy(
    id: str,
    *,
    source: str,
    statement: str,
    corrected_by: str,
    controls: Mapping[str, Control],
    provenance: str,
    sizes: Mapping[str, Mapping[str, object]] | None = None,
    constants: Mapping[str, float] | None = None,
    calibration: str | Calibrated | Sequence[str | Calibrated] = (),
    single_evidence: str | None = None,
    over_budget: str | None = None,
    nature: str = "theorem",
) -> Callable:
    """Declare a claim that exhibits a counterexample to a paper's statement *as written*.

    ``statement`` is the paper's statement as written (the one shown false);
    ``corrected_by`` is the id of the claim that checks the corrected statement.
    The check passes when the counterexample is exhibited.
    """
    return claim(id, source=source, statement=statement, controls=controls, sizes=sizes,
                 provenance=provenance, kind="discrepancy", corrected_by=corrected_by,
                 constants=constants, calibration=calibration, single_evidence=single_evidence,
                 over_budget=over_budget,
                 nature=nature)
