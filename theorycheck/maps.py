"""Boundary maps: where a theorem's conclusion starts to hold as a hypothesis is relaxed.

A theorem says "if H then C".  A *map* measures C over a grid of a hypothesis parameter
``x`` that runs from outside the stated region (where H fails) into it, and estimates where
C starts to hold:

* a **rate map** (:func:`rate_map`): per grid value ``x_g``, ``K_g`` instances and the
  per-instance conclusion (booleans; a NaN or infinite outcome counts as a failure, is
  recorded as ``non_finite`` and fails a decision on it); the success rate with its exact Clopper-Pearson
  interval, and the *transition* -- where the rate crosses a stated ``level`` -- by a
  logistic fit ``logit P[C | x] = a + b x`` (maximum likelihood, ``scipy.optimize``) with a
  profile-likelihood interval; against a covariate measured per instance rather than set
  (:func:`covariate_rate_map`), the instances grouped by equal-count quantiles of it;
* an **estimate map** (:func:`estimate_map`): per grid value an estimate with its interval
  (:func:`mean_interval`, :func:`mean_difference_interval`, :func:`slope_interval`), and
  where the estimate crosses a stated ``value`` (linear interpolation between the bracketing
  grid points; its interval where the band's two edges cross the value).

:func:`record_map` stores a map in the claim's measurements under ``"map: <name>"`` (the
structure is :meth:`RateMap.to_record` / :meth:`EstimateMap.to_record`) and draws it; the
report's section "Where the theorems hold" lists every recorded map.  A map whose grid does not
bracket its transition is flagged (``bracketed: false`` and a :class:`MapWarning`), never
extrapolated.  A map decides nothing: inside the theorem's stated region the conclusion is
decided by the usual checks (:func:`decide_inside` pools the instances there into
``tc.conclusion.binomial``); outside it the map is a finding.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy import optimize, stats

from .checks import SlopeFit, as_numbers, jsonable
from .errors import InvalidInputError
from .results_layout import MAP_PREFIX

__all__ = [
    "MapWarning",
    "Transition",
    "RateMap",
    "EstimateMap",
    "clopper_pearson",
    "logistic_transition",
    "rate_map",
    "covariate_rate_map",
    "estimate_map",
    "mean_interval",
    "interval_power",
    "mean_difference_interval",
    "slope_interval",
    "record_map",
    "decide_inside",
    "map_summary",
    "MAP_PREFIX",
]



class MapWarning(UserWarning):
    """A map's grid does not bracket its transition (the map says so; nothing is extrapolated)."""


@dataclass
class Transition:
    """Where a map's curve crosses its stated level: ``estimate`` with the interval
    ``(lower, upper)`` at ``confidence``.

    ``bracketed`` is whether the grid brackets the crossing (the curve is on either side of the
    level at the grid's two ends and the estimate lies inside the grid); when it does not,
    ``estimate`` is ``None`` (never extrapolated).  An interval end of ``None`` lies beyond the
    grid on that side.  ``method`` says how the interval was computed.
    """

    level: float
    estimate: float | None
    lower: float | None
    upper: float | None
    confidence: float
    bracketed: bool
    method: str
    detail: dict = field(default_factory=dict)


