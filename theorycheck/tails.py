r"""Proven tail bounds for decisions on random instances: a :class:`TailBound` states, when a
claim is written, the probability that one of its decisions fails on a fresh draw of its instance
when the code and the theorem's hypotheses are right, from the mathematics of the draw (not from
seeds).  The calibration then takes that probability as the decision's false-failure bound
(:func:`theorycheck.calibrate.decision_row`, ``bound_from: "stated bound"``), where a model of
its margins over a few dozen seeds could not reach the budget: a margin to a round-off
tolerance spans decades and is neither normal nor log-normal in the tail that matters.

* :func:`gaussian_condition_tail`: ``P[kappa_2(G) > x]`` for an ``m x n`` matrix of i.i.d.
  standard normal entries (Chen & Dongarra, "Condition numbers of Gaussian random matrices",
  SIAM J. Matrix Anal. Appl. 27(3), 2005; arXiv:0810.0800, its abstract states it): for
  ``m, n >= 2`` and ``y >= |n - m| + 1``,
  ``P[kappa_2(G) / (n / (|n - m| + 1)) > y] < (C / y)^(|n - m| + 1) / sqrt(2 pi)`` with a
  universal ``C <= 6.414``.  The normalization is taken with ``max(m, n)`` (the larger one is
  the weaker statement, so the bound holds whichever of ``m, n`` the theorem's ``n`` is), and
  a full-column-rank test against ``sigma_1 * tol`` fails only when ``kappa_2 > 1 / tol``.
* :func:`sphere_gap_tail`: ``P[|x_a^T v - x_b^T v| <= eps]`` for some of ``pairs`` pairs of
  independent uniform unit vectors ``x_a, x_b`` of ``R^d`` (``d >= 3``) and a unit vector ``v``
  (a tie between two token scores, against round-off): ``x^T v`` has the density
  ``c_d (1 - t^2)^((d-3)/2)``, ``c_d = Gamma(d/2) / (sqrt(pi) Gamma((d-1)/2))``, the difference
  of two independent such variables a density at most ``c_d`` (a convolution is bounded by
  the supremum of either factor), so each pair is within ``eps`` with probability at most
  ``2 eps c_d``; the union bound over the pairs.
* :func:`sphere_cap_tail`: ``P[||x_a - x_b|| <= r]`` for some of ``pairs`` pairs of independent
  uniform unit vectors of ``R^d`` (two inputs that nearly coincide, against a distinctness
  floor): ``||x_a - x_b|| <= r`` is ``x_a^T x_b >= cos(theta)`` with ``cos(theta) = 1 - r^2/2``,
  a spherical cap of probability ``I_{sin^2 theta}((d - 1)/2, 1/2) / 2`` (the regularized
  incomplete beta function; exact for ``theta <= pi/2``); the union bound over the pairs.
* :func:`hadamard_ratio_tail`: ``P[|det G| / prod_i ||g_i|| <= x]`` for a ``k x k`` matrix ``G``
  of i.i.d. standard normal entries (rows ``g_i``; Hadamard's ratio, in ``[0, 1]``, zero exactly
  when the rows are dependent: a general-position test against round-off): the ratio is
  ``prod_{i=2..k} F_i`` with ``F_i`` the distance of ``g_i / ||g_i||`` to the span of the earlier
  rows, and ``F_i^2 ~ Beta((k-i+1)/2, (i-1)/2)``, independent (``g_i``'s direction is uniform and
  independent of that span, so ``F_i``'s law does not depend on it).  ``F_k`` is ``|u_1|`` for
  ``u`` uniform on the sphere of ``R^k``, whose density is at most ``2 c_k`` (``k >= 3``; as
  above), so conditioning on the other factors ``P[ratio <= x] <= 2 c_k x E[prod_{i<k} 1/F_i]``
  with ``E[1/F_i] = B(a_i - 1/2, b_i) / B(a_i, b_i)`` (``a_i, b_i`` the Beta parameters); for
  ``k = 2``, ``P[|sin theta| <= x] = (2/pi) arcsin x <= x``.  Rows ``D g_i`` (``G``'s columns
  scaled by a diagonal ``D`` with entries in ``(0, 1]``) have a ratio at least ``det D`` times
  ``G``'s (the norms shrink, the determinant scales by ``det D``): ``x / det D`` in place of ``x``.
* :func:`mean_deviation_bound`: a ``t`` with ``P[|mean of n i.i.d. X - E X| >= t] <= level``
  from the exact central moments of ``X`` up to an even order (a Monte Carlo mean of a quantity
  whose moments are known in closed form under the theorem, such as ``z^4`` of a standard normal
  or ``exp(x^T A x)`` of a Gaussian ``x``): the sum's cumulants are ``n`` times ``X``'s, its
  moments follow from them exactly (rational arithmetic), and Markov's inequality on each even
  moment, ``P[|S - n E X| >= n t] <= E (S - n E X)^(2j) / (n t)^(2j)``, gives a ``t``; the
  least over the orders is taken.  Unlike a z statistic's normal null it needs no central limit
  theorem, so it holds in the far tail (the note 'Skewed means' of a claim that needs it).
* :func:`bennett_tail`: ``P[mean of n i.i.d. X - E X >= t]`` for ``X <= E X + b`` (bounded above
  only) of variance at most ``v``: ``exp(-(n v / b^2) h(b t / v))``, ``h(u) = (1 + u) log(1 + u) -
  u`` (Bennett's inequality, G. Bennett, "Probability inequalities for the sum of independent
  random variables", JASA 57, 1962; its proof bounds ``E exp(s X)`` through ``(e^w - 1 - w) / w^2``
  increasing in ``w``, which needs the upper bound alone).  The bound increases with ``v`` and
  ``b``, so upper estimates of both may be used.  With a truncation ``min(X, y)`` (variance at
  most ``X``'s, mean at most ``E X``) it bounds the upper tail of a positive heavy-tailed mean
  together with ``n P[X > y]``.
* :func:`wishart_eigenvalue_tail`: ``P[lambda_min(Z^T Z) <= x]`` (``side="lower"``) or
  ``P[lambda_max(Z^T Z) >= x]`` (``"upper"``) for an ``n x d`` matrix ``Z`` of i.i.d. standard
  normal entries (a whitened sample covariance ``Z^T Z / n`` far from ``I``), by averaging over a
  direction instead of a net: for ``v`` uniform on the sphere of ``R^d`` and independent of ``Z``,
  ``||Z v||^2 ~ chi^2_n`` exactly (rotation invariance), and ``|v^T e| >= c`` for a fixed unit ``e``
  with probability ``P_d(c) = I_{1 - c^2}((d - 1)/2, 1/2)`` (``(v^T e)^2 ~ Beta(1/2, (d - 1)/2)``).
  Upper: where ``lambda_max >= x`` with eigenvector ``e``, every ``v`` with ``|v^T e| >= c`` has
  ``v^T Z^T Z v >= x c^2``, so ``P[chi^2_n >= x c^2] >= P[lambda_max >= x] P_d(c)``.  Lower: where
  ``lambda_min <= x`` and ``lambda_max <= L``, such ``v`` have ``v^T Z^T Z v <= x c^2 + L (1 - c^2)``,
  so ``P[lambda_min <= x] <= P[chi^2_n <= x c^2 + L (1 - c^2)] / P_d(c) + P[lambda_max > L]``.  Each
  ``c`` (and ``L``) gives a bound; the least over a grid is taken.

A **test's level** is the other kind of stated bound (:class:`NullTest`): a family of ``count``
z or t statistics, each distributed as a known null (standard normal, Student t(df)) when the
code and the theorem are right -- a Monte Carlo mean minus its closed form over the mean's
standard error, a fitted slope minus the theorem's over its standard error -- rejected beyond a
critical value set from the level (Bonferroni: ``level / count`` on each, which holds under any
dependence between the statistics), falsely rejects with probability at most ``level``.  That
rests on the statistics following the null, which is an asymptotic statement (the central
limit theorem, an estimated standard error), not a theorem about the draw; so the declaration
carries its null (``TailBound.null``) and the calibration checks it: it pools the recorded
statistics of every seed and tests them against the null by a one-sided Kolmogorov-Smirnov test and by the
count in the null's 1% tail (:func:`null_fit_p`); a rejected fit leaves the decision to counting
(:func:`theorycheck.calibrate.decision_row`, ``model: "null contradicted"``).  Statistics of one
seed may be correlated (entries of one estimated matrix): the KS test then checks their
marginal law only approximately, and the Bonferroni level needs nothing more than the marginals.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from scipy import special, stats

from .errors import InvalidInputError

__all__ = ["TailBound", "NullTest", "chi_square_z", "null_fit_p", "gaussian_condition_tail", "sphere_gap_tail",
           "sphere_cap_tail", "hadamard_ratio_tail", "wishart_eigenvalue_tail", "mean_deviation_bound",
           "bennett_tail", "CHEN_DONGARRA_C",
           "NULLS", "SIDES"]

#: the universal constant of Chen & Dongarra's upper tail bound for real Gaussian matrices
CHEN_DONGARRA_C = 6.414


@dataclass(frozen=True)
class TailBound:
    """``probability``: an upper bound on the probability that the decision it is attached to
    fails on a fresh draw of the instance (code and hypotheses right); ``reason``: the
    mathematics it rests on (a theorem and how the decision reduces to it), for the reader of
    the record; ``null``: where the probability is a test's level, the null distribution of the
    statistics the decision compares (:attr:`NullTest.spec`), which the calibration checks
    against the recorded statistics."""

    probability: float
    reason: str
    null: dict | None = None

    def __post_init__(self):
        p = self.probability
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise InvalidInputError(f"TailBound: probability must be a number in [0, 1], got {p!r}")
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise InvalidInputError("TailBound: reason must say what the bound rests on")

    def times(self, count: int) -> "TailBound":
        """The bound of ``count`` such draws failing at least once (the union bound)."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InvalidInputError(f"TailBound.times: count must be a positive integer, got {count!r}")
        return TailBound(min(1.0, count * self.probability),
                         self.reason if count == 1 else f"{count} draws, union bound: {self.reason}",
                         self.null)


