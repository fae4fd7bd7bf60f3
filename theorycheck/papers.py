"""The paper registry: one :func:`paper` declaration per encoded paper.

Each paper package ``claims/<key>/__init__.py`` declares its paper once::

    from theorycheck import paper

    paper("vdt24", authors="B. Vasudeva, P. Deora, C. Thrampoulidis",
          title="Implicit Bias and Fast Convergence Rates for Self-attention",
          arxiv="2402.05738", year=2024, expected_ids=["thm1.ngd_global_direction_rate", ...])

``expected_ids`` are the claim ids (without the paper key) of the paper's claim index: the
conformance suite fails while one of them is neither encoded nor listed in ``pending`` (the
ids not encoded yet, which the report lists as such), or while a ``pending`` id is encoded
after all; the report cites the paper above its claims.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import DeclarationError

__all__ = ["Paper", "paper", "papers"]

PAPER_KEY = re.compile(r"^[a-z][a-z0-9]*$")
CLAIM_SUFFIX = re.compile(r"^[A-Za-z0-9_]+\.[A-Za-z0-9_]+$")
ARXIV_ID = re.compile(r"^\d{4}\.\d{4,5}(v\d+)?$")


@dataclass(frozen=True)
class Paper:
    """A registered paper: its citation and the ids of the claims it must have encoded."""

    key: str
    authors: str
    title: str
    arxiv: str | None
    expected_ids: tuple[str, ...]
    year: int | None = None
    note: str | None = None
    pending: tuple[str, ...] = ()
    venue: str | None = None

    def citation(self) -> str:
        """``Authors, "Title", arXiv <id>, <year>.`` (or the venue for a paper without an arXiv
        id)."""
        year = f", {self.year}" if self.year is not None else ""
        where = f"arXiv {self.arxiv}" if self.arxiv else self.venue
        return f'{self.authors}, "{self.title}", {where}{year}.'

    def to_json(self) -> dict:
        return {"key": self.key, "authors": self.authors, "title": self.title, "arxiv": self.arxiv,
                "venue": self.venue, "year": self.year, "note": self.note,
                "expected_ids": list(self.expected_ids),
                "pending": list(self.pending), "citation": self.citation()}


#: key -> Paper for every paper declared so far in this process
papers: dict[str, Paper] = {}


def paper(key: str, *, authors: str, title: str, expected_ids, arxiv: str | None = None,
          venue: str | None = None, year: int | None = None, note: str | None = None,
          pending=()) -> Paper:
    """Declare (register) a paper, cited by its ``arxiv`` id or, for a paper without one, its
    ``venue``; raises :class:`DeclarationError` naming what is malformed, or when ``key`` is
    already declared with a different citation."""
    where = f"paper {key!r}"
    if not isinstance(key, str) or not PAPER_KEY.match(key):
        raise DeclarationError(f"{where}: the key must be lower-case letters and digits, "
                               "starting with a letter (e.g. vdt24)")
    if not authors.strip() or not title.strip():
        raise DeclarationError(f"{where}: authors and title must be non-empty")
    if arxiv is None and not (venue or "").strip():
        raise DeclarationError(f"{where}: give its arXiv id (arxiv=...) or, without one, its venue")
    if arxiv is not None and not ARXIV_ID.match(arxiv):
        raise DeclarationError(f"{where}: arxiv {arxiv!r} is not an arXiv id like 2402.05738")
    ids = tuple(expected_ids)
    bad = [i for i in ids if not isinstance(i, str) or not CLAIM_SUFFIX.match(i)]
    if not ids or bad:
        raise DeclarationError(f"{where}: expected_ids must be a non-empty list of "
                               f"'<statement>.<what>' ids without the paper key (bad: {bad})")
    if len(set(ids)) != len(ids):
        raise DeclarationError(f"{where}: expected_ids lists an id twice")
    waiting = tuple(pending)
    if set(waiting) - set(ids) or len(set(waiting)) != len(waiting):
        raise DeclarationError(f"{where}: pending must list expected ids once each (unknown: "
                               f"{sorted(set(waiting) - set(ids))})")
    entry = Paper(key=key, authors=" ".join(authors.split()), title=" ".join(title.split()),
                  arxiv=arxiv, expected_ids=ids, year=year, note=note, pending=waiting,
                  venue=venue)
    previous = papers.get(key)
    if previous is not None and previous != entry:
        raise DeclarationError(f"{where}: already declared with a different citation or ids")
    papers[key] = entry
    return entry
