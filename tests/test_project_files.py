"""The README's two quick-start commands are what CI runs; the CLI works."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from theorycheck.cli import main

ROOT = Path(__file__).resolve().parents[1]


def readme_quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Quick start.*?```bash\n(.*?)```", text, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


#: the one line .ci/run may have besides the README's commands: the browser for the report test
BROWSER_INSTALL = "command -v chromium >/dev/null || "


def test_ci_runs_exactly_the_readme_commands_after_installing_a_browser():
    commands = readme_quick_start()
    assert len(commands) == 2
    ci = [line for line in (ROOT / ".ci/run").read_text().splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd ", "export "))]
    assert ci[0].startswith(BROWSER_INSTALL) and "apt-get install -y -qq chromium" in ci[0]
    assert ci[1:] == commands


def test_install_pins_the_cpu_torch_build():
    assert "torch==2.13.0" in readme_quick_start()[0]


#: the conformance rules applied to whatever the scaffolded claims package registers
SCAFFOLD_CONFORMANCE = '''
import importlib

from theorycheck.claim import registry
from theorycheck.conformance import claim_problems, paper_problems
from theorycheck.papers import papers


def test_scaffold_conforms():
    importlib.import_module("claims.demo24.test_contraction")
    claims = {k: v for k, v in registry.items() if k.startswith("demo24.")}
    assert claims and "demo24" in papers
    for spec in claims.values():
        assert claim_problems(spec, claims, papers) == [], spec.id
    assert paper_problems(papers["demo24"], claims) == []
'''


def fill_in_citation(init: Path) -> None:
    """Replace the scaffold's placeholder citation as a user would."""
    from theorycheck.scaffold import PLACEHOLDER_ARXIV, PLACEHOLDER_AUTHORS

    text = init.read_text().replace(PLACEHOLDER_ARXIV, "2401.00001")
    init.write_text(text.replace(PLACEHOLDER_AUTHORS, "A. Author").replace("(the paper's title)", "Demo"))


def test_new_scaffolds_a_passing_claim_whose_placeholder_citation_fails_conformance(pytester, capsys):
    """The scaffold names every file it writes, runs green with two independent controls, and
    passes the conformance rules once its citation is filled in -- not before."""
    assert main(["new", "demo24", "contraction", "--claims-dir", str(pytester.path / "claims")]) == 0
    printed = capsys.readouterr().out
    target = pytester.path / "claims/demo24/test_contraction.py"
    init = pytester.path / "claims/demo24/__init__.py"
    for path in (pytester.path / "claims/__init__.py", init, target):
        assert f"wrote {path}" in printed
    with pytest.raises(SystemExit, match="not overwriting"):
        main(["new", "demo24", "contraction", "--claims-dir", str(pytester.path / "claims")])
    pytester.makepyfile(test_conformance=SCAFFOLD_CONFORMANCE)
    placeholder = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_conformance.py")
    placeholder.assert_outcomes(failed=1)
    placeholder.stdout.fnmatch_lines(["*citation is still the scaffold's placeholder*"])
    fill_in_citation(init)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--tc-strict", "claims",
                                        "test_conformance.py")
    run.assert_outcomes(passed=2, xfailed=2)
    results = json.loads((pytester.path / "reports/latest/results.json").read_text())
    (image,) = results["claims"][0]["images"]
    assert image.startswith("plots/demo24.thm1.contraction--deficit-") and image.endswith(".png")
    assert [k["evidence"] for k in results["claims"][0]["controls"]] == ["independent"] * 2


@pytest.mark.parametrize("args, message", [(["new", "Bad-Key", "x"], "paper key"),
                                           (["new", "ok24", "Bad Name"], "lower-case identifier")])
def test_new_rejects_bad_names(args, message):
    with pytest.raises(SystemExit, match=message):
        main(args)


def test_list_and_report_from_the_command_line(pytester):
    main(["new", "demo24", "contraction", "--claims-dir", str(pytester.path / "claims")])
    out = subprocess.run([sys.executable, "-m", "theorycheck.cli", "list", "-v", "claims"],
                         cwd=pytester.path, capture_output=True, text=True, check=True).stdout
    assert "demo24.thm1.contraction" in out and "control wrong_opt" in out
    assert "1 claims, 2 negative controls, 1 papers" in out and "provenance: stated" in out
    by_key = subprocess.run([sys.executable, "-m", "theorycheck.cli", "list", "demo24"],
                            cwd=pytester.path, capture_output=True, text=True, check=True).stdout
    assert "demo24: 1 claims" in by_key and "controls: wrong_opt, gd" in by_key
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "claims")
    results = pytester.path / "reports/latest/results.json"
    (pytester.path / "reports/latest/report.html").unlink()
    out = subprocess.run([sys.executable, "-m", "theorycheck.cli", "report", str(results)],
                         capture_output=True, text=True, check=True).stdout
    assert "1 passed" in out and (pytester.path / "reports/latest/report.html").exists()


def test_report_of_a_missing_file_names_it(tmp_path):
    with pytest.raises(SystemExit, match="no results file"):
        main(["report", str(tmp_path / "nope.json")])


def test_readme_images_are_committed_small_pngs():
    """The README's screenshots exist beside it and stay small."""
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", (ROOT / "README.md").read_text())
    assert "docs/report-overview.png" in images
    for path in images:
        data = (ROOT / path).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 200_000, path


def test_models_import_nothing_above_them_at_module_level():
    """The library's layers: data, optim and solvers build on models, never the reverse (a
    module-level import from them in theorycheck/models/ would make the layers circular)."""
    import ast

    upward = []
    for path in sorted((ROOT / "theorycheck" / "models").glob("*.py")):
        for node in ast.parse(path.read_text()).body:       # module level only
            if isinstance(node, ast.ImportFrom):
                target = ("." * node.level) + (node.module or "")
                if re.match(r"(theorycheck\.|\.\.)(data|optim|solvers)\b", target):
                    upward.append(f"{path.name}: from {target} import ...")
    assert not upward, upward