#: the null distributions of a :class:`NullTest`'s statistics
NULLS = ("normal", "t")
#: where a :class:`NullTest` rejects: both tails of the statistic, or its upper or lower tail
SIDES = ("two", "upper", "lower")


@dataclass(frozen=True)
class NullTest:
    """A family of ``count`` test statistics, each distributed as ``null`` (``"normal"``: N(0, 1);
    ``"t"``: Student t with ``df`` degrees of freedom) when the code and the theorem are right,
    rejected beyond :attr:`critical` on ``sided`` (``"two"``: ``|T| > c``; ``"upper"``: ``T > c``;
    ``"lower"``: ``T < -c``); ``c`` puts ``level / count`` on each statistic (Bonferroni), so the
    family falsely rejects with probability at most ``level``.  Decide it as
    ``at_most(name, |T|, test.critical)`` (two-sided), ``at_most(name, T, test.critical)``
    (upper) or ``at_least(name, T, -test.critical)`` (lower), with
    ``tail_bound=test.tail_bound`` on the claim's case (module docstring)."""

    level: float
    count: int
    null: str = "normal"
    df: float | None = None
    sided: str = "two"

    def __post_init__(self):
        if isinstance(self.level, bool) or not isinstance(self.level, (int, float)) or not 0.0 < self.level < 1.0:
            raise InvalidInputError(f"NullTest: level must be a number in (0, 1), got {self.level!r}")
        if not _is_count(self.count, 1):
            raise InvalidInputError(f"NullTest: count must be a positive integer, got {self.count!r}")
        if self.null not in NULLS:
            raise InvalidInputError(f"NullTest: null must be one of {list(NULLS)}, got {self.null!r}")
        if self.sided not in SIDES:
            raise InvalidInputError(f"NullTest: sided must be one of {list(SIDES)}, got {self.sided!r}")
        if (self.null == "t") != (self.df is not None):
            raise InvalidInputError(f"NullTest: df is required with null='t' and only with it, got "
                                    f"null={self.null!r}, df={self.df!r}")
        if self.df is not None and not (isinstance(self.df, (int, float)) and not isinstance(self.df, bool)
                                        and math.isfinite(self.df) and self.df > 0):
            raise InvalidInputError(f"NullTest: df must be a positive finite number, got {self.df!r}")

    @property
    def critical(self) -> float:
        """The critical value ``c``: the null's upper ``level / count`` quantile (``level / (2
        count)`` for a two-sided test)."""
        each = self.level / self.count
        return float(_null_distribution(self.null, self.df).isf(each / 2 if self.sided == "two" else each))

    @property
    def spec(self) -> dict:
        """The null as the decision records it: distribution, degrees of freedom, side, critical value."""
        return {"dist": self.null, "df": self.df, "sided": self.sided, "critical": self.critical}

    @property
    def tail_bound(self) -> TailBound:
        """The stated bound: the family's level, with its null for the calibration's check."""
        law = "N(0, 1)" if self.null == "normal" else f"Student t({self.df:g})"
        return TailBound(self.level, f"{self.count} statistics, each {law} under the theorem, rejected "
                                     f"{self.sided}-sided beyond {self.critical:.4g} (level {self.level:g} / "
                                     f"{self.count} each, Bonferroni)", self.spec)


