"""A documentation page's example claim package, run as written (for the docs' worked-example tests)."""
import json
import re
from pathlib import Path


def files_of(section: str) -> dict[str, str]:
    """{path: text} of the page section's code blocks that start with a ``# claims/...`` line."""
    return dict(re.findall(r"```python\n# (claims/\S+)\n(.*?)```", section, re.S))


def claim_lines(text: str) -> int:
    """The non-blank lines of a claim file from its ``@claim(`` line on."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("@claim("))
    return len([line for line in lines[start:] if line.strip()])


def run_strict(pytester, files: dict[str, str], passed: int, xfailed: int) -> dict:
    """Write ``files`` into a fresh project, run ``pytest claims --tc-strict`` in a subprocess,
    require ``passed`` / ``xfailed`` outcomes and return the results.json record of its one claim."""
    (pytester.path / "claims").mkdir()
    (pytester.path / "claims" / "__init__.py").write_text("")
    for path, text in files.items():
        (pytester.path / path).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / path).write_text(text)
    pytester.runpytest_subprocess("claims", "-p", "no:cacheprovider", "--tc-strict").assert_outcomes(
        passed=passed, xfailed=xfailed)
    (claim,) = json.loads(Path(pytester.path, "reports", "latest", "results.json").read_text())["claims"]
    return claim
