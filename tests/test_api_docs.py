"""The API reference (docs/api, Sphinx autodoc + napoleon) builds with warnings as errors,
every public name has a docstring and a page, and the pages say which claims use each piece."""
import subprocess
import sys
from pathlib import Path

import pytest

from theorycheck.apiref import claim_uses, escape_bars, home_of, public_modules, undocumented

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("sphinx", reason="the docs extra (pip install -e '.[docs]') builds the reference")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """docs/api built once into a temporary folder (its pages are generated into the git-ignored
    docs/api/reference/)."""
    out = tmp_path_factory.mktemp("api")
    src = ROOT / "docs" / "api"
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          str(src), str(out / "html")], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    return src, out / "html"


def test_the_reference_builds_with_warnings_as_errors(built):
    _, html = built
    assert (html / "index.html").exists() and (html / "shapes.html").exists()


def test_every_public_name_has_a_docstring_and_a_page(built):
    src, html = built
    modules = public_modules()
    assert not undocumented(modules), f"public names without a docstring: {undocumented(modules)}"
    homes = home_of(modules)
    for module in modules:
        page = (src / "reference" / f"{module.__name__}.rst").read_text()
        assert (html / "reference" / f"{module.__name__}.html").exists()
        for name in module.__all__:
            if homes.get((module.__name__, name)) == module.__name__:
                assert f"{module.__name__}.{name}" in page, f"{module.__name__}.{name} has no entry"


def test_used_by_lines_come_from_an_import_scan_of_the_claims(built):
    from theorycheck.patterns import property_search
    from theorycheck.solvers import solve_wsvm_batch

    uses = claim_uses(ROOT / "claims")
    assert any(u.startswith("jta24.") for u in uses[id(property_search)])     # claim ids
    assert "claims/vdt24/joint.py" in uses[id(solve_wsvm_batch)]              # a paper module
    page = (built[0] / "reference" / "theorycheck.patterns.rst").read_text()
    lines = page.splitlines()
    entry = lines.index(".. autofunction:: theorycheck.patterns.property_search")
    assert lines[entry + 2].startswith("   *Used by:* ``") and "``jta24.lem16" in lines[entry + 2]


def test_plain_text_norm_bars_are_escaped_outside_literals():
    assert escape_bars("||W||_F and ``|x|`` and :math:`|y|`") == \
        "\\|\\|W\\|\\|_F and ``|x|`` and :math:`|y|`"


def test_writing_claims_links_the_shapes_page():
    assert "api/shapes.rst" in (ROOT / "docs" / "writing-claims.md").read_text()
