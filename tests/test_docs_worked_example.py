"""docs/writing-claims.md's worked example of a known shape (NGD -> W-SVM direction) runs as
written, passes strict, both controls recompute (independent), and the claim is short."""
import json
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "writing-claims.md"
SECTION = re.search(r"## Worked example: a claim of a known shape.*?(?=\n## )", DOC.read_text(), re.S).group(0)
FILES = dict(re.findall(r"```python\n# (claims/\S+)\n(.*?)```", SECTION, re.S))


def test_the_example_is_two_files_and_its_claim_has_at_most_40_lines():
    assert set(FILES) == {"claims/demo24/__init__.py", "claims/demo24/test_ngd_direction.py"}
    lines = FILES["claims/demo24/test_ngd_direction.py"].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("@claim("))
    assert len([line for line in lines[start:] if line.strip()]) <= 40


def test_the_example_is_what_theorycheck_new_writes():
    from theorycheck.scaffold import render_claim

    assert FILES["claims/demo24/test_ngd_direction.py"] == render_claim("demo24", "ngd_direction")


def test_the_example_passes_strict_with_two_independent_controls(pytester):
    (pytester.path / "claims").mkdir()
    (pytester.path / "claims" / "__init__.py").write_text("")
    for path, text in FILES.items():
        (pytester.path / path).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / path).write_text(text)
    pytester.runpytest_subprocess("claims", "-p", "no:cacheprovider", "--tc-strict").assert_outcomes(
        passed=1, xfailed=2)
    results = json.loads((pytester.path / "reports" / "latest" / "results.json").read_text())
    (claim,) = results["claims"]
    assert {k["name"]: k["evidence"] for k in claim["controls"]} == {
        "wrong_opt": "independent", "gd": "independent"}