def _null_distribution(null: str, df: float | None):
    return stats.norm() if null == "normal" else stats.t(df)


def chi_square_z(statistic: float, df: float) -> float:
    r"""A chi-square statistic with ``df`` degrees of freedom as a z for a :class:`NullTest`: its
    probability integral transform to N(0, 1), ``z = Phi^{-1}(F(T))`` (upper tail ``-Phi^{-1}(S(T))``
    above the mean ``df``), from scipy's logarithms of the tails, so exact until a tail's logarithm
    underflows (``T / df`` beyond about 10 at ``df`` of a few hundred); there the Chernoff bound
    ``log P <= -(df/2) (t - 1 - log t)``, ``t = T / df``, replaces it: ``|z|`` is then a lower bound
    of the exact one, already far beyond any critical value."""
    if not (math.isfinite(statistic) and statistic >= 0):
        raise InvalidInputError(f"chi_square_z: statistic must be a finite number >= 0, got {statistic!r}")
    if not (isinstance(df, (int, float)) and not isinstance(df, bool) and math.isfinite(df) and df > 0):
        raise InvalidInputError(f"chi_square_z: df must be a positive finite number, got {df!r}")
    law = stats.chi2(df)
    upper = statistic > df
    log_tail = float(law.logsf(statistic) if upper else law.logcdf(statistic))
    if not math.isfinite(log_tail):
        t = statistic / df
        log_tail = -0.5 * df * (t - 1.0 - math.log(t)) if t > 0 else -math.inf
    z = float(special.ndtri_exp(log_tail))
    return -z if upper else z


