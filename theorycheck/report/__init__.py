"""The report of a run: ``results.json``, ``report.md``, ``report.html`` and ``plots/``.

A report is written only into a folder it owns (:func:`report_folder`): a new or empty
folder, one marked by an earlier report (``.theorycheck-report``), or one holding only
files a report names as its own; every file is written atomically
(:mod:`theorycheck.files`), results.json last.
"""
from __future__ import annotations

from pathlib import Path

from ..files import atomic_write, own_folder, refuse_foreign, write_json
from ..results_layout import RESULTS_FILE
from .plots import PLOT_NAME, render_claim_plots
from .render import render_html, render_markdown, render_terminal
from .results import all_good, assemble_results, load_results, summarize, validate_results

__all__ = ["write_report", "rerender", "report_folder", "check_report_folder", "assemble_results",
           "load_results", "validate_results", "summarize", "all_good", "render_terminal"]

#: the file marking a folder as a report's
REPORT_MARKER = ".theorycheck-report"
_MARKER_TEXT = "theorycheck report folder: written by theorycheck, which rewrites its report files\n"
REPORT_FILES = (RESULTS_FILE, "report.md", "report.html", "plots")


def _report_name(relative: Path) -> bool:
    """Whether a path inside a report folder is named as a report names its files."""
    parts = relative.parts
    if len(parts) == 1:
        return parts[0] in REPORT_FILES
    return len(parts) == 2 and parts[0] == "plots" and PLOT_NAME.fullmatch(parts[1]) is not None


def check_report_folder(out_dir: str | Path) -> None:
    """A :class:`theorycheck.files.WriteError` when a report would refuse ``out_dir`` (it holds
    files no report made); nothing is written."""
    refuse_foreign(out_dir, REPORT_MARKER, _MARKER_TEXT, _report_name)


def report_folder(out_dir: str | Path) -> Path:
    """``out_dir`` made a report's folder (created, or adopted, or refused: see the module
    docstring)."""
    return own_folder(out_dir, REPORT_MARKER, _MARKER_TEXT, _report_name)


def _write_views(results: dict, out_dir: Path, plot_cache: str | Path | None) -> None:
    render_claim_plots(results, out_dir, plot_cache)
    atomic_write(out_dir / "report.md", render_markdown(results))
    atomic_write(out_dir / "report.html", render_html(results))


def write_report(results: dict, out_dir: str | Path, plot_cache: str | Path | None = None) -> Path:
    """Write the plots, report.md, report.html and then results.json into ``out_dir`` (a
    folder the report owns, :func:`report_folder`).

    Plots already drawn with the same data (in ``out_dir/plots``, or in ``plot_cache``: a
    folder kept across run folders, e.g. ``reports/.plot-cache``) are reused, not redrawn."""
    validate_results(results)
    out_dir = report_folder(out_dir)
    _write_views(results, out_dir, plot_cache)
    write_json(out_dir / RESULTS_FILE, results)
    return out_dir


def rerender(results_path: str | Path, out_dir: str | Path | None = None,
             plot_cache: str | Path | None = None, results: dict | None = None) -> Path:
    """Re-render the plots, markdown and html of an existing results.json, drawing only the
    plots whose data changed; results.json is rewritten (atomically) only when its plot list
    changed or the report goes to another folder.  ``results``: the file's content when the
    caller has loaded (and validated) it already."""
    results_path = Path(results_path)
    if results is None:
        results = load_results(results_path)
    out_dir = report_folder(out_dir or results_path.parent)
    images = [c.get("images") for c in results["claims"]]
    _write_views(results, out_dir, plot_cache)
    moved = out_dir.resolve() != results_path.parent.resolve()
    if moved or images != [c["images"] for c in results["claims"]]:
        write_json(out_dir / RESULTS_FILE, results)
    return out_dir