def _confidence(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise InvalidInputError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(confidence)


def _grid(name: str, grid: Any) -> np.ndarray:
    x = np.asarray(jsonable(grid), dtype=float).ravel()
    if x.size == 0:
        raise InvalidInputError(f"map {name!r}: empty grid (give at least two grid values)")
    if x.size < 2:
        raise InvalidInputError(f"map {name!r}: a grid of {x.size} value cannot locate a transition; "
                                "give at least two grid values")
    if not np.all(np.isfinite(x)):
        raise InvalidInputError(f"map {name!r}: the grid has non-finite values {x.tolist()}")
    if not np.all(np.diff(x) > 0):
        raise InvalidInputError(f"map {name!r}: the grid must be strictly increasing, got {x.tolist()}")
    return x


def _outcomes(name: str, outcomes: Any) -> np.ndarray:
    """Per-instance conclusions as a flat float array (true: nonzero), NaN kept."""
    values = as_numbers(outcomes)
    if values is None:
        raise InvalidInputError(f"map {name!r}: outcomes must be booleans or numbers")
    return values.ravel()


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact two-sided interval of a binomial proportion: ``{p : k is not in either tail at
    (1 - confidence)/2}`` (Clopper-Pearson, ``scipy.stats.binomtest(k, n).proportion_ci``).

    Parameters
    ----------
    successes, trials : int
        ``0 <= successes <= trials``, ``trials >= 1``.
    confidence : float
        The interval's coverage, in (0, 1).

    Returns
    -------
    (lower, upper) : tuple of float
    """
    confidence = _confidence(confidence)
    k, n = int(successes), int(trials)
    if n < 1 or not 0 <= k <= n:
        raise InvalidInputError(f"clopper_pearson: need 0 <= successes <= trials and trials >= 1, "
                                f"got {k} of {n}")
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _neg_loglik(z: np.ndarray, k: np.ndarray, n: np.ndarray, eta: np.ndarray) -> float:
    # -sum k log sigma(eta) + (n - k) log(1 - sigma(eta)), stable in eta
    return float(np.sum(k * np.logaddexp(0.0, -eta) + (n - k) * np.logaddexp(0.0, eta)))


_RIDGE = 1e-6
"""A ridge on the standardised slope: keeps the MLE finite when the grid separates the
outcomes perfectly (all failures below a grid point, all successes above); negligible otherwise."""


def logistic_transition(x: Any, successes: Any, trials: Any, *, level: float,
                        confidence: float = 0.95, x_transform: str = "linear",
                        name: str = "map") -> Transition:
    """``x* = (logit(level) - a) / b`` for the maximum-likelihood fit of ``logit P = a + b x``
    to binomial counts, with a profile-likelihood interval.

    The fit maximizes ``sum_g k_g log sigma(a + b x_g) + (n_g - k_g) log(1 - sigma(a + b x_g))``
    (``scipy.optimize.minimize``, x standardised -- or ``log x`` with ``x_transform="log"``,
    for a scale parameter --, a ridge of 1e-6 on the standardised slope so
    that a perfectly separating grid gives a steep but finite fit).  The interval is the set of
    ``x0`` whose profile log-likelihood (the model ``logit P = logit(level) + b (x - x0)``
    maximized over ``b``) is within ``chi2_1(confidence) / 2`` of the maximum (Wilks), searched
    inside the grid: an end that does not close inside the grid is ``None``.

    Parameters
    ----------
    x : array of float
        Increasing grid values.
    successes, trials : array of int
        Per grid value, the successes among the instances.
    level : float
        The stated success rate, in (0, 1).
    confidence : float
        Coverage of the interval.
    x_transform : {"linear", "log"}
        Fit against ``x`` or ``log x`` (the transition and its interval are reported in ``x``).
    name : str
        Named in errors.

    Returns
    -------
    Transition
        ``bracketed`` when the empirical rates at the grid's two ends lie on either side of
        ``level`` and the estimate lies inside the grid; otherwise ``estimate`` is ``None`` and
        the fit's value is kept in ``detail["fit_crossing"]``.
    """
    confidence = _confidence(confidence)
    grid, k, n = _binomial_counts(name, x, successes, trials, level, x_transform)
    scale = _FitScale.of(grid, x_transform)
    z = scale.z(grid)
    logit_level = _logit(level)
    intercept, slope, neg_loglik = _logistic_mle(z, k, n)
    crossing_z = (logit_level - intercept) / slope if slope != 0 else math.inf
    rate = k / n
    ends_apart = (rate[0] - level) * (rate[-1] - level) < 0
    inside = bool(np.isfinite(crossing_z) and z[0] <= crossing_z <= z[-1])
    bracketed = bool(ends_apart and inside)
    variable = "log x" if x_transform == "log" else "x"
    detail = {"intercept": intercept + 0.0, "slope": slope, "x_center": scale.center,
              "x_scale": scale.scale, "x_transform": x_transform,
              "fit_crossing": scale.x(crossing_z) if math.isfinite(crossing_z) else None,
              "neg_loglik": neg_loglik, "interval_method": "profile likelihood (Wilks, chi2_1)",
              "logit": f"logit P = intercept + slope ({variable} - x_center) / x_scale"}
    if not bracketed:
        return Transition(level, None, None, None, confidence, False,
                          "logistic MLE, profile-likelihood interval", detail)  # not bracketed
    lower, upper = (None if end is None else scale.x(end) for end in
                    _profile_interval(z, k, n, logit_level, crossing_z, neg_loglik, confidence))
    method = "logistic MLE" + (" in log x" if x_transform == "log" else "") + ", profile-likelihood interval"
    return Transition(level, scale.x(crossing_z), lower, upper, confidence, True, method, detail)


def _binomial_counts(name: str, x: Any, successes: Any, trials: Any, level: float,
                     x_transform: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid, successes and trials of :func:`logistic_transition` as float arrays, checked
    (one length, ``0 <= successes <= trials``, ``trials >= 1``, a level in (0, 1), a known
    transform and a positive grid for ``log``)."""
    if not 0.0 < level < 1.0:
        raise InvalidInputError(f"map {name!r}: the level must be in (0, 1), got {level!r}")
    grid = _grid(name, x)
    k = np.asarray(successes, dtype=float).ravel()
    n = np.asarray(trials, dtype=float).ravel()
    if not grid.shape == k.shape == n.shape:
        raise InvalidInputError(f"map {name!r}: grid, successes and trials must have one length, "
                                f"got {grid.size}, {k.size}, {n.size}")
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise InvalidInputError(f"map {name!r}: need 0 <= successes <= trials, trials >= 1")
    if x_transform not in ("linear", "log"):
        raise InvalidInputError(f"map {name!r}: x_transform must be 'linear' or 'log', got {x_transform!r}")
    if x_transform == "log" and np.any(grid <= 0):
        raise InvalidInputError(f"map {name!r}: x_transform='log' needs a positive grid, got {grid.tolist()}")
    return grid, k, n


@dataclass(frozen=True)
class _FitScale:
    """The coordinate a logistic fit runs in: ``z = (u - center) / scale`` with ``u = x`` or
    ``u = log x``, standardised over the grid (a constant grid keeps scale 1)."""

    transform: str
    center: float
    scale: float

    @classmethod
    def of(cls, grid: np.ndarray, transform: str) -> "_FitScale":
        u = cls._u(grid, transform)
        return cls(transform, float(u.mean()), float(u.std()) or 1.0)

    @staticmethod
    def _u(grid: np.ndarray, transform: str) -> np.ndarray:
        return np.log(grid) if transform == "log" else grid

    def z(self, grid: np.ndarray) -> np.ndarray:
        return (self._u(grid, self.transform) - self.center) / self.scale

    def x(self, z: float) -> float:
        """The grid value at the standardised coordinate ``z``."""
        u = z * self.scale + self.center
        return float(np.exp(u) if self.transform == "log" else u)


def _logistic_mle(z: np.ndarray, k: np.ndarray, n: np.ndarray) -> tuple[float, float, float]:
    """(intercept, slope, negative log-likelihood) of the ridge-penalised maximum-likelihood fit
    of ``logit P = intercept + slope z`` to the counts (BFGS from the pooled rate, polished by
    Nelder-Mead when BFGS stops on precision loss)."""
    def penalised(theta):
        return _neg_loglik(z, k, n, theta[0] + theta[1] * z) + _RIDGE * theta[1] ** 2

    pooled = np.clip(k.sum() / n.sum(), 0.01, 0.99)
    fit = optimize.minimize(penalised, np.array([_logit(pooled), 0.0]), method="BFGS")
    if not fit.success:  # BFGS can stop on precision loss with a usable optimum; polish
        fit = optimize.minimize(penalised, fit.x, method="Nelder-Mead",
                                options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000})
    intercept, slope = (float(v) for v in fit.x)
    return intercept, slope, float(fit.fun)