#: the null probability beyond the tail-count check's cut (:func:`null_fit_p`)
TAIL_COUNT_RATE = 0.01


def null_fit_p(statistics, spec: dict) -> float:
    """How well ``statistics`` (pooled over seeds) fit the null of ``spec`` (:attr:`NullTest.spec`):
    two checks, Bonferroni-combined (twice the smaller p-value, at most 1): the one-sided
    Kolmogorov-Smirnov test of the whole law (a two-sided test's recorded ``|T|`` against the
    folded law ``2 F(x) - 1``, a one-sided test's ``T`` against ``F``) against the alternative
    that the statistics lie further towards the rejecting side than the null (a conservative
    test, its statistics stochastically inside the null's, keeps its level and is not refuted),
    and, since KS hardly sees the tail the level lives in, the binomial test of the count beyond
    the null's :data:`TAIL_COUNT_RATE` quantile on the rejecting side (too many there: a heavier
    tail than the null's)."""
    values = np.asarray(statistics, dtype=float).ravel()
    law = _null_distribution(spec["dist"], spec.get("df"))
    two = spec["sided"] == "two"
    cdf = (lambda x: 2.0 * law.cdf(x) - 1.0) if two else law.cdf
    lower = spec["sided"] == "lower"
    whole = float(stats.kstest(values, cdf, alternative="greater" if lower else "less").pvalue)
    cut = law.isf(TAIL_COUNT_RATE / 2 if two else TAIL_COUNT_RATE)
    beyond = int(np.sum(values < -cut)) if lower else int(np.sum(values > cut))
    tail = float(stats.binom.sf(beyond - 1, values.size, TAIL_COUNT_RATE))
    return min(1.0, 2.0 * min(whole, tail))


def _is_count(value: object, least: int) -> bool:
    """Whether ``value`` is an integer (not a bool) of at least ``least``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def gaussian_condition_tail(m: int, n: int, x: float) -> float:
    """An upper bound on ``P[kappa_2(G) > x]``, ``G`` an ``m x n`` matrix of i.i.d. standard
    normal entries (Chen & Dongarra 2005, module docstring), for ``m, n >= 2``; 1 where ``x`` is
    below the theorem's range."""
    if not (_is_count(m, 2) and _is_count(n, 2)):
        raise InvalidInputError(f"gaussian_condition_tail: m and n must be integers >= 2, got {m!r}, {n!r}")
    if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
        raise InvalidInputError(f"gaussian_condition_tail: x must be a positive finite number, got {x!r}")
    power = abs(n - m) + 1
    y = x * power / max(m, n)
    if y < power:
        return 1.0
    return float(min(1.0, (CHEN_DONGARRA_C / y) ** power / math.sqrt(2.0 * math.pi)))


