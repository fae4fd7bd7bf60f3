"""The signed, dimensionless margin of a decision to its threshold.

Every :class:`theorycheck.checks.Decision` carries ``margin``: a finite number that is
**>= 0 exactly when the decision passed** and < 0 when it failed, larger the more room the
comparison had.  Calibration (:mod:`theorycheck.calibrate`) models its distribution over seeds
to estimate failure rates too small to count.  Per check kind:

* ``close`` (elementwise): with the allowed error ``tol_i = atol + rtol |expected_i|`` and the
  error ``err_i = |measured_i - expected_i|``, ``min_i (1 - err_i / tol_i)``; ``norm="fro"``:
  the same with the Frobenius error ``||m - e||`` and ``tol = atol + rtol ||e||``.
* ``at_most`` / ``at_least``: the slack ``s_i = bound_i + margin + rmargin |bound_i| -
  measured_i`` (at_least: ``measured_i - bound_i + margin + rmargin |bound_i|``) over the
  threshold's magnitude ``|bound_i| + margin + rmargin |bound_i|``, least over the elements.
* ``monotone``: ``(worst step + tol) / tol``, the worst signed step against the tolerance;
  with ``tol = 0``, over the series' largest step ``max |step|`` instead.
* ``slope``: the least over the stated constraints of: for ``expected`` with ``rtol``,
  ``(rtol - |b / expected - 1|) / (2 rtol)`` (the distance to the nearest edge of the
  accepted interval over its width); for a range ``at_least <= b <= at_most``, ``min(b -
  at_least, at_most - b) / (at_most - at_least)``; for a one-sided range, the distance to its
  edge over ``|edge|``; for ``min_r2``, ``(R^2 - min_r2) / (1 - min_r2)``.
* ``binomial``: ``(k - c - 1) / sqrt(K p (1 - p))``: the success count above the largest count
  the test rejects (``c``, :func:`theorycheck.checks.critical_count`), in binomial standard
  deviations at the claimed rate.
* ``wald``: ``z - z_alpha``, the statistic's distance to the rejection quantile (in standard
  errors).
* ``chi_square``: ``(critical - statistic) / sqrt(2 dof)``, in standard deviations of the
  chi-square distribution.
* ``holds``: minus the fraction of entries that are false (0 when it holds: a boolean has no
  room to measure).

The scales come from the threshold, not from the measured value, so that a margin is an affine
function of the measured statistic: across seeds it is distributed as the statistic is, which
the tail model of :mod:`theorycheck.calibrate` relies on.  Where a scale is 0 (a bound of 0 with
no margin, a zero tolerance), the margin is the room itself, in the compared quantity's units.
A decision whose numbers are not all finite (it passed or failed through a NaN or an infinity)
has no margin: ``None``; an unknown kind has none either.  :func:`record_margin` computes the
margin of a decision recorded in a results.json (the current definition, whatever the run
stored).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["element_margins", "margin", "record_log_ratio", "record_margin"]


def _array(value: Any) -> np.ndarray:
    return np.asarray(value, dtype=float)


def _ratios(room: Any, scale: Any) -> np.ndarray:
    """``room / scale`` per element, an element with scale 0 counting its room (a ratio beyond
    the float range is held at its end: a subnormal tolerance stays finite)."""
    scale = _array(scale)
    with np.errstate(over="ignore"):
        ratio = _array(room) / np.where(scale > 0, scale, 1.0)
    top = np.finfo(float).max
    return np.clip(ratio, -top, top)


def _ratio(room: Any, scale: Any) -> float:
    """The least of `_ratios` over the elements."""
    return float(np.min(_ratios(room, scale)))


def _close_elements(d) -> np.ndarray:
    tol = d.tolerance
    rtol, atol = float(tol.get("rtol", 0.0)), float(tol.get("atol", 0.0))
    if tol.get("norm") == "fro":
        err = float(d.detail["abs_error"])
        allowed = atol + rtol * float(d.detail["reference_norm"])
        return _ratios(allowed - err, allowed).ravel()
    m, e = _array(d.measured), _array(d.reference)
    err = np.abs(m - e)
    allowed = atol + rtol * np.abs(e)
    return _ratios(allowed - err, allowed).ravel()


def _bound_elements(d) -> np.ndarray:
    m, b = np.broadcast_arrays(_array(d.measured), _array(d.reference))
    absolute = float(d.tolerance.get("margin", 0.0))
    relative = float(d.tolerance.get("rmargin", 0.0))
    raw = b - m if d.kind == "at_most" else m - b
    slack = raw + absolute + relative * np.abs(b)
    return _ratios(slack, np.abs(b) * (1.0 + relative) + absolute).ravel()


def _bound_log_ratios(d) -> np.ndarray:
    """Per element of a bound decision, the log of its compared ratio ``sign * log(1 + sign *
    margin_i)`` (``sign`` -1 for ``at_most``, +1 for ``at_least``) formed from the numbers, not
    from the margin: ``1 - margin_i = (T_i - slack_i) / T_i = (|b_i| - b_i + measured_i) / T_i``
    (at_most), ``1 + margin_i = (measured_i + |b_i| - b_i + 2 (margin + rmargin |b_i|)) / T_i``
    (at_least), ``T_i`` the threshold's magnitude; NaN where the ratio is not positive."""
    m, b = np.broadcast_arrays(_array(d.measured), _array(d.reference))
    absolute = float(d.tolerance.get("margin", 0.0))
    relative = float(d.tolerance.get("rmargin", 0.0))
    magnitude = np.abs(b) * (1.0 + relative) + absolute
    if d.kind == "at_most":
        compared = np.abs(b) - b + m
    else:
        compared = m + np.abs(b) - b + 2.0 * (absolute + relative * np.abs(b))
    formed = (compared > 0) & (magnitude > 0)
    y = np.full(compared.shape, np.nan)
    y[formed] = np.log(compared[formed] / magnitude[formed])
    return (-y if d.kind == "at_most" else y).ravel()


