"""Comparisons that decide a claim and record why.

Every function here returns a :class:`Decision`: whether the comparison held, the numbers
it compared, and the tolerance or window it used.  None of them raises on a failed
comparison: the claim's context (:class:`theorycheck.context.ClaimContext`) records every
decision and fails the claim at the end with all the numbers in the message, so a report
always shows the whole picture rather than the first failing line.

Conventions
-----------
* ``close``:       ``|measured - expected| <= atol + rtol * |expected|`` elementwise
  (``numpy.isclose`` semantics), and for arrays optionally the relative Frobenius error
  ``||measured - expected|| / ||expected|| <= rtol`` (``norm="fro"``).
* ``at_most``:     ``measured <= bound + margin + rmargin * |bound|`` for every element.
* ``at_least``:    ``measured >= bound - margin - rmargin * |bound|`` for every element.
* ``slope``:       least-squares fit ``Y = a + b X`` over a window of ``x``, where ``X``
  and ``Y`` are ``x`` and ``y`` after the stated transforms (``"log"`` or ``"linear"``,
  or a power ``x**p``); the slope ``b`` is compared with an expected value, a range, or
  both, and ``R^2`` with a floor.
* ``binomial``:    ``K`` independent trials of an event the statement says has probability
  at least ``p``; with ``k`` successes the claim is rejected when the one-sided exact
  binomial test ``P[Bin(K, p) <= k] < alpha`` (scipy.stats.binomtest).
* ``monotone``:    consecutive differences of a series have the right sign up to ``tol``.

Every decision also carries ``margin``, its signed, dimensionless distance to the threshold
(>= 0 exactly when it passed), defined per kind in :mod:`theorycheck.margins`.

Non-finite input never passes: a NaN or an infinity in any number a check is given -- the
measured values, the reference or bound, a tolerance, margin or window -- makes the decision
fail before anything is compared, with ``detail["non_finite"]`` naming each such argument
(how many of its entries, the first flat index and its value); the summary prints it.  A
legitimately infinite quantity (a diverged run recorded as ``inf``) therefore fails every
check it enters: a claim that means "diverged" says so with a finite comparison (e.g.
``holds("diverged", np.isinf(loss))``).  Such a decision is not ``finite``: a control that
fails only through it misfires (:meth:`theorycheck.context.ClaimContext.conclude`).

Checks that cannot discriminate say so: a decision carries ``warnings`` (strings) when
``at_most`` / ``at_least`` compare against a bound series whose nonzero values fall below the
resolution of the dtype at the comparison's scale (``eps * max|values|``, ``eps = 2u`` the
machine epsilon) at points where the measured value is on the wrong side of the bound --
there only round-off and the margin pass the check, not the bound -- and when a ``slope`` window reaches the round-off floor of the fitted series
(``|y| < eps * max|y|``, or the ``floor`` the claim states).  The report shows the warnings;
``--tc-strict`` fails a case that has any (:class:`theorycheck.errors.CannotDiscriminate`).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy import optimize, stats

from .tolerance import unit_roundoff
from .errors import InvalidInputError
from .tails import TailBound

__all__ = [
    "Decision",
    "close",
    "at_most",
    "at_least",
    "holds",
    "slope",
    "fit_slope",
    "SlopeFit",
    "binomial",
    "binomial_power",
    "wald",
    "chi_square",
    "STATISTICAL",
    "binomial_power_point",
    "binomial_size",
    "critical_count",
    "monotone",
    "non_finite_text",
    "as_numbers",
    "CHECKS",
]


@dataclass
class Decision:
    """One recorded comparison: what was compared, against what, and whether it held."""

    name: str
    kind: str
    passed: bool
    measured: Any
    reference: Any = None
    tolerance: dict = field(default_factory=dict)
    detail: dict = field(default_factory=dict)
    #: ``"precondition"`` or ``"conclusion"``, set when the claim records it
    #: (``tc.precondition.*`` / ``tc.conclusion.*``); a check function leaves it unset
    role: str | None = None
    #: why the comparison may not discriminate (e.g. a bound below the dtype's resolution)
    warnings: list = field(default_factory=list)
    #: the signed, dimensionless distance to the threshold (>= 0 when it passed; None for
    #: non-finite numbers), computed from the record by :func:`theorycheck.margins.margin`
    margin: float | None = None

    def __post_init__(self) -> None:
        if self.margin is None:
            from .margins import margin

            self.margin = margin(self)

    @property
    def finite(self) -> bool:
        """Whether every input was a finite number, i.e. the verdict is a comparison and not
        the effect of a NaN or an infinity."""
        return not self.detail.get("non_finite") and all(
            _all_finite(v) for v in (self.measured, self.reference) if v is not None)

    def summary(self) -> str:
        verdict = "ok" if self.passed else "FAILED"
        tol = ", ".join(f"{k}={_fmt(v)}" for k, v in self.tolerance.items())
        ref = "" if self.reference is None else f" vs {_fmt(self.reference)}"
        role = f"{self.role} " if self.role else ""
        extra = ""
        if self.kind == "binomial" and "power_80_at" in self.detail:
            power = self.detail["power_80_at"]
            extra = ("; too few trials: the test cannot reject" if power is None
                     else f"; 80% power against p1 = {_fmt(power)}")
        warned = "".join(f"\n    warning: {w}" for w in self.warnings)
        refused = non_finite_text(self.detail)
        return f"[{verdict}] {role}{self.kind} {self.name}: {_fmt(self.measured)}{ref}" + (
            f" ({tol}{extra})" if tol or extra else ""
        ) + (f"\n    {refused}" if refused else "") + warned

    def to_json(self) -> dict:
        return jsonable(asdict(self))


def jsonable(value: Any) -> Any:
    """Convert numpy / torch scalars and arrays (recursively) into JSON-ready Python values.

    Non-finite floats become the strings ``"nan"``, ``"inf"``, ``"-inf"`` so that the
    output is strict JSON.
    """
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else str(value)
    return value


def _all_finite(value: Any) -> bool:
    arr = as_numbers(value)
    return arr is None or bool(np.all(np.isfinite(arr)))  # not numeric: nothing to be non-finite


def as_numbers(value: Any) -> np.ndarray | None:
    """``value`` as a float array (tensors on any device and lists of them included), or
    ``None`` when it is not numeric."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach().cpu().numpy()
    for convert in (lambda v: v, jsonable):   # jsonable: lists of tensors, "nan" kept as text
        try:
            return np.asarray(convert(value), dtype=float)
        except (TypeError, ValueError):
            continue
    return None


