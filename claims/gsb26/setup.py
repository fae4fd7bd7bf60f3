r"""Set-up of the gsb26 claims: instances, assumptions, Monte Carlo estimators, shared runs and
the helpers the claims use to read them.

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
have light tails, mu(K) = ||Sigma^{1/2} K Sigma^{1/2}||^2 < 1/2 (so E exp(x^T K^T Sigma K x)
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
from theorycheck.errors import DeclarationError
from theorycheck.models.attention_regression import (
    PopulationAttentionRegression,
    balance_regularizer,
    balanced_point,
    in_sample_loss,
    ols_estimate,
    population_loss,
    predictor,
    sample_covariance,
)
from theorycheck.optim import Preconditioned, run_trajectory
from theorycheck.solvers import ManifoldProjection, local_constants, manifold_point, project_to_manifold

#: the paper key, the first part of every claim id
PAPER = "gsb26"
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


def gaussian_quadratic_mgf(A, Sigma, symmetrize=True):
    r"""E exp(x^T A x) = det(I - 2 Sigma^{1/2} sym(A) Sigma^{1/2})^{-1/2}, x ~ N(0, Sigma)
    (``symmetrize=False``: the formula with A in place of sym(A), wrong for non-symmetric A)."""
    root = scipy.linalg.sqrtm(Sigma).real
    B = (A + A.T) / 2 if symmetrize else A
    return np.linalg.det(np.eye(len(A)) - 2 * root @ B @ root) ** -0.5


def top_eigenvalue_scaled(A, root, top):
    r"""c A with lambda_max(root sym(c A) root) = ``top`` > 0: c = top/lambda_max when
    root sym(A) root has a positive eigenvalue, else c = top/lambda_min < 0 (A flipped to -A,
    whose top eigenvalue is then positive).  Scaling by top/lambda_max with lambda_max < 0
    would reverse the spectrum and put the top eigenvalue at top lambda_min/lambda_max > top,
    outside the hypothesis: the cause of the hypotheses-not-met seeds 9, 18 of the 20-seed
    sweep (a Gaussian sym(A) with no positive eigenvalue)."""
    eigenvalues = np.linalg.eigvalsh(root @ ((A + A.T) / 2) @ root)
    lead = eigenvalues[-1] if eigenvalues[-1] > 0 else eigenvalues[0]
    return A * (top / lead)


def record_assumptions(tc, problem, *, a3=True):
    """A1, A2 and (``a3``) the A3 scale condition as preconditions, of one `Problem` or of every
    problem of a sequence.  Statements about the geometry of the manifold (projection,
    singular values) do not use A3: pass a3=False."""
    problems = [problem] if isinstance(problem, Problem) else list(problem)
    one = (lambda values: values[0]) if isinstance(problem, Problem) else np.array
    tc.precondition.at_least("A1: lambda_min(Sigma) > 0", one([p.covariance_eigenvalues()[0] for p in problems]), 0.0)
    tc.precondition.holds("A2: k >= d and sigma_d(W*) > 0",
                          all(p.k >= p.d and p.singular_values()[-1] > 0 for p in problems))
    products = one([p.a3_product() for p in problems])
    if a3:
        tc.precondition.at_most("A3: kappa(Sigma) sigma_1(W*) <= 1/2", products, LIGHT_TAIL)
    tc.record("kappa(Sigma) sigma_1(W*)", products)


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


def _batch_losses(problem, V, K, n, batches, rng, estimator, tensor, noise=True):
    """Lhat_n of ``batches`` fresh training sets of size n (``noise=False``: responses W* x
    without noise, no noise drawn)."""
    X = tensor(gaussian_rows(rng, problem.Sigma, (batches, n)))
    W, Vt, Kt = (tensor(a) for a in (problem.W, V, K))
    Y = X @ W.T
    if noise:
        Y = Y + tensor(problem.noise * rng.standard_normal((batches, n, problem.k)))
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


#: the largest score-tail parameter mu(K) of the fixed test point (below A3's 1/2 by a margin
#: of 0.15, so that the light-tail hypothesis holds by construction on every seed)
TEST_POINT_TAIL = 0.35


def test_point(problem, rng):
    """A fixed theta away from the manifold: V = 0.5 Z1, K = 0.3 Z2 (Z standard Gaussian), K
    shrunk to mu(K) = `TEST_POINT_TAIL` when the draw has heavier score tails (2 of 20 seeds
    drew mu = 0.76, 0.80 > 1/2, outside the hypothesis of the claims using this point; the
    scale depends on Sigma and Z2 only, never on an outcome)."""
    V, K = 0.5 * rng.standard_normal((problem.k, problem.d)), 0.3 * rng.standard_normal((problem.d, problem.d))
    return V, K * min(1.0, np.sqrt(TEST_POINT_TAIL / score_tail(K, problem.Sigma)))


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


def ratios(problem, Sigma_hat, thetas):
    """||theta||^2 in Sigma_hat over ||theta||^2 in Sigma, and the same for the dual norms."""
    V, K = thetas
    primal = lambda S: (V ** 2).sum((1, 2)) + np.einsum("tij,ik,tkj->t", K, S, K)
    dual = lambda S: (V ** 2).sum((1, 2)) + np.einsum("tij,ik,tkj->t", K, np.linalg.inv(S), K)
    return primal(Sigma_hat) / primal(problem.Sigma), dual(Sigma_hat) / dual(problem.Sigma)


def unit_operator_norm(A):
    return A / np.linalg.norm(A, 2)


def spectral_point(tc, W, Sigma):
    """The spectral point (U D^{1/2}, Sigma^{-1} D^{1/2} V^T) of (W, Sigma), or (control) the
    square-root-free point (U D, Sigma^{-1} V^T), which also has V Sigma K = W but is unbalanced."""
    if tc.control == "square_root_free":
        U, D, Vh = np.linalg.svd(W, full_matrices=False)
        return U * D, np.linalg.solve(Sigma, Vh)
    V, K = balanced_point(tc.tensor(W), tc.tensor(Sigma))
    return V.cpu().numpy(), K.cpu().numpy()


def tracked_distances(problem, Vs, Ks, rng):
    """dist(theta_t, M) along a trajectory (extended-covariance projection: multi-start at the
    first point, then warm-started from the previous projection's R alone) and the last
    projection."""
    distances, projection = [], None
    for V, K in zip(Vs, Ks):
        starts = () if projection is None else (projection.R,)
        projection = project_to_manifold(V, K, problem.Sigma, problem.W, rng,
                                         random_starts=8 if projection is None else 0, starts=starts,
                                         polar_starts=projection is None)
        distances.append(projection.distance)
    return np.array(distances), projection


@shared_run(sizes={"quick": {"n": 4000, "steps": 3000, "every": 50, "dist_from": 0},
                   "full": {"n": 4000, "steps": 4000, "every": 20, "dist_from": 0}})
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


def settled_values(values, diverged_at):
    """The last value per trial of ``values`` (steps + 1, trials), a diverged trial
    (``diverged_at`` >= 0) counting with its largest finite value, so that a comparison with a
    diverged run is decided on finite numbers."""
    peak = np.nanmax(np.where(np.isfinite(values), values, np.nan), axis=0)
    return np.where(np.asarray(diverged_at) >= 0, peak, values[-1])


def window_contractions(t, values, window, floor):
    """values[t + window]/values[t] over consecutive windows while both ends exceed ``floor``."""
    starts = np.arange(0, t[-1] - window + 1, window)
    ratios = [values[s + window] / values[s] for s in starts
              if values[s] > floor and values[s + window] > floor]
    return np.array(ratios)


__all__ = ["PAPER", "NOISE", "LIGHT_TAIL", "settled_values", "A3_TARGET", "Problem", "well_conditioned", "ill_conditioned", "score_tail",
           "gaussian_quadratic_mgf", "top_eigenvalue_scaled",
           "record_assumptions", "regularized_model", "haar_rotations", "gaussian_rows", "expected_in_sample_loss",
           "TEST_POINT_TAIL", "test_point",
           "in_sample_gap", "out_of_sample_error", "symbolic_closed_form", "out_of_sample",
           "spectral_initialization", "ratios", "unit_operator_norm", "spectral_point", "tracked_distances",
           "population_oracle_run", "window_contractions"]


# --- finite-sample lemmas (Lemmas 9, 11; Theorems 3-5; the limit set of Algorithm 1 with the
# empirical regularizer): Monte Carlo over fresh batches, batched along leading dimensions.
from theorycheck.models.attention_regression import (  # noqa: E402
    balance_regularizer_gradient,
    cross_attention_weights,
    population_gradient,
)
from theorycheck.solvers.gaussian_moments import (  # noqa: E402
    sample_covariance_quadratic_mean,
    softmax_weight_second_moment_bound,
    softmax_weight_second_moments_exact,
)
from theorycheck.solvers.monte_carlo import debiased_squared_norm  # noqa: E402


def near_manifold_points(problem, rng, radii):
    """theta_R0 + r sqrt(sigma_d(W*)) u/||u||_{Sigma_bar} for each r in ``radii`` (R0 Haar, u
    Gaussian): points whose distance to the manifold is at most r sqrt(sigma_d(W*)) (the
    distance to theta_R0).  Returns V (P, k, d), K (P, d, d) and those upper bounds."""
    R0 = haar_rotations(rng, problem.d, 1)[0]
    V0, K0 = balanced_point(torch.as_tensor(problem.W), torch.as_tensor(problem.Sigma), torch.as_tensor(R0))
    draws = [(rng.standard_normal((problem.k, problem.d)), rng.standard_normal((problem.d, problem.d)))
             for _ in radii]
    dV, dK = (np.array(d) for d in zip(*draws))
    bounds = np.asarray(radii) * np.sqrt(problem.singular_values()[-1])
    scale = (bounds / sigma_bar_norms(dV, dK, problem.Sigma))[:, None, None]
    return V0.numpy() + scale * dV, K0.numpy() + scale * dK, bounds


def _noise_free_gradients(problem, X, V, K):
    r"""grad (V, K) of the mean over batches of Lhat_n with noise-free responses y = W* x, for
    batches X (P, M, n, d) and points V (P, k, d), K (P, d, d): shape (P, k d + d^2)."""
    W = torch.as_tensor(problem.W)
    Vt = torch.as_tensor(V).clone().requires_grad_(True)
    Kt = torch.as_tensor(K).clone().requires_grad_(True)
    loss = in_sample_loss(X, X @ W.T, Vt[:, None], Kt[:, None]).mean(-1).sum()
    gV, gK = torch.autograd.grad(loss, (Vt, Kt))
    return torch.cat([gV.flatten(1), gK.flatten(1)], 1)


def _regularizer_gradients(X, V, K):
    r"""Mean over batches of grad R(V, K; Sigma_hat(batch)), shape (P, k d + d^2)."""
    Vt, Kt = torch.as_tensor(V)[:, None], torch.as_tensor(K)[:, None]
    gV, gK = balance_regularizer_gradient(Vt, Kt, sample_covariance(X))
    return torch.cat([gV.mean(1).flatten(1), gK.mean(1).flatten(1)], 1)


def _population_gradients(problem, V, K):
    """(grad L, grad R(.; Sigma)) flattened, shape (P, k d + d^2) each."""
    S, W = torch.as_tensor(problem.Sigma), torch.as_tensor(problem.W)
    Vt, Kt = torch.as_tensor(V), torch.as_tensor(K)
    flat = lambda gV, gK: torch.cat([gV.flatten(1), gK.flatten(1)], 1)
    return flat(*population_gradient(Vt, Kt, S, W)), flat(*balance_regularizer_gradient(Vt, Kt, S))


def reference_gradient_error(problem, V, K):
    """Largest relative difference, over the points and both blocks, between the closed-form
    references (`population_gradient`, `balance_regularizer_gradient` with Sigma) and
    torch.func.grad of the closed-form losses `population_loss`, `balance_regularizer`."""
    S, W = torch.as_tensor(problem.Sigma), torch.as_tensor(problem.W)
    points = (torch.as_tensor(V), torch.as_tensor(K))
    losses = [lambda v, k: population_loss(v, k, S, W, problem.noise).sum(),
              lambda v, k: balance_regularizer(v, k, S).sum()]
    closed = _population_gradients(problem, *points)
    errors = []
    for loss, reference in zip(losses, closed):
        auto = torch.cat([g.flatten(1) for g in torch.func.grad(loss, argnums=(0, 1))(*points)], 1)
        errors.append(float(((reference - auto).norm(dim=1) / auto.norm(dim=1)).max()))
    return max(errors)


def gradient_bias_groups(problem, V, K, n, groups, batches, rng):
    r"""Group averages of the gradient errors at the points (V, K) (P, k, d), (P, d, d): each
    group averages over ``batches`` fresh training sets of size n (a) grad Lhat_n - grad L and
    (b) grad R(.; Sigma_hat) - grad R(.; Sigma) (Sigma_hat of the same batch).  The noise eps
    enters grad Lhat_n linearly with mean zero given the covariates, so it is integrated out
    exactly (responses y = W* x): same expectation, less variance.  Returns (a), (b), each
    (groups, P, k d + d^2)."""
    loss_ref, reg_ref = _population_gradients(problem, V, K)
    loss, reg = [], []
    for _ in range(groups):
        X = torch.as_tensor(gaussian_rows(rng, problem.Sigma, (len(V), batches, n)))
        loss.append((_noise_free_gradients(problem, X, V, K) - loss_ref).numpy())
        reg.append((_regularizer_gradients(X, V, K) - reg_ref).numpy())
    return np.array(loss), np.array(reg)


#: sigma_1(W*) of the A3 violation: RE-SIZED AFTER THE 20-SEED SWEEP (flagged).  The
#: reconstruction's I3 (sigma_1 = 2, kappa(Sigma) sigma_1(W*) ~ 4.4) left the worst-case
#: loss-part bias of Theorem 3 decaying like 1/n on seed 10 (slope of its square -1.04, the
#: criterion <= -0.85 met: a misfire); the slope moves towards 0 as sigma_1 grows (seeds 1-10,
#: the largest slope at 2 / 3 / 4: -1.04 / -0.80 / -0.63, all on seed 10), so 4 was chosen on
#: seeds 1-10 (margin 0.22 to the criterion) and held out on 0, 11-19 (largest -0.06)
A3_VIOLATION_SIGMA_1 = 4.0


def a3_violated(problem, sigma_1=A3_VIOLATION_SIGMA_1):
    """The instance with W* rescaled to sigma_1(W*) = ``sigma_1`` (kappa(Sigma) sigma_1(W*) ~ 8.8
    on the well-conditioned recipe at the default; the reconstruction's I3 had sigma_1 = 2)."""
    return problem.scaled(sigma_1 / problem.singular_values()[0])


@shared_run(sizes={"quick": {"ns": [8, 16, 32], "groups": 10, "batch_rows": 50000, "radii": [0.0, 0.05]},
                   "full": {"ns": [8, 16, 32, 64], "groups": 40, "batch_rows": 1000000,
                            "radii": [0.0, 0.05]}})
def loss_gradient_bias(run, *, a3="holds", radii=None, lam=0.0):
    r"""The bias E[grad Lhat_n + lam grad R(.; Sigma_hat)] - grad L_reg at points near the
    manifold of the well-conditioned instance (``a3="violated"``: `a3_violated`), for n over
    ``ns``: ``groups`` group averages of M = batch_rows/n^2 batches each (M n^2 ~ cost per
    group), debiased squared norm per point and n ("squared", "noise"; with lam > 0 also of
    the loss part alone, "loss_squared", "loss_noise").  ``radii`` (default: the tier's) sets
    the points, r sqrt(sigma_d) away from theta_R0."""
    problem = well_conditioned(run.rng("well_conditioned"))
    if a3 == "violated":
        problem = a3_violated(problem)
    radii = run.sizes["radii"] if radii is None else radii
    V, K, bounds = near_manifold_points(problem, run.rng("bias_points"), radii)
    rng = run.rng("gradient_bias", a3, lam)
    out = {"squared": [], "noise": [], "loss_squared": [], "loss_noise": []}
    for n in run.sizes["ns"]:
        loss, reg = gradient_bias_groups(problem, V, K, n, run.sizes["groups"],
                                         max(run.sizes["batch_rows"] // n ** 2, 2), rng)
        for prefix, groups in [("", loss + lam * reg), ("loss_", loss)]:
            estimates = [debiased_squared_norm(groups[:, p]) for p in range(len(V))]
            out[prefix + "squared"].append([e.estimate for e in estimates])
            out[prefix + "noise"].append([e.noise for e in estimates])
    return {**{key: np.array(v) for key, v in out.items()}, "n": np.array(run.sizes["ns"]),
            "problem": problem, "dist_bound": bounds, "mu": np.array([score_tail(k_, problem.Sigma) for k_ in K]),
            "reference_error": reference_gradient_error(problem, V, K)}


def bias_preconditions(tc, run):
    """A1-A3, light score tails at every point and Monte Carlo noise below a fraction of the
    squared bias (the debiased estimate is then a measurement, not noise)."""
    record_assumptions(tc, run["problem"])
    tc.precondition.at_most("light score tails at the points: mu(K) < 1/2", run["mu"], LIGHT_TAIL)
    tc.precondition.at_most("Monte Carlo noise below 0.1 of the squared bias",
                            run["noise"] / np.abs(run["squared"]), tc.sizes["noise_fraction"])
    tc.record("mu(K) at the points", run["mu"])


def reference_conclusion(tc, run):
    """The references grad L and grad R(.; Sigma) are the gradients of the closed-form losses:
    the closed forms against torch.func.grad, to round-off."""
    tc.conclusion.at_most("closed-form grad L and grad R equal autograd of the closed-form losses",
                          run["reference_error"], tc.roundoff(1000))


def rate_conclusions(tc, n, norms, rate, part=""):
    """The paper's bound (squared bias O(polylog n / n): log-log slope <= -0.85) and the
    measured Theta(1/n) (n^rate ||b_n|| varies by less than a factor 1.5), per column."""
    for j in range(norms.shape[1]):
        tc.conclusion.slope(f"squared {part}bias decays at least like 1/n (slope <= -0.85)", n,
                            norms[:, j] ** 2, window=(n[0], n[-1]), at_most=-0.85)
        if part:
            continue
        scaled = n ** rate * norms[:, j]
        tc.conclusion.at_most("n^p ||b_n|| varies by less than a factor 1.5", scaled.max() / scaled.min(), 1.5)




def softmax_row_statistics(problem, K, queries, n, batches, rng):
    r"""Monte Carlo over ``batches`` fresh key sets for each fixed query x_i (``queries`` (Q, d)):
    the keys are x_i itself and n - 1 fresh rows N(0, Sigma), weights s_ij = softmax_j(x_j^T K x_i).
    Returns per query the means and standard errors of s_ii^2, of the average over j != i of
    s_ij^2 (the same expectation for every j != i by exchangeability) and of
    ||a_i - Sigma K x_i||^2, and the mean of a_i (Q, d)."""
    Q = len(queries)
    fresh = torch.as_tensor(gaussian_rows(rng, problem.Sigma, (Q, batches, n - 1)))
    x = torch.as_tensor(queries)
    keys = torch.cat([x[:, None, None, :].expand(Q, batches, 1, problem.d), fresh], 2)
    weights = cross_attention_weights(x[:, None, None, :], keys, torch.as_tensor(K))[:, :, 0]  # (Q, B, n)
    outputs = (weights[..., None] * keys).sum(2)                                                 # (Q, B, d)
    target = x @ torch.as_tensor(problem.Sigma @ K).T
    samples = {"self": weights[..., 0] ** 2, "other": (weights[..., 1:] ** 2).mean(-1),
               "mse": ((outputs - target[:, None]) ** 2).sum(-1)}
    stats = {name: (v.mean(1).numpy(), (v.std(1) / np.sqrt(batches)).numpy()) for name, v in samples.items()}
    stats["output_mean"] = outputs.mean(1).numpy()
    return stats


#: key rows held in memory at once by `softmax_row_moments` (3 doubles each)
ROW_MEMORY = 2000000


def _concatenate_queries(parts):
    """Join `softmax_row_statistics` results of consecutive query blocks."""
    joined = {name: tuple(np.concatenate([p[name][i] for p in parts]) for i in range(2))
              for name in ("self", "other", "mse")}
    return joined | {"output_mean": np.concatenate([p["output_mean"] for p in parts])}


@shared_run(sizes={"quick": {"ns": [10, 20, 40, 80, 160, 320], "queries": 6, "rows": 200000},
                   "full": {"ns": [10, 20, 40, 80, 160, 320, 640, 1280], "queries": 20, "rows": 2000000}})
def softmax_row_moments(run, *, tail=None):
    r"""`softmax_row_statistics` at the manifold point theta_R0 of the well-conditioned instance
    (``tail``: K rescaled so that mu(K) = ||Sigma^{1/2} K Sigma^{1/2}||^2 = tail) for ``queries``
    fixed x_i ~ N(0, Sigma) and n over ``ns``, rows/n key sets per (query, n)."""
    problem = well_conditioned(run.rng("well_conditioned"))
    R0 = haar_rotations(run.rng("softmax_point"), problem.d, 1)[0]
    _, K = (a.numpy() for a in balanced_point(torch.as_tensor(problem.W), torch.as_tensor(problem.Sigma),
                                              torch.as_tensor(R0)))
    if tail is not None:
        K = K * np.sqrt(tail / score_tail(K, problem.Sigma))
    queries = gaussian_rows(run.rng("softmax_queries"), problem.Sigma, (run.sizes["queries"],))
    rng = run.rng("softmax_rows", tail)
    chunk = max(1, ROW_MEMORY // run.sizes["rows"])      # queries per tensor: ~ROW_MEMORY rows at once
    per_n = [_concatenate_queries([softmax_row_statistics(problem, K, queries[i:i + chunk], n,
                                                          run.sizes["rows"] // n, rng)
                                   for i in range(0, len(queries), chunk)]) for n in run.sizes["ns"]]
    stack = {name: tuple(np.array([s[name][i] for s in per_n]) for i in range(2))
             for name in ("self", "other", "mse")}
    return {"n": np.array(run.sizes["ns"]), **stack, "output_mean": np.array([s["output_mean"] for s in per_n]),
            "queries": queries, "K": K, "problem": problem, "mu": score_tail(K, problem.Sigma)}


def row_preconditions(tc, run):
    record_assumptions(tc, run["problem"])
    tc.precondition.at_most("light score tails: mu(K) < 1/2", run["mu"], LIGHT_TAIL)
    tc.precondition.at_least("at least 3 keys", run["n"], 3)
    tc.record("mu(K)", run["mu"])


def exact_second_moments(q, tau, ns):
    """(E s_ij^2, E s_ii^2) exactly, (len(ns), queries) each."""
    values = np.array([[softmax_weight_second_moments_exact(qj, tj, int(n)) for qj, tj in zip(q, tau)] for n in ns])
    return values[..., 0], values[..., 1]


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


def regularizer_gradient_samples(problem, V, K, n, draws, rng, *, centered=False, chunk=20000):
    r"""``draws`` samples of grad R(V, K; Sigma_hat) - grad R(V, K; Sigma) (flattened V block,
    K block) with Sigma_hat the zero-mean sample covariance of n rows N(0, Sigma)
    (``centered``: the mean-centred covariance (1/n) sum (x_i - x_bar)(x_i - x_bar)^T)."""
    Vt, Kt, S = (torch.as_tensor(a) for a in (V, K, problem.Sigma))
    rV, rK = balance_regularizer_gradient(Vt, Kt, S)
    gVs, gKs, deviations = [], [], []
    for start in range(0, draws, chunk):
        X = torch.as_tensor(gaussian_rows(rng, problem.Sigma, (min(chunk, draws - start), n)))
        if centered:
            X = X - X.mean(-2, keepdim=True)
        Sigma_hat = sample_covariance(X)
        gV, gK = balance_regularizer_gradient(Vt, Kt, Sigma_hat)
        gVs.append((gV - rV).flatten(1))
        gKs.append((gK - rK).flatten(1))
        deviations.append((Sigma_hat - S).flatten(1))
    return torch.cat(gVs).numpy(), torch.cat(gKs).numpy(), torch.cat(deviations).numpy()


@shared_run(sizes={"quick": {"ns": [10, 20, 40, 80, 160], "draws": 40000, "groups": 10},
                   "full": {"ns": [10, 20, 40, 80, 160, 320], "draws": 200000, "groups": 40}})
def regularizer_gradient_bias(run, *, centered=False):
    r"""The bias of grad R(.; Sigma_hat) at the fixed point of `in_sample_gap` (V = 0.5 Z1,
    K = 0.3 Z2, away from the manifold, where grad R is of order one) of the well-conditioned
    instance, n over ``ns``: the V block's Monte Carlo mean
    and standard error next to its exact value 4 V (Sigma K K^T Sigma - E[Sigma_hat K K^T
    Sigma_hat]) (`sample_covariance_quadratic_mean`), and the K block's debiased squared norm
    over ``groups`` groups; ``covariance_z``: the z-scores of the mean of Sigma_hat - Sigma."""
    problem = well_conditioned(run.rng("well_conditioned"))
    V, K = test_point(problem, run.rng("test_point"))
    rng = run.rng("regularizer_bias", centered)
    out = {"n": np.array(run.sizes["ns"]), "V_mean": [], "V_se": [], "V_exact": [], "K_squared": [],
           "K_noise": [], "covariance_z": []}
    S, A = problem.Sigma, K @ K.T
    for n in run.sizes["ns"]:
        gV, gK, deviation = regularizer_gradient_samples(problem, V, K, n, run.sizes["draws"], rng,
                                                         centered=centered)
        out["covariance_z"].append(deviation.mean(0) / (deviation.std(0, ddof=1) / np.sqrt(len(deviation))))
        out["V_mean"].append(gV.mean(0))
        out["V_se"].append(gV.std(0, ddof=1) / np.sqrt(len(gV)))
        out["V_exact"].append((4 * V @ (S @ A @ S - sample_covariance_quadratic_mean(S, A, n))).ravel())
        bias = debiased_squared_norm(gK.reshape(run.sizes["groups"], -1, gK.shape[1]).mean(1))
        out["K_squared"].append(bias.estimate)
        out["K_noise"].append(bias.noise)
    return {**{key: np.array(v) for key, v in out.items()}, "problem": problem, "V": V, "K": K}


@shared_run(sizes={"quick": {"ns": [250, 1000, 4000, 16000], "seeds": 2, "steps": 3000, "random_starts": 0},
                   "full": {"ns": [250, 1000, 4000, 16000, 64000], "seeds": 10, "steps": 4000,
                            "random_starts": 8}})
def empirical_regularizer_limit(run, *, regularizers=("estimated", "true"), lam=0.25, eta=1.0):
    r"""Algorithm 1 with the population gradient oracle and preconditioner Sigma_hat^{-1}, from the
    spectral initialization of n samples (ill-conditioned instance), ``seeds`` training sets
    per n, each run once per regularizer lam R(.; C) in ``regularizers`` (C = Sigma_hat for
    "estimated", Sigma for "true"), all trials side by side.  Returns, per regularizer and per
    trial: n, ||Sigma_hat - Sigma||, the final excess loss L - k sigma^2, R(theta_T; Sigma_hat),
    R(theta_T; Sigma) and dist(theta_T, M) (``random_starts`` Haar starts in the projection)."""
    problem = ill_conditioned(run.rng("ill_conditioned"))
    rng = run.rng("limit_set")
    ns = np.repeat(run.sizes["ns"], run.sizes["seeds"])
    inits = [spectral_initialization(problem, n, rng) for n in ns]
    V0, K0, Sigma_hat = (torch.as_tensor(np.array(a)) for a in zip(*inits))
    trials = len(ns)
    tile = lambda a, copies: torch.as_tensor(np.broadcast_to(a, (copies, *a.shape)).copy())
    settings = len(regularizers)
    Sigma, W = tile(problem.Sigma, trials * settings), tile(problem.W, trials * settings)
    covariances = {"estimated": Sigma_hat, "true": Sigma[:trials]}
    model = PopulationAttentionRegression(Sigma, W, problem.noise, lam,
                                          reg_Sigma=torch.cat([covariances[r] for r in regularizers]))
    step = Preconditioned(model, eta, {"K": torch.linalg.inv(Sigma_hat).repeat(settings, 1, 1)})
    traj = run_trajectory(step, {"V": V0.repeat(settings, 1, 1), "K": K0.repeat(settings, 1, 1)},
                          run.sizes["steps"], {}, checkpoints=[run.sizes["steps"]], on_nonfinite="record")
    V, K = traj.params["V"], traj.params["K"]
    E = V @ Sigma @ K - W
    excess = ((E @ Sigma) * E).sum((-1, -2)).numpy()
    R_hat = balance_regularizer(V, K, Sigma_hat.repeat(settings, 1, 1)).numpy()
    R_true = balance_regularizer(V, K, Sigma).numpy()
    seeds = rng.integers(2 ** 32)
    dist = np.array([project_to_manifold(v, k_, problem.Sigma, problem.W, np.random.default_rng([seeds, j]),
                                         random_starts=run.sizes["random_starts"]).distance
                     for j, (v, k_) in enumerate(zip(V.numpy(), K.numpy()))])
    deviation = np.linalg.norm(Sigma_hat.numpy() - problem.Sigma, 2, axis=(1, 2))
    part = lambda a, i: a[i * trials:(i + 1) * trials]
    return {r: {"n": ns, "deviation": deviation, "excess": part(excess, i), "R_estimated": part(R_hat, i),
                "R_true": part(R_true, i), "dist": part(dist, i), "diverged_at": part(traj.diverged_at, i)}
            for i, r in enumerate(regularizers)} | {"problem": problem}


__all__ += ["ROW_MEMORY", "near_manifold_points", "gradient_bias_groups", "a3_violated", "loss_gradient_bias",
            "bias_preconditions", "reference_conclusion", "rate_conclusions",
            "softmax_row_statistics", "softmax_row_moments", "row_preconditions", "exact_second_moments",
            "query_directions", "self_key_constant", "regularizer_gradient_samples",
            "regularizer_gradient_bias", "empirical_regularizer_limit"]


# --- landscape and experiments

from theorycheck.models.attention_regression import EmpiricalAttentionRegression  # noqa: E402

#: Algorithm 1 and its ablations as (lambda, preconditioned): Algorithm 1 = regularizer with
#: Sigma_hat and the Sigma_hat^{-1} preconditioner; SGD = neither (Section 1.7 of the spec)
MINIBATCH_METHODS = {"algorithm1": (0.25, True), "sgd": (0.0, False),
                     "preconditioned_unregularized": (0.0, True)}


def minibatch_indices(rng, n, batch, steps):
    """(steps, batch) row indices: at every step ``batch`` of the n training samples drawn
    uniformly without replacement (independently across steps)."""
    return np.stack([rng.permutation(n)[:batch] for _ in range(steps)])


@shared_run(sizes={"quick": {"d": 3, "k": 4, "n": 1000, "batch": 100, "steps": 400, "seeds": 3,
                             "etas": [0.1, 0.2, 0.3, 0.4, 0.5, 0.7]},
                   "full": {"d": 5, "k": 8, "n": 5000, "batch": 500, "steps": 2000, "seeds": 3,
                            "etas": [0.03, 0.1, 0.15, 0.2, 0.3]}})
def minibatch_run(run, *, arms, instances=1, etas=None):
    r"""The experiments of Appendix A: the ``arms``, pairs (method of `MINIBATCH_METHODS`,
    initialization "spectral" -- the balanced point of (W_hat, Sigma_hat) -- or "random" --
    entries of V, K i.i.d. N(0, 1)), with minibatches of the n training samples on
    ``instances`` draws of the well-conditioned instance (d x d Sigma, k x d W*; instance 0 is
    the one the figures use), all in one batch: one trial per (arm, instance, step size,
    minibatch seed), each method's lambda and preconditioner (Sigma_hat^{-1}, or the identity)
    per trial; ``etas`` defaults to the tier's grid.  Every arm with the same instance and seed
    sees the same training set, random point and minibatch sequence.  The population loss
    L(theta_t) (closed form) is recorded at every step; divergence is recorded, not raised.
    Returns t, ratio = L/L* (steps + 1, trials), diverged_at, arm, eta, seed and instance per
    trial, problems (and problem = problems[0])."""
    s = run.sizes
    stream = lambda name, i: run.rng(name) if i == 0 else run.rng(name, i)  # noqa: E731
    problems = [well_conditioned(stream("experiment_instance", i), d=s["d"], k=s["k"]) for i in range(instances)]
    if len({p.noise for p in problems}) != 1:
        raise DeclarationError("minibatch_run: the instances must share the noise level")
    unknown = [method for method, _ in arms if method not in MINIBATCH_METHODS]
    if unknown or any(init not in ("spectral", "random") for _, init in arms):
        raise DeclarationError(f"minibatch_run: arms must be (method in {sorted(MINIBATCH_METHODS)}, "
                               f"'spectral' or 'random'), got {list(arms)}")
    inits = {init for _, init in arms}
    Xs, Ys, starts, Sigma_hats = [], [], {init: [] for init in inits}, []
    for i, problem in enumerate(problems):
        rng = stream("training_set", i)
        X = gaussian_rows(rng, problem.Sigma, (s["n"],))
        Y = X @ problem.W.T + problem.noise * rng.standard_normal((s["n"], problem.k))
        Xt, Yt = run.tensor(X), run.tensor(Y)
        Sigma_hat = sample_covariance(Xt)
        if "spectral" in inits:
            starts["spectral"].append(balanced_point(ols_estimate(Xt, Yt), Sigma_hat))
        if "random" in inits:
            init_rng = stream("random_init", i)
            starts["random"].append(tuple(run.tensor(init_rng.standard_normal(shape))
                                          for shape in [(problem.k, problem.d), (problem.d, problem.d)]))
        Xs.append(Xt), Ys.append(Yt), Sigma_hats.append(Sigma_hat)
    grid = s["etas"] if etas is None else list(etas)
    arm, instance, etas_, seeds = (a.ravel() for a in np.meshgrid(np.arange(len(arms)), np.arange(instances), grid,
                                                                  np.arange(s["seeds"]), indexing="ij"))
    trials = len(etas_)
    batches = np.stack([minibatch_indices(run.rng("minibatches", seed), s["n"], s["batch"], s["steps"] + 1)
                        for seed in range(s["seeds"])], axis=1)[:, seeds]       # (steps + 1, trials, b)
    which = torch.as_tensor(instance, device=Xs[0].device)
    X_all, Y_all = torch.stack(Xs)[which], torch.stack(Ys)[which]               # (trials, n, .)
    rows = torch.arange(trials, device=X_all.device)[:, None]
    batches = torch.as_tensor(batches, device=X_all.device)
    lam = run.tensor(np.array([MINIBATCH_METHODS[arms[a][0]][0] for a in arm]))
    preconditioned = torch.as_tensor([MINIBATCH_METHODS[arms[a][0]][1] for a in arm], device=X_all.device)
    Sigma_hat = torch.stack(Sigma_hats)[which]
    identity = torch.eye(Sigma_hat.shape[-1], dtype=Sigma_hat.dtype, device=Sigma_hat.device).expand_as(Sigma_hat)
    population = PopulationAttentionRegression(run.tensor(np.stack([p.Sigma for p in problems]))[which],
                                               run.tensor(np.stack([p.W for p in problems]))[which],
                                               problems[0].noise, 0.0)

    def minibatch(t):
        return EmpiricalAttentionRegression(X_all[rows, batches[t]][:, None], Y_all[rows, batches[t]][:, None],
                                            lam, Sigma_hat)

    preconditioner = torch.where(preconditioned[:, None, None], torch.linalg.inv(Sigma_hat), identity)
    step = Preconditioned(population, run.tensor(etas_), {"K": preconditioner}, schedule=minibatch)
    start = {name: torch.stack([starts[arms[a][1]][i][b] for a, i in zip(arm, instance)])
             for b, name in enumerate(("V", "K"))}
    traj = run_trajectory(step, start, s["steps"], {"loss": lambda it: population.loss(it.params)},
                          on_nonfinite="record")
    with np.errstate(over="ignore"):      # a diverging trial's L/L* (L* < 1) may overflow to inf: recorded
        ratio = traj["loss"] / problems[0].optimum
    return {"t": traj.t, "ratio": ratio, "diverged_at": traj.diverged_at,
            "arm": arm, "eta": etas_, "seed": seeds, "instance": instance, "problems": problems,
            "problem": problems[0]}


def median_over_seeds(run, values, eta):
    """Median over the minibatch seeds of ``values`` (..., trials) at step size ``eta``."""
    return np.median(values[..., np.isclose(run["eta"], eta)], axis=-1)


def arm_runs(tc, arms, **config):
    """One `minibatch_run` per arm (same ``config`` otherwise): independent cached pieces, which
    a scheduler can compute in parallel and whose per-step temporaries are an arm's, not the
    batch's.  The arms still see the same training sets, random points and minibatches: those
    streams depend on the instance and the minibatch seed only."""
    return [tc.use(minibatch_run, arms=(arm,), **config) for arm in arms]


def medians_per_instance(run, values, eta):
    """Median over the minibatch seeds of ``values`` (..., trials) at ``eta``, per instance
    (instances, ...)."""
    return np.stack([np.median(values[..., (run["instance"] == i) & np.isclose(run["eta"], eta)], axis=-1)
                     for i in range(len(run["problems"]))])


def settled_ratio(run):
    """L_T/L* per trial, a diverged trial counting with its largest finite L_t/L*."""
    return settled_values(run["ratio"], run["diverged_at"])


__all__ += ["MINIBATCH_METHODS", "minibatch_indices", "minibatch_run", "median_over_seeds", "arm_runs",
            "medians_per_instance", "settled_ratio"]


#: the one-point inequalities are tested on the I2 recipe with eig Sigma spread over [1, 10]:
#: Sigma != cI (no closed-form projection) and a Sigma-weighted dual norm differs from the
#: Sigma^{-1}-weighted one by up to kappa(Sigma) = 10
SPREAD_SPECTRUM = (1.0, 10.0)


def sigma_bar_norms(V, K, Sigma):
    """||theta||_{Sigma_bar} = sqrt(||V||_F^2 + tr(K^T Sigma K)) of stacked (..., k, d), (..., d, d)."""
    return np.sqrt((V ** 2).sum((-1, -2)) + np.einsum("...ji,jl,...li->...", K, Sigma, K))


def neighbourhood_points(problem, V0, K0, modes, radii, count, rng):
    r"""theta = theta_{R0} + r sqrt(sigma_d(W*)) u/||u||_{Sigma_bar} for every radius r, with u
    ``count`` Gaussian directions and +- the two softest normal modes (the adversarial
    directions of the one-point bounds).  Returns (r per point, V (P, k, d), K (P, d, d))."""
    k, d = problem.k, problem.d
    soft = modes[:, :2].T
    directions = np.concatenate([rng.standard_normal((count, k * d + d * d)), soft, -soft])
    uV, uK = directions[:, : k * d].reshape(-1, k, d), directions[:, k * d:].reshape(-1, d, d)
    unit = sigma_bar_norms(uV, uK, problem.Sigma)[:, None, None]
    step = np.sqrt(problem.singular_values()[-1])
    r = np.repeat(radii, len(directions))
    scale = (r * step)[:, None, None]
    return r, V0 + scale * np.tile(uV / unit, (len(radii), 1, 1)), K0 + scale * np.tile(uK / unit, (len(radii), 1, 1))


@shared_run(sizes={"quick": {"radii": [0.05, 0.2, 0.8], "directions": 8, "random_starts": 2},
                   "full": {"radii": [0.01, 0.05, 0.1, 0.2, 0.4, 0.8], "directions": 200, "random_starts": 8}})
def one_point_landscape(run, *, lam=0.25, reference="projection"):
    r"""Points near the manifold of the spread instance (`SPREAD_SPECTRUM`), their reference
    point theta* (``reference`` "projection": the Sigma_bar projection P_M(theta); "random_rotation":
    theta_R for a Haar R), and per point: r, dist = ||theta - theta*||_{Sigma_bar}, <grad L_reg,
    theta - theta*>_F, the dual norms sqrt(||g_V||^2 + tr(g_K^T Sigma^{-1} g_K)) and (the wrong
    geometry) with Sigma in place of Sigma^{-1}, L_reg - k sigma^2, and alpha_loc, beta_loc
    (= mu_max) of the lambda-regularized loss at theta*; the displacements theta - theta* and
    the gradients themselves (pairs of (P, k, d), (P, d, d) arrays) for other geometries.  The gradient is the closed form of
    L + lambda R(.; Sigma), batched over the points."""
    s = run.sizes
    problem = ill_conditioned(run.rng("spread_instance"), spectrum=SPREAD_SPECTRUM)
    R0 = haar_rotations(run.rng("landscape_R0"), problem.d, 1)[0]
    V0, K0 = manifold_point(problem.W, problem.Sigma, R0)
    one = regularized_model(problem, lam, run.tensor)
    r, V, K = neighbourhood_points(problem, V0, K0, local_constants(one, V0, K0, problem.Sigma).modes,
                                   s["radii"], s["directions"], run.rng("landscape_directions"))
    rng = run.rng("landscape_projections")
    if reference == "projection":
        stars = [project_to_manifold(v, k, problem.Sigma, problem.W, rng, random_starts=s["random_starts"])
                 for v, k in zip(V, K)]
    else:
        stars = [ManifoldProjection(R, *manifold_point(problem.W, problem.Sigma, R), np.nan)
                 for R in haar_rotations(rng, problem.d, len(V))]
    Vs, Ks = np.stack([p.V for p in stars]), np.stack([p.K for p in stars])
    points = len(V)
    tile = lambda a: run.tensor(np.broadcast_to(a, (points, *a.shape)).copy())
    model = PopulationAttentionRegression(tile(problem.Sigma), tile(problem.W), problem.noise, lam)
    params = {"V": run.tensor(V), "K": run.tensor(K)}
    g = {b: t.cpu().numpy() for b, t in model.gradient(params).items()}
    dV, dK = V - Vs, K - Ks
    Sinv = np.linalg.inv(problem.Sigma)
    constants = [local_constants(one, p.V, p.K, problem.Sigma) for p in stars]
    return {"r": r, "dist": sigma_bar_norms(dV, dK, problem.Sigma),
            "inner": (g["V"] * dV).sum((1, 2)) + (g["K"] * dK).sum((1, 2)),
            "dual": sigma_bar_norms(g["V"], g["K"], Sinv),
            "dual_wrong": sigma_bar_norms(g["V"], g["K"], problem.Sigma),
            "excess": (model.loss(params) - problem.optimum).cpu().numpy(),
            "alpha": np.array([c.alpha for c in constants]), "beta": np.array([c.mu_max for c in constants]),
            "displacement": (dV, dK), "gradient": (g["V"], g["K"]), "problem": problem, "lam": lam}


#: radii in units of sqrt(sigma_d(W*)): the local constants are sharp up to NEAR, the inequalities
#: must keep their sign up to FAR (the spec's windows, checked on seeds 1, 2 and 0)
NEAR, FAR = 0.2, 0.8


def record_neighbourhood(tc, run):
    """A1, A2, lambda > 0 and delta-closeness of the points (the theorem's hypotheses; A3 is not
    used by these population statements)."""
    problem = run["problem"]
    record_assumptions(tc, problem, a3=False)
    tc.precondition.holds("regularizer weight lambda > 0", run["lam"] > 0)
    # dist(theta, M) <= ||theta - theta_{R0}||_{Sigma_bar} = r sqrt(sigma_d) by construction
    tc.precondition.at_most("points delta-close: dist(theta, M) <= 0.8 sqrt(sigma_d(W*))", run["r"], FAR)


__all__ += ["SPREAD_SPECTRUM", "sigma_bar_norms", "neighbourhood_points", "one_point_landscape", "NEAR", "FAR",
            "record_neighbourhood"]


@shared_run(sizes={"quick": {"rotations": 20}, "full": {"rotations": 100}})
def uniform_constants(run, *, lam=0.25):
    r"""(min_R alpha_loc, max_R beta_loc) of L + lam R on the ill-conditioned instance over
    ``rotations`` Haar R (both components of O(d)): the uniform one-point constants."""
    problem = ill_conditioned(run.rng("ill_conditioned"))
    model = regularized_model(problem, lam, run.tensor)
    constants = [local_constants(model, *manifold_point(problem.W, problem.Sigma, R), problem.Sigma)
                 for R in haar_rotations(run.rng("contraction_rotations"), problem.d, run.sizes["rotations"])]
    return min(c.alpha for c in constants), max(c.mu_max for c in constants)


def unbalanced_minimizer(problem, R, rng, spread=0.1):
    r"""(V* G, Sigma^{-1} G^{-1} Sigma K*), G = I + spread S/||S|| (S symmetric Gaussian), at
    theta* = theta_R: V Sigma K = W* (a global minimizer of L) but off the manifold."""
    V, K = manifold_point(problem.W, problem.Sigma, R)
    S = rng.standard_normal((problem.d, problem.d))
    G = np.eye(problem.d) + spread * (S + S.T) / np.linalg.norm(S + S.T, 2)
    return V @ G, np.linalg.solve(problem.Sigma, np.linalg.solve(G, problem.Sigma @ K))


def candidate(tc, problem, R, rng):
    """The point under test: theta_R, or (controls) an unbalanced minimizer / a wrong manifold."""
    if tc.control == "unbalanced_minimizer":
        return unbalanced_minimizer(problem, R, rng)
    V, K = manifold_point(problem.W, problem.Sigma, R)
    if tc.control == "missing_inverse_covariance":
        return V, problem.Sigma @ K
    return V, K


def projection_points(tc, problem, count):
    rng = tc.rng("projection_points")
    R0 = haar_rotations(rng, problem.d, 1)[0]
    V0, K0 = manifold_point(problem.W, problem.Sigma, R0)
    return [(V0 + 0.05 * rng.standard_normal(V0.shape), K0 + 0.05 * rng.standard_normal(K0.shape))
            for _ in range(count)]


@shared_run(sizes={"quick": {"n": 4000, "steps": 300}, "full": {"n": 4000, "steps": 1000}})
def contraction_run(run, *, lam=0.25, start="spectral"):
    r"""Preconditioned GD with the population oracle, the true-Sigma regularizer and
    preconditioner diag(I, Sigma^{-1}) on the ill-conditioned instance at the theorem's step
    eta = alpha/beta^2 (alpha = min_R alpha_loc, beta = max_R beta_loc of the lambda = 1/4
    loss over Haar R), from ``start`` "spectral" (n samples) or "unbalanced" (a minimizer of
    L off the manifold), on the objective L + ``lam`` R.  Phi_t = dist^2(theta_t, M) at every
    step (warm-started projections)."""
    problem = ill_conditioned(run.rng("ill_conditioned"))
    alpha, beta = run.use(uniform_constants, lam=0.25)
    eta = alpha / beta ** 2
    if start == "spectral":
        V0, K0, _ = spectral_initialization(problem, run.sizes["n"], run.rng("spectral_init"), run.tensor)
    else:
        V0, K0 = unbalanced_minimizer(problem, np.eye(problem.d), run.rng("unbalanced"), spread=0.03)
    model = PopulationAttentionRegression(run.tensor(problem.Sigma)[None], run.tensor(problem.W)[None],
                                          problem.noise, lam)
    step = Preconditioned(model, eta, {"K": run.tensor(np.linalg.inv(problem.Sigma))[None]})
    traj = run_trajectory(step, {"V": run.tensor(V0)[None], "K": run.tensor(K0)[None]}, run.sizes["steps"],
                          {"V": lambda it: it.V, "K": lambda it: it.K})
    distances, _ = tracked_distances(problem, traj["V"][:, 0], traj["K"][:, 0], run.rng("contraction_projections"))
    return {"t": traj.t, "phi": distances ** 2, "alpha": alpha, "beta": beta, "eta": eta, "problem": problem}


__all__ += ["uniform_constants", "unbalanced_minimizer", "candidate", "projection_points", "contraction_run"]



# --- the statistical floor of Algorithm 1 (Theorem 2, statistical term)

#: eta sigma_1(W*) of the floor runs: eta = 1 at the recipe's scale sigma_1(W*) = 0.2
FLOOR_STEP = 0.2


def fresh_batch_schedule(problem, rng, Sigma_hat, n, batches, lam, tensor):
    """``schedule(t)`` for `Preconditioned`: at every step a fresh draw of ``batches`` training
    sets of n rows N(0, Sigma) per trial (Sigma_hat (trials, d, d)), responses y = W* x (the
    noise enters grad Lhat_n linearly with conditional mean 0: same expected gradient), as an
    `EmpiricalAttentionRegression` with the regularizer lam R(.; Sigma_hat)."""
    W = tensor(problem.W)

    def schedule(t):
        X = tensor(gaussian_rows(rng, problem.Sigma, (len(Sigma_hat), batches, n)))
        return EmpiricalAttentionRegression(X, X @ W.T, lam, Sigma_hat)

    return schedule


@shared_run(sizes={"quick": {"ns": [32, 64, 128], "batches": 16, "steps": 400, "trials": 3},
                   "full": {"ns": [32, 64, 128, 256], "batches": 64, "steps": 800, "trials": 5}})
def statistical_floor_run(run, *, lam=0.25, oracle_n=None):
    r"""Algorithm 1 with the expected-gradient oracle on the well-conditioned instance, for
    every n of ``ns`` and ``trials`` training sets side by side: spectral initialization,
    regularizer lam R(.; Sigma_hat) and preconditioner Sigma_hat^{-1} from the n training
    samples, eta = FLOOR_STEP/sigma_1(W*).  The oracle E grad Lhat_n is estimated at every step
    by ``batches`` fresh training sets of size n (`fresh_batch_schedule`), and the floor is the
    excess population loss L - k sigma^2 at the average of the iterates over the second half of
    the run (Polyak-Ruppert: for the same compute, fresh batches with averaging are sqrt(T/2)
    times more accurate than one pool of batches reused at every step, whose noise enters the
    floor at O(1/(M n)) against a bias term O(1/n^2)).  ``oracle_n`` (a control): the oracle's
    fresh training sets have this fixed size at every n instead of n, so its bias no longer
    shrinks with n (the regularizer, preconditioner and start still use the n samples).
    Returns n, e_0 and the floor, each (len(ns), trials), diverged_at per n, eta and the
    problem."""
    s = run.sizes
    problem = well_conditioned(run.rng("well_conditioned"))
    eta = FLOOR_STEP / problem.singular_values()[0]
    trials = s["trials"]
    tile = lambda a: run.tensor(a).expand(trials, *np.shape(a)).contiguous()
    Sigma, W = tile(problem.Sigma), tile(problem.W)
    population = PopulationAttentionRegression(Sigma, W, problem.noise, 0.0)
    averaged = list(range(s["steps"] // 2, s["steps"] + 1))
    e0, floors, diverged = [], [], []
    for n in s["ns"]:
        inits = [spectral_initialization(problem, n, run.rng("floor_training", n, j), run.tensor)
                 for j in range(trials)]
        V0, K0, Sigma_hat = (run.tensor(np.stack(parts)) for parts in zip(*inits))
        schedule = fresh_batch_schedule(problem, run.rng("floor_batches", n), Sigma_hat, oracle_n or n,
                                        s["batches"], lam, run.tensor)
        step = Preconditioned(population, eta, {"K": torch.linalg.inv(Sigma_hat)}, schedule=schedule)
        traj = run_trajectory(step, {"V": V0, "K": K0}, s["steps"], {"V": lambda it: it.V, "K": lambda it: it.K},
                              checkpoints=[0] + averaged, on_nonfinite="record")
        V, K = (run.tensor(traj[b][1:].mean(0)) for b in ("V", "K"))
        e0.append((population.loss({"V": V0, "K": K0}) - problem.optimum).cpu().numpy())
        floors.append((population.loss({"V": V, "K": K}) - problem.optimum).cpu().numpy())
        diverged.append(traj.diverged_at)
    return {"n": np.array(s["ns"]), "e0": np.array(e0), "floor": np.array(floors),
            "diverged_at": np.array(diverged), "eta": eta, "problem": problem}


__all__ += ["FLOOR_STEP", "fresh_batch_schedule", "statistical_floor_run"]


# --- references for Lemma 1 computed without the library's projection solver

def _skew(x, d):
    """The skew-symmetric d x d matrix with upper-triangle entries x."""
    X = np.zeros((d, d))
    X[np.triu_indices(d, 1)] = x
    return X - X.T


def _expm_minus_identity(X, terms=18):
    """exp(X) - I by its power series (accurate to round-off relative to |X| for small X, which
    exp(X) - I computed as a difference is not)."""
    term, total = np.eye(len(X)), np.zeros_like(X)
    for j in range(1, terms + 1):
        term = term @ X / j
        total = total + term
    return total


def derivative_free_projection(V, K, Sigma, W, R0, *, weight=None, scales=(0.1, 1e-5, 1e-9)):
    r"""argmin over R of ||V - V_R||^2 + tr((K - K_R)^T Omega (K - K_R)) (Omega = ``weight``,
    default Sigma) by Nelder-Mead in exponential coordinates R = R0 exp(X(x)), X skew, from the
    rotation R0 (e.g. the best of a brute-force sample), re-centred after each round at
    the simplex scales ``scales``.  Up to constants the distance is
    f(R) = tr(D R A R^T) - 2 <G, R>_F with A = Sigma^{-1} Omega Sigma^{-1},
    G = D^{1/2}(U^T V + V_W^T K^T Omega Sigma^{-1}) (W* = U D V_W^T), and it is evaluated as the
    difference f(R0 E) - f(R0) = tr(D R0 (F A + A F^T + F A F^T) R0^T) - 2 <G, R0 F>, F = E - I
    from the series, so that it keeps its relative accuracy as the steps shrink.  Neither a
    gradient nor the first-order condition enters: the search stops on the simplex size.
    Returns R."""
    import scipy.optimize

    weight = Sigma if weight is None else weight
    U, D, Vh = np.linalg.svd(W, full_matrices=False)
    Sinv = np.linalg.inv(Sigma)
    A = Sinv @ weight @ Sinv
    G = np.sqrt(D)[:, None] * (U.T @ V + Vh @ K.T @ weight @ Sinv)
    d = len(D)
    R = np.asarray(R0, dtype=float)
    for scale in scales:
        def change(x, R=R):
            F = _expm_minus_identity(_skew(x, d))
            M = F @ A + A @ F.T + F @ A @ F.T
            return float(np.trace((D[:, None] * R) @ M @ R.T) - 2 * np.sum(G * (R @ F)))

        m = d * (d - 1) // 2
        simplex = np.vstack([np.zeros(m), scale * np.eye(m)])
        result = scipy.optimize.minimize(change, np.zeros(m), method="Nelder-Mead",
                                         options={"initial_simplex": simplex, "xatol": scale * 1e-4,
                                                  "fatol": np.inf, "maxiter": 4000 * m, "maxfev": 4000 * m})
        R = R @ (np.eye(d) + _expm_minus_identity(_skew(result.x, d)))
    return R


def minimize_regularized_loss(problem, V, K, lam, *, gtol=1e-14, max_iter=20000):
    r"""A minimizer of L_reg = L + lam R(.; Sigma) reached by BFGS (scipy) from (V, K), with the
    closed-form gradients (grad L = (2 E Sigma K^T Sigma, 2 Sigma V^T E Sigma), E = V Sigma K - W*;
    grad R = (4 V N, -4 Sigma N Sigma K), N = V^T V - Sigma K K^T Sigma): a point of
    argmin L_reg found without `manifold_point` or the projection.  Returns (V, K, the final
    gradient norm)."""
    import scipy.optimize

    S, W, k, d = problem.Sigma, problem.W, problem.k, problem.d

    def objective(x):
        Vx, Kx = x[: k * d].reshape(k, d), x[k * d:].reshape(d, d)
        E = Vx @ S @ Kx - W
        N = Vx.T @ Vx - S @ Kx @ Kx.T @ S
        value = np.sum((E @ S) * E) + lam * np.sum(N * N)
        gV = 2 * E @ S @ Kx.T @ S + lam * 4 * Vx @ N
        gK = 2 * S @ Vx.T @ E @ S - lam * 4 * S @ N @ S @ Kx
        return value, np.concatenate([gV.ravel(), gK.ravel()])

    x = np.concatenate([np.ravel(V), np.ravel(K)])
    for _ in range(3):   # BFGS restarted from its own end point (its curvature model resets)
        x = scipy.optimize.minimize(objective, x, jac=True, method="BFGS",
                                    options={"gtol": gtol, "maxiter": max_iter}).x
    return x[: k * d].reshape(k, d), x[k * d:].reshape(d, d), float(np.linalg.norm(objective(x)[1]))


__all__ += ["derivative_free_projection", "minimize_regularized_loss"]


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
    return np.array([float(_batch_losses(problem, V, K, n, batches, rng, "attention", tensor, noise=False).mean())
                     for _ in range(groups)])


#: the sizes of `manifold_gap`: n grid (the quick grid of `thm1.closed_form`), covariate rows per
#: n (split over the groups), independent replicate groups per n
MANIFOLD_GAP_SIZES = {"quick": {"ns": [16, 32, 64], "rows": 50000, "groups": 10},
                      "full": {"ns": [16, 32, 64, 128, 256], "rows": 400000, "groups": 10}}


@shared_run(sizes=MANIFOLD_GAP_SIZES)
def manifold_gap(run, *, tail):
    r"""E Lhat_n - k sigma^2 by Monte Carlo at the manifold point theta_R0 (R0 the Haar rotation of
    `softmax_row_moments`) of the well-conditioned instance with W* rescaled so that mu(K) =
    ``tail`` (`manifold_point_with_tail`): per n of ``ns``, ``groups`` independent group means
    of the noise-free in-sample loss (`noise_free_loss_groups`, rows/(n groups) training sets
    each).  Returns n, the group means "losses" (len(ns), groups), the instance, V, K, mu."""
    base = well_conditioned(run.rng("well_conditioned"))
    R0 = haar_rotations(run.rng("softmax_point"), base.d, 1)[0]
    problem, V, K = manifold_point_with_tail(base, R0, tail)
    rng = run.rng("manifold_gap", tail)
    s = run.sizes
    losses = np.array([noise_free_loss_groups(problem, V, K, n, s["groups"], max(s["rows"] // (n * s["groups"]), 2),
                                              rng, run.tensor) for n in s["ns"]])
    return {"n": np.array(s["ns"]), "losses": losses, "problem": problem, "V": V, "K": K,
            "mu": score_tail(K, problem.Sigma)}


__all__ += ["manifold_point_with_tail", "noise_free_loss_groups", "MANIFOLD_GAP_SIZES", "manifold_gap"]
