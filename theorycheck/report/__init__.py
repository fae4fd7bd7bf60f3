"""The report of a run: ``results.json``, ``report.md``, ``report.html`` and ``plots/``."""
from __future__ import annotations

import json
from pathlib import Path

from .plots import render_claim_plots
from .render import render_html, render_markdown, render_terminal
from .results import all_good, assemble_results, load_results, summarize, validate_results

__all__ = ["write_report", "rerender", "assemble_results", "load_results", "validate_results",
           "summarize", "all_good", "render_terminal"]


def _write_views(results: dict, out_dir: Path, plot_cache: str | Path | None) -> None:
    render_claim_plots(results, out_dir, plot_cache)
    (out_dir / "report.md").write_text(render_markdown(results))
    (out_dir / "report.html").write_text(render_html(results))


def write_report(results: dict, out_dir: str | Path, plot_cache: str | Path | None = None) -> Path:
    """Write results.json, the plots, report.md and report.html into ``out_dir``.

    Plots already drawn with the same data (in ``out_dir/plots``, or in ``plot_cache``: a
    folder kept across run folders, e.g. ``reports/.plot-cache``) are reused, not redrawn."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    validate_results(results)
    _write_views(results, out_dir, plot_cache)
    (out_dir / "results.json").write_text(json.dumps(results, allow_nan=False))
    return out_dir


def rerender(results_path: str | Path, out_dir: str | Path | None = None,
             plot_cache: str | Path | None = None, results: dict | None = None) -> Path:
    """Re-render the plots, markdown and html of an existing results.json, drawing only the
    plots whose data changed; results.json is rewritten only when its plot list changed or
    the report goes to another folder.  ``results``: the file's content when the caller
    has loaded (and validated) it already."""
    results_path = Path(results_path)
    out_dir = Path(out_dir or results_path.parent)
    out_dir.mkdir(parents=True, exist_ok=True)
    if results is None:
        results = load_results(results_path)
    images = [c.get("images") for c in results["claims"]]
    _write_views(results, out_dir, plot_cache)
    moved = out_dir.resolve() != results_path.parent.resolve()
    if moved or images != [c["images"] for c in results["claims"]]:
        (out_dir / "results.json").write_text(json.dumps(results, allow_nan=False))
    return out_dir
