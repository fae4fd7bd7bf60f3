"""Claims as first-class objects: the ``@claim`` / ``@discrepancy`` decorators and the registry.

A claim is a pytest test function decorated with :func:`claim`.  The decorator

* validates and registers the claim's identity (dotted id ``<paper>.<statement>.<what>``,
  source, one-line statement) and its **negative controls** -- a claim without a control
  is a :class:`ClaimDeclarationError` at import, i.e. at pytest collection;
* parametrises the test over ``claim`` plus one case per control; each control case is
  marked ``xfail(strict=True, raises=ClaimFailure)``, so a control that passes, or that
  crashes with anything other than a failed check, fails the suite;
* wraps the function so that, after it returns, the decisions recorded on its context are
  turned into a verdict: any failed decision raises :class:`ClaimFailure` (listing every
  decision), and a claim that recorded no decision at all raises :class:`NoDecisionError`.

The function receives one fixture, ``tc`` (a :class:`theorycheck.context.ClaimContext`):
``tc.control`` is ``None`` for the claim itself and the control's name in a control case.

A **discrepancy** (:func:`discrepancy`) encodes a paper's statement that is false as
written: it *passes* when it exhibits the counterexample, names the claim holding the
corrected statement (``corrected_by``), and is listed apart in the report as "refuted as
written".
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

import pytest

__all__ = [
    "ClaimFailure",
    "ClaimDeclarationError",
    "NoDecisionError",
    "ClaimSpec",
    "claim",
    "discrepancy",
    "registry",
    "CLAIM_VARIANT",
]

ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*\.[A-Za-z0-9_]+\.[A-Za-z0-9_]+$")
CONTROL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
KINDS = ("claim", "discrepancy")
#: the pytest parameter id of the claim's own case (controls are ``control-<name>``)
CLAIM_VARIANT = "claim"


class ClaimFailure(AssertionError):
    """A claim's check did not hold.  The only failure a negative control may show."""


class ClaimDeclarationError(TypeError):
    """A claim was declared wrongly (bad id, no negative control, duplicate id, ...)."""


class NoDecisionError(RuntimeError):
    """A claim (or control) ran to the end without recording a single decision."""


@dataclass(frozen=True)
class ClaimSpec:
    """The identity of one executable claim, as shown by ``theorycheck list`` and the report."""

    id: str
    paper: str
    source: str
    statement: str
    controls: Mapping[str, str]
    kind: str = "claim"
    corrected_by: str | None = None
    sizes: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    module: str = ""
    function: str = ""
    doc: str = ""

    def to_json(self) -> dict:
        return {
            "id": self.id, "paper": self.paper, "source": self.source, "kind": self.kind,
            "statement": self.statement, "corrected_by": self.corrected_by,
            "controls": dict(self.controls), "module": self.module, "function": self.function,
        }


#: id -> ClaimSpec for every claim imported so far in this process
registry: dict[str, ClaimSpec] = {}


def _validate(spec: ClaimSpec) -> None:
    where = f"claim {spec.id!r} ({spec.module}.{spec.function})"
    if not ID_PATTERN.match(spec.id):
        raise ClaimDeclarationError(f"{where}: id must look like '<paper>.<statement>.<what>' "
                                    "(letters, digits, underscores; paper key lower case)")
    if spec.kind not in KINDS:
        raise ClaimDeclarationError(f"{where}: unknown kind {spec.kind!r}; use one of {KINDS}")
    if not spec.source.strip() or not spec.statement.strip():
        raise ClaimDeclarationError(f"{where}: source and statement must be non-empty")
    if not spec.controls:
        raise ClaimDeclarationError(f"{where}: declared without a negative control; every claim "
                                    "needs at least one perturbation under which its check must fail")
    for name, description in spec.controls.items():
        if not CONTROL_NAME.match(name) or not str(description).strip():
            raise ClaimDeclarationError(f"{where}: control {name!r} needs an identifier-like name "
                                        "and a description of its perturbation")
    if ("DISCREPANCY" in spec.id) != (spec.kind == "discrepancy"):
        raise ClaimDeclarationError(f"{where}: ids containing DISCREPANCY are declared with "
                                    "@discrepancy, and only those")
    if spec.kind == "discrepancy" and not spec.corrected_by:
        raise ClaimDeclarationError(f"{where}: a discrepancy must name the claim with the "
                                    "corrected statement (corrected_by=...)")
    unknown = set(spec.sizes) - {"quick", "full"}
    if unknown or (spec.sizes and set(spec.sizes) != {"quick", "full"}):
        raise ClaimDeclarationError(f"{where}: sizes must give exactly the tiers 'quick' and "
                                    f"'full' (got {sorted(spec.sizes)})")
    previous = registry.get(spec.id)
    if previous is not None and (previous.module, previous.function) != (spec.module, spec.function):
        raise ClaimDeclarationError(f"{where}: id already declared by "
                                    f"{previous.module}.{previous.function}")


def claim(
    id: str,
    *,
    source: str,
    statement: str,
    controls: Mapping[str, str],
    sizes: Mapping[str, Mapping[str, object]] | None = None,
    kind: str = "claim",
    corrected_by: str | None = None,
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
        ``{name: description}`` of the negative controls: perturbations (violated
        assumption, wrong reference, ...) under which the claim's check must fail.
    sizes:
        ``{"quick": {...}, "full": {...}}``: the problem sizes of each tier; the context
        hands the current tier's dict to the function as ``tc.sizes``.
    """
    def decorate(fn: Callable) -> Callable:
        spec = ClaimSpec(
            id=id, paper=id.split(".")[0], source=source, statement=" ".join(statement.split()),
            controls=dict(controls or {}), kind=kind, corrected_by=corrected_by,
            sizes={k: dict(v) for k, v in (sizes or {}).items()},
            module=fn.__module__, function=fn.__qualname__, doc=(fn.__doc__ or "").strip(),
        )
        _validate(spec)
        registry[spec.id] = spec

        @functools.wraps(fn)
        def run_claim(*args, **kwargs):
            tc = kwargs.get("tc")
            if tc is None:
                raise ClaimDeclarationError(f"claim {spec.id!r}: the function must take the "
                                            "'tc' fixture")
            fn(*args, **kwargs)
            tc.conclude()

        params = [pytest.param(None, id=CLAIM_VARIANT, marks=pytest.mark.claim)]
        for name, description in spec.controls.items():
            params.append(pytest.param(
                name, id=f"control-{name}",
                marks=[pytest.mark.control,
                       pytest.mark.xfail(strict=True, raises=ClaimFailure,
                                         reason=f"negative control: {description}")],
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
    controls: Mapping[str, str],
    sizes: Mapping[str, Mapping[str, object]] | None = None,
) -> Callable:
    """Declare a claim that exhibits a counterexample to a paper's statement *as written*.

    ``statement`` is the paper's statement as written (the one shown false);
    ``corrected_by`` is the id of the claim that checks the corrected statement.
    The check passes when the counterexample is exhibited.
    """
    return claim(id, source=source, statement=statement, controls=controls, sizes=sizes,
                 kind="discrepancy", corrected_by=corrected_by)
