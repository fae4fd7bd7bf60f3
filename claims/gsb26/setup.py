r"""Set-up of the gsb26 claims: instances, assumptions, Monte Carlo estimators and shared runs.

Paper: G. Goel, M. Soltanolkotabi, P. Bartlett, "Training Dynamics of Softmax Self-Attention:
Fast Global Convergence via Preconditioning", arXiv 2603.01514 (v1, 2026).  Model: single-head
softmax self-attention regression (`theorycheck.models.attention_regression`), x ~ N(0, Sigma),
y = W* x + eps, eps ~ N(0, sigma^2 I_k).

Instances (the paper's sizes and formulas for Sigma, W* are lost; Appendix A says only that
Sigma and W* are built from Gaussian matrices A (d x d), B (k x d) "satisfying A1-A3"):

* ``well_conditioned`` (the reconstruction's I1 recipe): Sigma = (A A^T/d + I)/lambda_max,
  W* = c B/||B||, sigma = 0.1, d = 3, k = 4, c = 0.2.
* ``ill_conditioned`` (I2 recipe): Sigma = Q diag(geomspace(lo, hi, d)) Q^T, Q Haar.

Both are drawn from the paper-wide stream (``run.rng`` / ``tc.rng`` of the paper scope) so that
they follow ``--tc-seed``.

Assumptions: A1 Sigma > 0; A2 k >= d and sigma_d(W*) > 0; A3 (exact form lost) is taken in
the computable form the proofs use (Lemma 7): the softmax scores of theta near the manifold
have light tails, mu(K) = ||Sigma^{1/2} K Sigma^{1/2}||^2 < 1/2 (so E exp(2 x^T K^T Sigma K x)
is finite); on the manifold mu <= kappa(Sigma) sigma_1(W*), so kappa sigma_1 <= 0.5 suffices.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.stats
import sympy as sp
import torch

from theorycheck import shared_run
from theorycheck.models.attention_regression import (
    PopulationAttentionRegression,
    balanced_point,
    in_sample_loss,
    ols_estimate,
    population_loss,
    predictor,
    sample_covariance,
)
from theorycheck.optim import Preconditioned, run_trajectory
from theorycheck.solvers import local_constants, project_to_manifold

NOISE = 0.1
#: the light-tail threshold of A3 in its Lemma-7 form: mu = ||Sigma^{1/2} K Sigma^{1/2}||^2 < 1/2
LIGHT_TAIL = 0.5


@dataclass(frozen=True)
class Problem:
    """Sigma (d, d), W* (k, d) and the noise level sigma of one regression instance."""

    Sigma: np.ndarray
    W: np.ndarray
    noise: float = NOISE

    @property
    def d(self):
        return self.Sigma.shape[0]

    @property
    def k(self):
        return self.W.shape[0]

    @property
    def optimum(self):
        """L* = k sigma^2."""
        return self.k * self.noise ** 2

    def singular_values(self):
        return np.linalg.svd(self.W, compute_uv=False)

    def covariance_eigenvalues(self):
        return np.linalg.eigvalsh(self.Sigma)

    def a3_product(self):
        """kappa(Sigma) sigma_1(W*), the scale condition of A3."""
        ev = self.covariance_eigenvalues()
        return ev[-1] / ev[0] * self.singular_values()[0]

    def scaled(self, c):
        """The same instance with W* -> c W*."""
        return Problem(self.Sigma, c * self.W, self.noise)


#: kappa(Sigma) sigma_1(W*) of the recipe's instances (A3 with room to spare)
A3_TARGET = 0.45


def well_conditioned(rng, d=3, k=4, scale=0.2):
    """Sigma = (A A^T/d + I)/lambda_max, W* = c B/||B|| (A, B standard Gaussian) with
    c = min(scale, A3_TARGET/kappa(Sigma)): the paper's instances "satisfy A1-A3", so the
    scale is chosen from Sigma alone (never from an outcome) to keep kappa sigma_1 <= 0.45."""
    A = rng.standard_normal((d, d))
    Sigma = A @ A.T / d + np.eye(d)
    ev = np.linalg.eigvalsh(Sigma)
    B = rng.standard_normal((k, d))
    c = min(scale, A3_TARGET * ev[0] / ev[-1])
    return Problem(Sigma / ev[-1], c * B / np.linalg.norm(B, 2))


def ill_conditioned(rng, d=3, k=4, scale=0.2, spectrum=(0.1, 1.0)):
    """Sigma = Q diag(geomspace(*spectrum, d)) Q^T (Q Haar), W* = scale B/||B||."""
    Q = scipy.stats.ortho_group.rvs(d, random_state=rng)
    Sigma = Q @ np.diag(np.geomspace(*spectrum, d)) @ Q.T
    B = rng.standard_normal((k, d))
    return Problem((Sigma + Sigma.T) / 2, scale * B / np.linalg.norm(B, 2))


def score_tail(K, Sigma):
    r"""mu(K) = ||Sigma^{1/2} K Sigma^{1/2}||^2 (light tails of the softmax scores iff < 1/2)."""
    root = scipy.linalg.sqrtm(Sigma).real
    return float(np.linalg.norm(root @ K @ root, 2) ** 2)


def record_assumptions(tc, problem: Problem, *, a3=True):
    """A1, A2 and (``a3``) the A3 scale condition as preconditions.  Statements about the
    geometry of the manifold (projection, singular values) do not use A3: pass a3=False."""
    tc.precondition.at_least("A1: lambda_min(Sigma) > 0", problem.covariance_eigenvalues()[0], 0.0)
    tc.precondition.holds("A2: k >= d and sigma_d(W*) > 0",
                          problem.k >= problem.d and problem.singular_values()[-1] > 0)
    if a3:
        tc.precondition.at_most("A3: kappa(Sigma) sigma_1(W*) <= 1/2", problem.a3_product(), LIGHT_TAIL)
    tc.record("kappa(Sigma) sigma_1(W*)", problem.a3_product())


def regularized_model(problem: Problem, lam, tensor=torch.as_tensor):
    """L_reg = L + lam R(.; Sigma) of ``problem`` as a one-trial model (for Hessians), its data
    placed by ``tensor`` (a run's or claim's ``tensor``)."""
    return PopulationAttentionRegression(tensor(problem.Sigma)[None], tensor(problem.W)[None],
                                         problem.noise, lam)


def haar_rotations(rng, d, count):
    """``count`` Haar-random R in O(d), the first with det = +1 and the second with det = -1."""
    Rs = scipy.stats.ortho_group.rvs(d, size=count, random_state=rng).reshape(count, d, d)
    flip = np.diag([1.0] * (d - 1) + [-1.0])
    for i, sign in [(0, 1), (1, -1)]:
        if i < count and np.linalg.det(Rs[i]) * sign < 0:
            Rs[i] = Rs[i] @ flip
    return Rs


def gaussian_rows(rng, Sigma, shape):
    """Rows x ~ N(0, Sigma) of shape (*shape, d)."""
    L = np.linalg.cholesky(Sigma)
    return rng.standard_normal((*shape, Sigma.shape[0])) @ L.T


# ---------------------------------------------------------------- Monte Carlo of the in-sample loss


def _batch_losses(problem, V, K, n, batches, rng, estimator, tensor):
    X = tensor(gaussian_rows(rng, problem.Sigma, (batches, n)))
    E = tensor(problem.noise * rng.standard_normal((batches, n, problem.k)))
    W, Vt, Kt = (tensor(a) for a in (problem.W, V, K))
    Y = X @ W.T + E
    if estimator == "attention":
        return in_sample_loss(X, Y, Vt, Kt)
    # the sample average of the population predictor's loss: mean exactly L
    residual = Y - X @ (Vt @ tensor(problem.Sigma) @ Kt).T
    return (residual * residual).sum(-1).mean(-1)


def expected_in_sample_loss(problem, V, K, n, rows, rng, tensor, *, estimator="attention", chunk=4000):
    """(mean, standard error) of Lhat_n over rows/n independent training sets of size n, the
    samples placed by ``tensor`` (the run's device and dtype)."""
    batches = max(rows // n, 2)
    values = torch.cat([_batch_losses(problem, V, K, n, min(chunk, batches - s), rng, estimator, tensor)
                        for s in range(0, batches, chunk)])
    return float(values.mean()), float(values.std() / np.sqrt(batches))


def test_point(problem, rng):
    """A fixed theta away from the manifold: V = 0.5 Z1, K = 0.3 Z2 (Z standard Gaussian)."""
    return 0.5 * rng.standard_normal((problem.k, problem.d)), 0.3 * rng.standard_normal((problem.d, problem.d))


@shared_run(sizes={"quick": {"ns": [16, 32, 64], "rows": 200000},
                   "full": {"ns": [16, 32, 64, 128, 256, 512], "rows": 1000000}})
def in_sample_gap(run, *, tail=None, estimator="attention"):
    """E Lhat_n - L at a fixed theta of the well-conditioned instance, n over ``ns``, by Monte
    Carlo; ``tail``: K rescaled so that mu(K) = tail (heavier score tails), ``estimator``
    "attention" (the in-sample attention loss) or "population_predictor" (the sample average
    of the loss of the population predictor V Sigma K x)."""
    problem = well_conditioned(run.rng("well_conditioned"))
    V, K = test_point(problem, run.rng("test_point"))
    if tail is not None:
        K = K * np.sqrt(tail / score_tail(K, problem.Sigma))
    L = float(population_loss(*(run.tensor(a) for a in (V, K, problem.Sigma, problem.W)), problem.noise))
    rng = run.rng("in_sample_gap", estimator)
    stats = [expected_in_sample_loss(problem, V, K, n, run.sizes["rows"], rng, run.tensor, estimator=estimator)
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


@shared_run(sizes={"quick": {}, "full": {}})
def symbolic_closed_form(run, *, missing_sigma=False):
    """The sympy derivations behind the closed form, as strings of the simplified differences
    ("0" where the identity holds): the d = 2 moment identities and the d = k = 1 loss."""
    differences = _gaussian_moment_identities(2)
    return {"mgf": str(differences[0]), "first_moment": [str(e) for e in differences[1:]],
            "scalar_loss": str(_scalar_population_loss_difference(missing_sigma))}


@shared_run(sizes={"quick": {"keys": [1000, 10000, 100000], "queries": 20, "reps": 10},
                   "full": {"keys": [1000, 10000, 100000, 1000000], "queries": 50, "reps": 20}})
def out_of_sample(run, *, transposed=False):
    """(N, mean ||f(x; X_N) - P x||) at the test point of `in_sample_gap`, N fresh keys, P the
    closed-form predictor V Sigma K (``transposed``: the other orientation V Sigma K^T)."""
    problem = well_conditioned(run.rng("well_conditioned"))
    V, K = test_point(problem, run.rng("test_point"))
    closed_form = V @ problem.Sigma @ (K.T if transposed else K)
    rng = run.rng("out_of_sample", transposed)
    keys = np.array(run.sizes["keys"])
    return keys, np.array([out_of_sample_error(problem, V, K, closed_form, N, run.sizes["queries"],
                                               run.sizes["reps"], rng, run.tensor) for N in keys])



def spectral_initialization(problem, n, rng, tensor=torch.as_tensor):
    """(V0, K0, Sigma_hat) (numpy) from n samples: the balanced point of (W_hat OLS, Sigma_hat),
    computed on the tensors ``tensor`` places (a run's device)."""
    X = gaussian_rows(rng, problem.Sigma, (n,))
    Y = X @ problem.W.T + problem.noise * rng.standard_normal((n, problem.k))
    Sigma_hat = sample_covariance(tensor(X))
    V0, K0 = balanced_point(ols_estimate(tensor(X), tensor(Y)), Sigma_hat)
    return V0.cpu().numpy(), K0.cpu().numpy(), Sigma_hat.cpu().numpy()


def tracked_distances(problem, Vs, Ks, rng):
    """dist(theta_t, M) along a trajectory (extended-covariance projection, warm-started from
    the previous projection's R) and the last projection."""
    distances, projection = [], None
    for V, K in zip(Vs, Ks):
        starts = () if projection is None else (projection.R,)
        projection = project_to_manifold(V, K, problem.Sigma, problem.W, rng,
                                         random_starts=8 if projection is None else 0, starts=starts)
        distances.append(projection.distance)
    return np.array(distances), projection


@shared_run(sizes={"quick": {"n": 4000, "steps": 3000, "every": 100, "dist_from": 1000},
                   "full": {"n": 4000, "steps": 4000, "every": 20, "dist_from": 500}})
def population_oracle_run(run, *, etas=(1.0,), precondition="estimated", regularizer="estimated", lam=0.25,
                          track=True):
    """Algorithm 1 with the population gradient oracle on the ill-conditioned instance, from the
    spectral initialization (n samples), one trial per step size in ``etas``.
    ``precondition``: "estimated" (Sigma_hat^{-1}), "true" (Sigma^{-1}) or "none";
    ``regularizer``: the covariance inside R, "estimated" (Sigma_hat) or "true" (Sigma).
    Returns t, the excess loss L - k sigma^2 per step and trial and (``track``) dist(theta_t, M)
    every ``every`` steps from ``dist_from`` on, with the local constants at the last projection."""
    problem = ill_conditioned(run.rng("ill_conditioned"))
    V0, K0, Sigma_hat = spectral_initialization(problem, run.sizes["n"], run.rng("spectral_init"), run.tensor)
    trials = len(etas)
    covariances = {"estimated": Sigma_hat, "true": problem.Sigma}
    tile = lambda a: run.tensor(np.broadcast_to(a, (trials, *a.shape)).copy())
    model = PopulationAttentionRegression(tile(problem.Sigma), tile(problem.W), problem.noise, lam,
                                          reg_Sigma=tile(covariances[regularizer]))
    plain = PopulationAttentionRegression(tile(problem.Sigma), tile(problem.W), problem.noise, 0.0)
    preconditioners = {} if precondition == "none" else \
        {"K": tile(np.linalg.inv(covariances[precondition]))}
    step = Preconditioned(model, list(etas), preconditioners)
    steps = run.sizes["steps"]
    traj = run_trajectory(step, {"V": tile(V0), "K": tile(K0)}, steps,
                          {"log_excess": lambda it: plain.log_excess_loss(it.params),
                           "V": lambda it: it.V, "K": lambda it: it.K},
                          on_nonfinite="record")
    every = np.arange(run.sizes["dist_from"], steps + 1, run.sizes["every"]) if track else np.arange(0)
    rng = run.rng("projections")
    distances, finals = [], []
    for j in range(trials if track else 0):
        dist, last = tracked_distances(problem, traj["V"][every, j], traj["K"][every, j], rng)
        distances.append(dist)
        finals.append(local_constants(regularized_model(problem, lam, run.tensor), last.V, last.K, problem.Sigma))
    return {"t": traj.t, "excess": np.exp(traj["log_excess"]), "dist_t": every,
            "dist": np.array(distances).T, "constants": finals, "etas": np.array(etas),
            "diverged_at": traj.diverged_at, "problem": problem}


__all__ = ["NOISE", "LIGHT_TAIL", "A3_TARGET", "Problem", "well_conditioned", "ill_conditioned", "score_tail",
           "record_assumptions", "regularized_model", "haar_rotations", "gaussian_rows", "expected_in_sample_loss", "test_point",
           "in_sample_gap", "out_of_sample_error", "symbolic_closed_form", "out_of_sample",
           "spectral_initialization", "tracked_distances", "population_oracle_run"]