def _close(d) -> float:
    return float(np.min(_close_elements(d)))


def _bound(d) -> float:
    return float(np.min(_bound_elements(d)))


def _monotone(d) -> float:
    tol = float(d.tolerance.get("tol", 0.0))
    return _ratio(float(d.measured) + tol, tol if tol > 0 else float(d.detail["max_abs_step"]))


def _slope(d) -> float:
    b, tol = float(d.measured), d.tolerance
    parts = []
    if "rtol" in tol and d.reference is not None:
        rtol = float(tol["rtol"])
        parts.append(_ratio(rtol - abs(b / float(d.reference) - 1.0), 2.0 * rtol))
    low, high = tol.get("at_least"), tol.get("at_most")
    if low is not None and high is not None:
        parts.append(_ratio(min(b - low, high - b), high - low))
    elif low is not None:
        parts.append(_ratio(b - low, abs(low)))
    elif high is not None:
        parts.append(_ratio(high - b, abs(high)))
    if "min_r2" in tol:
        floor = float(tol["min_r2"])
        parts.append(_ratio(float(d.detail["r2"]) - floor, 1.0 - floor))
    return min(parts)


def _binomial(d) -> float:
    from .checks import critical_count

    k, n = int(d.detail["successes"]), int(d.detail["trials"])
    p, alpha = float(d.reference), float(d.tolerance["alpha"])
    c = critical_count(n, p, alpha)
    return _ratio(k - c - 1, math.sqrt(n * p * (1.0 - p)))


def _wald(d) -> float:
    from scipy import stats

    return float(d.detail["z"]) - float(stats.norm.ppf(float(d.tolerance["alpha"])))


def _chi_square(d) -> float:
    return (float(d.reference) - float(d.measured)) / math.sqrt(2.0 * int(d.detail["dof"]))


def _holds(d) -> float:
    truth = np.asarray(d.measured, dtype=bool)
    return 0.0 - float(np.sum(~truth)) / truth.size


MARGINS = {"close": _close, "at_most": _bound, "at_least": _bound, "monotone": _monotone,
           "slope": _slope, "binomial": _binomial, "wald": _wald, "chi_square": _chi_square,
           "holds": _holds}


def margin(decision) -> float | None:
    """The decision's margin to its threshold (see the module docstring): finite, >= 0 when
    it passed, < 0 when it failed; ``None`` for non-finite numbers or an unknown kind."""
    compute = MARGINS.get(decision.kind)
    if compute is None or not decision.finite:
        return None
    try:
        value = float(compute(decision))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):  # a record of another shape
        return None
    return value if math.isfinite(value) else None


#: the kinds whose margin is the least of per-element margins (`element_margins`)
ELEMENTWISE = {"close": _close_elements, "at_most": _bound_elements, "at_least": _bound_elements}


def element_margins(record: dict) -> np.ndarray | None:
    """The margin of every compared element of a decision recorded in a results.json: for the
    elementwise kinds (``close``, ``at_most``, ``at_least``) the per-element ``room / scale``
    whose least is :func:`record_margin` (one element for a Frobenius ``close``); for every other
    kind the one margin; ``None`` where :func:`record_margin` has none."""
    whole = record_margin(record)
    if whole is None:
        return None
    elements = ELEMENTWISE.get(record.get("kind"))
    if elements is None:
        return np.array([whole])
    return elements(_decision(record))


def _decision(record: dict):
    from .checks import Decision

    return Decision(record.get("name", ""), record.get("kind", ""), bool(record.get("passed")),
                    record["measured"], record.get("reference"), record.get("tolerance") or {},
                    record.get("detail") or {})


def record_log_ratio(record: dict) -> float | None:
    """The log of the compared ratio of a bound decision (``at_most``, ``at_least``) recorded in a
    results.json, least over its elements: ``-log(measured / threshold)`` for ``at_most``,
    ``log(measured / threshold)`` for ``at_least`` (with its margins), >= 0 exactly when it passed.
    It is ``sign * log(1 + sign * margin)`` computed from the numbers: a ratio below the float's
    resolution (a loss of 1e-28 against 1e-10) leaves a margin of exactly 1, whose log ratio is
    lost.  ``None`` for another kind, non-finite numbers or a ratio that is not positive."""
    if record.get("kind") not in ("at_most", "at_least") or record_margin(record) is None:
        return None
    y = _bound_log_ratios(_decision(record))
    return None if y.size == 0 or not np.all(np.isfinite(y)) else float(np.min(y))


def record_margin(record: dict) -> float | None:
    """:func:`margin` of a decision as results.json records it (``Decision.to_json``); None for
    a record without its numbers."""
    if "measured" not in record:
        return None
    return _decision(record).margin
