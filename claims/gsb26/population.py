r"""gsb26's population loss and its finite-sample versions: the sympy derivation of the closed
form and the softmax average over fresh keys against its limit Sigma K x with the delta method's
covariance (`test_population.py`), and Monte Carlo of the in-sample loss, E Lhat_n - L at
manifold points against the score tail (`test_population.py`, `test_maps.py`).

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Theorem 1 (part 1) and Section 3.
"""
from __future__ import annotations

import numpy as np
import scipy.stats
import sympy as sp
import torch

from theorycheck import shared_run
from theorycheck.batching import map_chunks
from theorycheck.models.attention_regression import (balanced_point, cross_attention_weights, in_sample_loss,
                                                     population_loss)
from theorycheck.solvers.gaussian_moments import softmax_average_covariance_limit
from theorycheck.tails import TailBound, chi_square_z

from .sampling import ROW_MEMORY
from .setup import (KEY_ROWS, TEST_POINT_TAIL, gaussian_rows, haar_rotations, kurtosis_z, score_tail, test_point,
                    well_conditioned)


# ---------------------------------------------------------------- Monte Carlo of the in-sample loss


def _batch_losses(problem, V, K, n, batches, rng, tensor):
    """Lhat_n of ``batches`` fresh training sets of size n with noise-free responses W* x.  The
    losses are computed over chunks of the training sets (`map_chunks`: each set's (n, n) scores
    and attention weights); the draws stay one per call."""
    X = tensor(gaussian_rows(rng, problem.Sigma, (batches, n)))
    W, Vt, Kt = (tensor(a) for a in (problem.W, V, K))
    return map_chunks(lambda X, Y: in_sample_loss(X, Y, Vt, Kt), X, X @ W.T, item_bytes=2 * n * n * X.element_size())


def closed_form_loss(problem, V, K, tensor):
    """L(V, K) = tr(E Sigma E^T) + k sigma^2 of ``problem`` (`population_loss`), placed by ``tensor``."""
    return float(population_loss(*(tensor(a) for a in (V, K, problem.Sigma, problem.W)), problem.noise))


#: the sizes of `out_of_sample`: key counts N, and the queries (each with N fresh keys of its own)
OUT_OF_SAMPLE_SIZES = {"quick": {"keys": [10_000, 100_000], "queries": 200},
                       "full": {"keys": [10_000, 100_000, 1_000_000], "queries": 200}}


