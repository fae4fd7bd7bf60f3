"""Conformance of every registered claim and paper (the benchopt lesson): each claim module
under claims/ is imported, and every claim it declares and every paper registered is checked
against :mod:`theorycheck.conformance` -- identity, source and statement, the math in the
docstring, a registered paper, provenance, sizes for both tiers, negative controls declared
as ``Control`` with a kind and the conclusions they break -- and each registered paper for
completeness against its ``expected_ids``."""
import importlib
from pathlib import Path

import pytest

from theorycheck.calibrate import CLAIM_BUDGET, load_table
from theorycheck.claim import registry
from theorycheck.conformance import claim_problems, paper_problems
from theorycheck.papers import papers

ROOT = Path(__file__).resolve().parents[1]
CLAIM_MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "claims").rglob("test_*.py"))


def _load_all():
    for name in CLAIM_MODULES:
        importlib.import_module(name)
    return {cid: spec for cid, spec in registry.items() if spec.module.startswith("claims.")}


CLAIMS = _load_all()
PAPERS = {key: p for key, p in papers.items()
          if any(spec.paper == key for spec in CLAIMS.values())
          or (ROOT / "claims" / key / "__init__.py").exists()}

def test_claim_modules_and_papers_exist():
    assert CLAIM_MODULES and CLAIMS and PAPERS


@pytest.mark.parametrize("claim_id", sorted(CLAIMS))
def test_claim_is_complete(claim_id):
    problems = claim_problems(CLAIMS[claim_id], CLAIMS, papers)
    assert not problems, f"{claim_id}:\n" + "\n".join(problems)


@pytest.mark.parametrize("paper", sorted(PAPERS))
def test_every_claim_of_a_registered_paper_is_there(paper):
    problems = paper_problems(PAPERS[paper], CLAIMS)
    assert not problems, "\n".join(problems)


def test_pending_ids_are_checked_both_ways():
    """A paper may list expected ids it has not encoded yet as ``pending``; an id neither
    encoded nor pending, or one encoded while still pending, is a conformance problem."""
    from theorycheck.conformance import paper_problems
    from theorycheck.errors import DeclarationError
    from theorycheck.papers import Paper

    claims = {"toy.a.done": None}
    ok = Paper("toy", "A", "T", "2401.00001", ("a.done", "b.later"), pending=("b.later",))
    assert paper_problems(ok, claims) == []
    missing = Paper("toy", "A", "T", "2401.00001", ("a.done", "b.later"))
    assert "not encoded yet: ['b.later']" in paper_problems(missing, claims)[0]
    stale = Paper("toy", "A", "T", "2401.00001", ("a.done", "b.later"), pending=("a.done", "b.later"))
    assert "still listed as pending: ['a.done']" in paper_problems(stale, claims)[0]
    with pytest.raises(DeclarationError, match="pending must list expected ids"):
        from theorycheck import paper
        paper("toytwo", authors="A", title="T", arxiv="2401.00001", expected_ids=["a.b"],
              pending=["c.d"])


def test_a_paper_is_cited_by_arxiv_id_or_venue():
    from theorycheck.errors import DeclarationError
    from theorycheck.papers import Paper, paper

    by_venue = Paper("toy", "A", "T", None, ("a.b",), year=2020, venue="ICLR 2020 submission")
    assert by_venue.citation() == 'A, "T", ICLR 2020 submission, 2020.'
    with pytest.raises(DeclarationError, match="arXiv id .* or, without one, its venue"):
        paper("toynone", authors="A", title="T", expected_ids=["a.b"])
    with pytest.raises(DeclarationError, match="is not an arXiv id"):
        paper("toybad", authors="A", title="T", arxiv="0000", expected_ids=["a.b"])


QUICK_ROWS = load_table(ROOT / "reports" / "calibration-quick.json")["claims"]
CALIBRATED_PAPERS = {cid.split(".")[0] for cid in QUICK_ROWS}


@pytest.mark.parametrize("claim_id", sorted(CLAIMS))
def test_a_claim_over_its_budget_says_why(claim_id):
    """Issue 31: every claim of a calibrated paper has a committed quick-tier row; one whose
    false-failure bound is over the claim budget declares why (``@claim(over_budget=...)``), and
    one within it declares nothing (a declaration left from before a recalibration is stale).  A
    paper with no row yet (one just added) is skipped, saying so."""
    paper = CLAIMS[claim_id].paper
    if paper not in CALIBRATED_PAPERS:
        pytest.skip(f"paper {paper} has no rows in reports/calibration-quick.json yet: "
                    f"`theorycheck calibrate {paper} --seeds A-B` (50 seeds or more)")
    entry = QUICK_ROWS.get(claim_id)
    assert entry is not None, (f"{claim_id} has no row in reports/calibration-quick.json: "
                               f"`theorycheck calibrate {claim_id} --seeds A-B` (50 seeds or more)")
    within, declared = entry["claim"]["within_budget"], CLAIMS[claim_id].over_budget
    assert within or declared, (
        f"{claim_id}: false-failure bound {entry['claim']['bound']:.2g} over the budget "
        f"{CLAIM_BUDGET:g} without @claim(over_budget=...) saying why")
    assert not (within and declared), (
        f"{claim_id} is within the budget ({entry['claim']['bound']:.2g}) but declares "
        f"over_budget: remove the stale declaration")