def sphere_gap_tail(d: int, pairs: int, eps: float) -> float:
    """An upper bound on the probability that some of ``pairs`` pairs of inner products
    ``x_a^T v, x_b^T v`` (``x_a, x_b`` independent uniform unit vectors of ``R^d``, ``v`` a unit
    vector) lie within ``eps`` of each other: ``pairs * 2 eps c_d`` (module docstring), at most 1."""
    if not _is_count(d, 3):
        raise InvalidInputError(f"sphere_gap_tail: d must be an integer >= 3 (the density of x^T v is "
                                f"unbounded for d = 2), got {d!r}")
    if not _is_count(pairs, 1):
        raise InvalidInputError(f"sphere_gap_tail: pairs must be a positive integer, got {pairs!r}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
        raise InvalidInputError(f"sphere_gap_tail: eps must be a finite number >= 0, got {eps!r}")
    density = math.exp(math.lgamma(d / 2) - math.lgamma((d - 1) / 2)) / math.sqrt(math.pi)
    return float(min(1.0, pairs * 2.0 * eps * density))


def sphere_cap_tail(d: int, pairs: int, r: float) -> float:
    """An upper bound on the probability that some of ``pairs`` pairs of independent uniform unit
    vectors of ``R^d`` lie within distance ``r <= sqrt(2)`` of each other: ``pairs`` times the
    cap probability ``I_{1 - (1 - r^2/2)^2}((d - 1)/2, 1/2) / 2`` (module docstring), at most 1."""
    if not _is_count(d, 2):
        raise InvalidInputError(f"sphere_cap_tail: d must be an integer >= 2, got {d!r}")
    if not _is_count(pairs, 1):
        raise InvalidInputError(f"sphere_cap_tail: pairs must be a positive integer, got {pairs!r}")
    if not (isinstance(r, (int, float)) and 0 <= r <= math.sqrt(2)):
        raise InvalidInputError(f"sphere_cap_tail: r must be a number in [0, sqrt(2)], got {r!r}")
    cosine = 1.0 - r * r / 2.0
    cap = 0.5 * float(special.betainc((d - 1) / 2.0, 0.5, 1.0 - cosine * cosine))
    return float(min(1.0, pairs * cap))


def hadamard_ratio_tail(k: int, x: float) -> float:
    """An upper bound on ``P[|det G| / prod_i ||g_i|| <= x]``, ``G`` a ``k x k`` matrix of i.i.d.
    standard normal entries: ``K_k x`` (module docstring), at most 1; 0 for ``k = 1`` and
    ``x < 1`` (one row: the ratio is 1)."""
    if not _is_count(k, 1):
        raise InvalidInputError(f"hadamard_ratio_tail: k must be a positive integer, got {k!r}")
    if not (isinstance(x, (int, float)) and math.isfinite(x) and x >= 0):
        raise InvalidInputError(f"hadamard_ratio_tail: x must be a finite number >= 0, got {x!r}")
    if k == 1:
        return 0.0 if x < 1 else 1.0
    if k == 2:
        return float(min(1.0, x))
    constant = 2.0 * math.exp(math.lgamma(k / 2) - math.lgamma((k - 1) / 2)) / math.sqrt(math.pi)
    for i in range(2, k):
        a, b = (k - i + 1) / 2.0, (i - 1) / 2.0
        constant *= math.exp(special.betaln(a - 0.5, b) - special.betaln(a, b))
    return float(min(1.0, constant * x))
def mean_deviation_bound(central_moments, n: int, level: float) -> float:
    """A ``t`` with ``P[|(X_1 + ... + X_n)/n - E X| >= t] <= level`` for i.i.d. ``X_i`` whose central
    moments of orders 2, 3, ..., 2m are ``central_moments`` (exact numbers: ints, Fractions or
    floats, read exactly): the least over the even orders ``r <= 2m`` of ``(E S_r / level)^(1/r)
    / n``, ``E S_r`` the sum's exact ``r``-th central moment (module docstring)."""
    if not _is_count(n, 1):
        raise InvalidInputError(f"mean_deviation_bound: n must be a positive integer, got {n!r}")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0.0 < level < 1.0:
        raise InvalidInputError(f"mean_deviation_bound: level must be a number in (0, 1), got {level!r}")
    mu = [Fraction(1), Fraction(0)] + [Fraction(m) for m in central_moments]
    if len(mu) < 3 or mu[2] <= 0:
        raise InvalidInputError("mean_deviation_bound: central_moments must start with a positive variance")
    kappa = [Fraction(0)] * len(mu)
    for r in range(2, len(mu)):
        kappa[r] = mu[r] - sum(math.comb(r - 1, k - 1) * kappa[k] * mu[r - k] for k in range(1, r))
    moments = [Fraction(1)] + [Fraction(0)] * (len(mu) - 1)
    for r in range(1, len(mu)):
        moments[r] = sum(math.comb(r - 1, k - 1) * n * kappa[k] * moments[r - k] for k in range(1, r + 1))
    logs = [(math.log(m.numerator) - math.log(m.denominator) - math.log(level)) / r - math.log(n)
            for r, m in enumerate(moments) if r >= 2 and r % 2 == 0]
    return float(math.exp(min(logs)))


def bennett_tail(n: int, variance: float, bound, deviation: float):
    """``P[(X_1 + ... + X_n)/n - E X >= deviation]`` for i.i.d. ``X`` with ``X - E X <= bound`` and
    variance at most ``variance``: Bennett's inequality (module docstring), at most 1; elementwise
    over an array of ``bound``."""
    if not _is_count(n, 1):
        raise InvalidInputError(f"bennett_tail: n must be a positive integer, got {n!r}")
    b = np.asarray(bound, dtype=float)
    if not (all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in (variance, deviation))
            and np.all(np.isfinite(b)) and np.all(b > 0)):
        raise InvalidInputError(f"bennett_tail: variance, bound and deviation must be positive finite numbers, "
                                f"got {variance!r}, {bound!r}, {deviation!r}")
    u = b * deviation / variance
    tail = np.minimum(1.0, np.exp(-(n * variance / b ** 2) * ((1.0 + u) * np.log1p(u) - u)))
    return float(tail) if tail.ndim == 0 else tail