def _profile_neg_loglik(z: np.ndarray, k: np.ndarray, n: np.ndarray, logit_level: float,
                        z0: float) -> float:
    """The least negative log-likelihood (ridge-penalised) of the fits that cross the level at
    ``z0``: ``logit P = logit(level) + slope (z - z0)``, minimised over the slope."""
    res = optimize.minimize_scalar(
        lambda slope: _neg_loglik(z, k, n, logit_level + slope * (z - z0)) + _RIDGE * slope**2,
        bounds=(-1e4, 1e4), method="bounded", options={"xatol": 1e-10})
    return float(res.fun)


def _profile_interval(z: np.ndarray, k: np.ndarray, n: np.ndarray, logit_level: float,
                      crossing_z: float, neg_loglik: float, confidence: float) -> list[float | None]:
    """The two ends (in ``z``) of the profile-likelihood interval of the crossing: where the
    profile exceeds the fit's minimum by ``chi2_1(confidence) / 2`` (Wilks), each searched
    between the crossing and its end of the grid; None where the interval reaches past it."""
    cut = stats.chi2.ppf(confidence, 1) / 2.0

    def excess(z0: float) -> float:  # < 0 inside the interval
        return _profile_neg_loglik(z, k, n, logit_level, z0) - neg_loglik - cut

    ends = []
    for edge in (z[0], z[-1]):
        if excess(edge) <= 0:
            ends.append(None)     # the interval reaches past the grid on this side
        else:
            ends.append(float(optimize.brentq(excess, min(edge, crossing_z), max(edge, crossing_z),
                                              xtol=1e-10)))
    return ends


