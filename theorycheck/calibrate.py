"""Calibration: each claim's false-failure rate and each control's miss rate, measured over seeds.

``theorycheck calibrate`` runs claims and their controls once per seed (the seed runner of
:mod:`theorycheck.sweep`) and turns the runs into one **row** per claim and per control.

Per decision of a claim (its preconditions and conclusions), over the ``n`` seeds at which it
was recorded (margins computed afresh from the recorded numbers,
:func:`theorycheck.margins.record_margin`, so that runs kept from before a change of
definitions are read with the current ones):

* the empirical failure count ``k`` and its one-sided Clopper-Pearson upper bound at
  :data:`CONFIDENCE` (``beta.ppf(0.95, k + 1, n - k)``; 1 when ``k = n``);
* the margins' (:mod:`theorycheck.margins`) mean, standard deviation and minimum;
* a **normal tail model** for failures too rare to count: the margins are taken as i.i.d.
  ``N(mu, sigma^2)`` over seeds and a failure is a margin below 0, so the failure rate is
  ``Phi(-mu / sigma)``; ``sigmas = mean / sd`` is the margin in standard deviations.  Its 95%
  upper bound puts the mean's lower 97.5% Student-t limit over the standard deviation's upper
  97.5% chi-square limit (Bonferroni: both hold with probability >= 95%).  The model is
  checked by a Shapiro-Wilk test of the margins (``normality_p``); it is **rejected** below
  :data:`NORMALITY_ALPHA`, and it does not apply to fewer than :data:`MIN_TAIL_SAMPLES`
  margins, to margins with no spread (a ``holds`` decision, a saturated count) or to a
  decision that failed at some seed.
* a decision made before its case ran any seeded computation (``detail["seeded_before"]`` is 0
  at every seed: no draw and no shared run but a seedless one preceded it; solver calls and
  trajectories are functions of such inputs, :func:`theorycheck.lineage.carries_seed`; records
  without that count fall back on ``detail["computed_before"]``, no computation at all) is
  **seed-independent**: every input it reads is fixed by the
  claim's configuration, so its outcome is the same at every seed and a pass at every seed
  bounds its false-failure rate by 0 (``bound_from: "seed-independent"``).  The lineage is
  checked against the numbers: a margin that differs between seeds contradicts it, and the
  decision is counted instead (``model: "lineage contradicted"``).  This covers structural
  hypotheses and closed-form identities; the seed enters every other decision.
* a **binomial** decision (``checks.binomial``: ``k_i`` successes of ``n_i`` trials at seed ``i``,
  rejected when ``k_i <= c_i``) is modelled through its trials, not its margin (the **pooled
  trials** model, :func:`pooled_trials`): the trials of every seed are taken as one i.i.d.
  Bernoulli(theta) sequence (each seed draws its instances alike, and the decision's own test
  already takes a seed's trials as independent), so the pooled count bounds theta below by
  Clopper-Pearson at :data:`CONFIDENCE` and the failure rate at a fresh seed by ``max_i
  P[Bin(n_i, theta_low) <= c_i]``.  The model is checked by Pearson's dispersion test of the
  per-seed counts (``chi2`` with ``m - 1`` degrees of freedom): counts more spread than a
  binomial's (trials sharing an instance) reject it below :data:`NORMALITY_ALPHA`.  Such counts
  get the **beta-binomial** model (:func:`beta_binomial_trials`): each seed's success rate is
  drawn from a Beta distribution (the instance), its trials are binomial given it; fitted by
  maximum likelihood, checked by Shapiro-Wilk on the normal scores of the counts' randomized
  probability-integral transforms, bounded by the profile-likelihood upper 95% limit of the
  test's rejection probability.  Where that check rejects too (``model: "over-dispersed"``)
  the decision is left to Cantelli or counting.
* where the normal model is rejected (skewed margins), the **log-normal** model of the
  compared ratio: for ``at_most`` and ``close`` the margin is ``1 - measured / threshold``, for
  ``at_least`` ``measured / threshold - 1`` (:mod:`theorycheck.margins`), and errors, norms
  and rates are often log-normal across seeds where they are skewed; so ``y = -log(1 - m)``
  (``log(1 + m)`` for ``at_least``), positive exactly when the decision passes, is taken as
  normal, with the same bound and the same Shapiro-Wilk check as the margins
  (:func:`log_ratio_tail`).  One transform per kind, fixed in advance (no search over
  transforms); it needs the ratio positive at every seed, and a rejected check leaves the
  Cantelli bound (below) or counting.
  A decision that declared ``scale="log"`` when it was written (:func:`theorycheck.checks.at_most`,
  ``detail["scale"]``: a positive ratio spanning decades, such as a singular value against a
  round-off tolerance) has the log-normal model as its only tail model: the normal model of its
  margins is not tried, so the choice of scale is made before any seed and never by which model
  gives the smaller bound (``model: "log-normal rejected"`` where the Shapiro-Wilk check fails).
  Its log ratios are formed from the recorded numbers (:func:`theorycheck.margins.record_log_ratio`),
  not from the margins: a ratio below the float's resolution (a final loss of 1e-28 against a
  target of 1e-10) rounds the margin to exactly 1 at every seed, with no spread left in it.
* where those models are rejected (or do not apply: an over-dispersed binomial, a ratio not
  positive), the **Cantelli** bound, which assumes no shape: for any distribution with mean
  ``mu > 0`` and standard deviation ``sigma``, ``P[X <= 0] <= sigma^2 / (sigma^2 + mu^2)``
  (Cantelli's one-sided Chebyshev inequality), evaluated at the mean's lower 97.5% Student-t
  limit and the standard deviation's upper 97.5% chi-square limit with degrees of freedom
  reduced for the sample's excess kurtosis (:func:`cantelli_tail`), on the margins, or on the log
  ratios of a decision declared ``scale="log"``, where it is below the count's bound.  It
  reaches a claim's budget only for margins some 60 standard deviations from failure (a
  round-off comparison against a tolerance far above it, a control failing by a wide and steady
  margin) and never replaces an accepted model.
* a decision that declared a **stated bound** when it was written (``tail_bound=``, a
  :class:`theorycheck.tails.TailBound`: the probability that it fails on a fresh draw, proved
  from the mathematics of the draw, such as the tail of a Gaussian matrix's condition number
  for a full-rank test against round-off) takes that probability as its bound wherever it never
  failed (``bound_from: "stated bound"``); a failure contradicts it and leaves counting
  (``model: "stated bound contradicted"``).  The margins are still summarized.  A **test's
  level** (:class:`theorycheck.tails.NullTest`: z or t statistics with a known null) is stated
  the same way and checked: the statistics the decision recorded at every seed, pooled, are
  tested against the null by a one-sided Kolmogorov-Smirnov test (towards rejection) and by their count in the null's 1% tail
  (``null_p``, :func:`theorycheck.tails.null_fit_p`);
  below :data:`NORMALITY_ALPHA`, or with fewer than :data:`MIN_TAIL_SAMPLES` statistics, the
  level is not taken: the decision's margins are modelled as any other decision's, or it is
  counted (``model: "null contradicted"`` / ``"null unchecked"`` where no model applies).
* the decision's ``bound``: 0 for a seed-independent decision; the stated probability for a
  stated bound; the smaller of the model's bound and the Clopper-Pearson bound where a model
  applies (``bound_from``: ``"pooled trials"``, ``"beta-binomial"``, ``"normal tail"``,
  ``"log-normal tail"`` or ``"Cantelli"``); else the Clopper-Pearson bound.

A claim's false-failure ``bound`` is a union bound: the sum of the bounds of its modelled
decisions (seed-independent, stated bound, pooled trials, beta-binomial, normal, log-normal or
Cantelli tail), plus --
when any decision is bounded by counting, or the claim failed at some seed (a failing decision
or an error) -- the Clopper-Pearson bound of the claim's own failure count (one count covers
every decision without a tail model); or that count's bound alone where it is smaller (it
covers every way the claim can fail).  A control
**misses** at a seed when it does not fail as it declares (it passes or misfires).  Its parts:
``fails as declared``, with the margin ``-min(margins of the conclusions it breaks)``
(positive when one fails with room; its failures are the misses), or, where smaller, the
**least element** bound: the control misses only when every compared element of every
conclusion it breaks holds, so ``P[miss] <= P[element j holds]`` for each element j (a
conclusion recorded once a seed with the same element count at every seed, e.g. one gap per
sample size); each element's negated margin is modelled over the seeds as a decision of its own,
at confidence ``1 - 0.05 / J`` over the ``J`` elements (Bonferroni), and the least bound is
taken (``bound_from: "least element (<conclusion> [j]): <model>"``, the element's row under
``element``).  The least of several elements is sharper than the model of their maximum, whose
tail is not normal even where each element's is.  Where a conclusion it breaks is a binomial
recorded once at every seed, ``fails as declared`` takes the pooled-trials model of that
break's passes (``pooled_trials(side="passes")``, the least over such breaks): the control
misses only when that break passes too, whatever its other breaks are.  For a ``hypothesis``
control ``violates a hypothesis``, the margin ``-min(precondition margins)``; for every other
kind, each precondition as for a claim (a failing one is a misfire).  Its miss ``bound``
combines these parts and its miss count as a claim's does.

Counting alone needs many seeds: 0 failures in ``n`` bound the rate by about ``3 / n`` (0.058 at
50 seeds), so a claim reaches its budget through the tail model, i.e. through decisions with a
margin that varies over seeds; a ``holds`` decision has none (its margin is 0 whenever it
holds) and keeps the claim at its counted bound unless it is seed-independent.

Budgets (issue 31): a claim's false-failure bound at most :data:`CLAIM_BUDGET` (3e-4 each:
about 140 claims all green on a fresh seed with probability >= 95%), a control's miss bound at
most :data:`CONTROL_BUDGET`; every row says whether it is within its budget.

The **table** (``reports/calibration-<tier>.json``, :func:`merge_table` / :func:`write_table`)
holds the rows by claim id: calibrating one claim or paper replaces only its rows.
:func:`table_markdown` renders it (``docs/calibration.md``); :func:`attach_bounds` copies a
run's rows into its results (the report's claim page), :func:`bound_text` is the line
``theorycheck list -v`` prints.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
from scipy import optimize, stats

from .errors import UsageError
from .files import BadFileError, atomic_write, read_json
from .margins import element_margins, record_log_ratio, record_margin
from .tails import null_fit_p

__all__ = ["CLAIM_BUDGET", "CONTROL_BUDGET", "CONFIDENCE", "clopper_pearson_upper",
           "normal_tail", "decision_row", "claim_row", "control_row", "calibrate_rows",
           "merge_table", "load_table", "write_table", "write_page", "table_markdown", "format_seeds",
           "attach_bounds", "bound_text", "calibrated_seeds", "SPENT_SEEDS", "check_unspent",
           "log_ratio_tail", "pooled_trials", "beta_binomial_trials", "cantelli_tail"]

CLAIM_BUDGET = 3e-4
CONTROL_BUDGET = 1e-2
CONFIDENCE = 0.95
#: below this p-value a tail model is rejected (Shapiro-Wilk of the margins for the normal
#: model, Pearson's dispersion test of the counts for the pooled trials)
NORMALITY_ALPHA = 0.01
MIN_TAIL_SAMPLES = 10
TABLE_VERSION = 1
#: seeds looked at while the claims were written: no threshold may be chosen on them
SPENT_SEEDS = range(0, 20)
_RAN = ("not_run", "skipped")


def check_unspent(seeds: Iterable[int], what: str) -> None:
    """Refuse seeds of :data:`SPENT_SEEDS` (a :class:`UsageError` naming them)."""
    spent = sorted(set(seeds) & set(SPENT_SEEDS))
    if spent:
        raise UsageError(f"{what}: seeds {format_seeds(spent)} are spent (seeds "
                         f"{SPENT_SEEDS.start}-{SPENT_SEEDS.stop - 1} were looked at while the "
                         "claims were written); use seeds from 20 on")


def format_seeds(seeds: Iterable[int]) -> str:
    """Sorted seeds as ranges: ``[1000, ..., 1049, 1060]`` -> ``"1000-1049,1060"``."""
    ordered = sorted(set(seeds))
    parts, start = [], None
    for i, seed in enumerate(ordered):
        if start is None:
            start = seed
        if i + 1 == len(ordered) or ordered[i + 1] != seed + 1:
            parts.append(str(start) if start == seed else f"{start}-{seed}")
            start = None
    return ",".join(parts)


def clopper_pearson_upper(failures: int, runs: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided Clopper-Pearson upper ``confidence`` bound of a rate seen ``failures``
    times in ``runs`` independent runs (1 without runs or when every run failed)."""
    if runs <= 0 or failures >= runs:
        return 1.0
    return float(stats.beta.ppf(confidence, failures + 1, runs - failures))