#: the grid of ``1 - c`` (``c`` the cosine to the extremal eigenvector) and the number of caps ``L``
#: on ``lambda_max`` over which `wishart_eigenvalue_tail` takes its least bound
_COSINE_GAPS = np.geomspace(1e-8, 1.0, 200)[:-1]
_MAX_CAPS = 40


def _direction_probability(d: int, cosine):
    """``P[|v^T e| >= cosine]`` for ``v`` uniform on the unit sphere of ``R^d`` and a fixed unit ``e``."""
    return special.betainc((d - 1) / 2.0, 0.5, 1.0 - cosine * cosine) if d > 1 else np.ones_like(cosine)


def wishart_eigenvalue_tail(n: int, d: int, x: float, side: str = "lower") -> float:
    """An upper bound on ``P[lambda_min(Z^T Z) <= x]`` (``side="lower"``) or ``P[lambda_max(Z^T Z)
    >= x]`` (``"upper"``), ``Z`` an ``n x d`` matrix of i.i.d. standard normal entries (module
    docstring: a chi-square tail over the probability of a direction near the eigenvector), at most 1."""
    if not (_is_count(n, 1) and _is_count(d, 1)):
        raise InvalidInputError(f"wishart_eigenvalue_tail: n and d must be positive integers, got {n!r}, {d!r}")
    if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
        raise InvalidInputError(f"wishart_eigenvalue_tail: x must be a positive finite number, got {x!r}")
    if side not in ("lower", "upper"):
        raise InvalidInputError(f"wishart_eigenvalue_tail: side must be 'lower' or 'upper', got {side!r}")
    c = 1.0 - _COSINE_GAPS
    share = _direction_probability(d, c)
    caps = np.array([x]) if side == "upper" else np.geomspace(max(x, n) * 1.01, 20.0 * max(x, n), _MAX_CAPS)
    above = np.min(stats.chi2.sf(caps[:, None] * c * c, n) / share, axis=1)    # P[lambda_max >= L] per L
    if side == "upper":
        return float(min(1.0, above[0]))
    below = np.min(stats.chi2.cdf(x * c * c + caps[:, None] * (1.0 - c * c), n) / share, axis=1)
    return float(min(1.0, np.min(above + below)))