def _interp_crossing(x: np.ndarray, y: np.ndarray, value: float) -> float | None:
    """The first x where the piecewise-linear curve through (x, y) reaches ``value``, taken
    from the end of the grid where it starts (None if it never does)."""
    s = y - value
    if s[0] == 0:
        return float(x[0])
    for i in range(len(x) - 1):
        if s[i + 1] == 0:
            return float(x[i + 1])
        if s[i] * s[i + 1] < 0:
            return float(x[i] + (x[i + 1] - x[i]) * s[i] / (s[i] - s[i + 1]))
    return None


@dataclass
class RateMap:
    """A success rate per grid value with its Clopper-Pearson interval and the logistic
    transition.  ``parameter`` names the hypothesis parameter ``x``."""

    parameter: str
    grid: list
    successes: list
    trials: list
    rate: list
    lower: list
    upper: list
    confidence: float
    transition: Transition
    #: per grid value, the outcomes that were NaN or infinite (counted as failures)
    non_finite: list | None = None

    kind = "rate"

    def to_record(self) -> dict:
        """The documented record: ``{"map": "rate", "parameter", "grid", "estimate" (the
        rates), "lower", "upper" (Clopper-Pearson), "successes", "trials", "non_finite",
        "confidence", "level", "transition": {"estimate", "lower", "upper", "confidence",
        "bracketed", "method", "detail"}}`` (:func:`record_map` adds ``name``, ``region``,
        ``summary``)."""
        return jsonable({"map": "rate", "parameter": self.parameter, "grid": self.grid,
                         "estimate": self.rate, "lower": self.lower, "upper": self.upper,
                         "successes": self.successes, "trials": self.trials,
                         "non_finite": self.non_finite or [0] * len(self.grid),
                         "confidence": self.confidence, "level": self.transition.level,
                         "transition": asdict(self.transition)})


@dataclass
class EstimateMap:
    """An estimate per grid value with its interval, and where it crosses ``transition.level``
    (the stated value)."""

    parameter: str
    grid: list
    estimate: list
    lower: list
    upper: list
    confidence: float
    transition: Transition
    samples: list | None = None
    interval_method: str = ""

    kind = "estimate"

    def to_record(self) -> dict:
        """The documented record: ``{"map": "estimate", "parameter", "grid", "estimate",
        "lower", "upper", "samples" (per grid value, or null), "confidence", "level" (the
        stated value), "interval_method", "transition": {...}}``."""
        return jsonable({"map": "estimate", "parameter": self.parameter, "grid": self.grid,
                         "estimate": self.estimate, "lower": self.lower, "upper": self.upper,
                         "samples": self.samples, "confidence": self.confidence,
                         "level": self.transition.level, "interval_method": self.interval_method,
                         "transition": asdict(self.transition)})