def softmax_averages(problem, K, queries, N, rng, tensor, rows=gaussian_rows):
    r"""a(x_i) = sum_j s_j(x_i) x_j, s_j(x_i) = softmax_j(x_j^T K x_i), over N fresh keys of its own
    for each query x_i (``queries`` (Q, d)), the keys drawn by ``rows``, about `ROW_MEMORY` key
    rows at once: the averages (Q, d), and per block of keys its `kurtosis_z` and coordinates."""
    chunk = max(1, ROW_MEMORY // N)
    Kt, averages, kurtosis = tensor(K), [], []
    for i in range(0, len(queries), chunk):
        x = tensor(queries[i:i + chunk])[:, None, :]
        keys = rows(rng, problem.Sigma, (len(x), N))
        kurtosis.append(kurtosis_z(keys, problem.Sigma))
        keys = tensor(keys)
        averages.append((cross_attention_weights(x, keys, Kt) @ keys)[:, 0].cpu().numpy())
    return np.concatenate(averages), np.array(kurtosis)


@shared_run(sizes=OUT_OF_SAMPLE_SIZES)
def out_of_sample(run, *, keys="gaussian"):
    """At the test point (V, K) of the well-conditioned instance: ``queries`` fresh queries x_i ~
    N(0, Sigma) and, per N of the tier's ``keys``, the softmax average of each query over N fresh
    keys of its own drawn from ``keys`` (`KEY_ROWS`), independent over queries and N: "averages"
    (len(keys), Q, d), and the keys' fourth-moment z-scores and coordinates per block."""
    problem = well_conditioned(run.rng("well_conditioned"))
    V, K = test_point(problem, run.rng("test_point"))
    queries = gaussian_rows(run.rng("out_of_sample_queries"), problem.Sigma, (run.sizes["queries"],))
    rng = run.rng("out_of_sample", keys)
    parts = [softmax_averages(problem, K, queries, N, rng, run.tensor, KEY_ROWS[keys]) for N in run.sizes["keys"]]
    kurtosis = np.concatenate([p[1] for p in parts])
    return {"keys": np.array(run.sizes["keys"]), "queries": queries, "averages": np.array([p[0] for p in parts]),
            "key_kurtosis_z": kurtosis[:, 0], "key_coordinates": kurtosis[:, 1].astype(int), "problem": problem,
            "V": V, "K": K, "mu": score_tail(K, problem.Sigma)}


#: a query enters the chi-square test at N when e^{3q} <= N / SKEW_REGIME (q = x^T K^T Sigma K x):
#: the skewness of the weighted key terms behind its softmax average, E w^3 / (E w^2)^{3/2} =
#: e^{3q/2} (w = e^{x_j^T K x}, E w^k = e^{k^2 q/2}), at most 1/10 of sqrt(N), so that the average's
#: delta-method normal law holds at N
SKEW_REGIME = 100.0


def regime_tail(keys, queries, d):
    r"""The stated bound of "a query in the normal regime at every N" for ``queries`` independent
    queries x = Sigma^{1/2} z at the test point: q = ||Sigma^{1/2} K Sigma^{1/2} z||^2 <= mu(K)
    ||z||^2 <= TEST_POINT_TAIL chi2_d, so a query misses the regime at N with probability at most
    P[chi2_d > ln(N / SKEW_REGIME) / (3 TEST_POINT_TAIL)], all of them with its power ``queries``;
    summed over the N of ``keys``."""
    miss = [scipy.stats.chi2(d).sf(np.log(N / SKEW_REGIME) / (3 * TEST_POINT_TAIL)) ** queries for N in keys]
    return TailBound(float(min(1.0, sum(miss))), (
        f"{queries} independent queries a key count N; q = x^T K^T Sigma K x <= mu(K) ||Sigma^(-1/2) x||^2 <= "
        f"{TEST_POINT_TAIL} chi2({d}) (the test point's K is shrunk to mu <= {TEST_POINT_TAIL}); a query is in "
        f"the regime e^(3q) <= N/{SKEW_REGIME:g} unless that chi-square exceeds ln(N/{SKEW_REGIME:g})/(3 "
        f"{TEST_POINT_TAIL}); none of them is with at most that tail to the power {queries}, union over N"))


def limit_z(averages, queries, K, Sigma, target, N):
    r"""(z, queries tested, T/df) of the softmax averages ``averages`` (Q, d) over N keys against
    the limit ``target`` (Q, d).  With Gaussian keys and target Sigma K x_i, sqrt(N) (a(x_i) -
    Sigma K x_i) tends to N(0, C_i), C_i = `softmax_average_covariance_limit`(K x_i, Sigma), so
    T = sum_i N Delta_i^T C_i^{-1} Delta_i over the queries in the regime (`SKEW_REGIME`) is
    chi-square with d times their count degrees of freedom (the queries' keys are independent);
    z is T's probability integral transform to N(0, 1) (`chi_square_z`)."""
    u = queries @ K.T
    tested = np.exp(3 * np.einsum("qi,ij,qj->q", u, Sigma, u)) <= N / SKEW_REGIME
    if not tested.any():
        return np.nan, 0, np.nan
    delta = (averages - target)[tested]
    whitened = np.linalg.solve(softmax_average_covariance_limit(u[tested], Sigma), delta[..., None])[..., 0]
    statistic = N * np.einsum("qi,qi->", delta, whitened)
    return chi_square_z(statistic, delta.size), int(tested.sum()), statistic / delta.size


def _gaussian_moment_identities(d):
    r"""sympy: E[e^{a^T x}] - e^{a^T Sigma a/2} and E[x e^{a^T x}] - Sigma a e^{a^T Sigma a/2} for
    x = L z ~ N(0, L L^T), z standard normal, L lower triangular with symbols.  With c = L^T a
    the expectations factorize over the coordinates of z: sympy integrates the one-dimensional
    moments I0(c) = E e^{c z}, I1(c) = E z e^{c z} against the standard normal density, and
    E e^{a^T x} = prod_i I0(c_i), E x e^{a^T x} = L (I1(c_i) prod_{j != i} I0(c_j))_i.
    Returns the simplified differences (d + 1 expressions)."""
    zeta, c = sp.symbols("zeta c", real=True)
    density = sp.exp(-zeta ** 2 / 2) / sp.sqrt(2 * sp.pi)
    I0 = sp.integrate(sp.exp(c * zeta) * density, (zeta, -sp.oo, sp.oo), conds="none")
    I1 = sp.integrate(zeta * sp.exp(c * zeta) * density, (zeta, -sp.oo, sp.oo), conds="none")
    a = sp.Matrix(sp.symbols(f"a1:{d + 1}", real=True))
    L = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"l{i}{j}", real=True) if j <= i else 0)
    coefficients = L.T * a
    zeroth = [I0.subs(c, ci) for ci in coefficients]
    first = sp.Matrix([I1.subs(c, ci) * sp.prod(zeroth[:i] + zeroth[i + 1:])
                       for i, ci in enumerate(coefficients)])
    Sigma = L * L.T
    mgf = sp.exp((a.T * Sigma * a)[0] / 2)
    differences = [sp.prod(zeroth) - mgf] + list(L * first - Sigma * a * mgf)
    return [sp.simplify(sp.expand(e)) for e in differences]