def _confidence_limits(mean: float, sd: float, n: int, dof: float,
                       confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The mean's lower Student-t limit and the standard deviation's upper chi-square limit on
    ``dof`` degrees of freedom (``n - 1`` for normal samples), from ``n`` values, each at
    ``(1 + confidence) / 2`` (97.5% at the default 95%), so that both hold with >= ``confidence``."""
    half = (1.0 - confidence) / 2.0
    return (mean - float(stats.t.ppf(1.0 - half, n - 1)) * sd / math.sqrt(n),
            sd * math.sqrt(dof / float(stats.chi2.ppf(half, dof))))


def normal_tail(margins: Sequence[float], confidence: float = CONFIDENCE) -> dict:
    """The margins' summary and the normal tail model of ``P[margin < 0]`` (module docstring):
    ``mean``, ``sd``, ``min``, ``sigmas``, ``tail`` (the point estimate), ``tail_upper`` (at
    ``confidence``),
    ``normality_p`` and ``model``: ``"normal"``, ``"rejected"``, ``"no spread"`` or
    ``"too few"``."""
    x = np.asarray(margins, dtype=float)
    n = x.size
    out = {"mean": None, "sd": None, "min": None, "sigmas": None, "tail": None,
           "tail_upper": None, "normality_p": None, "model": "too few"}
    if n == 0:
        return out
    scale = float(np.abs(x).max()) or 1.0  # margins far from 1 (e.g. 1e200) without overflow
    y = x / scale
    mean, sd = scale * float(y.mean()), scale * float(y.std(ddof=1)) if n > 1 else 0.0
    out.update(mean=mean, sd=sd, min=float(x.min()))
    if n < MIN_TAIL_SAMPLES:
        return out
    if not sd > 0 or np.ptp(x) <= 1e-12 * max(abs(mean), 1e-300):
        out["model"] = "no spread"
        return out
    mean_low, sd_high = _confidence_limits(mean, sd, n, n - 1, confidence)
    out.update(sigmas=mean / sd, tail=float(stats.norm.sf(mean / sd)),
               tail_upper=float(stats.norm.sf(mean_low / sd_high)),
               normality_p=float(stats.shapiro(y).pvalue))
    out["model"] = "normal" if out["normality_p"] >= NORMALITY_ALPHA else "rejected"
    return out


#: the sign of the log of the compared ratio ``1 + sign * margin`` (module docstring)
_RATIO_SIGN = {"at_most": -1.0, "close": -1.0, "at_least": 1.0}


def _log_ratios(margins: Sequence[float], kind: str | None, negated: bool = False,
                exact: Sequence[float | None] | None = None) -> np.ndarray | None:
    """``y`` of :func:`log_ratio_tail` (``-y`` when ``negated``), or ``None``; ``exact``: the same
    values formed from the records (:func:`theorycheck.margins.record_log_ratio`), taken where
    every one was formed (a margin of exactly 1 has lost a ratio below the float's resolution)."""
    if exact is not None and not negated and all(v is not None and math.isfinite(v) for v in exact):
        return np.asarray(exact, dtype=float)
    sign = _RATIO_SIGN.get(kind)
    if sign is None:
        return None
    ratio = 1.0 - sign * np.asarray(margins, dtype=float) if negated else \
        1.0 + sign * np.asarray(margins, dtype=float)
    if not np.all(ratio > 0):
        return None
    y = sign * np.log(ratio)
    return -y if negated else y


def log_ratio_tail(margins: Sequence[float], kind: str | None, negated: bool = False,
                   confidence: float = CONFIDENCE, exact: Sequence[float | None] | None = None) -> dict | None:
    """:func:`normal_tail` of ``y = sign * log(1 + sign * margin)``, the log of the compared
    ratio (``sign`` -1 for ``at_most`` and ``close``, +1 for ``at_least``): ``y >= 0`` exactly
    when the margin is.  ``negated``: the margins are those of a decision of ``kind`` negated
    (a control's "fails as declared" of the one conclusion it breaks), modelled as ``-y``.
    ``None`` for another kind or where a ratio is not positive; ``exact``: as for
    :func:`_log_ratios`."""
    y = _log_ratios(margins, kind, negated, exact)
    return None if y is None else normal_tail(y, confidence)


def cantelli_tail(values: Sequence[float], confidence: float = CONFIDENCE) -> float | None:
    """The distribution-free tail bound of ``P[X < 0]`` (module docstring): Cantelli's
    inequality ``sd^2 / (sd^2 + mean^2)`` at the mean's lower and the standard deviation's upper
    97.5% limits; the latter the chi-square limit on ``r = 2 / (2 / (n - 1) + max(g2, 0) / n)``
    degrees of freedom, ``g2`` the sample excess kurtosis (``Var s^2 = sigma^4 (2 / (n - 1) +
    gamma_2 / n)`` for any distribution with a finite fourth moment, so heavy tails widen the
    limit).  1 where the mean's limit is not positive; ``None`` below :data:`MIN_TAIL_SAMPLES`
    values or without spread."""
    x = np.asarray(values, dtype=float)
    n = x.size
    if n < MIN_TAIL_SAMPLES:
        return None
    y = x / (float(np.abs(x).max()) or 1.0)
    mean, sd = float(y.mean()), float(y.std(ddof=1))
    if not sd > 0 or np.ptp(y) <= 1e-12 * abs(mean):
        return None
    excess = max(float(stats.kurtosis(y, fisher=True, bias=False)), 0.0)
    mean_low, sd_high = _confidence_limits(mean, sd, n, 2.0 / (2.0 / (n - 1) + excess / n), confidence)
    if mean_low <= 0:
        return 1.0
    return float(sd_high ** 2 / (sd_high ** 2 + mean_low ** 2))


def _binomial_counts(records: Sequence[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per seed: the successes, the trials and the largest count the test rejects."""
    from .checks import critical_count

    k = np.array([d["detail"]["successes"] for d in records])
    n = np.array([d["detail"]["trials"] for d in records])
    c = np.array([critical_count(int(d["detail"]["trials"]), float(d["reference"]),
                                  float(d["tolerance"]["alpha"])) for d in records])
    return k, n, c


#: the fixed stream of the randomized probability-integral transforms that check the
#: beta-binomial model (:func:`beta_binomial_trials`): the check is a function of the counts alone
_PIT_SEED = 20261129


def _beta_binomial_nll(k: np.ndarray, n: np.ndarray):
    """The negative log-likelihood of the beta-binomial counts ``k`` of ``n`` trials as a
    function of ``(log a, log b)``."""
    return lambda z: -float(stats.betabinom.logpmf(k, n, math.exp(z[0]), math.exp(z[1])).sum())


#: the range of ``log a`` and ``log b`` searched for the beta-binomial model
_LOG_PARAMETER_BOUNDS = [(-12.0, 12.0)] * 2


def _beta_binomial_fit(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The maximum-likelihood ``(log a, log b)`` of the beta-binomial counts ``k`` of ``n``
    trials, from the moments' estimate."""
    theta = k.sum() / n.sum()
    base = theta * (1 - theta)
    spread = float(np.var(k / n, ddof=1))
    rho = min(max((spread - base / n.mean()) / max(base * (1 - 1 / n.mean()), 1e-300), 1e-6), 1 - 1e-6)
    start = np.log(np.clip([theta * (1 / rho - 1), (1 - theta) * (1 / rho - 1)], 1e-5, 1e5))
    return optimize.minimize(_beta_binomial_nll(k, n), start, method="L-BFGS-B",
                             bounds=_LOG_PARAMETER_BOUNDS).x


def _beta_binomial_tail(n: np.ndarray, c: np.ndarray, a: float, b: float, side: str) -> float:
    """``max_i P[BB(n_i, a, b) <= c_i]`` (``side="fails"``) or ``max_i P[BB(n_i, a, b) > c_i]``."""
    if side == "fails":
        return float(np.where(c >= 0, stats.betabinom.cdf(c, n, a, b), 0.0).max())
    return float(stats.betabinom.sf(c, n, a, b).max())


def beta_binomial_trials(k: np.ndarray, n: np.ndarray, c: np.ndarray, side: str = "fails") -> dict:
    """The beta-binomial model of binomial counts more spread than a binomial's (trials of one
    seed share its instance, module docstring): seed ``i``'s success rate is ``theta_i ~ Beta(a,
    b)`` and ``k_i ~ Bin(n_i, theta_i)``, ``(a, b)`` fitted by maximum likelihood.  Checked on
    the shape, not only the spread: the randomized probability-integral transforms ``u_i =
    F(k_i - 1) + V_i P(k_i)`` of the counts under the fit (``V_i`` uniform, a fixed stream) are
    uniform under the model, so ``Phi^{-1}(u_i)`` must pass Shapiro-Wilk at
    :data:`NORMALITY_ALPHA` (else ``model: "over-dispersed"``, no tail; also where the search
    below ends outside its region).  ``tail_upper``: the
    profile-likelihood upper :data:`CONFIDENCE` bound of the test's outcome probability
    ``max_i P[BB(n_i) <= c_i]`` (``side="fails"``; ``"passes"``: ``max_i P[BB(n_i) > c_i]``),
    i.e. its largest value over the ``(a, b)`` whose log-likelihood is within
    ``chi2_1(2 CONFIDENCE - 1) / 2`` of the maximum (Wilks; one-sided).  On synthetic Beta
    rates (30-50 seeds of 10-40 trials, true rates 3.5e-4 to 2e-2) it fell below the true rate
    in 3-7% of 200 calibrations each (tests/test_calibrate.py checks one setting).  Returns
    ``{"model", "tail_upper", "a", "b", "fit_p"}``."""
    rng = np.random.default_rng(_PIT_SEED)
    z = _beta_binomial_fit(k, n)
    a, b = math.exp(z[0]), math.exp(z[1])
    u = stats.betabinom.cdf(k - 1, n, a, b) + rng.uniform(size=k.size) * stats.betabinom.pmf(k, n, a, b)
    fit_p = float(stats.shapiro(stats.norm.ppf(np.clip(u, 1e-300, 1 - 1e-16))).pvalue)
    out = {"model": "over-dispersed", "tail_upper": None, "a": a, "b": b, "fit_p": fit_p}
    if fit_p < NORMALITY_ALPHA:
        return out
    nll = _beta_binomial_nll(k, n)
    limit = nll(z) + float(stats.chi2.ppf(2 * CONFIDENCE - 1, 1)) / 2

    def neg_log_tail(w):
        return -math.log(max(_beta_binomial_tail(n, c, math.exp(w[0]), math.exp(w[1]), side), 1e-300))

    found = optimize.minimize(neg_log_tail, z, method="SLSQP", bounds=_LOG_PARAMETER_BOUNDS,
                              constraints=[{"type": "ineq", "fun": lambda w: limit - nll(w)}])
    if nll(found.x) > limit + 1e-6:   # no bound found inside the region: none is claimed
        return out
    out.update(model="beta-binomial", tail_upper=math.exp(-neg_log_tail(found.x)))
    return out


def pooled_trials(records: Sequence[dict], side: str = "fails") -> dict:
    """The pooled-trials model of a binomial decision recorded once per seed (module
    docstring): ``{"rate": S / T, "dispersion_p", "tail_upper", "model"}``.

    ``side="fails"``: ``tail_upper`` bounds the probability that the decision fails at a fresh
    seed, ``max_i P[Bin(n_i, theta_low) <= c_i]`` with ``theta_low`` the one-sided
    Clopper-Pearson lower bound of the pooled success rate; ``side="passes"`` (a control that
    must fail it): ``max_i P[Bin(n_i, theta_high) > c_i]``.  ``model`` is ``"pooled trials"``,
    or ``"over-dispersed"`` when Pearson's dispersion statistic ``sum_i (k_i - n_i theta)^2 /
    (n_i theta (1 - theta))`` exceeds its ``chi2(m - 1)`` quantile at :data:`NORMALITY_ALPHA`
    (then the :func:`beta_binomial_trials` model of the counts: ``"beta-binomial"`` with its
    ``tail_upper``, or ``"over-dispersed"`` without one where that model is rejected too), or
    ``"too few"`` below :data:`MIN_TAIL_SAMPLES` seeds."""
    if side not in ("fails", "passes"):
        raise ValueError(f"side must be 'fails' or 'passes', not {side!r}")
    k, n, c = _binomial_counts(records)
    successes, trials = int(k.sum()), int(n.sum())
    out = {"rate": successes / trials if trials else None, "dispersion_p": None,
           "tail_upper": None, "model": "too few"}
    if len(records) < MIN_TAIL_SAMPLES:
        return out
    theta = successes / trials
    if 0.0 < theta < 1.0:
        dispersion = float(np.sum((k - n * theta) ** 2 / (n * theta * (1.0 - theta))))
        out["dispersion_p"] = float(stats.chi2.sf(dispersion, len(records) - 1))
        if out["dispersion_p"] < NORMALITY_ALPHA:
            model = beta_binomial_trials(k, n, c, side)
            out.update(model=model["model"], tail_upper=model["tail_upper"])
            return out
    if side == "fails":
        low = 1.0 - clopper_pearson_upper(trials - successes, trials)
        tail = np.where(c >= 0, stats.binom.cdf(c, n, low), 0.0)
    else:
        high = clopper_pearson_upper(successes, trials)
        tail = stats.binom.sf(c, n, high)
    out.update(tail_upper=float(tail.max()), model="pooled trials")
    return out


def _same_at_every_seed(margins: Sequence[float | None]) -> bool:
    """Whether the recorded margins are one value (``None`` included) at every seed."""
    if any(m is None for m in margins):
        return all(m is None for m in margins)
    return np.ptp(np.asarray(margins, dtype=float)) <= 1e-12 * max(abs(margins[0]), 1.0)


def decision_row(name: str, margins: Sequence[float | None], passed: Sequence[bool], *,
                 role: str | None = None, kind: str | None = None,
                 seed_independent: bool = False, pooled: dict | None = None,
                 negated: bool = False, log_scale: bool = False,
                 stated: float | None = None, null_p: float | None = None,
                 log_ratios: Sequence[float | None] | None = None,
                 confidence: float = CONFIDENCE) -> dict:
    """One decision's row over the seeds at which it was recorded (module docstring);
    ``seed_independent``: its lineage says no seeded computation preceded it at any seed;
    ``pooled``: its :func:`pooled_trials` model (a binomial decision); ``negated``: the margins
    are a decision of ``kind``'s negated (:func:`log_ratio_tail`); ``log_scale``: the decision
    declared ``scale="log"`` (:func:`theorycheck.checks.at_most`), so the log-normal model is its
    only tail model (the normal model of the margins is not tried); ``stated``: the largest
    :class:`theorycheck.tails.TailBound` probability it declared (at every seed), its bound
    where it never failed; ``null_p``: where that probability is a test's level, the fit of its
    statistics to their null (:func:`_null_fit`), which must hold for the level to be taken;
    ``log_ratios``: the log ratios formed from the records (:func:`_log_ratios`' ``exact``; a
    declared log scale is modelled on them whatever the linear margins' spread);
    ``confidence``: the level of its bounds (default :data:`CONFIDENCE`)."""
    runs, failures = len(passed), sum(not p for p in passed)
    counted = clopper_pearson_upper(failures, runs, confidence)
    finite = [m for m in margins if m is not None and math.isfinite(m)]
    tail = normal_tail(finite, confidence)
    if pooled is not None:
        tail["model"] = pooled["model"]
    if seed_independent and runs and not _same_at_every_seed(margins):
        tail["model"], seed_independent = "lineage contradicted", False
    modelled = failures == 0 and len(finite) == runs
    linear = tail["model"] == "normal" and not log_scale
    logged = (log_ratio_tail(finite, kind, negated, confidence, log_ratios)
              if modelled and tail["model"] in (_LOG_SCALE_AFTER if log_scale else ("rejected",))
              else None)
    cantelli = (_cantelli_of(finite, kind, negated, log_scale, confidence, log_ratios)
                if modelled and tail["model"] in (_CANTELLI_AFTER + _LOG_SCALE_AFTER if log_scale
                                                  else _CANTELLI_AFTER) else None)
    if seed_independent and runs and failures == 0:
        tail["model"] = "seed-independent"
        bound, source = 0.0, "seed-independent"
    elif stated is not None and runs and failures == 0 and not _null_refuted(null_p):
        tail["model"] = "stated bound"
        bound, source = stated, "stated bound"
    elif modelled and tail["model"] in _TRIAL_MODELS:
        tail["tail_upper"] = pooled["tail_upper"]
        bound, source = min(pooled["tail_upper"], counted), tail["model"]
    elif modelled and linear:
        bound, source = min(tail["tail_upper"], counted), "normal tail"
    elif logged is not None and logged["model"] == "normal":
        tail.update(model="log-normal", tail_upper=logged["tail_upper"])
        bound, source = min(logged["tail_upper"], counted), "log-normal tail"
    elif cantelli is not None and cantelli < counted:
        tail.update(model="Cantelli", tail_upper=cantelli)
        bound, source = cantelli, "Cantelli"
    else:
        if logged is not None and log_scale:
            tail["model"] = "log-normal rejected"
        if stated is not None:
            tail["model"] = ("stated bound contradicted" if not _null_refuted(null_p) or failures else
                             "null unchecked" if math.isnan(null_p) else "null contradicted")
        bound, source = counted, "clopper-pearson"
    return {"name": name, "role": role, "kind": kind, "runs": runs, "failures": failures,
            "clopper_pearson": counted, **{f"margin_{k}": tail[k] for k in ("mean", "sd", "min")},
            **{k: tail[k] for k in ("sigmas", "tail", "tail_upper", "normality_p", "model")},
            "scale": "log" if log_scale else "linear",
            "pooled_rate": (pooled or {}).get("rate"),
            "dispersion_p": (pooled or {}).get("dispersion_p"),
            "null_p": None if null_p is None or math.isnan(null_p) else null_p,
            "bound": bound, "bound_from": source}


def _null_refuted(null_p: float | None) -> bool:
    """Whether a test-level decision's statistics failed their null's check (or were too few)."""
    return null_p is not None and not null_p >= NORMALITY_ALPHA


#: the accepted models of a binomial decision's counts (:func:`pooled_trials`)
_TRIAL_MODELS = ("pooled trials", "beta-binomial")

#: the rejected models after which a decision's bound may be Cantelli's (a declared log scale's
#: linear model is "normal" or "rejected"; "lineage contradicted" is left to counting, to be seen)
_CANTELLI_AFTER = ("rejected", "normal", "over-dispersed")

#: the linear margins' models after which a declared log scale is modelled on its log ratios:
#: any but "lineage contradicted" and "too few" ("no spread": a ratio below the float's
#: resolution leaves the margin at exactly 1 at every seed, its log ratio still spread)
_LOG_SCALE_AFTER = ("normal", "rejected", "no spread")


def _cantelli_of(margins: list[float], kind: str | None, negated: bool, log_scale: bool,
                 confidence: float = CONFIDENCE, exact: Sequence[float | None] | None = None) -> float | None:
    """:func:`cantelli_tail` of the margins, or of the log ratios for a decision declared on the
    log scale (``None`` where they cannot be formed; ``exact`` as for :func:`_log_ratios`)."""
    values = _log_ratios(margins, kind, negated, exact) if log_scale else margins
    return None if values is None else cantelli_tail(values, confidence)


def _decided_before_the_seed(decision: dict) -> bool:
    """Whether the case had logged no computation that carries the seed when ``decision`` was
    made (``seeded_before``; a record without it: no computation at all, ``computed_before``;
    a record without either is taken as seeded)."""
    detail = decision.get("detail", {})
    return detail.get("seeded_before", detail.get("computed_before")) == 0


def _decision_rows(cases: list[dict], roles: tuple[str, ...]) -> list[dict]:
    """Rows of the decisions of ``roles`` recorded by ``cases`` (one case per seed), by name."""
    recorded: dict[str, list[dict]] = {}
    for case in cases:
        for d in case["decisions"]:
            if d.get("role") in roles:
                recorded.setdefault(d["name"], []).append(d)
    return [decision_row(name, [record_margin(d) for d in ds], [d["passed"] for d in ds],
                         role=ds[0].get("role"), kind=ds[0]["kind"],
                         seed_independent=all(map(_decided_before_the_seed, ds)),
                         pooled=pooled_trials(ds) if _all_binomial(ds) else None,
                         log_scale=all(d.get("detail", {}).get("scale") == "log" for d in ds),
                         stated=_stated_bound(ds), null_p=_null_fit(ds),
                         log_ratios=[record_log_ratio(d) for d in ds])
            for name, ds in recorded.items()]


def _null_fit(decisions: Sequence[dict]) -> float | None:
    """The KS p-value of the statistics a test-level decision recorded at every seed against its
    declared null (NaN with fewer than :data:`MIN_TAIL_SAMPLES` of them); ``None`` unless every
    seed declared the same null."""
    nulls = [d.get("detail", {}).get("tail_bound", {}).get("null") for d in decisions]
    if not nulls or nulls[0] is None or any(n != nulls[0] for n in nulls):
        return None
    values = np.concatenate([np.ravel(np.asarray(d["measured"], dtype=float)) for d in decisions])
    return null_fit_p(values, nulls[0]) if values.size >= MIN_TAIL_SAMPLES else math.nan


def _stated_bound(decisions: Sequence[dict]) -> float | None:
    """The largest tail-bound probability the recorded decisions declared, if each declared one."""
    stated = [d.get("detail", {}).get("tail_bound") for d in decisions]
    if not stated or any(b is None for b in stated):
        return None
    return max(float(b["probability"]) for b in stated)


def _all_binomial(decisions: Sequence[dict]) -> bool:
    """Whether every recorded decision is a binomial test with its counts."""
    return bool(decisions) and all(d["kind"] == "binomial" and "trials" in d.get("detail", {})
                                   for d in decisions)


def _combined(parts: list[dict], failures: int, runs: int) -> float:
    """The bound of a case: the union of the modelled parts' tail bounds and, when a part is
    bounded by counting or the case failed, the Clopper-Pearson bound of the case's failures;
    or that count's bound alone, if smaller."""
    modelled = [p for p in parts if p["bound_from"] != "clopper-pearson"]
    counted = clopper_pearson_upper(failures, runs)
    union = sum(p["bound"] for p in modelled) + (
        counted if failures > 0 or len(modelled) < len(parts) else 0.0)
    return min(1.0, union, counted)


def _row(kind: str, cid: str, control: str | None, cases: list[dict], seeds: list[int],
         parts: list[dict], bound: float, failures: int, budget: float) -> dict:
    weakest = max(parts, key=lambda p: p["bound"])["name"] if parts else None
    return {"id": cid, "control": control, "kind": kind, "seeds": format_seeds(seeds),
            "runs": len(cases), "outcomes": dict(Counter(c["outcome"] for c in cases)),
            "failures": failures, "clopper_pearson": clopper_pearson_upper(failures, len(cases)),
            "bound": bound, "budget": budget, "within_budget": bool(cases) and bound <= budget,
            "weakest": weakest, "decisions": parts}


def claim_row(cid: str, cases: list[dict], seeds: list[int]) -> dict:
    """The false-failure row of claim ``cid`` from its case at each seed (skipped ones left
    out): outcomes, failures, the per-decision rows, the union bound and the budget."""
    ran = [(s, c) for s, c in zip(seeds, cases) if c["outcome"] not in _RAN]
    cases, seeds = [c for _, c in ran], [s for s, _ in ran]
    parts = _decision_rows(cases, ("precondition", "conclusion"))
    failures = sum(c["outcome"] != "passed" for c in cases)
    return _row("claim", cid, None, cases, seeds, parts, _combined(parts, failures, len(cases)),
                failures, CLAIM_BUDGET)


def _of_role(case: dict, names: Iterable[str] | None, role: str) -> list[dict]:
    """The decisions of ``role`` recorded by ``case`` (named ``names``, or all)."""
    return [d for d in case["decisions"] if d.get("role") == role
            and (names is None or d["name"] in names)]


def _negated_least(case: dict, names: Iterable[str] | None, role: str) -> float | None:
    """``-min`` of the margins of the decisions of ``role`` (named ``names``, or all)."""
    margins = [record_margin(d) for d in _of_role(case, names, role)]
    if not margins or any(m is None for m in margins):
        return None
    return -min(margins)


def _all_seed_independent(cases: list[dict], names: Iterable[str] | None, role: str) -> bool:
    """Whether every decision of ``role`` (named ``names``, or all) was made before any
    computation of its case that carries the seed, at every seed."""
    decided = [d for c in cases for d in _of_role(c, names, role)]
    return bool(decided) and all(map(_decided_before_the_seed, decided))


def _violated_by_the_configuration(cases: list[dict]) -> list[str]:
    """The preconditions a hypothesis control violates before any computation, at every seed:
    decided before its case ran anything that carries the seed and failed at every seed (then
    the control violates its hypothesis whatever the draws, and the part is seed-independent)."""
    if not cases:
        return []
    names = [d["name"] for d in _of_role(cases[0], None, "precondition")]
    return [name for name in names
            if all((ds := _of_role(c, [name], "precondition"))
                   and all(not d["passed"] and _decided_before_the_seed(d) for d in ds)
                   for c in cases)]


def _broken_kind(cases: list[dict], breaks: Sequence[str]) -> str | None:
    """The kind of the one conclusion a control breaks, when it is one kind at every seed."""
    kinds = {d["kind"] for c in cases for d in _of_role(c, breaks, "conclusion")}
    return kinds.pop() if len(breaks) == 1 and len(kinds) == 1 else None


def _pooled_miss(cases: list[dict], breaks: Sequence[str]) -> dict | None:
    """The pooled-trials model of a control's miss through the conclusions it breaks that are
    binomial tests recorded once at every seed (``None`` when there are none): the control
    misses only when every break passes, so the pass bound of any one of them
    (``pooled_trials(side="passes")``) bounds the miss, and the least is taken; when no model
    is accepted, the first's (rejected) record."""
    models = []
    for name in breaks:
        recorded = [d for c in cases for d in _of_role(c, [name], "conclusion")]
        if len(recorded) == len(cases) and _all_binomial(recorded):
            models.append(pooled_trials(recorded, side="passes"))
    accepted = [m for m in models if m["model"] in _TRIAL_MODELS]
    if accepted:
        return min(accepted, key=lambda m: m["tail_upper"])
    return models[0] if models else None


def _element_columns(cases: list[dict], breaks: Sequence[str]) -> list[tuple[str, str, list[float]]]:
    """``(label, kind, values)`` per element of the conclusions a control breaks: ``values`` the
    element's negated margin at every seed (:func:`theorycheck.margins.element_margins`), for
    each conclusion recorded once per seed with the same number of elements at every seed (the
    element count fixed by the configuration; others are left out)."""
    columns = []
    for name in breaks:
        records = [_of_role(c, [name], "conclusion") for c in cases]
        if not records or any(len(r) != 1 for r in records):
            continue
        elements = [element_margins(r[0]) for r in records]
        if any(e is None for e in elements) or len({e.size for e in elements}) != 1:
            continue
        columns += [(f"{name} [{j}]", records[0][0]["kind"], [-float(e[j]) for e in elements])
                    for j in range(elements[0].size)]
    return columns


def _element_miss(cases: list[dict], breaks: Sequence[str]) -> dict | None:
    """The miss bound through one element of the conclusions a control breaks (module
    docstring): the control misses only when every element of every one holds, so ``P[miss] <=
    P[element j holds]`` for each j; each element is modelled over the seeds as a negated
    decision of its own, its bound at confidence ``1 - (1 - CONFIDENCE) / J`` over the ``J``
    elements (Bonferroni: the least of the J bounds then holds with >= CONFIDENCE).  The row of
    the element with the least bound; ``None`` with fewer than two elements (one element is the
    "fails as declared" margin itself)."""
    columns = _element_columns(cases, breaks)
    if len(columns) < 2:
        return None
    level = 1.0 - (1.0 - CONFIDENCE) / len(columns)
    rows = [decision_row(label, values, [v > 0 for v in values], role="control", kind=kind,
                         negated=True, confidence=level) for label, kind, values in columns]
    return min(rows, key=lambda r: r["bound"])


def _least_miss(part: dict, element: dict | None) -> dict:
    """The "fails as declared" ``part`` with the element model's bound where it is the smaller
    (``bound_from`` names the element and its model; the element's row is kept under
    ``element``)."""
    if element is None or element["bound"] >= part["bound"]:
        return part
    return dict(part, bound=element["bound"],
                bound_from=f"least element ({element['name']}): {element['bound_from']}", element=element)


def control_row(cid: str, name: str, kind: str, breaks: Sequence[str], cases: list[dict],
                seeds: list[int]) -> dict:
    """The miss row of control ``name`` (of kind ``kind``, breaking ``breaks``) of claim ``cid``
    from its case at each seed (module docstring)."""
    ran = [(s, c) for s, c in zip(seeds, cases) if c["outcome"] not in _RAN]
    cases, seeds = [c for _, c in ran], [s for s, _ in ran]
    declared = [c["outcome"] == "failed_as_expected" for c in cases]
    parts = [_least_miss(decision_row("fails as declared", [_negated_least(c, breaks, "conclusion")
                                                            for c in cases], declared, role="control",
                                      seed_independent=_all_seed_independent(cases, breaks, "conclusion"),
                                      pooled=_pooled_miss(cases, breaks),
                                      kind=_broken_kind(cases, breaks), negated=True),
                         _element_miss(cases, breaks))]
    if kind == "hypothesis":
        structural = _violated_by_the_configuration(cases)
        judged = structural or None
        parts.append(decision_row("violates a hypothesis",
                                  [_negated_least(c, judged, "precondition") for c in cases],
                                  [bool(c.get("failed_preconditions")) for c in cases],
                                  role="control",
                                  seed_independent=bool(structural) or _all_seed_independent(
                                      cases, None, "precondition")))
    else:
        parts += _decision_rows(cases, ("precondition",))
    misses = len(cases) - sum(declared)
    return _row("control", cid, name, cases, seeds, parts, _combined(parts, misses, len(cases)),
                misses, CONTROL_BUDGET)


def calibrate_rows(runs: list[dict], seeds: list[int], ids: Iterable[str] | None = None) -> dict:
    """``{claim id: {"claim": row, "controls": {name: row}}}`` from the results of one run per
    seed (``runs[i]`` at ``seeds[i]``), for the claims ``ids`` (default: every claim run)."""
    cases: dict[str, list[tuple[int, dict]]] = {}
    for seed, results in zip(seeds, runs):
        for claim in results["claims"]:
            cases.setdefault(claim["id"], []).append((seed, claim))
    wanted = sorted(cases if ids is None else set(ids) & set(cases))
    table = {}
    for cid in wanted:
        seen = [s for s, _ in cases[cid]]
        claims = [c for _, c in cases[cid]]
        controls = {}
        for spec in claims[0]["controls"]:
            name = spec["name"]
            of_control = [next(k for k in c["controls"] if k["name"] == name) for c in claims]
            controls[name] = control_row(cid, name, spec["kind"], spec["breaks"], of_control, seen)
        table[cid] = {"claim": claim_row(cid, claims, seen), "controls": controls}
    return table


# -- the table -------------------------------------------------------------------------------
def load_table(path: str | Path) -> dict:
    """The calibration table at ``path`` (an empty one when there is no file); a file that is
    no calibration table is a :class:`UsageError` naming it."""
    path = Path(path)
    if not path.is_file():
        return {"version": TABLE_VERSION, "tier": None, "claims": {}}
    try:
        return read_json(path, "calibration table", expect={"version": TABLE_VERSION},
                         check=lambda t: None if isinstance(t.get("claims"), dict) else "no claims")
    except BadFileError as exc:
        raise UsageError(f"{path} is not a calibration table of version {TABLE_VERSION}: {exc}") from None


def merge_table(table: dict, rows: dict, tier: str, commit: str | None = None) -> dict:
    """``table`` with the rows of the claims in ``rows`` replaced (others kept), for ``tier``."""
    if table.get("tier") not in (None, tier):
        raise UsageError(f"the table holds the {table['tier']} tier, not {tier}: give another --out")
    merged = dict(table, version=TABLE_VERSION, tier=tier, confidence=CONFIDENCE,
                  budget={"claim": CLAIM_BUDGET, "control": CONTROL_BUDGET})
    fresh = {cid: dict(entry, commit=commit) for cid, entry in rows.items()}
    merged["claims"] = dict(sorted({**table.get("claims", {}), **fresh}.items()))
    return merged


def _write(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)


def write_table(path: str | Path, table: dict) -> None:
    """Write the table atomically, one claim per line (a recalibration reads as a small diff)."""
    head = {k: v for k, v in table.items() if k != "claims"}
    body = ",\n".join(f" {json.dumps(cid)}: {json.dumps(entry, sort_keys=True, allow_nan=False)}"
                      for cid, entry in table["claims"].items())
    _write(path, json.dumps(head, sort_keys=True)[:-1] + ', "claims": {\n' + body + "\n}}\n")


def write_page(path: str | Path, tables: list[dict]) -> None:
    """Write :func:`table_markdown` of ``tables`` atomically."""
    _write(path, table_markdown(tables))


def _sci(value: float | None) -> str:
    return "-" if value is None else f"{value:.2g}"


def table_markdown(tables: list[dict]) -> str:
    """The generated page of the calibration tables (one section per tier): a row per claim and
    per control with its seeds, failures or misses, bound, budget, weakest part and the parts
    whose margins failed the normality check (the log-normal model or counting instead) or whose
    counts failed the dispersion check (counted instead)."""
    from .report.render import _md_cell as cell

    lines = ["# Calibration", "",
             "Generated by `theorycheck calibrate` from `reports/calibration-<tier>.json`; do not "
             "edit. A claim's bound is its false-failure probability on a fresh seed (95% upper "
             "bound, union over its decisions); a control's is its miss probability (it passes "
             "or misfires). How the bounds are computed: `theorycheck/calibrate.py`; the protocol: "
             "docs/writing-claims.md, \"Calibrating a claim\".", ""]
    for table in tables:
        budget = table.get("budget", {})
        lines += [f"## {table.get('tier')} tier", "",
                  f"Budget: claim false failure <= {_sci(budget.get('claim'))}, control miss <= "
                  f"{_sci(budget.get('control'))}.", "",
                  "| claim / control | seeds | runs | failed / missed | bound | from | within budget "
                  "| weakest part | normal, binomial or null model rejected for |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for cid, entry in table["claims"].items():
            for row in (entry["claim"], *entry["controls"].values()):
                who = f"`{cid}`" if row["control"] is None else f"&nbsp;&nbsp;control `{row['control']}`"
                weakest = next((p for p in row["decisions"] if p["name"] == row["weakest"]), None)
                source = weakest["bound_from"] if weakest else "-"
                rejected = [p["name"] for p in row["decisions"]
                            if p["model"] in ("rejected", "over-dispersed", "log-normal rejected", "Cantelli",
                                              "null contradicted", "null unchecked")
                            or (p["model"] == "log-normal" and p.get("scale") != "log")]
                lines.append(f"| {who} | {row['seeds']} | {row['runs']} | {row['failures']} | "
                             f"{_sci(row['bound'])} | {source} | "
                             f"{'yes' if row['within_budget'] else '**no**'} | "
                             f"{cell(row['weakest'] or '-')} | {cell(', '.join(rejected) or '-')} |")
        lines.append("")
    return "\n".join(lines)


def calibrated_seeds(table: dict) -> set[int]:
    """Every seed at which the table's rows were measured."""
    from .sweep import parse_seeds

    return {seed for entry in table.get("claims", {}).values()
            for row in (entry["claim"], *entry["controls"].values()) if row.get("seeds")
            for seed in parse_seeds(row["seeds"])}


def bound_text(row: dict | None) -> str:
    """A row as one phrase: ``false-failure bound 2.1e-05 (50 seeds 1000-1049; within budget
    3e-04)``; controls say ``miss bound``; no row: ``not calibrated``."""
    if row is None:
        return "not calibrated"
    what = "false-failure" if row["control"] is None else "miss"
    verdict = "within" if row["within_budget"] else "OVER"
    return (f"{what} bound {row['bound']:.2g} ({row['runs']} seeds {row['seeds']}; {verdict} "
            f"budget {row['budget']:.0e})")


def attach_bounds(results: dict, table: dict) -> None:
    """Copy the table's rows of the run's claims into its results: ``calibrated`` (the claim's
    row without its per-decision parts) on each claim and each control, when the table is of
    the run's tier and has the row.  A claim row whose decisions are not the run's (a decision
    added, renamed or removed since the calibration run) is marked stale: its
    ``changed_decisions`` name them and its text says so, since its bound no longer describes
    the code.  (A control row holds one summary decision, "fails as declared", so only claim
    rows are compared.)"""
    if table.get("tier") != results.get("tier"):
        return
    for claim in results["claims"]:
        entry = table["claims"].get(claim["id"])
        if entry is None:
            continue
        claim["calibrated"] = _brief(entry["claim"], claim["decisions"])
        for control in claim["controls"]:
            row = entry["controls"].get(control["name"])
            if row is not None:
                control["calibrated"] = _brief(row)


def changed_decisions(row: dict, decisions: list[dict]) -> list[str]:
    """The decision names in the run but not in the row, or in the row but not in the run."""
    return sorted({d["name"] for d in decisions} ^ {p["name"] for p in row["decisions"]})


def _brief(row: dict, decisions: list[dict] | None = None) -> dict:
    changed = changed_decisions(row, decisions) if decisions is not None else []
    stale = f"; STALE, decisions changed since: {', '.join(changed)}" if changed else ""
    return {k: row[k] for k in ("seeds", "runs", "failures", "bound", "budget", "within_budget",
                                "weakest")} | {"changed_decisions": changed,
                                               "text": bound_text(row) + stale}