def rate_map(grid: Any, outcomes: Sequence[Any], *, level: float, confidence: float = 0.95,
             parameter: str = "x", x_transform: str = "linear", name: str = "map") -> RateMap:
    """Per grid value ``x_g`` the rate ``k_g / K_g`` of ``K_g`` per-instance conclusions, its
    Clopper-Pearson interval, and the transition where ``P[C | x] = level``
    (:func:`logistic_transition`).

    Parameters
    ----------
    grid : array of float
        Increasing values of the hypothesis parameter.
    outcomes : sequence of boolean arrays
        One array per grid value: the conclusion on each instance (``K_g >= 1`` instances).
    level : float
        The stated success rate, in (0, 1).
    confidence : float
        Coverage of the per-point intervals and of the transition's.
    parameter : str
        The parameter's name (the plot's x label and the summary's).
    x_transform : {"linear", "log"}
        The logistic fit's variable: ``x`` or ``log x`` (a scale parameter).
    name : str
        Named in errors.

    Returns
    -------
    RateMap
    """
    x = _grid(name, grid)
    if not 0.0 < level < 1.0:
        raise InvalidInputError(f"map {name!r}: the level must be in (0, 1), got {level!r}")
    if len(outcomes) != x.size:
        raise InvalidInputError(f"map {name!r}: {x.size} grid values but {len(outcomes)} outcome arrays")
    arrays = [_outcomes(name, o) for o in outcomes]
    empty = [float(v) for v, o in zip(x, arrays) if o.size == 0]
    if empty:
        raise InvalidInputError(f"map {name!r}: no instances at grid values {empty}")
    non_finite = [int(np.sum(~np.isfinite(o))) for o in arrays]
    k = [int(np.sum(np.isfinite(o) & (o != 0))) for o in arrays]
    n = [int(o.size) for o in arrays]
    bands = [clopper_pearson(ki, ni, confidence) for ki, ni in zip(k, n)]
    transition = logistic_transition(x, k, n, level=level, confidence=confidence,
                                     x_transform=x_transform, name=name)
    if any(non_finite):
        warnings.warn(f"map {name!r}: {sum(non_finite)} non-finite outcomes (per grid value "
                      f"{non_finite}) count as failures; a decision on them fails", MapWarning,
                      stacklevel=2)
    return RateMap(parameter, x.tolist(), k, n, [ki / ni for ki, ni in zip(k, n)],
                   [b[0] for b in bands], [b[1] for b in bands], float(confidence), transition,
                   non_finite)


def covariate_rate_map(values: Any, outcomes: Any, *, bins: int, level: float,
                       confidence: float = 0.95, parameter: str = "x",
                       x_transform: str = "linear", name: str = "map") -> RateMap:
    """A :func:`rate_map` against a covariate *recorded* per instance (not set by the grid):
    the instances sorted by their value, cut into ``bins`` groups of (nearly) equal count
    (``numpy.array_split``), each group at the median of its values.  The groups are formed
    from the covariate alone, never from the outcomes.

    Parameters
    ----------
    values : array of float
        The covariate of each instance (e.g. a measured orthogonality ratio).
    outcomes : array of bool
        The conclusion on each instance, in the same order.
    bins : int
        The number of groups, at least 2 and at most the number of distinct values.
    level, confidence, parameter, x_transform, name
        As in :func:`rate_map`.
    """
    v = np.asarray(jsonable(values), dtype=float).ravel()
    o = _outcomes(name, outcomes)
    if v.shape != o.shape:
        raise InvalidInputError(f"map {name!r}: {v.size} covariate values but {o.size} outcomes")
    if not np.all(np.isfinite(v)):
        raise InvalidInputError(f"map {name!r}: the covariate has non-finite values")
    if not 2 <= int(bins) <= np.unique(v).size:
        raise InvalidInputError(f"map {name!r}: bins must be between 2 and the number of distinct "
                                f"covariate values ({np.unique(v).size}), got {bins!r}")
    order = np.argsort(v, kind="stable")
    groups = np.array_split(order, int(bins))
    centres = [float(np.median(v[g])) for g in groups]
    if not np.all(np.diff(centres) > 0):
        raise InvalidInputError(f"map {name!r}: ties in the covariate give groups with equal "
                                f"medians {centres}; use fewer bins")
    return rate_map(centres, [o[g] for g in groups], level=level, confidence=confidence,
                    parameter=parameter, x_transform=x_transform, name=name)


