"""Models and optimizers declared in a paper package are collected by the conformance suite
without an edit under theorycheck/, and an unregistered model class fails it wherever it is
defined (pytester, on a temporary paper package)."""
import re
import shutil
from pathlib import Path

import pytest

from theorycheck.discovery import import_paper_modules, paper_packages
from theorycheck.errors import DeclarationError

REPO = Path(__file__).resolve().parents[1]
DOC_MODEL = re.search(r"```python\n(.*?)```", (REPO / "docs" / "adding-a-model.md").read_text(),
                      re.S).group(1).replace('"least_squares"', '"toy_least_squares"')


def paper_package(pytester, **modules: str) -> None:
    """A temporary project: claims/toy/<name>.py for each module, and a copy of the repo's
    conformance suite under tests/conformance/."""
    for folder in ("claims", "claims/toy", "tests", "tests/conformance"):
        (pytester.path / folder).mkdir(exist_ok=True)
        (pytester.path / folder / "__init__.py").write_text("")
    for name, body in modules.items():
        (pytester.path / "claims" / "toy" / f"{name}.py").write_text(body)
    for name in ("conftest.py", "test_models_and_optimizers.py"):
        shutil.copy(REPO / "tests" / "conformance" / name, pytester.path / "tests" / "conformance" / name)


def test_a_model_registered_in_a_paper_package_is_collected_and_checked(pytester):
    paper_package(pytester, models=DOC_MODEL)
    result = pytester.runpytest_subprocess("tests/conformance", "-p", "no:cacheprovider", "-q",
                                           "-k", "toy_least_squares or class_is_registered", "-rA")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 10 and not outcomes.get("failed"), result.stdout.str()
    assert "test_batch_equals_trial_by_trial[toy_least_squares]" in result.stdout.str()


@pytest.mark.parametrize("where", ["models", "test_claims"])
def test_an_unregistered_model_class_fails_conformance_wherever_it_is_defined(pytester, where):
    unregistered = ("from claims.toy.models import LeastSquares\n\n\n"
                    "class Ridge(LeastSquares):\n    \"\"\"not registered\"\"\"\n")
    modules = {"models": DOC_MODEL + "\n\nclass Ridge(LeastSquares):\n    \"\"\"not registered\"\"\"\n"}
    if where == "test_claims":
        modules = {"models": DOC_MODEL, "test_claims": unregistered}
    paper_package(pytester, **modules)
    result = pytester.runpytest_subprocess("tests/conformance", "-p", "no:cacheprovider", "-q",
                                           "-k", "class_is_registered")
    result.assert_outcomes(failed=1)
    assert f"claims.toy.{where}.Ridge" in result.stdout.str()


def test_import_paper_modules_names_a_bad_root(tmp_path):
    with pytest.raises(DeclarationError, match="not a folder"):
        paper_packages(tmp_path / "missing")
    (tmp_path / "claims").mkdir()
    with pytest.raises(DeclarationError, match="not a package"):
        import_paper_modules(tmp_path / "claims")
