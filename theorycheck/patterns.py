"""Claim patterns: the decisions that recur across papers, each one call on the context.

* :func:`property_search` -- hypothesis searches instances for a counterexample to
  ``margin(instance) >= 0`` and the claim decides on the worst instance found;
* :func:`per_instance` -- a statement decided on each of many instances and accepted by the
  binomial test ("with high probability");
* :func:`directional_convergence` -- ``1 - alignment`` below a rate bound over a window.

Each records a decision through ``tc.conclusion`` (or the role given) and what a reader
needs to judge it (the worst instance, the gaps, the curve).  Slopes are the ``slope``
check; the binomial check reports its own power.
"""
from __future__ import annotations

import contextlib
import math
import unittest.mock
from typing import Any, Callable

import numpy as np

from .context import ROLES
from .errors import InvalidInputError

__all__ = ["property_search", "per_instance", "directional_convergence"]

# Orderings of methods ("A faster than B"): theorycheck.comparison.check_ahead.


def _recorder(tc, role: str):
    if role not in ROLES:
        raise InvalidInputError(f"role must be one of {ROLES}, got {role!r}")
    return getattr(tc, role)


def property_search(tc, name: str, strategy, margin: Callable[[Any], float], *,
                    max_examples: int, role: str = "conclusion", tail_bound=None) -> bool:
    """Search for an instance with ``margin(instance) < 0``; decide ``margin >= 0`` on the worst.

    hypothesis draws up to ``max_examples`` instances from ``strategy`` and is steered
    towards small margins by ``hypothesis.target(-margin)``.  The search is reproducible:
    seeded by ``tc.seed(name)`` (so by the run's base seed and the claim id), derandomized,
    without example database or deadline.  The worst instance and its margin are recorded
    as measurements ``"<name>: worst instance"`` / ``"<name>: worst margin"``; a NaN margin
    counts as the worst (and fails the decision through a non-finite value).  ``tail_bound``
    (:class:`theorycheck.tails.TailBound`) states the decision's failure probability, as for
    :func:`theorycheck.checks.at_least` (e.g. 0 where a forward-error bound of the margin's
    evaluation lies below its tolerance).
    """
    from hypothesis import HealthCheck, Phase, given, seed, settings, target

    if max_examples < 1:
        raise InvalidInputError(f"property_search {name!r}: max_examples must be >= 1")
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

    with _without_local_constants():
        search()
    tc.record(f"{name}: worst instance", worst["instance"])
    tc.record(f"{name}: worst margin", worst["margin"])
    tc.record(f"{name}: examples", worst["examples"])
    return _recorder(tc, role).at_least(name, worst["margin"], 0.0, tail_bound=tail_bound)


@contextlib.contextmanager
def _without_local_constants():
    """hypothesis mixes into its draws the literals of every non-test module imported so far
    (``providers._get_local_constants``), so a search's examples would depend on which other
    modules this process happened to import (and on their text).  During a search the pool is
    hypothesis's global constants alone; its cache of permitted constants is emptied on entry
    and exit so that no other test's pool leaks in or ours out."""
    from hypothesis.internal.conjecture import providers

    empty = providers.Constants()
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        with unittest.mock.patch.object(providers, "_get_local_constants", lambda: empty):
            yield
    finally:
        providers.CONSTANTS_CACHE.cache.clear()


def per_instance(tc, name: str, values: Any, holds: Any, *, p: float, alpha: float = 0.05,
                 role: str = "conclusion", low_power: str | None = None) -> bool:
    """A statement decided per instance and accepted "with high probability": ``values`` (one
    per instance, what a reader needs to judge it) recorded under ``name``, and ``holds`` (one
    boolean per instance) accepted by the exact binomial test of ``P[holds] >= p`` at level
    ``alpha`` (the decision records the test's power at ``p - 0.15``; ``low_power`` says why
    fewer instances than 0.8 power needs)."""
    tc.record(f"{name}: per instance", values)
    return _recorder(tc, role).binomial(name, holds, p=p, alpha=alpha, low_power=low_power)


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
        raise InvalidInputError(f"directional convergence {name!r}: t, deviation and bound must be "
                         f"1-d of one length, got {t.shape}, {dev.shape}, {rate.shape}")
    inside = (t >= window[0]) & (t <= window[1])
    if not inside.any():
        raise InvalidInputError(f"directional convergence {name!r}: no time in window {window}")
    tc.curve(name, "1 - alignment", t, dev, xscale="log", yscale="log", ylabel="1 - alignment")
    tc.curve(name, "rate bound", t, rate, style="bound")
    return tc.conclusion.at_most(name, dev[inside], rate[inside])