def _scalar_population_loss_difference(missing_sigma=False):
    r"""sympy, d = k = 1: the population loss as a ratio of Gaussian integrals (x, x' ~ N(0, s),
    eps ~ N(0, sigma^2)) minus the closed form s (v s K - w)^2 + sigma^2, simplified.
    ``missing_sigma``: the closed form without Sigma in the predictor, s (v K - w)^2 + sigma^2."""
    x, xp = sp.symbols("x xp", real=True)
    s, noise = sp.symbols("s sigma", positive=True)
    K, v, w = sp.symbols("K v w", real=True)
    density = sp.exp(-xp ** 2 / (2 * s)) / sp.sqrt(2 * sp.pi * s)
    numerator = sp.integrate(xp * sp.exp(xp * K * x) * density, (xp, -sp.oo, sp.oo), conds="none")
    denominator = sp.integrate(sp.exp(xp * K * x) * density, (xp, -sp.oo, sp.oo), conds="none")
    prediction = sp.simplify(v * numerator / denominator)
    loss = sp.integrate(((w * x - prediction) ** 2 + noise ** 2) * sp.exp(-x ** 2 / (2 * s))
                        / sp.sqrt(2 * sp.pi * s), (x, -sp.oo, sp.oo), conds="none")
    closed = s * ((v * K if missing_sigma else v * s * K) - w) ** 2 + noise ** 2
    return sp.simplify(sp.expand(loss - closed))


@shared_run(sizes={"quick": {}, "full": {}}, seeded=False)
def symbolic_closed_form(run, *, missing_sigma=False):
    """The sympy derivations behind the closed form, as strings of the simplified differences
    ("0" where the identity holds): the d = 2 moment identities and the d = k = 1 loss."""
    differences = _gaussian_moment_identities(2)
    return {"mgf": str(differences[0]), "first_moment": [str(e) for e in differences[1:]],
            "scalar_loss": str(_scalar_population_loss_difference(missing_sigma))}


# --- the finite-n gap against the score tail mu (issue 25, `test_maps.py`): E Lhat_n - L at a
# minimizer of L, where the gap is E||W* x_i - V a_i||^2 >= 0 (no sign change, unlike at the
# generic test point (`setup.test_point`), whose 1/n coefficient changes sign as K is scaled).


def manifold_point_with_tail(problem, R, tail):
    r"""(problem', V, K): the balanced point theta_R = (U D^{1/2} R, Sigma^{-1} R^T D^{1/2} V_W^T)
    of ``problem`` with W* rescaled to c W*, c chosen so that mu(K) = ||Sigma^{1/2} K
    Sigma^{1/2}||^2 = ``tail``.  On the manifold V and K scale like sqrt(c), so mu is linear in c
    (one rescaling, from Sigma, W* and R only)."""
    _, K = balanced_point(torch.as_tensor(problem.W), torch.as_tensor(problem.Sigma), torch.as_tensor(R))
    scaled = problem.scaled(tail / score_tail(K.numpy(), problem.Sigma))
    V, K = balanced_point(torch.as_tensor(scaled.W), torch.as_tensor(scaled.Sigma), torch.as_tensor(R))
    return scaled, V.numpy(), K.numpy()


def noise_free_loss_groups(problem, V, K, n, groups, batches, rng, tensor):
    r"""``groups`` independent group means, each over ``batches`` fresh training sets of size n, of
    the in-sample loss with noise-free responses y = W* x (every training covariate a query and
    all n a key, self included).  With y = W* x + eps the loss adds 2 <eps_i, W* x_i - V a_i> +
    ||eps_i||^2, whose mean given the covariates is k sigma^2 exactly (a_i depends on the
    covariates only): E Lhat_n = mean + k sigma^2, with less variance."""
    return np.array([float(_batch_losses(problem, V, K, n, batches, rng, tensor).mean())
                     for _ in range(groups)])


#: the sizes of `manifold_gap`: n grid (the quick grid of `thm1.closed_form`), covariate rows per
#: n (split over the groups), independent replicate groups per n
MANIFOLD_GAP_SIZES = {"quick": {"ns": [16, 32, 64], "rows": 50000, "groups": 10},
                      "full": {"ns": [16, 32, 64, 128, 256], "rows": 400000, "groups": 10}}


