"""Draw the curves a claim recorded (``tc.curve``) as PNG files with matplotlib."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

LINESTYLES = {"measured": "-", "theory": "--", "bound": ":", "reference": "-."}


def plot_filename(claim_id: str, plot_name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{claim_id}--{plot_name}")
    return f"{safe}.png"


def render_plot(plot: dict, path: Path) -> Path:
    """Draw one recorded plot (title, axes labels and scales, curves) to ``path``."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.8), dpi=100)
    try:
        for curve in plot["curves"]:
            x = np.asarray(curve["x"], dtype=float)
            y = np.asarray(curve["y"], dtype=float)
            if plot["yscale"] == "log":
                y = np.where(y > 0, y, np.nan)
            ax.plot(x, y, LINESTYLES.get(curve["style"], "-"), label=curve["label"], lw=1.6)
        ax.set_xscale(plot["xscale"])
        ax.set_yscale(plot["yscale"])
        ax.set_xlabel(plot["xlabel"])
        ax.set_ylabel(plot["ylabel"])
        ax.set_title(plot["title"], fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path


def render_claim_plots(results: dict, out_dir: Path) -> None:
    """Render every claim's plots into ``out_dir/plots`` and list them in ``claim['images']``."""
    plot_dir = out_dir / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)
    for claim in results["claims"]:
        claim["images"] = []
        for plot in claim.get("plots", []):
            name = plot_filename(claim["id"], plot["name"])
            render_plot(plot, plot_dir / name)
            claim["images"].append(f"plots/{name}")
