"""The report of a run: ``results.json``, ``report.md``, ``report.html`` and ``plots/``."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from .plots import render_claim_plots
from .render import render_html, render_markdown
from .results import all_good, assemble_results, load_results, summarize, validate_results

__all__ = ["write_report", "rerender", "assemble_results", "load_results", "validate_results",
           "summarize", "all_good"]


def write_report(results: dict, out_dir: str | Path) -> Path:
    """Write results.json, the plots, report.md and report.html into ``out_dir`` (replaced)."""
    out_dir = Path(out_dir)
    if (out_dir / "plots").exists():
        shutil.rmtree(out_dir / "plots")
    out_dir.mkdir(parents=True, exist_ok=True)
    render_claim_plots(results, out_dir)
    validate_results(results)
    (out_dir / "results.json").write_text(json.dumps(results, indent=1, allow_nan=False))
    (out_dir / "report.md").write_text(render_markdown(results))
    (out_dir / "report.html").write_text(render_html(results))
    return out_dir


def rerender(results_path: str | Path, out_dir: str | Path | None = None) -> Path:
    """Re-render the plots, markdown and html of an existing results.json."""
    results_path = Path(results_path)
    return write_report(load_results(results_path), out_dir or results_path.parent)
