r"""gsb26's softmax row over Gaussian keys: Monte Carlo of the weights and the output of one row
for fixed queries, their exact moments and the finite-n constant of Lemma 11
(`test_sampling.py`).

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Lemmas 9 and 11.  Monte Carlo over fresh key
sets for fixed queries, batched along leading dimensions.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import torch

from theorycheck import shared_run
from theorycheck.models.attention_regression import balanced_point, cross_attention_weights
from theorycheck.solvers.gaussian_moments import (softmax_average_mse_exact, softmax_weight_average_moments_exact,
                                                  softmax_weight_power_moments_exact,
                                                  softmax_weight_second_moment_bound,
                                                  softmax_weight_second_moments_exact)
from theorycheck.tails import mean_deviation_bound

from .setup import (KEY_ROWS, LIGHT_TAIL, decide_recipe, gaussian_precondition, gaussian_rows, haar_rotations, kurtosis_z,
                    light_tail_bound, record_assumptions, score_tail, well_conditioned)


def softmax_row_statistics(problem, K, queries, n, batches, rng, rows=gaussian_rows):
    r"""Monte Carlo over ``batches`` fresh key sets for each fixed query x_i (``queries`` (Q, d)):
    the keys are x_i itself and n - 1 fresh rows drawn by ``rows`` (default N(0, Sigma)), weights s_ij = softmax_j(x_j^T K x_i).
    Returns per query the means and standard errors of s_ii^2, of the average over j != i of
    s_ij^2 (the same expectation for every j != i by exchangeability) and of
    ||a_i - Sigma K x_i||^2, the mean of a_i (Q, d), and the fresh keys' `kurtosis_z` and its
    number of coordinates."""
    Q = len(queries)
    fresh = rows(rng, problem.Sigma, (Q, batches, n - 1))
    key_kurtosis_z, key_coordinates = kurtosis_z(fresh, problem.Sigma)
    fresh = torch.as_tensor(fresh)
    x = torch.as_tensor(queries)
    keys = torch.cat([x[:, None, None, :].expand(Q, batches, 1, problem.d), fresh], 2)
    weights = cross_attention_weights(x[:, None, None, :], keys, torch.as_tensor(K))[:, :, 0]  # (Q, B, n)
    outputs = (weights[..., None] * keys).sum(2)                                                 # (Q, B, d)
    target = x @ torch.as_tensor(problem.Sigma @ K).T
    samples = {"self": weights[..., 0] ** 2, "other": (weights[..., 1:] ** 2).mean(-1),
               "mse": ((outputs - target[:, None]) ** 2).sum(-1)}
    stats = {name: (v.mean(1).numpy(), (v.std(1) / np.sqrt(batches)).numpy()) for name, v in samples.items()}
    stats["output_mean"] = outputs.mean(1).numpy()
    stats["key_kurtosis_z"] = np.array([key_kurtosis_z])
    stats["key_coordinates"] = np.array([key_coordinates])
    return stats


#: key rows held in memory at once by `softmax_row_moments` (3 doubles each)
ROW_MEMORY = 2000000


def _concatenate_queries(parts):
    """Join `softmax_row_statistics` results of consecutive query blocks."""
    joined = {name: tuple(np.concatenate([p[name][i] for p in parts]) for i in range(2))
              for name in ("self", "other", "mse")}
    return joined | {name: np.concatenate([p[name] for p in parts]) for name in ("output_mean", "key_kurtosis_z", "key_coordinates")}


#: the numbers of keys n of the softmax rows, per tier
ROW_KEYS = {"quick": [10, 20, 40, 80, 160, 320], "full": [10, 20, 40, 80, 160, 320, 640, 1280]}
#: the number of keys at which the limits are checked on the exact moments (quadrature): the
#: relative deviation from the limit is O(1/n) with a constant below 3e4 for q <= 5 (at
#: n = 1e6 it is at most 0.03 for q = 5), so at 1e9 it is below 1e-4, a tenth of the claims' tolerance
LIMIT_KEYS = 10**9


def row_point(run, tail=None):
    """(the well-conditioned instance, K at its manifold point theta_R0), ``tail``: K rescaled so
    that mu(K) = ||Sigma^{1/2} K Sigma^{1/2}||^2 = tail."""
    problem = well_conditioned(run.rng("well_conditioned"))
    R0 = haar_rotations(run.rng("softmax_point"), problem.d, 1)[0]
    _, K = (a.numpy() for a in balanced_point(torch.as_tensor(problem.W), torch.as_tensor(problem.Sigma),
                                              torch.as_tensor(R0)))
    if tail is not None:
        K = K * np.sqrt(tail / score_tail(K, problem.Sigma))
    return problem, K


def fixed_queries(rng, problem, K, count, query_q=None):
    """``count`` fixed queries x_i ~ N(0, Sigma) (``query_q``: each rescaled to the score variance
    q = x_i^T K^T Sigma K x_i = query_q)."""
    queries = gaussian_rows(rng, problem.Sigma, (count,))
    if query_q is None:
        return queries
    u = queries @ K.T
    return queries * np.sqrt(query_q / np.einsum("qi,ij,qj->q", u, problem.Sigma, u))[:, None]


@shared_run(sizes={"quick": {"ns": ROW_KEYS["quick"], "queries": 6, "rows": 200000},
                   "full": {"ns": ROW_KEYS["full"], "queries": 20, "rows": 2000000}})
def softmax_row_moments(run, *, tail=None, keys="gaussian", query_q=None):
    r"""`softmax_row_statistics` at the manifold point theta_R0 of the well-conditioned instance
    (`row_point`) for ``queries`` fixed x_i ~ N(0, Sigma) (`fixed_queries`) and n over ``ns``,
    rows/n key sets per (query, n), the fresh keys drawn from ``keys`` (`KEY_ROWS`: "gaussian",
    or "uniform" with the same covariance)."""
    problem, K = row_point(run, tail)
    queries = fixed_queries(run.rng("softmax_queries"), problem, K, run.sizes["queries"], query_q)
    rng = run.rng("softmax_rows", tail)
    chunk = max(1, ROW_MEMORY // run.sizes["rows"])      # queries per tensor: ~ROW_MEMORY rows at once
    per_n = [_concatenate_queries([softmax_row_statistics(problem, K, queries[i:i + chunk], n,
                                                          run.sizes["rows"] // n, rng, KEY_ROWS[keys])
                                   for i in range(0, len(queries), chunk)]) for n in run.sizes["ns"]]
    stack = {name: tuple(np.array([s[name][i] for s in per_n]) for i in range(2))
             for name in ("self", "other", "mse")}
    return {"n": np.array(run.sizes["ns"]), **stack, "output_mean": np.array([s["output_mean"] for s in per_n]),
            **{name: np.concatenate([s[name] for s in per_n]) for name in ("key_kurtosis_z", "key_coordinates")},
            "queries": queries, "K": K, "problem": problem, "mu": score_tail(K, problem.Sigma)}


#: the numbers of keys beyond the Monte Carlo's grid at which `attention_output_exact` evaluates
#: Lemma 11's expectation as well: the lemma bounds it at every n, and quadrature costs the same at
#: any n (the last is `LIMIT_KEYS`)
EXACT_KEYS_BEYOND = [10**3, 10**4, 10**5, 10**6, LIMIT_KEYS]


@shared_run(sizes={"quick": {"ns": ROW_KEYS["quick"], "queries": 40}, "full": {"ns": ROW_KEYS["full"], "queries": 100}})
def attention_output_exact(run, *, query_q=None):
    r"""Lemma 11's expectation E||a_i - Sigma K x_i||^2 exactly (`softmax_average_mse_exact`, by
    quadrature: no Monte Carlo) at every n of ``ns`` and of `EXACT_KEYS_BEYOND` (``n``, ascending,
    ending at `LIMIT_KEYS`; ``row_n`` the tier's grid), for ``queries`` fixed x_i ~ N(0, Sigma) of
    their own (`fixed_queries`, ``query_q`` as there) at the point of `softmax_row_moments`
    (`row_point`): the queries are independent instances of the lemma's statement, as many as a
    binomial over them needs at a quadrature's cost (a few milliseconds a query)."""
    problem, K = row_point(run)
    queries = fixed_queries(run.rng("exact_queries"), problem, K, run.sizes["queries"], query_q)
    n = np.array(sorted({*run.sizes["ns"], *EXACT_KEYS_BEYOND}))
    mse = np.array([softmax_average_mse_exact(x, K @ x, problem.Sigma, n) for x in queries]).T
    return {"n": n, "row_n": np.array(run.sizes["ns"]), "queries": queries, "K": K, "problem": problem, "mse": mse}


#: the Gaussian-keys hypothesis (`gaussian_precondition`: the keys' fourth-moment z-scores, one per n
#: and query block)
GAUSSIAN_KEYS = "Gaussian keys: |excess kurtosis z| within the level-1e-5 critical value"


def row_run(tc, **config):
    """`softmax_row_moments` with ``config`` and the lemmas' hypotheses: A1-A3 of the recipe and at
    least 3 keys at every n of the tier, decided from the configuration before the run; A2's
    sigma_d(W*) > 0, light score tails (with its stated bound `light_tail_bound`, which holds for
    every case that keeps the recipe's K: mu depends on K and Sigma alone, not on the keys drawn)
    and Gaussian keys on its numbers after."""
    decide_recipe(tc, well_conditioned)
    tc.precondition.at_least("at least 3 keys", softmax_row_moments.sizes_of(tc.tier)["ns"], 3)
    run = tc.use(softmax_row_moments, **config)
    record_assumptions(tc, run["problem"])
    # mu(K) <= kappa sigma_1 <= A3_TARGET at the manifold point (`light_tail_bound`); a K rescaled to
    # a configured tail is the configuration's
    stated = None if config.get("tail") is not None else light_tail_bound(well_conditioned)
    tc.precondition.at_most("light score tails: mu(K) < 1/2", run["mu"], LIGHT_TAIL, tail_bound=stated)
    gaussian_precondition(tc, GAUSSIAN_KEYS, run["key_kurtosis_z"], run["key_coordinates"],
                          drawn_gaussian=config.get("keys", "gaussian") == "gaussian")
    tc.record("mu(K)", run["mu"])
    return run


def exact_second_moments(q, tau, ns):
    """(E s_ij^2, E s_ii^2) exactly, (len(ns), queries) each."""
    values = np.array([[softmax_weight_second_moments_exact(qj, tj, int(n)) for qj, tj in zip(q, tau)] for n in ns])
    return values[..., 0], values[..., 1]


#: the highest power of X whose exact moment enters `second_moment_deviations` (orders 2..12 of
#: the mean's central moments: about 7 standard errors at a level near 1e-6 per statistic, where
#: order 8 gives 10.5 and the fourth order alone 45; Lemma 9's record says which block chose it)
DEVIATION_ORDER = 12
#: a central moment of X computed from the raw moments is kept only while its magnitude exceeds
#: this multiple of its cancellation error (the raw moments' relative accuracy RAW_MOMENT_ACCURACY,
#: ten times the quadrature's step-halving change, times the largest term of the binomial sum): a
#: concentrated X (small q, large n) loses its high orders, which only weakens the bound
#: (mean_deviation_bound takes the least over the even orders it is given)
CANCELLATION_FACTOR = 1e3
RAW_MOMENT_ACCURACY = 1e-12


def _reliable_central_moments(raw):
    """The central moments of orders 2..K of X from its raw moments ``raw`` (E X^0..E X^K), up
    to the last order whose value clears its cancellation error (`CANCELLATION_FACTOR`).  Where
    even the variance does not (an X concentrated to relative spread ~1e-4 or less: a query of
    tiny score variance q), an upper bound on it instead, its computed magnitude plus the raw
    moments' error (`RAW_MOMENT_ACCURACY` times the terms' magnitudes), so that the deviation
    bound is Chebyshev's on that bound: weak, but proven."""
    mean = raw[1]
    central = []
    for r in range(2, len(raw)):
        terms = [math.comb(r, j) * raw[j] * (-mean) ** (r - j) for j in range(r + 1)]
        value = math.fsum(terms)
        if abs(value) <= CANCELLATION_FACTOR * RAW_MOMENT_ACCURACY * max(abs(v) for v in terms):
            if r == 2:
                central.append(abs(value) + RAW_MOMENT_ACCURACY * math.fsum(abs(v) for v in terms))
            break
        central.append(value)
    return central


@functools.lru_cache(maxsize=1024)
def second_moment_deviations(q, tau, ns, draws, level):
    r"""``(len(ns), 2)``: per number of keys n of ``ns`` (a tuple) with ``draws`` key sets (a tuple),
    deviations (t_other, t_own) with P[|mean of the draws' X - E X| >= t] <= ``level`` for X the
    mean over the n - 1 fresh keys of s_ij^2 (`softmax_row_statistics`' "other") and for X =
    s_ii^2, the fixed key of score ``tau``: Markov's inequality on the mean's exact even central
    moments up to order `DEVIATION_ORDER` (`theorycheck.tails.mean_deviation_bound`), from the
    exact moments E X .. E X^12 (`softmax_weight_average_moments_exact`,
    `softmax_weight_power_moments_exact`).  No central limit theorem: the bound holds in the far
    tail of a skewed mean.  Cached: the claim and its controls share the instance's queries (a
    control's keys change the Monte Carlo, not E X)."""
    others = softmax_weight_average_moments_exact(q, tau, list(ns), DEVIATION_ORDER)
    powers = 2 * np.arange(1, DEVIATION_ORDER + 1)
    return np.array([[mean_deviation_bound(_reliable_central_moments([1.0, *moments]), m, level)
                      for moments in (other, softmax_weight_power_moments_exact(q, tau, n, powers, self_weight=True))]
                     for n, m, other in zip(ns, draws, others)])


def query_directions(run):
    """u = K x_i per query, q = u^T Sigma u and tau = x_i^T K x_i."""
    u = run["queries"] @ run["K"].T
    q = np.einsum("qi,ij,qj->q", u, run["problem"].Sigma, u)
    return u, q, np.einsum("qi,qi->q", run["queries"], u)


def self_key_constant(run, limit):
    r"""C_n = n (sqrt(C/(n-1)) + sqrt(min(1, b_n)) ||x_i - Sigma K x_i||)^2 per (n, query): the
    finite-n constant of Lemma 11 with the query's own key.  a_i - m = (1 - s_ii)(abar - m) +
    s_ii (x_i - m), abar the softmax average over the n - 1 fresh keys (E||abar - m||^2 ~
    C/(n-1), the delta-method limit ``limit``), s_ii the self weight with E s_ii^2 <= b_n, the
    AM-GM bound of Lemma 9 (`softmax_weight_second_moment_bound`, self_weight=True; s_ii <= 1);
    Cauchy-Schwarz on the cross term.  The self term is O(1/n) relative to C but large for a
    query with a large self score tau = x_i^T K x_i."""
    u, q, tau = query_directions(run)
    m = u @ run["problem"].Sigma.T
    offset = np.linalg.norm(run["queries"] - m, axis=-1)
    n = run["n"][:, None]
    self_moment = np.minimum(1.0, np.array([softmax_weight_second_moment_bound(q, tau, k, self_weight=True)
                                            for k in run["n"]]))
    return n * (np.sqrt(limit / (n - 1)) + np.sqrt(self_moment) * offset) ** 2