def mean_interval(samples: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """``mean +- t_{m-1, (1+confidence)/2} sd / sqrt(m)`` of ``m >= 2`` i.i.d. samples (Student t;
    for paired data pass the differences).  Returns ``(mean, lower, upper)``."""
    confidence = _confidence(confidence)
    s = np.asarray(jsonable(samples), dtype=float).ravel()
    if s.size < 2:
        raise InvalidInputError(f"mean_interval: need at least 2 samples, got {s.size}")
    mean, se = float(s.mean()), float(s.std(ddof=1) / math.sqrt(s.size))
    half = float(stats.t.ppf(0.5 + confidence / 2, s.size - 1)) * se
    return mean, mean - half, mean + half


def interval_power(mean: float, sd: float, samples: int, *, lower: float | None = None,
                   upper: float | None = None, confidence: float = 0.95) -> float:
    """P[the two-sided ``confidence`` Student-t interval of the mean of ``samples`` draws with
    standard deviation ``sd`` lies above ``lower`` and below ``upper``] when the true mean is
    ``mean`` (the non-central t distribution, ``scipy.stats.nct``): the power of an interval
    decision like ``tc.conclusion.at_least(name, interval_lower, lower)``.  With both ends the
    union bound ``P_lower + P_upper - 1`` (a lower bound on the power, exact to the overlap).
    ``sd = 0`` gives 1."""
    confidence = _confidence(confidence)
    if lower is None and upper is None:
        raise InvalidInputError("interval_power: give lower, upper or both")
    if int(samples) < 2 or not sd >= 0:
        raise InvalidInputError(f"interval_power: need samples >= 2 and sd >= 0, got {samples}, {sd}")
    if sd == 0:
        return 1.0
    df, se = int(samples) - 1, sd / math.sqrt(samples)
    critical = stats.t.ppf(0.5 + confidence / 2, df)
    above = 1.0 if lower is None else float(stats.nct.sf(critical, df, (mean - lower) / se))
    below = 1.0 if upper is None else float(stats.nct.cdf(-critical, df, (mean - upper) / se))
    return max(above + below - 1.0, 0.0)


def mean_difference_interval(a: Any, b: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """``mean(a) - mean(b)`` with Welch's interval (independent samples, unequal variances:
    ``t`` with Welch-Satterthwaite degrees of freedom).  Returns ``(difference, lower, upper)``."""
    confidence = _confidence(confidence)
    x = np.asarray(jsonable(a), dtype=float).ravel()
    y = np.asarray(jsonable(b), dtype=float).ravel()
    if x.size < 2 or y.size < 2:
        raise InvalidInputError(f"mean_difference_interval: need at least 2 samples per arm, "
                                f"got {x.size} and {y.size}")
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    diff, se = float(x.mean() - y.mean()), math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1)) if se > 0 else x.size + y.size - 2
    half = float(stats.t.ppf(0.5 + confidence / 2, dof)) * se
    return diff, diff - half, diff + half


def slope_interval(fit: SlopeFit, confidence: float = 0.95) -> tuple[float, float, float]:
    """A fitted slope (`theorycheck.checks.fit_slope`) with its Student-t interval
    (``n_points - 2`` degrees of freedom).  Returns ``(slope, lower, upper)``."""
    lo, hi = fit.interval(_confidence(confidence))
    return fit.slope, float(lo), float(hi)


