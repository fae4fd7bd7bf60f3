"""What every registered claim and paper must satisfy (the conformance suite's rules).

:func:`claim_problems` and :func:`paper_problems` return the violations as sentences (empty
when conforming); the project's conformance tests assert that they are empty for every
claim under ``claims/``, and the scaffold's test asserts it for a freshly generated claim.
"""
from __future__ import annotations

import re
from typing import Iterator, Mapping

from .claim import ID_PATTERN, PROVENANCE, ClaimSpec, Control
from .papers import Paper
from .scaffold import PLACEHOLDER_ARXIV, PLACEHOLDER_AUTHORS

__all__ = ["MIN_DOCSTRING", "STRUCTURAL_NUMERALS", "claim_problems", "paper_problems",
           "numerals", "unexplained_numerals"]

#: a claim's docstring states the math and the pass criterion: at least this many characters
MIN_DOCSTRING = 200


#: numerals any description may use: structure, not measurement ("1/2", "x^2", "lambda = 0")
STRUCTURAL_NUMERALS = frozenset({0.0, 1.0, 2.0})
#: a numeral: not part of a name (x_1, l2, W_{i,0}) or an exponent (n^-3), signed, decimal, e-notation
NUMERAL = re.compile(r"(?<![A-Za-z_\d.{,^])(?<!\^[-+])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![A-Za-z_\d}])")


def numerals(text: str) -> set[float]:
    """The numbers written in ``text`` (see :data:`NUMERAL`), as floats, signs ignored."""
    return {abs(float(m.group())) for m in NUMERAL.finditer(text)}


def _numbers(value) -> Iterator[float]:
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield abs(float(value))


def unexplained_numerals(spec: ClaimSpec, control: Control) -> list[float]:
    """Numerals of ``control.description`` that are none of: the claim's sizes (both tiers) and
    ``constants``, the control's ``constants``, a number of the claim's source or statement or
    of the conclusions the control breaks, or :data:`STRUCTURAL_NUMERALS`.  Measured values
    belong in the records, where they cannot go stale."""
    allowed = set(STRUCTURAL_NUMERALS) | set(_numbers(spec.sizes)) | set(_numbers(spec.constants))
    allowed |= set(_numbers(control.constants)) | numerals(spec.source) | numerals(spec.statement)
    for name in control.breaks:
        allowed |= numerals(name)
    return sorted(v for v in numerals(control.description)
                  if not any(abs(v - a) <= 1e-12 * max(1.0, a) for a in allowed))


def claim_problems(spec: ClaimSpec, claims: Mapping[str, ClaimSpec],
                   papers: Mapping[str, Paper]) -> list[str]:
    """Every rule ``spec`` breaks: identity, source and statement, a docstring of at least
    :data:`MIN_DOCSTRING` characters, a registered paper, a provenance, sizes for both tiers,
    controls that are :class:`Control` objects with a kind and the conclusions they break,
    descriptions whose numerals are sizes or declared constants (:func:`unexplained_numerals`),
    and a discrepancy's corrected claim."""
    found = []
    if not ID_PATTERN.match(spec.id) or spec.paper != spec.id.split(".")[0]:
        found.append(f"id {spec.id!r} is not '<paper>.<statement>.<what>' of paper {spec.paper!r}")
    if not spec.source.strip() or not spec.statement.strip():
        found.append("source and statement must be non-empty")
    if len(spec.doc) < MIN_DOCSTRING:
        found.append(f"the docstring ({len(spec.doc)} characters) must state the math and the "
                     f"pass criterion (at least {MIN_DOCSTRING} characters)")
    if spec.paper not in papers:
        found.append(f"paper {spec.paper!r} is not registered: declare it with "
                     f"theorycheck.paper(...) in claims/{spec.paper}/__init__.py")
    if spec.provenance not in PROVENANCE:
        found.append(f"provenance {spec.provenance!r} is not one of {sorted(PROVENANCE)}")
    if set(spec.sizes) != {"quick", "full"}:
        found.append(f"sizes must give the tiers 'quick' and 'full' (got {sorted(spec.sizes)})")
    if not spec.controls:
        found.append("no negative control")
    for name, control in spec.controls.items():
        if not isinstance(control, Control):
            found.append(f"control {name!r} is not a Control")
            continue
        found += [f"control {name!r}: {p}" for p in control.problems()]
        extra = unexplained_numerals(spec, control)
        if extra:
            found.append(f"control {name!r}: numerals {extra} in its description are neither sizes "
                         "nor declared constants (Control(constants=...) / @claim(constants=...)); "
                         "a measured value goes to the records or calibration=")
    if spec.kind == "discrepancy" and spec.corrected_by not in claims:
        found.append(f"corrected_by {spec.corrected_by!r} is not a registered claim")
    return found


def paper_problems(paper: Paper, claims: Mapping[str, ClaimSpec]) -> list[str]:
    """The paper's expected claim ids that no registered claim encodes and ``pending`` does not
    list, and the ``pending`` ids that are encoded after all (the list is stale)."""
    encoded = {cid.split(".", 1)[1] for cid in claims if cid.startswith(paper.key + ".")}
    missing = [i for i in paper.expected_ids if i not in encoded and i not in paper.pending]
    stale = [i for i in paper.pending if i in encoded]
    found = [f"{paper.key}: claims not encoded yet: {missing}"] if missing else []
    if paper.arxiv == PLACEHOLDER_ARXIV or paper.authors == PLACEHOLDER_AUTHORS or paper.title.startswith("("):
        found.append(f"{paper.key}: the citation is still the scaffold's placeholder "
                     f"(arxiv {paper.arxiv!r}, authors {paper.authors!r}): fill it in")
    if stale:
        found.append(f"{paper.key}: encoded but still listed as pending: {stale}")
    return found