def _non_finite(arguments: dict[str, Any]) -> list[dict]:
    """Each numeric argument holding NaN or +-inf: its name, how many of its entries, its
    size, the first flat index and the value there."""
    found = []
    for argument, value in arguments.items():
        arr = None if value is None else as_numbers(value)
        if arr is None:
            continue
        bad = ~np.isfinite(arr.ravel())
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            found.append({"argument": argument, "count": int(bad.sum()), "size": int(bad.size),
                          "first_index": first, "value": str(arr.ravel()[first])})
    return found


def non_finite_text(detail: dict) -> str:
    """The line naming a decision's non-finite inputs (empty when it has none)."""
    parts = []
    for f in detail.get("non_finite") or []:
        if f["size"] == 1:
            parts.append(f"{f['argument']} is {f['value']}")
        else:
            parts.append(f"{f['argument']} has {f['count']} of {f['size']} entries NaN or "
                         f"infinite (first at flat index {f['first_index']}: {f['value']})")
    return ("non-finite input, nothing compared: " + "; ".join(parts)) if parts else ""


def _refuse_non_finite(name: str, kind: str, arguments: dict[str, Any], measured: str,
                       reference: str | None = None) -> Decision | None:
    """A failed decision when any of ``arguments`` holds a NaN or an infinity (``measured``
    and ``reference`` name the arguments shown as the decision's measured value and
    reference; the other scalars are its tolerance), else ``None``."""
    found = _non_finite(arguments)
    if not found:
        return None
    value = {key: None if arguments.get(key) is None else as_numbers(arguments[key])
             for key in (measured, reference)}
    settings = {k: v for k, v in arguments.items()
                if k not in (measured, reference) and isinstance(v, numbers.Real)}
    return Decision(name, kind, False, measured=value[measured], reference=value[reference],
                    tolerance=settings, detail={"non_finite": found})


def _fmt(value: Any) -> str:
    arr = np.asarray(jsonable(value), dtype=object)
    if arr.ndim == 0:
        v = arr.item()
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    flat = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in arr.ravel()[:6]]
    more = ", ..." if arr.size > 6 else ""
    return "[" + ", ".join(flat) + more + "]"


def _as_float_array(name: str, value: Any) -> np.ndarray:
    arr = as_numbers(value)
    if arr is None:
        raise InvalidInputError(f"check {name!r}: expected numbers, got {_fmt(value)}")
    if arr.size == 0:
        raise InvalidInputError(f"check {name!r}: got an empty array to compare")
    return arr