def estimate_map(grid: Any, estimate: Any, lower: Any, upper: Any, *, value: float,
                 confidence: float = 0.95, parameter: str = "x", samples: Any = None,
                 interval_method: str = "", name: str = "map") -> EstimateMap:
    """Per grid value an estimate in ``[lower, upper]``, and ``x*`` where it crosses ``value``.

    ``x*`` interpolates linearly between the two grid points that bracket the first sign change
    of ``estimate - value``; its interval is spanned by the crossings of the band's two edges
    (``lower`` and ``upper``, same interpolation), an end that does not cross inside the grid
    being ``None`` (beyond the grid on that side).  The grid brackets the transition when the
    estimate is on either side of ``value`` at the grid's two ends.

    Parameters
    ----------
    grid : array of float
        Increasing values of the hypothesis parameter.
    estimate, lower, upper : array of float
        Per grid value the estimate and its interval (``lower <= estimate <= upper``).
    value : float
        The value the theorem states (where the conclusion starts or stops holding).
    confidence : float
        The per-point intervals' coverage (stated, not used to compute them).
    samples : array of int, optional
        Per grid value the number of samples behind the estimate.
    interval_method : str
        How the per-point intervals were computed (e.g. ``"paired Student t"``).

    Returns
    -------
    EstimateMap
    """
    confidence = _confidence(confidence)
    x = _grid(name, grid)
    est, lo, hi = (np.asarray(jsonable(v), dtype=float).ravel() for v in (estimate, lower, upper))
    if not x.shape == est.shape == lo.shape == hi.shape:
        raise InvalidInputError(f"map {name!r}: grid, estimate, lower and upper must have one length, "
                                f"got {x.size}, {est.size}, {lo.size}, {hi.size}")
    if not (np.all(np.isfinite(est)) and np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise InvalidInputError(f"map {name!r}: non-finite estimates or interval ends")
    if np.any(lo > est) or np.any(hi < est):
        raise InvalidInputError(f"map {name!r}: need lower <= estimate <= upper at every grid value")
    if not math.isfinite(value):
        raise InvalidInputError(f"map {name!r}: the stated value must be finite, got {value!r}")
    bracketed = bool((est[0] - value) * (est[-1] - value) < 0)
    method = "linear interpolation of the estimate and of the band's edges"
    if not bracketed:
        t = Transition(float(value), None, None, None, confidence, False, method)
    else:
        star = _interp_crossing(x, est, value)
        sign = 1.0 if est[-1] > est[0] else -1.0   # rising or falling through the value
        # rising: the upper edge reaches the value first, the lower edge last; falling: reversed
        early, late = (hi, lo) if sign > 0 else (lo, hi)
        first = None if sign * (early[0] - value) >= 0 else _interp_crossing(x, early, value)
        last = (None if sign * (late[-1] - value) < 0 else
                _interp_crossing(x[::-1], late[::-1], value))
        t = Transition(float(value), star, first, last, confidence, True, method)
    counts = None if samples is None else [int(s) for s in np.asarray(samples).ravel()]
    return EstimateMap(parameter, x.tolist(), est.tolist(), lo.tolist(), hi.tolist(), confidence, t,
                       counts, interval_method)


def _fmt(v) -> str:
    return "beyond the grid" if v is None else f"{v:.4g}"


def map_summary(record: dict) -> str:
    """The one-line summary of a map record (:meth:`RateMap.to_record` + ``region``)."""
    grid = record["grid"]
    t = record["transition"]
    if record["map"] == "rate":
        counts = sorted(set(record["trials"]))
        per = f"K = {counts[0]}" if len(counts) == 1 else f"K = {counts[0]}..{counts[-1]}"
        what = f"success rate crosses {record['level']:g}"
        band = f"{record['confidence']:.0%} Clopper-Pearson per point"
    else:
        counts = sorted(set(record.get("samples") or []))
        per = (f"{counts[0]} samples" if len(counts) == 1 else
               f"{counts[0]}..{counts[-1]} samples" if counts else "")
        what = f"estimate crosses {record['level']:g}"
        band = f"{record['confidence']:.0%} {record.get('interval_method') or 'interval'} per point"
    head = (f"{record['parameter']} on {len(grid)} points {_fmt(grid[0])}..{_fmt(grid[-1])}"
            + (f", {per} per point" if per else "") + f" ({band}): ")
    if t["bracketed"]:
        body = (f"{what} at {record['parameter']} = {_fmt(t['estimate'])} "
                f"[{_fmt(t['lower'])}, {_fmt(t['upper'])}] ({t['confidence']:.0%}, {t['method']})")
    else:
        body = f"{what}: NOT BRACKETED by the grid (no transition estimated)"
    region = record.get("region")
    tail = f"; stated region {region['description']}" if region else ""
    non_finite = sum(record.get("non_finite") or [])
    tail += f"; {non_finite} non-finite outcomes counted as failures" if non_finite else ""
    return head + body + tail


def record_map(tc, name: str, m: RateMap | EstimateMap, *, region: dict | None = None,
               xscale: str = "linear", ylabel: str | None = None, finding: str | None = None) -> dict:
    """Store the map in the claim's measurements and draw it; returns the record.

    ``finding``: also record the transition ``[estimate, lower, upper]`` as the measurement
    ``"finding: <finding>"`` (what the closing summaries and the docs quote).

    The record (measurement ``"map: <name>"``) is ``m.to_record()`` plus ``name``, ``region``
    (``{"description": str, "lower": float | None, "upper": float | None}``, the theorem's
    stated region of the parameter, or None), ``bracketed`` and ``summary`` (one line, shown in
    the report's "Where the theorems hold").  The plot ``"map: <name>"`` draws the estimate
    (measured), the band's two edges (bound), the stated level (theory) and the transition with
    its interval (reference, a vertical mark).  A grid that does not bracket the transition
    draws a :class:`MapWarning` (and ``bracketed: false``).
    """
    region = _stated_region(name, region)
    record = m.to_record()
    record.update(name=name, region=region, bracketed=bool(m.transition.bracketed))
    record["summary"] = map_summary(record)
    tc.record(MAP_PREFIX + name, record)
    if not m.transition.bracketed:
        warnings.warn(f"{tc.id}: map {name!r}: the grid {record['grid']} does not bracket the "
                      f"transition at {record['level']:g}; nothing is extrapolated", MapWarning,
                      stacklevel=2)
    t = m.transition
    if finding is not None:
        tc.record(f"finding: {finding}", [t.estimate, t.lower, t.upper])
    _draw_map(tc, MAP_PREFIX + name, m, record, xscale=xscale, ylabel=ylabel)
    return record


def _stated_region(name: str, region: dict | None) -> dict | None:
    """``region`` as a map record keeps it: ``{"description", "lower", "upper"}``, or None."""
    if region is None:
        return None
    if not isinstance(region, dict) or "description" not in region:
        raise InvalidInputError(f"map {name!r}: region must be a dict with a 'description' "
                                "(and optional 'lower', 'upper')")
    return {"description": str(region["description"]), "lower": region.get("lower"),
            "upper": region.get("upper")}


def _draw_map(tc, plot: str, m: RateMap | EstimateMap, record: dict, *, xscale: str,
              ylabel: str | None) -> None:
    """The plot of a map record: the estimate (measured), its band (filled), the stated level
    (theory), the stated region (shaded, when it has an end) and, when bracketed, the
    transition (reference, a vertical mark over the band's range)."""
    x, region = record["grid"], record["region"]
    label = ylabel or ("success rate" if m.kind == "rate" else "estimate")
    tc.curve(plot, label, x, record["estimate"], xscale=xscale, xlabel=m.parameter, ylabel=label,
             title=record["name"])
    tc.band(plot, f"{m.confidence:.0%} interval", x, record["lower"], record["upper"])
    tc.curve(plot, f"stated level {record['level']:g}", [x[0], x[-1]], [record["level"]] * 2,
             style="theory")
    if region is not None and (region["lower"] is not None or region["upper"] is not None):
        tc.shade(plot, f"stated region ({region['description']})", region["lower"], region["upper"])
    t = m.transition
    if t.bracketed:
        tc.curve(plot, f"transition {t.estimate:.4g}", [t.estimate, t.estimate],
                 [min(record["lower"]), max(record["upper"])], style="reference")


def decide_inside(tc, name: str, m: RateMap, *, lower: float | None = None,
                  upper: float | None = None, p: float, alpha: float = 0.05,
                  low_power: str | None = None) -> bool:
    """The conclusion decided inside the stated region ``lower <= x <= upper``: the instances of
    the map's grid values there pooled into one exact binomial test of ``P[C] >= p``
    (``tc.conclusion.binomial``, which records its power).  Returns whether it held; a
    non-finite outcome among them fails it (the binomial check names them)."""
    sel = [i for i, v in enumerate(m.grid)
           if (lower is None or v >= lower) and (upper is None or v <= upper)]
    if not sel:
        raise InvalidInputError(f"map decision {name!r}: no grid value in the stated region "
                                f"[{lower}, {upper}] of {m.grid}")
    non_finite = m.non_finite or [0] * len(m.grid)
    pooled = np.concatenate([np.r_[np.ones(m.successes[i]), np.full(non_finite[i], np.nan),
                                   np.zeros(m.trials[i] - m.successes[i] - non_finite[i])]
                             for i in sel])
    return tc.conclusion.binomial(name, pooled, p=p, alpha=alpha, low_power=low_power)
