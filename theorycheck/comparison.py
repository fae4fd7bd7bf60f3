r"""Comparing optimizers: several methods run side by side on one model, and orderings between
them ("A converges faster than B") decided in decades of an error series.

* :func:`compare_methods` runs :class:`theorycheck.optim.Method`\ s as one batch
  (`theorycheck.optim.side_by_side`) and returns a :class:`MethodComparison`: per method, the
  recorded series (checkpoints x trials).
* :func:`decades_ahead` / :func:`check_ahead`: a group of leaders ahead of a group of followers
  in an error series kept as natural logs (so errors far below the float range still compare),
  per trial, by a factor (and optionally by another factor in the geometric mean or the median
  over trials).
  A claim names its methods by *roles* ("Polyak", "NGD"); a control may map a role to another
  run of the batch (its own perturbed setting), which is what ``roles`` is for.
* :func:`log_checkpoints`, and plots of the series and of theory curves anchored to them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from .checks import fit_slope
from .optim import run_trajectory, side_by_side, tile
from .optim.trajectory import recorded_rows

__all__ = ["MethodComparison", "compare_methods", "log_checkpoints", "decades_ahead", "check_ahead",
           "record_rate", "plot_methods", "plot_theory", "plot_offset_theory"]


def log_checkpoints(steps: int, decision_points: Sequence[int] = (), count: int = 40) -> np.ndarray:
    """0, about ``count`` log-spaced iterations in [1, steps], the ``decision_points`` and ``steps``."""
    spaced = np.round(np.geomspace(1, steps, count)).astype(int)
    return np.unique(np.concatenate([[0], spaced, np.asarray(decision_points, dtype=int), [steps]]))


@dataclass(frozen=True)
class MethodComparison:
    """``t`` (C,) recorded iterations; ``series[label][name]`` (C, K) per method; ``reference``
    per-trial constants of the problem (for theory curves and records)."""

    t: np.ndarray
    series: dict
    reference: dict = field(default_factory=dict)

    def at(self, label: str, name: str, t) -> np.ndarray:
        """The (K,) values of ``name`` for method ``label`` at iteration t."""
        return self.series[label][name][recorded_rows(self.t, t)]

    def trial_mean(self, label: str, name: str) -> np.ndarray:
        """(C,) the mean over trials of ``name`` for method ``label``."""
        return self.series[label][name].mean(axis=1)

    def restrict(self, trials) -> "MethodComparison":
        """The runs of the trials ``trials`` (an index array or slice of the trial dimension):
        every series, and every reference entry with one value per trial (other entries, such
        as a problem size, are kept)."""
        K = next(iter(next(iter(self.series.values())).values())).shape[1]

        def kept(value):
            return np.asarray(value)[trials] if np.ndim(value) >= 1 and np.shape(value)[0] == K else value

        return MethodComparison(self.t, {label: {name: v[:, trials] for name, v in by_name.items()}
                                         for label, by_name in self.series.items()},
                                {key: kept(value) for key, value in self.reference.items()})


def compare_methods(model, params0: Mapping, methods: Sequence, steps: int, metrics: Mapping, *,
                    checkpoints, series: Callable[[dict], dict] | None = None,
                    reference: Mapping | None = None) -> MethodComparison:
    """Run ``methods`` side by side from ``params0`` (one batch of len(methods) x K trials;
    ``metrics`` are evaluated on the tiled model's trials) and split the recorded metrics by
    method.  ``series`` maps the recorded metrics {name: (C, M*K, ...)} to the series kept
    (default: all of them)."""
    traj = run_trajectory(side_by_side(model, methods), tile(params0, len(methods)), steps, metrics,
                          checkpoints=checkpoints)
    recorded = traj.metrics if series is None else series(traj.metrics)
    K = model.trial_count()
    split = {m.label: {name: v[:, i * K:(i + 1) * K] for name, v in recorded.items()}
             for i, m in enumerate(methods)}
    return MethodComparison(traj.t, split, dict(reference or {}))


def _resolve(roles: Mapping | None, role: str) -> str:
    return role if roles is None else roles[role]


def decades_ahead(runs: MethodComparison, leaders: Sequence[str], followers: Sequence[str], name: str,
                  t, roles: Mapping | None = None) -> np.ndarray:
    """Per trial: decades by which the worst of ``leaders`` is below the best of ``followers``
    in the natural-log error series ``name`` at iteration t (negative: not ahead)."""
    lead = np.max([runs.at(_resolve(roles, r), name, t) for r in leaders], axis=0)
    follow = np.min([runs.at(_resolve(roles, r), name, t) for r in followers], axis=0)
    return (follow - lead) / math.log(10)


#: the statistics of a group's decades over trials that :func:`check_ahead` can decide
TYPICAL_TRIAL = {"geometric mean": np.mean, "median": np.median}


def check_ahead(tc, runs: MethodComparison, leaders: Sequence[str], followers: Sequence[str], name: str,
                t, factor: float | None, mean_factor: float | None = None, roles: Mapping | None = None,
                typical: str = "geometric mean") -> None:
    """Conclusion: ``leaders`` have a ``factor`` times smaller ``name`` than ``followers`` at t on
    every trial (``factor=None``: no per-trial decision), and, with ``mean_factor``, a
    ``mean_factor`` times smaller one in the ``typical`` trial: ``"geometric mean"`` (the mean
    over trials of the decades ahead) or ``"median"`` (the median trial's decades, which a
    minority of trials that converge elsewhere cannot move).  Decision names carry the roles,
    not the runs behind them."""
    if typical not in TYPICAL_TRIAL:
        raise ValueError(f"typical must be one of {sorted(TYPICAL_TRIAL)}, not {typical!r}")
    gap = decades_ahead(runs, leaders, followers, name, t, roles)
    pair = f"{' & '.join(leaders)} ahead of {' & '.join(followers)}"
    if factor is not None:
        tc.conclusion.at_least(f"{pair} by >= {factor:g}x: {name}, decades per seed", gap,
                               math.log10(factor))
    if mean_factor is not None:
        tc.conclusion.at_least(f"{pair} by >= {mean_factor:g}x in the {typical} over seeds: {name}, "
                               "decades", TYPICAL_TRIAL[typical](gap), math.log10(mean_factor))


def record_rate(tc, runs: MethodComparison, label: str, name: str, x_power: float, predicted: float,
                what: str) -> None:
    """Record the fitted slope of the trial mean of ``name`` against t^x_power over the second
    half of the run next to the ``predicted`` slope (for a theory curve; not a decision)."""
    t_end = int(runs.t[-1])
    fit = fit_slope(runs.t[1:], runs.trial_mean(label, name)[1:], window=(t_end / 2, t_end),
                    x_transform=x_power, y_transform="linear")
    tc.record(f"{what}: slope of {name} vs t^{x_power:.3g} over [{t_end // 2}, {t_end}], "
              "measured and predicted", [fit.slope, predicted])


def plot_methods(tc, runs: MethodComparison, plot: str, name: str, transform: Callable, labels, **axes):
    """One curve per method of the trial mean of ``name`` (after ``transform``), t >= 1."""
    t = runs.t[1:]
    for label in labels:
        tc.curve(plot, label, t, transform(runs.trial_mean(label, name)[1:]), **axes)


def plot_theory(tc, runs: MethodComparison, plot: str, label: str, shape: Callable, anchor_label: str,
                name: str, transform: Callable, anchor_t: int, **axes):
    """A theory curve c * shape(t), c matched to ``anchor_label``'s trial mean at the first
    recorded iteration >= anchor_t."""
    t = runs.t[runs.t >= 2].astype(float)
    i = min(int(np.searchsorted(runs.t, anchor_t)), runs.t.size - 1)
    measured = transform(runs.trial_mean(anchor_label, name)[i])
    tc.curve(plot, label, t, measured * shape(t) / shape(float(runs.t[i])), style="theory", **axes)


def plot_offset_theory(tc, runs: MethodComparison, plot: str, label: str, shape: Callable,
                       anchor_label: str, name: str, **axes):
    """A theory curve shape(t) + b for a -log quantity, b matched to ``anchor_label`` at the
    last recorded iteration."""
    t = runs.t[runs.t >= 1].astype(float)
    end = -runs.trial_mean(anchor_label, name)[-1]
    tc.curve(plot, label, t, shape(t) - shape(t[-1]) + end, style="theory", **axes)
