"""Sphinx configuration of theorycheck's API reference (autodoc + napoleon).

Build:  sphinx-build -W -b html docs/api docs/_build/api   (the pages of every public module
are generated first into docs/api/reference/ by theorycheck.apiref, with "Used by" lines from
an import scan of claims/).
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from theorycheck import __version__  # noqa: E402
from theorycheck.apiref import escape_bars, write_pages  # noqa: E402

project = "theorycheck"
release = __version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
autodoc_member_order = "bysource"
autodoc_inherit_docstrings = False
autodoc_typehints = "none"          # signatures as written; no unresolvable type references
napoleon_numpy_docstring = True
napoleon_google_docstring = False
exclude_patterns = ["_build"]
html_theme = "alabaster"

write_pages(Path(__file__).parent / "reference", ROOT / "claims")


def _norm_bars(app, what, name, obj, options, lines):
    lines[:] = [escape_bars(line) for line in lines]


def setup(app):
    app.connect("autodoc-process-docstring", _norm_bars)