@shared_run(sizes=MANIFOLD_GAP_SIZES)
def manifold_gap(run, *, tail, rows=None, groups=None):
    r"""E Lhat_n - k sigma^2 by Monte Carlo at the manifold point theta_R0 (R0 the Haar rotation of
    `softmax_row_moments`) of the well-conditioned instance with W* rescaled so that mu(K) =
    ``tail`` (`manifold_point_with_tail`): per n of ``ns``, ``groups`` independent group means
    of the noise-free in-sample loss (`noise_free_loss_groups`, rows/(n groups) training sets
    each).  Returns n, the group means "losses" (len(ns), groups), the instance, V, K, mu.
    ``rows`` and ``groups`` override the tier's sizes."""
    base = well_conditioned(run.rng("well_conditioned"))
    R0 = haar_rotations(run.rng("softmax_point"), base.d, 1)[0]
    problem, V, K = manifold_point_with_tail(base, R0, tail)
    rng = run.rng("manifold_gap", tail)
    rows, groups = rows or run.sizes["rows"], groups or run.sizes["groups"]
    losses = np.array([noise_free_loss_groups(problem, V, K, n, groups, max(rows // (n * groups), 2), rng, run.tensor)
                       for n in run.sizes["ns"]])
    return {"n": np.array(run.sizes["ns"]), "losses": losses, "problem": problem, "V": V, "K": K,
            "mu": score_tail(K, problem.Sigma)}


#: the sizes of `manifold_gap_instances`: the n grid of `manifold_gap`, independent draws of the
#: recipe, covariate rows per n and instance (split over the groups) and replicate groups per n and
#: instance.  The quick tier's rows: 8 instances at the cost of `manifold_gap`'s one instance of
#: 5 10^4 rows (the Monte Carlo of one row costs about n; the instances' set-up, the rest)
MANIFOLD_INSTANCE_SIZES = {"quick": {"ns": [16, 32, 64], "instances": 8, "rows": 3000, "groups": 10},
                           "full": {"ns": [16, 32, 64, 128, 256], "instances": 8, "rows": 50000, "groups": 10}}


@shared_run(sizes=MANIFOLD_INSTANCE_SIZES)
def manifold_gap_instances(run, *, tail, rows=None):
    r"""`manifold_gap` on ``instances`` independent draws of the well-conditioned recipe side by
    side (the first the seed's own draw, that of `manifold_gap`; the others' streams -- instance,
    rotation, Monte Carlo -- keyed by their number): per instance W* rescaled so that mu(K) =
    ``tail`` at its manifold point theta_R0 (`manifold_point_with_tail`), and per n of ``ns``
    ``groups`` group means of the noise-free in-sample loss (`noise_free_loss_groups`) over
    ``rows``/(n groups) training sets (``rows`` overrides the tier's), the instances' training
    sets drawn from their own streams and batched along a leading axis.  Returns n, "losses"
    (instances, len(ns), groups), the problems, V and K (instances, ...) and mu per instance."""
    s = run.sizes
    keys = [()] + [(i,) for i in range(1, s["instances"])]
    bases = [well_conditioned(run.rng("well_conditioned", *key)) for key in keys]
    points = [manifold_point_with_tail(base, haar_rotations(run.rng("softmax_point", *key), base.d, 1)[0], tail)
              for key, base in zip(keys, bases)]
    problems = [problem for problem, _, _ in points]
    V, K = (run.tensor(np.stack([point[j] for point in points])) for j in (1, 2))
    mu = np.array([score_tail(point[2], point[0].Sigma) for point in points])
    rngs = [run.rng("manifold_gap", tail, *key) for key in keys]
    W, V, K = (a[:, None, None] for a in (run.tensor(np.stack([p.W for p in problems])), V, K))
    losses = []
    for n in s["ns"]:
        shape = (s["groups"], max((rows or s["rows"]) // (n * s["groups"]), 2), n)
        X = run.tensor(np.stack([gaussian_rows(rng, p.Sigma, shape) for p, rng in zip(problems, rngs)]))
        losses.append(map_chunks(lambda X, W, V, K: in_sample_loss(X, X @ W.transpose(-1, -2), V, K).mean(-1),
                                 X, W, V, K, item_bytes=2 * shape[0] * shape[1] * n * n * X.element_size()))
    return {"n": np.array(s["ns"]), "losses": torch.stack(losses, 1).cpu().numpy(), "problems": problems,
            "V": V[:, 0, 0].cpu().numpy(), "K": K[:, 0, 0].cpu().numpy(), "mu": mu}
