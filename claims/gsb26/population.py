r"""gsb26's population loss and its finite-sample versions: the sympy derivation of the closed
form, the attention output against the closed-form predictor as the keys grow, and Monte Carlo
of the in-sample loss, E Lhat_n - L at a fixed point (`test_population.py`) and at a manifold
point against the score tail (`test_maps.py`).

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Theorem 1 (part 1) and Section 3.
"""
from __future__ import annotations

import numpy as np
import sympy as sp
import torch

from theorycheck import shared_run
from theorycheck.batching import map_chunks
from theorycheck.models.attention_regression import balanced_point, in_sample_loss, population_loss, predictor

from .setup import gaussian_rows, haar_rotations, score_tail, test_point, well_conditioned


# ---------------------------------------------------------------- Monte Carlo of the in-sample loss


def _batch_losses(problem, V, K, n, batches, rng, tensor, noise=True):
    """Lhat_n of ``batches`` fresh training sets of size n (``noise=False``: responses W* x
    without noise, no noise drawn).  The losses are computed over chunks of the training sets
    (`map_chunks`: each set's (n, n) scores and attention weights, about 8 GiB for the full
    tier's 1953 sets at n = 512 in one batch); the draws stay one per call."""
    X = tensor(gaussian_rows(rng, problem.Sigma, (batches, n)))
    W, Vt, Kt = (tensor(a) for a in (problem.W, V, K))
    Y = X @ W.T
    if noise:
        Y = Y + tensor(problem.noise * rng.standard_normal((batches, n, problem.k)))
    return map_chunks(lambda X, Y: in_sample_loss(X, Y, Vt, Kt), X, Y, item_bytes=2 * n * n * X.element_size())


def expected_in_sample_loss(problem, V, K, n, rows, rng, tensor, *, chunk=4000):
    """(mean, standard error) of Lhat_n over rows/n independent training sets of size n, the
    samples placed by ``tensor`` (the run's device and dtype)."""
    batches = max(rows // n, 2)
    values = torch.cat([_batch_losses(problem, V, K, n, min(chunk, batches - s), rng, tensor)
                        for s in range(0, batches, chunk)])
    return float(values.mean()), float(values.std() / np.sqrt(batches))


def closed_form_loss(problem, V, K, tensor):
    """L(V, K) = tr(E Sigma E^T) + k sigma^2 of ``problem`` (`population_loss`), placed by ``tensor``."""
    return float(population_loss(*(tensor(a) for a in (V, K, problem.Sigma, problem.W)), problem.noise))


@shared_run(sizes={"quick": {"ns": [16, 32, 64], "rows": 200000},
                   "full": {"ns": [16, 32, 64, 128, 256, 512], "rows": 1000000}})
def in_sample_gap(run):
    """E Lhat_n - L at a fixed theta of the well-conditioned instance, n over ``ns``, by Monte
    Carlo."""
    problem = well_conditioned(run.rng("well_conditioned"))
    V, K = test_point(problem, run.rng("test_point"))
    L = closed_form_loss(problem, V, K, run.tensor)
    rng = run.rng("in_sample_gap", "attention")
    stats = [expected_in_sample_loss(problem, V, K, n, run.sizes["rows"], rng, run.tensor)
             for n in run.sizes["ns"]]
    return {"n": np.array(run.sizes["ns"]), "mean": np.array([s[0] for s in stats]),
            "se": np.array([s[1] for s in stats]), "L": L, "mu": score_tail(K, problem.Sigma),
            "problem": problem, "V": V, "K": K}


def out_of_sample_error(problem, V, K, closed_form, keys, queries, reps, rng, tensor):
    """Mean over ``reps`` of ||f(x; X_N) - P x|| over ``queries`` fresh x with N = ``keys``
    fresh keys, P = ``closed_form`` (k, d) (V Sigma K); tensors placed by ``tensor``."""
    Vt, Kt, P = (tensor(a) for a in (V, K, closed_form))
    errors = []
    for _ in range(reps):
        keys_x = tensor(gaussian_rows(rng, problem.Sigma, (keys,)))
        x = tensor(gaussian_rows(rng, problem.Sigma, (queries,)))
        errors.append((predictor(x, keys_x, Vt, Kt) - x @ P.T).norm(dim=-1).mean())
    return float(torch.stack(errors).mean())


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


@shared_run(sizes={"quick": {"keys": [1000, 10000, 100000], "queries": 20, "instances": 10},
                   "full": {"keys": [1000, 10000, 100000, 1000000], "queries": 50, "instances": 20}})
def out_of_sample(run, *, transposed=False):
    """(N, mean ||f(x; X_N) - P x||) at the test point of `in_sample_gap`, N fresh keys, P the
    closed-form predictor V Sigma K (``transposed``: the other orientation V Sigma K^T)."""
    problem = well_conditioned(run.rng("well_conditioned"))
    V, K = test_point(problem, run.rng("test_point"))
    closed_form = V @ problem.Sigma @ (K.T if transposed else K)
    rng = run.rng("out_of_sample", transposed)
    keys = np.array(run.sizes["keys"])
    return keys, np.array([out_of_sample_error(problem, V, K, closed_form, N, run.sizes["queries"],
                                               run.sizes["instances"], rng, run.tensor) for N in keys])


# --- the finite-n gap against the score tail mu (issue 25, `test_maps.py`): E Lhat_n - L at a
# minimizer of L, where the gap is E||W* x_i - V a_i||^2 >= 0 (no sign change, unlike at the
# generic test point of `in_sample_gap`, whose 1/n coefficient changes sign as K is scaled).


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
    return np.array([float(_batch_losses(problem, V, K, n, batches, rng, tensor, noise=False).mean())
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


def manifold_gap_means(manifold, tensor):
    r"""A `manifold_gap` run in `in_sample_gap`'s form: per n, E Lhat_n = the mean of the replicate
    group means plus k sigma^2 (the noise integrated out), its standard error over the groups, and
    L by the closed form (k sigma^2 up to round-off at the manifold point)."""
    losses, problem = manifold["losses"], manifold["problem"]
    return {"n": manifold["n"], "mean": losses.mean(1) + problem.optimum,
            "se": losses.std(1, ddof=1) / np.sqrt(losses.shape[1]),
            "L": closed_form_loss(problem, manifold["V"], manifold["K"], tensor), "mu": manifold["mu"],
            "problem": problem, "V": manifold["V"], "K": manifold["K"]}
