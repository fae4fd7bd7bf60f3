"""Draw the curves a claim recorded (``tc.curve``) as PNG files with matplotlib.

A claim's plot is drawn together with the measured curves its negative controls recorded on
a plot of the same name (thin, grey, labelled ``control <name>: ...``, within the claim's
axes limits), so that the reader sees how the perturbed run departs from the claim's.  Each file is named by a content hash of what it
draws: a re-render draws only the plots whose data changed, and a shared cache folder lets
a new run folder reuse the unchanged plots of an earlier run.  Plots still to be drawn are
drawn in parallel worker processes when there are many.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from ..files import atomic_write, make_folder

LINESTYLES = {"measured": "-", "theory": "--", "bound": ":", "reference": "-."}
#: below this many plots to draw, starting worker processes costs more than it saves
PARALLEL_FROM = 12
#: bump to redraw every plot when the drawing itself changes
STYLE_VERSION = "4"


def control_overlays(claim: dict, plot_name: str) -> list[dict]:
    """The measured curves the claim's controls recorded on the plot named ``plot_name``,
    relabelled (their theory and bound curves would repeat the claim's)."""
    overlays = []
    for control in claim.get("controls", []):
        for plot in control.get("plots", []):
            if plot["name"] == plot_name:
                overlays += [dict(curve, label=f"control {control['name']}: {curve['label']}")
                             for curve in plot["curves"] if curve["style"] == "measured"]
    return overlays


def _finite_points(curve: dict, xscale: str, yscale: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(curve["x"], dtype=float)
    y = np.asarray(curve["y"], dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    if xscale == "log":
        keep &= x > 0
    if yscale == "log":
        keep &= y > 0
    return x[keep], y[keep]


def curves_outside_axes(plot: dict, overlays: list[dict]) -> list[str]:
    """Labels of the control curves (``overlays``) with no point inside the claim's axes (the
    box spanned by the claim's own curves): drawn on those axes they are invisible."""
    points = [_finite_points(c, plot["xscale"], plot["yscale"]) for c in plot["curves"]]
    xs = np.concatenate([p[0] for p in points] or [np.empty(0)])
    ys = np.concatenate([p[1] for p in points] or [np.empty(0)])
    if xs.size == 0:
        return []
    outside = []
    for curve in overlays:
        x, y = _finite_points(curve, plot["xscale"], plot["yscale"])
        inside = (x >= xs.min()) & (x <= xs.max()) & (y >= ys.min()) & (y <= ys.max())
        if not inside.any():
            outside.append(curve["label"])
    return outside


def plot_filename(claim_id: str, plot: dict, overlays: list[dict]) -> str:
    """``<claim>--<plot>-<hash>.png``, the hash over everything the file draws."""
    digest = hashlib.sha256(json.dumps([STYLE_VERSION, plot, overlays], sort_keys=True)
                            .encode()).hexdigest()[:12]
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{claim_id}--{plot['name']}")
    return f"{safe}-{digest}.png"


#: the names :func:`plot_filename` gives (the only files of ``plots/`` a report deletes)
PLOT_NAME = re.compile(r"[A-Za-z0-9_.-]+--[A-Za-z0-9_.-]*-[0-9a-f]{12}\.png")


def _draw_curve(ax, curve: dict, yscale: str, **style) -> None:
    x = np.asarray(curve["x"], dtype=float)
    y = np.asarray(curve["y"], dtype=float)
    if yscale == "log":
        y = np.where(y > 0, y, np.nan)
    ax.plot(x, y, LINESTYLES.get(curve["style"], "-"), label=curve["label"], **style)


def _shade(ax, plot: dict) -> None:
    """A map's plot (`theorycheck.maps.record_map`): ``band`` names the two curves whose area is
    filled (the confidence band), ``span`` the stated region of x shaded (ends None: open)."""
    curves = {c["label"]: c for c in plot["curves"]}
    band = plot.get("band")
    if band and all(label in curves for label in band):
        lower, upper = (curves[label] for label in band)
        ax.fill_between(np.asarray(lower["x"], dtype=float), np.asarray(lower["y"], dtype=float),
                        np.asarray(upper["y"], dtype=float), alpha=0.15, lw=0)
    span = plot.get("span")
    if span:
        xs = np.concatenate([np.asarray(c["x"], dtype=float) for c in plot["curves"]])
        lo = xs.min() if span.get("lower") is None else max(float(span["lower"]), xs.min())
        hi = xs.max() if span.get("upper") is None else min(float(span["upper"]), xs.max())
        if hi > lo:
            ax.axvspan(lo, hi, color="tab:green", alpha=0.08, lw=0,
                       label=span.get("label") or "stated region")


def render_plot(plot: dict, path: Path, overlays: list[dict] = ()) -> Path:
    """Draw one recorded plot (title, axes labels and scales, curves) with the controls'
    curves in grey; the axes' limits are the claim's, so a control's curve that departs
    leaves the frame rather than flattening the claim's curves."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 3.8), dpi=100)
    # fixed margins: a layout engine measures every tick label and doubles the drawing time
    ax = fig.add_axes((0.14, 0.13, 0.83, 0.78))
    ax.set_xscale(plot["xscale"])
    ax.set_yscale(plot["yscale"])
    for curve in plot["curves"]:
        _draw_curve(ax, curve, plot["yscale"], lw=1.6)
    _shade(ax, plot)
    limits = ax.get_xlim(), ax.get_ylim()
    for curve in overlays:
        _draw_curve(ax, curve, plot["yscale"], lw=1.0, alpha=0.75, color="0.45")
    ax.set_xlim(limits[0])
    ax.set_ylim(limits[1])
    ax.set_xlabel(plot["xlabel"])
    ax.set_ylabel(plot["ylabel"])
    ax.set_title(plot["title"], fontsize=10)
    ax.minorticks_off()  # minor log ticks cost 40% of the drawing time and add little
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    image = io.BytesIO()
    fig.savefig(image, format="png")
    atomic_write(path, image.getvalue())
    return path


def _draw(job: tuple[dict, str, list[dict]]) -> str:
    plot, path, overlays = job
    render_plot(plot, Path(path), overlays)
    return path


def _draw_all(jobs: list[tuple[dict, str, list[dict]]]) -> None:
    workers = min(os.cpu_count() or 1, len(jobs) // PARALLEL_FROM + 1)
    if workers <= 1:
        for job in jobs:
            _draw(job)
        return
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        list(pool.map(_draw, jobs, chunksize=max(1, len(jobs) // (4 * workers))))


def render_claim_plots(results: dict, out_dir: Path, cache_dir: str | Path | None = None) -> int:
    """Draw every claim's plots into ``out_dir/plots`` (reusing the files already there or in
    ``cache_dir`` with the same content hash), remove the plot files (:data:`PLOT_NAME`) no
    claim uses any more, and
    list each claim's files in ``claim['images']``.  Returns how many plots were drawn."""
    plot_dir = make_folder(Path(out_dir) / "plots")
    wanted, jobs = set(), []
    for claim in results["claims"]:
        claim["images"] = []
        for plot in claim.get("plots", []):
            overlays = control_overlays(claim, plot["name"])
            name = plot_filename(claim["id"], plot, overlays)
            claim["images"].append(f"plots/{name}")
            wanted.add(name)
            target = plot_dir / name
            if target.exists():
                continue
            if cache_dir is not None and (Path(cache_dir) / name).exists():
                atomic_write(target, (Path(cache_dir) / name).read_bytes())
            else:
                jobs.append((plot, str(target), overlays))
    _draw_all(jobs)
    for stale in plot_dir.glob("*.png"):
        if stale.name not in wanted and PLOT_NAME.fullmatch(stale.name):
            stale.unlink()
    if cache_dir is not None:
        make_folder(cache_dir)
        for _, path, _ in jobs:
            atomic_write(Path(cache_dir) / Path(path).name, Path(path).read_bytes())
    return len(jobs)
