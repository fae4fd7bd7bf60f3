"""docs/linear-models.md's worked example (GD's direction converges to the L2 hard-margin SVM,
Soudry et al. 2018) runs as written, passes strict, both controls recompute (independent), and
the claim is at most 40 non-blank lines from ``@claim(`` on."""
import re
from pathlib import Path

from tests.doc_claims import claim_lines, files_of, run_strict

DOC = Path(__file__).resolve().parents[1] / "docs" / "linear-models.md"
FILES = files_of(re.search(r"## Worked example: GD's direction.*", DOC.read_text(), re.S).group(0))
CLAIM = "claims/demo18/test_gd_direction.py"


def test_the_example_is_two_files_and_its_claim_has_at_most_40_lines():
    assert set(FILES) == {"claims/demo18/__init__.py", CLAIM}
    assert claim_lines(FILES[CLAIM]) <= 40


def test_the_example_passes_strict_with_two_independent_controls(pytester):
    claim = run_strict(pytester, FILES, passed=1, xfailed=2)
    assert {k["name"]: k["evidence"] for k in claim["controls"]} == {
        "reversed": "independent", "squared": "independent"}
