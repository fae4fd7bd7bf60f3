"""The html, markdown and terminal views of a results document, from Jinja2 templates.

All three render :func:`theorycheck.report.view.report_view`: an overview per paper
(claims by verdict, controls, errata, provenance mix, wall time), then per paper its claims
with statement and main plot, and per claim its docstring, the decisions with their worst
element and slack (window and R^2 of slope fits), the controls with the conclusions each
broke, counterexamples beside corrected claims, and the command that reruns the claim.
The html page is self-contained apart from its plots (no network): its stylesheet and the
failure filter's script are inlined from ``templates/``.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jinja2

from .results import summarize
from .view import report_view, short

TEMPLATES = Path(__file__).with_name("templates")

__all__ = ["render_html", "render_markdown", "render_terminal"]


def _md_cell(text) -> str:
    """A markdown table cell: pipes escaped, on one line."""
    return str(text).replace("|", "\\|").replace("\n", " ")


@lru_cache(maxsize=None)
def _environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=autoescape,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["cell"] = _md_cell
    env.globals["short"] = short
    return env


def _render(template: str, results: dict, *, autoescape: bool) -> str:
    view = report_view(results)
    return _environment(autoescape).get_template(template).render(summary=summarize(results),
                                                                  **view)


def render_html(results: dict) -> str:
    """The report page (report.html) of a results document, self-contained (no network)."""
    return _render("report.html.j2", results, autoescape=True)


def render_markdown(results: dict) -> str:
    """The markdown report (report.md): the html report's content in the same order."""
    return _render("report.md.j2", results, autoescape=False)


def render_terminal(results: dict) -> str:
    """The overview for a terminal: one line per paper, then the problems, one per line."""
    return _render("report.txt.j2", results, autoescape=False)
