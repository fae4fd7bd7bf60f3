"""Claim patterns: the decisions that recur across papers, each one call on the context.

* :func:`property_search` -- hypothesis searches instances for a counterexample to
  ``margin(instance) >= 0`` and the claim decides on the worst instance found;
* :func:`ordering_in_decades` -- methods ordered by a positive quantity (a loss, a
  deviation), consecutive ones at least ``decades`` orders of magnitude apart;
* :func:`directional_convergence` -- ``1 - alignment`` below a rate bound over a window.

Each records a decision through ``tc.conclusion`` (or the role given) and what a reader
needs to judge it (the worst instance, the gaps, the curve).  Slopes are the ``slope``
check; the binomial check reports its own power.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .context import ROLES

__all__ = ["property_search", "ordering_in_decades", "directional_convergence"]


def _recorder(tc, role: str):
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    return getattr(tc, role)


def property_search(tc, name: str, strategy, margin: Callable[[Any], float], *,
                    max_examples: int, role: str = "conclusion") -> bool:
    """Search for an instance with ``margin(instance) < 0``; decide ``margin >= 0`` on the worst.

    hypothesis draws up to ``max_examples`` instances from ``strategy`` and is steered
    towards small margins by ``hypothesis.target(-margin)``.  The search is reproducible:
    seeded by ``tc.seed(name)`` (so by the run's base seed and the claim id), derandomized,
    without example database or deadline.  The worst instance and its margin are recorded
    as measurements ``"<name>: worst instance"`` / ``"<name>: worst margin"``; a NaN margin
    counts as the worst (and fails the decision through a non-finite value).
    """
    from hypothesis import HealthCheck, Phase, given, seed, settings, target

    if max_examples < 1:
        raise ValueError(f"property_search {name!r}: max_examples must be >= 1")
    worst = {"margin": math.inf, "instance": None, "examples": 0}

    @settings(max_examples=max_examples, derandomize=True, database=None, deadline=None,
              phases=(Phase.generate, Phase.target), suppress_health_check=list(HealthCheck))
    @seed(tc.seed(name))
    @given(strategy)
    def search(instance):
        value = float(margin(instance))
        worst["examples"] += 1
        if math.isnan(value) or value < worst["margin"]:
            worst.update(margin=value, instance=instance)
        if math.isfinite(value):
            target(-value)

    search()
    tc.record(f"{name}: worst instance", worst["instance"])
    tc.record(f"{name}: worst margin", worst["margin"])
    tc.record(f"{name}: examples", worst["examples"])
    return _recorder(tc, role).at_least(name, worst["margin"], 0.0)


def ordering_in_decades(tc, name: str, values: Mapping[str, Any], order: Sequence[str],
                        decades: float) -> bool:
    """``values[order[0]] < values[order[1]] < ...``, consecutive ones ``decades`` apart.

    For each consecutive pair ``(a, b)`` of ``order`` the gap
    ``log10 values[b] - log10 values[a]`` (elementwise, e.g. per trial) must be at least
    ``decades``: ``order`` lists the methods from the smallest quantity (the fastest) to the
    largest.  One conclusion over every gap; the gaps per pair are recorded as measurements.
    """
    missing = [label for label in order if label not in values]
    if len(order) < 2 or missing:
        raise ValueError(f"ordering {name!r}: order needs at least two labels of values "
                         f"(missing: {missing})")
    logs = {}
    for label in order:
        arr = np.asarray(values[label], dtype=float)
        if np.any(arr <= 0):
            raise ValueError(f"ordering {name!r}: values of {label!r} must be positive")
        logs[label] = np.log10(arr)
    gaps = []
    for a, b in zip(order[:-1], order[1:]):
        gap = logs[b] - logs[a]
        tc.record(f"{name}: decades {a} below {b}", gap)
        gaps.append(np.ravel(gap))
    return tc.conclusion.at_least(name, np.concatenate(gaps), decades)


def directional_convergence(tc, name: str, t: Any, deviation: Any, bound: Any, *,
                            window: tuple[float, float]) -> bool:
    """``1 - alignment_t <= bound_t`` for every ``t`` in ``window`` (inclusive).

    ``deviation`` is ``1 - <W_t/||W_t||, W*/||W*||>`` at the times ``t``; ``bound`` is the
    rate bound at those times (an array of the same length, or a function of ``t``).  One
    conclusion; the deviation and the bound are drawn on log-log axes as plot ``name``.
    """
    t = np.asarray(t, dtype=float)
    dev = np.asarray(deviation, dtype=float)
    rate = np.asarray(bound(t) if callable(bound) else bound, dtype=float)
    if not (t.shape == dev.shape == rate.shape) or t.ndim != 1:
        raise ValueError(f"directional convergence {name!r}: t, deviation and bound must be "
                         f"1-d of one length, got {t.shape}, {dev.shape}, {rate.shape}")
    inside = (t >= window[0]) & (t <= window[1])
    if not inside.any():
        raise ValueError(f"directional convergence {name!r}: no time in window {window}")
    tc.curve(name, "1 - alignment", t, dev, xscale="log", yscale="log", ylabel="1 - alignment")
    tc.curve(name, "rate bound", t, rate, style="bound")
    return tc.conclusion.at_most(name, dev[inside], rate[inside])