def close(
    name: str,
    measured: Any,
    expected: Any,
    *,
    rtol: float = 0.0,
    atol: float = 0.0,
    norm: str | None = None,
    tail_bound: TailBound | None = None,
) -> Decision:
    """``measured`` agrees with ``expected`` within ``atol + rtol * |expected|``.

    With ``norm="fro"`` the comparison is the relative Frobenius error
    ``||measured - expected||_F / ||expected||_F <= rtol`` (plus ``atol`` absolute),
    which is how matrices (e.g. two SVM solutions) are compared.  ``tail_bound`` states the
    probability that it fails on a fresh draw, as for :func:`at_most`.
    """
    refused = _refuse_non_finite(name, "close", dict(measured=measured, expected=expected,
                                                     rtol=rtol, atol=atol), "measured", "expected")
    if refused is not None:
        return refused
    if rtol < 0 or atol < 0 or (rtol == 0 and atol == 0):
        raise InvalidInputError(f"check {name!r}: need rtol >= 0, atol >= 0 and at least one > 0")
    stated = _stated_tail(name, tail_bound)
    _check_null_test(name, "close", expected, atol, rtol, tail_bound)
    m = _as_float_array(name, measured)
    e = _as_float_array(name, expected)
    if norm == "fro":
        diff = float(np.linalg.norm(m - e))
        scale = float(np.linalg.norm(e))
        rel = diff / scale if scale > 0 else math.inf
        passed = bool(np.isfinite(diff) and diff <= atol + rtol * scale)  # overflow fails
        return Decision(name, "close", passed, measured=rel if scale > 0 else diff,
                        reference=0.0, tolerance={"rtol": rtol, "atol": atol, "norm": "fro"},
                        detail={"abs_error": diff, "reference_norm": scale, **stated})
    if norm is not None:
        raise InvalidInputError(f"check {name!r}: unknown norm {norm!r} (use None or 'fro')")
    err = np.abs(m - e)
    passed = bool(np.all(np.isfinite(err)) and np.all(err <= atol + rtol * np.abs(e)))
    return Decision(name, "close", passed, measured=m, reference=e,
                    tolerance={"rtol": rtol, "atol": atol},
                    detail={"max_abs_error": float(np.max(err)), **stated})


def _eps(dtype: Any) -> float:
    """Machine epsilon ``2u`` of ``dtype`` (the spacing of floats just above 1)."""
    return 2.0 * unit_roundoff(dtype)


def _unresolved_bound(raw_slack: np.ndarray, slack: np.ndarray, measured: np.ndarray,
                      bound: np.ndarray, dtype: Any) -> list[str]:
    """A warning when, at points of a bound series, the bound is nonzero but below the dtype's
    resolution at the comparison's scale (``eps * max(|measured|, |bound|)``) and the measured
    value lies on its wrong side (``raw_slack < 0``) yet passes on the margin (``slack >= 0``)
    or misses it by less than the resolution: there round-off and the margin decide the
    verdict, not the bound."""
    if bound.size < 2:
        return []
    values = np.concatenate([np.abs(measured).ravel(), np.abs(bound).ravel()])
    resolution = _eps(dtype) * float(values.max(initial=0.0))
    below = np.broadcast_to((bound != 0) & (np.abs(bound) < resolution), raw_slack.shape)
    unresolved = below & (raw_slack < 0) & ((slack >= 0) | (-raw_slack <= resolution))
    if not unresolved.any():
        return []
    first = int(np.flatnonzero(unresolved.ravel())[0])
    return [f"at {int(unresolved.sum())} of {unresolved.size} points (first at flat index {first}) "
            f"the bound is below {_dtype_label(dtype)} resolution (eps * scale = {resolution:.3g}) "
            "and the measured value is on its wrong side within the margin or the resolution: "
            "round-off decides there; end the window before the round-off floor"]


