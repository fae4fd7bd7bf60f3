"""Draw the curves a claim recorded (``tc.curve``) as PNG files with matplotlib.

A claim's plot is drawn together with the measured curves its negative controls recorded on
a plot of the same name, so that the reader sees how the perturbed run departs from the
claim's: each control in a colour of its own (:data:`CONTROL_COLORS`) with one legend entry
(``control <name>``), however many curves it drew.  A control draws nothing new -- and is
left out -- when it only judges the claim's numbers again (a ``statement`` control whose
evidence class, :mod:`theorycheck.evidence`, is discrimination), and so does each of its
curves that repeats one of the claim's.  The claim's panel keeps the claim's axes; a control
curve that leaves them (a point outside the box the claim's curves span) is drawn whole in a
second panel below, on axes that fit it, beside the claim's curves.

Each file is named by a content hash of what it draws: a re-render draws only the plots
whose data changed, and a shared cache folder lets a new run folder reuse the unchanged
plots of an earlier run.  Plots still to be drawn are drawn in parallel worker processes
when there are many.
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

from ..evidence import DISCRIMINATION
from ..files import atomic_write, make_folder

LINESTYLES = {"measured": "-", "theory": "--", "bound": ":", "reference": "-."}
#: the controls' colours, in the order of the claim's controls, less those its own curves
#: take (the n-th curve takes matplotlib's default colour ``C<n mod 10>``)
CONTROL_COLORS = ("0.3", "C9", "C8", "C6", "C5", "C4", "C3", "C2", "C1", "C0")
#: the height of one panel of a plot, inches
PANEL_HEIGHT = 3.8
#: below this many plots to draw, starting worker processes costs more than it saves
PARALLEL_FROM = 12
#: bump to redraw every plot when the drawing itself changes
STYLE_VERSION = "6"
#: why a control that recorded the plot draws nothing on it
REJUDGES = "re-judges the claim's numbers: a statement control of discrimination evidence"
REPEATS = "its curves repeat the claim's"


def _same_curve(a: dict, b: dict) -> bool:
    return (np.array_equal(np.asarray(a["x"], dtype=float), np.asarray(b["x"], dtype=float),
                           equal_nan=True)
            and np.array_equal(np.asarray(a["y"], dtype=float), np.asarray(b["y"], dtype=float),
                               equal_nan=True))


def _claim_plot(claim: dict, plot_name: str) -> dict:
    return next((p for p in claim.get("plots", []) if p["name"] == plot_name), {"curves": []})


def control_curves(claim: dict, plot_name: str) -> list[tuple[str, list[dict], str]]:
    """Per control that recorded a plot named ``plot_name``: its name, the measured curves it
    draws on the claim's plot (relabelled ``control <name>: <label>``, with ``control`` set to
    the name; its theory and bound curves would repeat the claim's) and, when it draws none,
    why (:data:`REJUDGES`, :data:`REPEATS`)."""
    own = _claim_plot(claim, plot_name)["curves"]
    out = []
    for control in claim.get("controls", []):
        recorded = [curve for plot in control.get("plots", []) if plot["name"] == plot_name
                    for curve in plot["curves"] if curve["style"] == "measured"]
        if not recorded:
            continue
        if control.get("kind") == "statement" and control.get("evidence") == DISCRIMINATION:
            out.append((control["name"], [], REJUDGES))
            continue
        new = [dict(curve, label=f"control {control['name']}: {curve['label']}",
                    control=control["name"])
               for curve in recorded if not any(_same_curve(curve, c) for c in own)]
        out.append((control["name"], new, "" if new else REPEATS))
    return out


def control_overlays(claim: dict, plot_name: str) -> list[dict]:
    """The curves the claim's controls draw on its plot named ``plot_name``
    (:func:`control_curves`), in the order of the controls."""
    return [curve for _, curves, _ in control_curves(claim, plot_name) for curve in curves]


def plot_key(claim: dict, plot: dict) -> dict:
    """What the claim's plot ``plot`` shows of its controls, for the report's caption:
    ``drawn`` (the controls with a curve on it), ``below`` (those with a curve leaving the
    claim's axes, drawn whole in the second panel) and ``left_out`` (name, why) for the
    controls that recorded the plot and draw nothing on it."""
    groups = control_curves(claim, plot["name"])
    overlays = [curve for _, curves, _ in groups for curve in curves]
    return {"drawn": [name for name, curves, _ in groups if curves],
            "below": controls_below(plot, overlays),
            "left_out": [(name, why) for name, curves, why in groups if not curves]}


#: the largest magnitude drawn: beyond it (a diverging run reaches 1e262) the axes' margins and
#: a log axis's tick decades overflow float64 in matplotlib, so such a point breaks the line as a
#: non-finite one does
DRAWABLE_MAX = 1e200


def _drawable(x: np.ndarray, y: np.ndarray, xscale: str, yscale: str) -> np.ndarray:
    """Per point: finite, of magnitude at most :data:`DRAWABLE_MAX`, positive on a log axis."""
    keep = np.isfinite(x) & np.isfinite(y) & (np.abs(x) <= DRAWABLE_MAX) & (np.abs(y) <= DRAWABLE_MAX)
    if xscale == "log":
        keep &= x > 0
    if yscale == "log":
        keep &= y > 0
    return keep


def _finite_points(curve: dict, xscale: str, yscale: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(curve["x"], dtype=float)
    y = np.asarray(curve["y"], dtype=float)
    keep = _drawable(x, y, xscale, yscale)
    return x[keep], y[keep]


def _claim_box(plot: dict) -> tuple[float, float, float, float] | None:
    """(x min, x max, y min, y max) of the claim's own drawable points, None when it has none."""
    points = [_finite_points(c, plot["xscale"], plot["yscale"]) for c in plot["curves"]]
    xs = np.concatenate([p[0] for p in points] or [np.empty(0)])
    ys = np.concatenate([p[1] for p in points] or [np.empty(0)])
    return None if xs.size == 0 else (xs.min(), xs.max(), ys.min(), ys.max())


def _inside_claim_axes(plot: dict, curve: dict) -> np.ndarray | None:
    """Per drawable point of ``curve``: whether it lies in the box the claim's own curves
    (``plot``) span (:func:`_claim_box`); None when the claim's curves have no drawable point."""
    box = _claim_box(plot)
    if box is None:
        return None
    x, y = _finite_points(curve, plot["xscale"], plot["yscale"])
    return (x >= box[0]) & (x <= box[1]) & (y >= box[2]) & (y <= box[3])


def curves_leaving_axes(plot: dict, overlays: list[dict]) -> list[str]:
    """Labels of the control curves (``overlays``) with a drawable point outside the claim's
    axes (the box spanned by the claim's own curves): they are drawn whole in a second panel."""
    inside = [(curve["label"], _inside_claim_axes(plot, curve)) for curve in overlays]
    return [label for label, mask in inside if mask is not None and not mask.all()]


def controls_below(plot: dict, overlays: list[dict]) -> list[str]:
    """The controls with a curve leaving the claim's axes (:func:`curves_leaving_axes`)."""
    leaving = set(curves_leaving_axes(plot, overlays))
    return list(dict.fromkeys(c["control"] for c in overlays if c["label"] in leaving))


def plot_filename(claim_id: str, plot: dict, overlays: list[dict]) -> str:
    """``<claim>--<plot>-<hash>.png``, the hash over everything the file draws."""
    digest = hashlib.sha256(json.dumps([STYLE_VERSION, plot, overlays], sort_keys=True)
                            .encode()).hexdigest()[:12]
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{claim_id}--{plot['name']}")
    return f"{safe}-{digest}.png"


#: the names :func:`plot_filename` gives (the only files of ``plots/`` a report deletes)
PLOT_NAME = re.compile(r"[A-Za-z0-9_.-]+--[A-Za-z0-9_.-]*-[0-9a-f]{12}\.png")


def _draw_curve(ax, curve: dict, yscale: str, **style) -> None:
    """One curve; points that cannot be drawn (:func:`_drawable` on a linear x axis: non-finite
    or beyond :data:`DRAWABLE_MAX`, y <= 0 on a log axis) break the line there, as matplotlib
    does at NaN (such a value would overflow the axes)."""
    x = np.asarray(curve["x"], dtype=float)
    y = np.asarray(curve["y"], dtype=float)
    y = np.where(_drawable(x, y, "linear", yscale), y, np.nan)
    style.setdefault("label", curve["label"])
    ax.plot(x, y, LINESTYLES.get(curve["style"], "-"), **style)


def _draw_controls(ax, overlays: list[dict], colors: dict[str, str], yscale: str,
                   below: frozenset[str] = frozenset()) -> None:
    """The controls' curves, each control in its colour with one legend entry (which points
    to the second panel for the controls named in ``below``)."""
    labelled = set()
    for curve in overlays:
        name = curve["control"]
        label = ("_nolegend_" if name in labelled
                 else f"control {name}" + (" (whole, below)" if name in below else ""))
        labelled.add(name)
        _draw_curve(ax, curve, yscale, lw=1.1, alpha=0.85, color=colors[name], label=label)


def _shade(ax, plot: dict) -> None:
    """A map's plot (`theorycheck.maps.record_map`): ``band`` names the two curves whose area is
    filled (the confidence band), ``span`` the stated region of x shaded (ends None: open)."""
    curves = {c["label"]: c for c in plot["curves"]}
    band = plot.get("band")
    if band and all(label in curves for label in band):
        lower, upper = (curves[label] for label in band)
        x, y_low, y_high = (np.asarray(v, dtype=float) for v in (lower["x"], lower["y"], upper["y"]))
        ax.fill_between(x, y_low, y_high, where=np.isfinite(x) & np.isfinite(y_low) & np.isfinite(y_high),
                        alpha=0.15, lw=0)
    span = plot.get("span")
    if span:
        xs = np.concatenate([np.asarray(c["x"], dtype=float) for c in plot["curves"]])
        lo = xs.min() if span.get("lower") is None else max(float(span["lower"]), xs.min())
        hi = xs.max() if span.get("upper") is None else min(float(span["upper"]), xs.max())
        if hi > lo:
            ax.axvspan(lo, hi, color="tab:green", alpha=0.08, lw=0,
                       label=span.get("label") or "stated region")


def control_colors(plot: dict, overlays: list[dict]) -> dict[str, str]:
    """Each control's colour on ``plot``: :data:`CONTROL_COLORS` in turn, skipping the colours
    of the claim's own curves (and cycling when the controls outnumber the rest)."""
    taken = {f"C{i % 10}" for i in range(len(plot["curves"]))}
    free = [color for color in CONTROL_COLORS if color not in taken]
    colors = {}
    for curve in overlays:
        colors.setdefault(curve["control"], free[len(colors) % len(free)])
    return colors


def _panel(fig, plot: dict, index: int, panels: int, title: str):
    """Axes number ``index`` (from the top) of ``panels`` stacked panels, each
    :data:`PANEL_HEIGHT` high with fixed margins (a layout engine measures every tick label and doubles the drawing time)."""
    height = PANEL_HEIGHT * panels
    bottom = (panels - 1 - index) * PANEL_HEIGHT + 0.49
    ax = fig.add_axes((0.14, bottom / height, 0.83, 2.96 / height))
    ax.set_xscale(plot["xscale"])
    ax.set_yscale(plot["yscale"])
    ax.set_xlabel(plot["xlabel"])
    ax.set_ylabel(plot["ylabel"])
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    return ax


def _ticks(ax) -> None:
    """Minor ticks off (on a log axis they cost 40% of the drawing time and add little),
    except on a log axis whose limits hold fewer than two decades' ticks: there the minor
    ticks are the only labels."""
    from matplotlib.ticker import LogLocator

    ax.minorticks_off()
    for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if axis.get_scale() == "log":
            inside = [t for t in axis.get_majorticklocs() if min(low, high) <= t <= max(low, high)]
            if len(inside) < 2:
                axis.set_minor_locator(LogLocator(subs="auto"))


def plot_figure(plot: dict, overlays: list[dict] = ()):
    """The matplotlib figure of one recorded plot (title, axes labels and scales, the claim's
    curves, the controls' ``overlays`` from :func:`control_overlays`).  The first panel keeps
    the claim's axes, so a control curve that departs leaves the frame rather than flattening
    the claim's curves; the control curves that leave it (:func:`curves_leaving_axes`) are
    drawn whole in a second panel, with the claim's curves for comparison."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    leaving = set(curves_leaving_axes(plot, overlays))
    colors = control_colors(plot, overlays)
    panels = 2 if leaving else 1
    fig = Figure(figsize=(6.0, PANEL_HEIGHT * panels), dpi=100)
    ax = _panel(fig, plot, 0, panels, plot["title"])
    for curve in plot["curves"]:
        _draw_curve(ax, curve, plot["yscale"], lw=1.6)
    _shade(ax, plot)
    if _claim_box(plot) is not None:
        limits = ax.get_xlim(), ax.get_ylim()
        _draw_controls(ax, overlays, colors, plot["yscale"],
                       frozenset(controls_below(plot, overlays)))
        ax.set_xlim(limits[0])
        ax.set_ylim(limits[1])
    else:  # the claim drew nothing: the controls' curves set the axes
        _draw_controls(ax, overlays, colors, plot["yscale"])
    ax.legend(fontsize=7)
    _ticks(ax)
    if leaving:
        whole = _panel(fig, plot, 1, panels, "whole range of the control curves that leave "
                                             "the axes above")
        for curve in plot["curves"]:
            _draw_curve(whole, curve, plot["yscale"], lw=1.6, label="_nolegend_")
        _draw_controls(whole, [c for c in overlays if c["label"] in leaving], colors,
                       plot["yscale"])
        whole.legend(fontsize=7)
        _ticks(whole)
    return fig


def render_plot(plot: dict, path: Path, overlays: list[dict] = ()) -> Path:
    """Draw one recorded plot (:func:`plot_figure`) into the PNG file ``path``."""
    image = io.BytesIO()
    plot_figure(plot, overlays).savefig(image, format="png")
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
