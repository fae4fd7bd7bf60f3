"""docs/writing-claims.md's worked examples run as written: the claim of a known shape (NGD ->
W-SVM direction) passes strict, both controls recompute (independent), and the claim is short;
the contraction example's file holds its step-by-step fragments, and its too_fast_rate control
is discrimination beside the independent short_step."""
import re
import textwrap
from pathlib import Path

from tests.doc_claims import claim_lines, files_of, run_strict

DOC = Path(__file__).resolve().parents[1] / "docs" / "writing-claims.md"
SECTION = re.search(r"## Worked example: a claim of a known shape.*?(?=\n## )", DOC.read_text(), re.S).group(0)
FILES = files_of(SECTION)
CONTRACTION = re.search(r"## Worked example: from an empty file.*?(?=\n## )", DOC.read_text(), re.S).group(0)
CONTRACTION_FILE = re.search(r"```python\n# claims/demo24/test_contraction.py\n(.*?)```", CONTRACTION,
                             re.S).group(1)


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


def test_the_contraction_file_holds_the_fragments_of_its_steps():
    fragments = re.findall(r"\n   ```python\n(.*?)\n   ```", CONTRACTION, re.S)
    body = [textwrap.dedent(f) for f in fragments if "tc.sizes" not in f and "controls={" not in f]
    assert len(body) == 3  # the shared run, the decision, the curves
    for fragment in body:
        assert textwrap.indent(fragment, "    ") in CONTRACTION_FILE or fragment in CONTRACTION_FILE


def test_the_contraction_example_has_a_discrimination_and_an_independent_control(pytester):
    init = FILES["claims/demo24/__init__.py"].replace('["thm1.ngd_direction"]', '["thm1.gd_contraction"]')
    claim = run_strict(pytester, {"claims/demo24/__init__.py": init,
                                  "claims/demo24/test_contraction.py": CONTRACTION_FILE},
                       passed=1, xfailed=2)
    assert {k["name"]: k["evidence"] for k in claim["controls"]} == {
        "too_fast_rate": "discrimination", "short_step": "independent"}
    (short_step,) = [k for k in claim["controls"] if k["name"] == "short_step"]
    assert short_step["evidence_lineage"] == [
        "shared run gd_on_quadratic with step_scale=0.5 (the claim's: 1.0)"]
