r"""gsb26's landscape near the manifold of minima: the points, reference points and gradients of
`one_point_landscape` and the hypotheses of the claims that read it (`test_landscape.py`, and
Lemma 4 in `test_estimators.py`).

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Theorem 1 (3)-(4) and Lemma 2.
"""
from __future__ import annotations

import numpy as np

from theorycheck import shared_run
from theorycheck.models.attention_regression import PopulationAttentionRegression
from theorycheck.solvers import ManifoldProjection, local_constants, manifold_point, project_to_manifold

from .setup import IllConditioned, decide_recipe, haar_rotations, record_assumptions, regularized_model, sigma_bar_norms

#: the one-point inequalities are tested on the I2 recipe with eig Sigma spread over [1, 10]:
#: Sigma != cI (no closed-form projection) and a Sigma-weighted dual norm differs from the
#: Sigma^{-1}-weighted one by up to kappa(Sigma) = 10
SPREAD_SPECTRUM = (1.0, 10.0)
SPREAD_INSTANCE = IllConditioned(spectrum=SPREAD_SPECTRUM)
#: the regularizer weight lambda of `one_point_landscape`
LANDSCAPE_LAMBDA = 0.25


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
def one_point_landscape(run, *, lam=LANDSCAPE_LAMBDA, reference="projection", radii=None, instance=None):
    r"""Points near the manifold of the spread instance (`SPREAD_SPECTRUM`), their reference
    point theta* (``reference`` "projection": the Sigma_bar projection P_M(theta); "random_rotation":
    theta_R for a Haar R), and per point: r, dist = ||theta - theta*||_{Sigma_bar}, <grad L_reg,
    theta - theta*>_F, the dual norms sqrt(||g_V||^2 + tr(g_K^T Sigma^{-1} g_K)) and (the wrong
    geometry) with Sigma in place of Sigma^{-1}, L_reg - k sigma^2, and alpha_loc, beta_loc
    (= mu_max) of the lambda-regularized loss at theta*; the points theta, the displacements
    theta - theta* and the gradients themselves (pairs of (P, k, d), (P, d, d) arrays) for other
    geometries and objectives.  The gradient is the closed form of
    L + lambda R(.; Sigma), batched over the points.  ``radii`` (in units of sqrt(sigma_d(W*)))
    defaults to the tier's.  ``instance``: an independent draw of everything (instance, R0,
    directions, projection starts), its streams keyed by the number; None is the first draw
    (the streams without a key)."""
    s = run.sizes
    key = () if instance is None else (instance,)
    problem = SPREAD_INSTANCE(run.rng("spread_instance", *key))
    R0 = haar_rotations(run.rng("landscape_R0", *key), problem.d, 1)[0]
    V0, K0 = manifold_point(problem.W, problem.Sigma, R0)
    one = regularized_model(problem, lam, run.tensor)
    r, V, K = neighbourhood_points(problem, V0, K0, local_constants(one, V0, K0, problem.Sigma).modes,
                                   s["radii"] if radii is None else radii, s["directions"],
                                   run.rng("landscape_directions", *key))
    rng = run.rng("landscape_projections", *key)
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
            "points": (V, K), "displacement": (dV, dK), "gradient": (g["V"], g["K"]), "problem": problem,
            "lam": lam}


#: radii in units of sqrt(sigma_d(W*)): the local constants are sharp up to NEAR, the inequalities
#: must keep their sign up to FAR (the spec's windows, checked on seeds 1, 2 and 0)
NEAR, FAR = 0.2, 0.8
#: radii far outside the neighbourhood (the hypothesis controls' points): there the cubic and
#: quartic terms of L_reg dominate its quadratic expansion
OUTSIDE_RADII = (3.0, 6.0, 12.0)


def landscape_radii(tc, radii=None):
    """The radii of the points of `one_point_landscape` (in units of sqrt(sigma_d(W*))): ``radii``,
    or by default the tier's."""
    return one_point_landscape.sizes_of(tc.tier)["radii"] if radii is None else radii


#: the sizes of the claims that decide the radius statements of the one-point inequalities and
#: Lemma 2 as rates over ``instances`` independent draws of `one_point_landscape` (binomial tests)
LANDSCAPE_SIZES = {"quick": {"instances": 5}, "full": {"instances": 5}}
#: the level of those binomial tests (of the claim budget 3e-4)
INSTANCE_ALPHA = 1e-4


def instance_runs(tc, *, lam=LANDSCAPE_LAMBDA, radii=None, **config):
    """``tc.sizes["instances"]`` independent draws of `one_point_landscape` with this
    configuration (the first is the draw without a stream key), the hypotheses decided as
    `landscape_run` does, A2's sigma_d(W*) > 0 decided on every instance."""
    decide_hypotheses(tc, lam, radii)
    runs = [tc.use(one_point_landscape, lam=lam, radii=radii, instance=j or None, **config)
            for j in range(tc.sizes["instances"])]
    record_assumptions(tc, [run["problem"] for run in runs])
    return runs


def decide_hypotheses(tc, lam, radii):
    """A1, A2's k >= d (`SPREAD_INSTANCE`), lambda > 0 and the points delta-close (dist(theta, M)
    <= ||theta - theta_{R0}||_{Sigma_bar} = r sqrt(sigma_d(W*)) by construction, so r <= 0.8 of
    the configured radii suffices), from the configuration before anything runs.  A3 is not
    used by these population statements."""
    decide_recipe(tc, SPREAD_INSTANCE, a3=False)
    tc.precondition.holds("regularizer weight lambda > 0", lam > 0)
    tc.precondition.at_most("points delta-close: dist(theta, M) <= 0.8 sqrt(sigma_d(W*))",
                            landscape_radii(tc, radii), FAR)


def landscape_run(tc, *, lam=LANDSCAPE_LAMBDA, radii=None, **config):
    """`one_point_landscape` with this configuration, the theorem's hypotheses decided from the
    configuration before it runs -- A1, A2's k >= d (`SPREAD_INSTANCE`), lambda > 0 and the
    points delta-close (dist(theta, M) <= ||theta - theta_{R0}||_{Sigma_bar} = r
    sqrt(sigma_d(W*)) by construction, so r <= 0.8 of the configured radii suffices) -- and
    A2's sigma_d(W*) > 0 on its instance after (`decide_hypotheses`)."""
    decide_hypotheses(tc, lam, radii)
    run = tc.use(one_point_landscape, lam=lam, radii=radii, **config)
    record_assumptions(tc, run["problem"])
    return run
