"""``theorycheck new``: the scaffolded paper package and claim run green and conform."""
import pytest

from theorycheck.cli import main

#: the conformance rules applied to whatever the scaffolded claims package registers
CONFORMANCE = '''
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


def test_new_claim_runs_green_and_passes_the_conformance_rules(pytester, capsys):
    assert main(["new", "demo24", "contraction", "--claims-dir", str(pytester.path / "claims")]) == 0
    assert "wrote" in capsys.readouterr().out
    assert "paper(" in (pytester.path / "claims/demo24/__init__.py").read_text()
    pytester.makepyfile(test_conformance=CONFORMANCE)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "claims",
                                        "test_conformance.py")
    run.assert_outcomes(passed=2, xfailed=2)


def test_new_refuses_to_overwrite(pytester):
    args = ["new", "demo24", "again", "--claims-dir", str(pytester.path / "claims")]
    assert main(args) == 0
    with pytest.raises(SystemExit, match="exists; not overwriting it"):
        main(args)