def _dtype_label(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


#: the scales a bound decision's margin may be modelled on by the calibration (``scale=``)
SCALES = ("linear", "log")


def _stated_tail(name: str, tail_bound: TailBound | None) -> dict:
    """The decision detail of a stated tail bound (:class:`theorycheck.tails.TailBound`): empty
    without one, an error for anything else."""
    if tail_bound is None:
        return {}
    if not isinstance(tail_bound, TailBound):
        raise InvalidInputError(f"check {name!r}: tail_bound must be a theorycheck.tails.TailBound, "
                                f"got {type(tail_bound).__name__}")
    return {"tail_bound": {k: v for k, v in asdict(tail_bound).items() if v is not None}}


def _check_null_test(name: str, kind: str, bound: Any, margin: float, rmargin: float,
                     tail_bound: TailBound | None) -> None:
    """A test's level (:class:`theorycheck.tails.NullTest`) holds only for the decision it was
    computed for: ``at_most`` against the critical value (two-sided on ``|T|``, or upper), or
    ``at_least`` against its negative (lower), with no margin; anything else is an error."""
    null = tail_bound.null if tail_bound is not None else None
    if null is None:
        return
    expected = ("at_least", -null["critical"]) if null["sided"] == "lower" else ("at_most", null["critical"])
    b = np.asarray(bound, dtype=float)
    if kind != expected[0] or b.ndim or not math.isclose(float(b), expected[1], rel_tol=1e-12) or margin or rmargin:
        raise InvalidInputError(
            f"check {name!r}: a {null['sided']}-sided NullTest is decided by {expected[0]}(statistics, "
            f"{expected[1]:.6g}) with no margin (its level holds for that rejection region only), got "
            f"{kind}(..., {bound!r}, margin={margin!r}, rmargin={rmargin!r})")


def _bound_check(kind: str, name: str, measured: Any, bound: Any, margin: float, rmargin: float,
                 dtype: Any, scale: str, tail_bound: TailBound | None = None) -> Decision:
    refused = _refuse_non_finite(name, kind, dict(measured=measured, bound=bound, margin=margin,
                                                  rmargin=rmargin), "measured", "bound")
    if refused is not None:
        return refused
    if margin < 0 or rmargin < 0:
        raise InvalidInputError(f"check {name!r}: margin and rmargin must be >= 0")
    if scale not in SCALES:
        raise InvalidInputError(f"check {name!r}: scale must be one of {list(SCALES)}, got {scale!r}")
    stated = _stated_tail(name, tail_bound)
    _check_null_test(name, kind, bound, margin, rmargin, tail_bound)
    m = _as_float_array(name, measured)
    b = _as_float_array(name, bound)
    raw_slack = b - m if kind == "at_most" else m - b
    slack = raw_slack + margin + rmargin * np.abs(b)
    passed = bool(np.all(slack >= 0))
    return Decision(name, kind, passed, measured=m, reference=b,
                    tolerance={"margin": margin, **({"rmargin": rmargin} if rmargin else {})},
                    detail={"worst_slack": float(np.min(slack)), "worst_index": int(np.argmin(slack)),
                            **({"scale": scale} if scale != "linear" else {}), **stated},
                    warnings=_unresolved_bound(raw_slack, slack, m, b, dtype))


def at_most(name: str, measured: Any, bound: Any, *, margin: float = 0.0, rmargin: float = 0.0,
            dtype: Any = "float64", scale: str = "linear", tail_bound: TailBound | None = None) -> Decision:
    """Every element of ``measured`` is ``<= bound + margin + rmargin * |bound|`` (an absolute
    and a relative margin); records the worst slack.  ``dtype`` (the run's, passed by
    ``tc.conclusion`` / ``tc.precondition``) sets the resolution below which a bound series
    draws a warning.  ``scale="log"`` declares, when the claim is written, that the calibration
    models this decision's margins across seeds on the log of the compared ratio
    ``measured / bound`` (:func:`theorycheck.calibrate.log_ratio_tail`) and not on the margin
    itself: for a positive ratio that spans decades from seed to seed (a singular value against
    a round-off tolerance), whose normal model on the linear scale puts mass below zero that the
    quantity cannot reach.  ``tail_bound`` (:class:`theorycheck.tails.TailBound`) states, from
    the mathematics of the instance's draw, an upper bound on the probability that this
    decision fails on a fresh draw when the code and the hypotheses are right; the calibration
    takes it as the decision's false-failure bound.  Neither changes the verdict; both are
    recorded in the detail."""
    return _bound_check("at_most", name, measured, bound, margin, rmargin, dtype, scale, tail_bound)


def at_least(name: str, measured: Any, bound: Any, *, margin: float = 0.0, rmargin: float = 0.0,
             dtype: Any = "float64", scale: str = "linear", tail_bound: TailBound | None = None) -> Decision:
    """Every element of ``measured`` is ``>= bound - margin - rmargin * |bound|``; records the
    worst slack and warns like :func:`at_most`, whose ``scale`` and ``tail_bound`` it takes."""
    return _bound_check("at_least", name, measured, bound, margin, rmargin, dtype, scale, tail_bound)


def holds(name: str, condition: Any, *, detail: dict | None = None,
          tail_bound: TailBound | None = None) -> Decision:
    """A boolean (or all of a boolean array) is true; for statements that are not numeric
    comparisons (e.g. "the designated optimal token is the argmax").  Put the numbers
    behind the condition into ``detail``.  A NaN or an infinity is no truth value: it fails.
    ``tail_bound`` states, from the mathematics, how often the condition can be false on a
    fresh draw (e.g. 0 where it holds by construction); a test's level (a ``NullTest``) is
    refused, since no statistic is compared."""
    refused = _refuse_non_finite(name, "holds", dict(condition=condition), "condition")
    if refused is not None:
        return refused
    stated = _stated_tail(name, tail_bound)
    if tail_bound is not None and tail_bound.null is not None:
        raise InvalidInputError(f"check {name!r}: a NullTest's level is decided by at_most/at_least on "
                                "its statistics, not by holds")
    arr = np.asarray(jsonable(condition), dtype=bool)
    return Decision(name, "holds", bool(np.all(arr)), measured=arr,
                    detail=dict(detail or {}, n_true=int(arr.sum()), n=int(arr.size), **stated))


_TRANSFORMS = ("linear", "log")


def _transform(name: str, axis: str, values: np.ndarray, how: str | float) -> np.ndarray:
    if isinstance(how, (int, float)) and not isinstance(how, bool):
        return values ** float(how)
    if how == "log":
        if np.any(values <= 0):
            raise InvalidInputError(f"check {name!r}: log scale on {axis} needs positive values")
        return np.log(values)
    if how == "linear":
        return values
    raise InvalidInputError(f"check {name!r}: unknown {axis} transform {how!r}; use one of "
                     f"{_TRANSFORMS} or a power (float)")


@dataclass
class SlopeFit:
    """Least-squares line ``Y = intercept + slope * X`` over a window, with its R^2 and the
    slope's standard error."""

    slope: float
    intercept: float
    r2: float
    n_points: int
    window: tuple[float, float]
    x_transform: str | float
    y_transform: str | float
    stderr: float = float("nan")

    def interval(self, confidence: float) -> tuple[float, float]:
        """Two-sided ``confidence`` interval of the slope (Student t, ``n_points - 2`` degrees
        of freedom; the points' scatter about the line taken as independent noise)."""
        if not 0 < confidence < 1:
            raise InvalidInputError(f"confidence must be in (0, 1), got {confidence!r}")
        half = stats.t.ppf(0.5 + confidence / 2, self.n_points - 2) * self.stderr
        return self.slope - half, self.slope + half


def fit_slope(
    x: Sequence[float],
    y: Sequence[float],
    *,
    window: tuple[float, float],
    x_transform: str | float = "log",
    y_transform: str | float = "log",
    name: str = "slope",
) -> SlopeFit:
    """Fit ``T_y(y) = a + b T_x(x)`` by least squares over ``window[0] <= x <= window[1]``."""
    xa = _as_float_array(name, x)
    ya = _as_float_array(name, y)
    if xa.shape != ya.shape or xa.ndim != 1:
        raise InvalidInputError(f"check {name!r}: x and y must be 1-d of equal length, got "
                         f"{xa.shape} and {ya.shape}")
    sel = (xa >= window[0]) & (xa <= window[1])
    if sel.sum() < 3:
        raise InvalidInputError(f"check {name!r}: window {window} holds {int(sel.sum())} points; "
                         "a slope fit needs at least 3")
    X = _transform(name, "x", xa[sel], x_transform)
    Y = _transform(name, "y", ya[sel], y_transform)
    res = stats.linregress(X, Y)
    return SlopeFit(float(res.slope), float(res.intercept), float(res.rvalue**2),
                    int(sel.sum()), (float(window[0]), float(window[1])), x_transform, y_transform,
                    float(res.stderr))


def slope(
    name: str,
    x: Sequence[float],
    y: Sequence[float],
    *,
    window: tuple[float, float],
    x_transform: str | float = "log",
    y_transform: str | float = "log",
    expected: float | None = None,
    rtol: float | None = None,
    at_most: float | None = None,
    at_least: float | None = None,
    min_r2: float | None = None,
    floor: float | None = None,
    dtype: Any = "float64",
) -> Decision:
    """The fitted slope over ``window`` matches a *shape* statement.

    Give ``expected`` with ``rtol`` (``|b/expected - 1| <= rtol``) and/or a range
    ``at_least <= b <= at_most``; ``min_r2`` additionally requires a good linear fit.
    Constants a paper leaves unspecified should be tested this way (slopes, not values).
    The window must end before the series' round-off floor: ``floor`` (the claim states
    it) or by default ``eps * max|y|`` of ``dtype``; window points with ``|y| <= floor``
    draw a warning that names the first such ``x``.
    """
    refused = _refuse_non_finite(name, "slope", dict(
        x=x, y=y, window=window, expected=expected, rtol=rtol, at_most=at_most,
        at_least=at_least, min_r2=min_r2, floor=floor), "y", "expected")
    if refused is not None:
        return refused
    if expected is None and at_most is None and at_least is None:
        raise InvalidInputError(f"check {name!r}: give expected (with rtol) or a range for the slope")
    if (expected is None) != (rtol is None):
        raise InvalidInputError(f"check {name!r}: expected and rtol go together")
    fit = fit_slope(x, y, window=window, x_transform=x_transform, y_transform=y_transform, name=name)
    ok = math.isfinite(fit.slope)
    if expected is not None:
        ok &= abs(fit.slope / expected - 1.0) <= rtol
    if at_most is not None:
        ok &= fit.slope <= at_most
    if at_least is not None:
        ok &= fit.slope >= at_least
    if min_r2 is not None:
        ok &= fit.r2 >= min_r2
    tolerance = {k: v for k, v in dict(rtol=rtol, at_most=at_most, at_least=at_least,
                                       min_r2=min_r2).items() if v is not None}
    floor_value, warnings = _window_floor(name, x, y, window, floor, dtype)
    return Decision(name, "slope", bool(ok), measured=fit.slope, reference=expected,
                    tolerance=tolerance, detail=dict(asdict(fit), floor=floor_value),
                    warnings=warnings)


def _window_floor(name: str, x: Any, y: Any, window: tuple[float, float], floor: float | None,
                  dtype: Any) -> tuple[float, list[str]]:
    """The round-off floor of ``y`` and a warning when the fit window reaches it."""
    xa, ya = _as_float_array(name, x), np.abs(_as_float_array(name, y))
    if floor is None:
        floor = _eps(dtype) * float(ya.max(initial=0.0))
    elif not floor >= 0:
        raise InvalidInputError(f"check {name!r}: floor must be >= 0, got {floor!r}")
    inside = (xa >= window[0]) & (xa <= window[1])
    low = inside & (ya <= floor)
    if not low.any():
        return float(floor), []
    first = float(xa[low][0])
    return float(floor), [f"the fit window {tuple(window)} reaches the round-off floor "
                          f"|y| <= {floor:.3g} at {int(low.sum())} of {int(inside.sum())} points, "
                          f"first at x = {first:.6g}: end the window before it"]


POWER = 0.8
#: the alternative every test's power is reported at: a success rate this far below the
#: claimed one (binomial), or a mean this many standard deviations below the bound (Wald), or
#: Cohen's effect size w (chi-square); fixed by the framework, not chosen per claim
ALTERNATIVE_GAP = 0.15
WALD_EFFECT = 0.5
CHI_SQUARE_EFFECT = 0.3
#: decisions that are statistical tests: their failures at a true statement happen at the
#: rate ``detail["reject_prob_at_null"]`` (a seed sweep predicts pass rates from it)
STATISTICAL = ("binomial", "wald", "chi_square")


def _power_record(power: float, low_power: str | None) -> tuple[dict, list]:
    """The detail fields of a test's power at the framework's alternative, and the warning of
    an underpowered test that gives no reason (``low_power``)."""
    detail = {"power": power, "low_power_reason": low_power}
    if power >= POWER or low_power:
        return detail, []
    return detail, [f"power {power:.2f} < {POWER} at the framework's alternative: raise the number "
                    "of instances or state why not (low_power=...)"]
"""The power the binomial check reports: the success rate at which it rejects this often."""


def critical_count(n: int, p: float, alpha: float) -> int:
    """The largest success count the exact one-sided test of ``H0: P >= p`` rejects at level
    ``alpha`` with ``n`` trials (``c = max{k : P[Bin(n, p) <= k] < alpha}``); -1 if none."""
    k = np.arange(n + 1)
    rejected = k[stats.binom.cdf(k, n, p) < alpha]
    return int(rejected.max()) if rejected.size else -1


def binomial_size(n: int, p: float, alpha: float) -> float:
    """The probability that the test rejects when ``P[success] = p`` exactly (its size, at
    most ``alpha``): the rate at which a true statement at the boundary fails the check."""
    c = critical_count(n, p, alpha)
    return float(stats.binom.cdf(c, n, p)) if c >= 0 else 0.0


def binomial_power_point(n: int, p: float, alpha: float, power: float = POWER) -> float | None:
    """The true success rate ``p1 < p`` at which the exact one-sided test of ``H0: P >= p``
    with ``n`` trials at level ``alpha`` rejects with probability ``power``.

    The test rejects when ``k <= c``, ``c = max{k : P[Bin(n, p) <= k] < alpha}``; its power at
    ``p1`` is ``P[Bin(n, p1) <= c]``, decreasing in ``p1``, so ``p1`` is the root of
    ``binom.cdf(c, n, p1) = power`` (found by bisection).  ``None`` when no outcome is
    rejected (``c < 0``): then the test cannot fail at any success rate.
    """
    c = critical_count(n, p, alpha)
    if c < 0:
        return None
    return float(optimize.brentq(lambda p1: stats.binom.cdf(c, n, p1) - power, 0.0, p,
                                 xtol=1e-12))


def binomial_power(n: int, p: float, alpha: float, gap: float = ALTERNATIVE_GAP) -> float:
    """P[the exact test of ``H0: P >= p`` with ``n`` trials rejects] when the true rate is
    ``p - gap`` (0 when it cannot reject)."""
    c = critical_count(n, p, alpha)
    return float(stats.binom.cdf(c, n, max(p - gap, 0.0))) if c >= 0 else 0.0


def binomial(name: str, successes: Any, *, p: float, alpha: float = 0.05,
             low_power: str | None = None) -> Decision:
    """``K`` trials of an event claimed to have probability ``>= p``.

    ``successes`` is a boolean array (one entry per independent trial).  The claim is
    rejected when the exact one-sided binomial test of ``H0: P[success] >= p`` against
    ``P[success] < p`` has p-value below ``alpha``.  The decision's detail carries the
    test's power: ``power_80_at`` is the success rate at which it rejects with probability
    0.8 (:func:`binomial_power_point`); ``None`` means that ``K`` is too small for the test
    to reject at all, so the check cannot fail.  ``reject_prob_at_null`` is the test's size at
    the boundary (:func:`binomial_size`): a seed sweep predicts the claim's pass rate from it.
    ``power`` is the probability of rejecting at the framework's alternative ``p - 0.15``
    (:func:`binomial_power`); below 0.8 the decision carries a warning unless ``low_power``
    says why the instances cannot be more (the report prints it).  A NaN or an infinity among
    ``successes`` is no outcome: the decision fails naming it.
    """
    refused = _refuse_non_finite(name, "binomial", dict(successes=successes, p=p, alpha=alpha),
                                 "successes", "p")
    if refused is not None:
        return refused
    if not (0.0 < p <= 1.0 and 0.0 < alpha < 1.0):
        raise InvalidInputError(f"check {name!r}: need 0 < p <= 1 and 0 < alpha < 1")
    s = np.asarray(jsonable(successes), dtype=bool).ravel()
    if s.size == 0:
        raise InvalidInputError(f"check {name!r}: no trials")
    k, n = int(s.sum()), int(s.size)
    pvalue = float(stats.binomtest(k, n, p, alternative="less").pvalue)
    power, warnings = _power_record(binomial_power(n, p, alpha), low_power)
    return Decision(name, "binomial", pvalue >= alpha, measured=k / n, reference=p,
                    tolerance={"alpha": alpha},
                    detail={"successes": k, "trials": n, "p_value": pvalue,
                            "power_80_at": binomial_power_point(n, p, alpha),
                            "reject_prob_at_null": binomial_size(n, p, alpha),
                            "alternative": max(p - ALTERNATIVE_GAP, 0.0), **power},
                    warnings=warnings)


def wald(name: str, samples: Any, *, at_least: float | None = None, at_most: float | None = None,
         alpha: float = 0.05, low_power: str | None = None) -> Decision:
    """The mean of i.i.d. ``samples`` is claimed ``>= at_least`` (or ``<= at_most``): a one-sided
    Wald test, z = (mean - bound) / (sd / sqrt(n)), rejects at level ``alpha`` when z is beyond
    the normal quantile (n >= 30 for the normal approximation; sd > 0).  Records z, the
    p-value, the false-rejection rate ``alpha`` at the bound (``reject_prob_at_null``) and the
    power at the framework's alternative, a mean ``0.5 sd`` past the bound."""
    refused = _refuse_non_finite(name, "wald", dict(samples=samples, at_least=at_least,
                                                    at_most=at_most, alpha=alpha), "samples")
    if refused is not None:
        return refused
    if (at_least is None) == (at_most is None):
        raise InvalidInputError(f"check {name!r}: give exactly one of at_least / at_most")
    if not 0.0 < alpha < 1.0:
        raise InvalidInputError(f"check {name!r}: need 0 < alpha < 1")
    x = _as_float_array(name, samples).ravel()
    if x.size < 30:
        raise InvalidInputError(f"check {name!r}: a Wald test needs n >= 30 samples, got {x.size}")
    bound = at_least if at_least is not None else at_most
    sign = 1.0 if at_least is not None else -1.0
    mean, sd = float(np.mean(x)), float(np.std(x, ddof=1))
    if not sd > 0:
        raise InvalidInputError(f"check {name!r}: the samples have no spread (sd = {sd})")
    z = sign * (mean - bound) / (sd / math.sqrt(x.size))
    pvalue = float(stats.norm.cdf(z))
    critical = float(stats.norm.ppf(alpha))
    power, warnings = _power_record(float(stats.norm.cdf(critical + WALD_EFFECT * math.sqrt(x.size))),
                                    low_power)
    return Decision(name, "wald", bool(pvalue >= alpha), measured=mean,
                    reference=bound, tolerance={"alpha": alpha},
                    detail={"direction": "at_least" if sign > 0 else "at_most", "z": z,
                            "p_value": pvalue, "sd": sd, "samples": int(x.size),
                            "reject_prob_at_null": alpha, "alternative_effect_sd": WALD_EFFECT,
                            **power},
                    warnings=warnings)


def chi_square(name: str, counts: Any, probabilities: Any, *, alpha: float = 0.05,
               low_power: str | None = None) -> Decision:
    """Observed category ``counts`` are claimed to follow ``probabilities``: Pearson's
    chi-square goodness-of-fit test (`scipy.stats.chisquare`) rejects at level ``alpha``
    (expected counts >= 5 for the approximation).  Records the statistic, the p-value, the
    false-rejection rate ``alpha`` and the power at Cohen's effect size w = 0.3 (a non-central
    chi-square with non-centrality n w^2)."""
    refused = _refuse_non_finite(name, "chi_square", dict(counts=counts, probabilities=probabilities,
                                                          alpha=alpha), "counts", "probabilities")
    if refused is not None:
        return refused
    observed = _as_float_array(name, counts).ravel()
    probs = _as_float_array(name, probabilities).ravel()
    if observed.shape != probs.shape or observed.size < 2:
        raise InvalidInputError(f"check {name!r}: counts and probabilities need the same length >= 2")
    if np.any(probs <= 0) or abs(probs.sum() - 1.0) > 1e-9:
        raise InvalidInputError(f"check {name!r}: probabilities must be positive and sum to 1")
    n = float(observed.sum())
    expected = n * probs
    if np.any(expected < 5):
        raise InvalidInputError(f"check {name!r}: expected counts below 5 ({expected.min():.3g}): "
                                "the chi-square approximation does not hold")
    statistic, pvalue = stats.chisquare(observed, expected)
    dof = observed.size - 1
    critical = float(stats.chi2.ppf(1 - alpha, dof))
    power, warnings = _power_record(float(stats.ncx2.sf(critical, dof, n * CHI_SQUARE_EFFECT ** 2)),
                                    low_power)
    return Decision(name, "chi_square", bool(pvalue >= alpha), measured=float(statistic),
                    reference=critical, tolerance={"alpha": alpha},
                    detail={"p_value": float(pvalue), "dof": dof, "n": int(n),
                            "reject_prob_at_null": alpha, "alternative_effect_w": CHI_SQUARE_EFFECT,
                            **power},
                    warnings=warnings)


def monotone(name: str, series: Any, *, increasing: bool, tol: float = 0.0, axis: int = 0) -> Decision:
    """Consecutive differences along ``axis`` are ``>= -tol`` (increasing) or ``<= tol``
    (decreasing).  Records the worst step and where it happened."""
    refused = _refuse_non_finite(name, "monotone", dict(series=series, tol=tol), "series")
    if refused is not None:
        return refused
    arr = _as_float_array(name, series)
    if arr.shape[axis] < 2:
        raise InvalidInputError(f"check {name!r}: a monotone check needs at least two points")
    steps = np.diff(arr, axis=axis)
    signed = steps if increasing else -steps
    worst = float(np.min(signed))
    passed = bool(worst >= -tol)
    where = np.unravel_index(int(np.argmin(signed)), signed.shape)
    return Decision(name, "monotone", passed, measured=worst, reference=-tol,
                    tolerance={"tol": tol, "direction": "increasing" if increasing else "decreasing"},
                    detail={"worst_step_index": [int(i) for i in where],
                            "n_violations": int(np.sum(signed < -tol)),
                            "max_abs_step": float(np.max(np.abs(steps)))})


#: the checks a claim records through ``tc.precondition.<name>`` / ``tc.conclusion.<name>``
CHECKS = {fn.__name__: fn for fn in (close, at_most, at_least, holds, slope, binomial, wald,
                                     chi_square, monotone)}
