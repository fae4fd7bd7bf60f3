"""docs/writing-claims.md's worked example of a known shape (NGD -> W-SVM direction) runs as
written, passes strict, both controls recompute (independent), and the claim is short."""
import re
from pathlib import Path

from tests.doc_claims import claim_lines, files_of, run_strict

DOC = Path(__file__).resolve().parents[1] / "docs" / "writing-claims.md"
SECTION = re.search(r"## Worked example: a claim of a known shape.*?(?=\n## )", DOC.read_text(), re.S).group(0)
FILES = files_of(SECTION)


def test_the_example_is_two_files_and_its_claim_has_at_most_40_lines():
    assert set(FILES) == {"claims/demo24/__init__.py", "claims/demo24/test_ngd_direction.py"}
    assert claim_lines(FILES["claims/demo24/test_ngd_direction.py"]) <= 40


def test_the_example_is_what_theorycheck_new_writes():
    from theorycheck.scaffold import render_claim

    assert FILES["claims/demo24/test_ngd_direction.py"] == render_claim("demo24", "ngd_direction")


def test_the_example_passes_strict_with_two_independent_controls(pytester):
    claim = run_strict(pytester, FILES, passed=1, xfailed=2)
    assert {k["name"]: k["evidence"] for k in claim["controls"]} == {
        "wrong_opt": "independent", "gd": "independent"}
