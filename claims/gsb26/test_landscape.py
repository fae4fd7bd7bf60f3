r"""gsb26: the landscape of the regularized population loss near the manifold of minima:
one-point strong convexity, one-point smoothness (Theorem 1, part 3) and the descent lemma
(Lemma 2).

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Theorem 1 (3)-(4) and Lemma 2.  The paper's
constants alpha, beta, delta are lost; they are replaced by the computable local constants at
the projection point (`theorycheck.solvers.local_constants`): alpha_loc and mu_max = beta_loc of
the normal-space pencil (N^T H N, N^T Mbar N) of the Hessian H of L_reg.  All three claims read
the points of `one_point_landscape` (the spread instance, eig Sigma = geomspace(1, 10, 3)).
"""
import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck.patterns import per_instance

from .landscape import INSTANCE_ALPHA, LANDSCAPE_SIZES, NEAR, OUTSIDE_RADII, instance_runs
from .setup import PAPER

ALPHA_POSITIVE = "alpha_loc > 0 at the projections"
ALPHA_NEAR = "<grad, theta - theta*> >= 0.9 alpha_loc dist^2 for r <= 0.2"
ALPHA_FAR = "<grad, theta - theta*> > 0 up to r = 0.8"
BETA_NEAR = "dual norm <= 1.1 beta_loc dist for r <= 0.2"
BETA_FAR = "dual norm <= 1.5 beta_loc dist up to r = 0.8"
DESCENT = "L_reg - k sigma^2 <= beta_loc/2 dist^2 for r <= 0.2"
#: the rate at which each radius statement is claimed over independent instances of
#: `one_point_landscape` (binomial test at level INSTANCE_ALPHA): the one-sided 99.9%
#: Clopper-Pearson lower bound of the per-instance rate on the calibration block, rounded down
#: to 0.05 (the records of the claims)
INSTANCE_RATE = {ALPHA_POSITIVE: 0.95, ALPHA_NEAR: 0.95, ALPHA_FAR: 0.9, BETA_NEAR: 0.95, BETA_FAR: 0.95,
                 DESCENT: 0.95}
LOW_POWER = ("5 instances of the landscape a case (its cost: 36 projections and local constants each); "
             "the rate is claimed at the level 1e-4 of the claim budget, and the controls break the "
             "statement on every instance")


def instance_rate_record(name):
    """The calibration record of a radius statement claimed at the rate 0.95 over instances."""
    return Calibrated(decision=name, threshold=INSTANCE_RATE[name], calibration_seeds="76000-76049",
                      validation_seeds="76500-76549",
                      how="rate fixed at 0.95 before the block ran, confirmed by the rule: on the calibration block "
                          "250 of 250 instances held (5 a seed; 99.9% Clopper-Pearson lower bound 0.973 -> 0.95); "
                          "validation: 250 of 250 instances held (5 a seed on 76500-76549, drawn by a scratch script "
                          "with streams (seed, instance))")


def decide_instances(tc, name, values, holds):
    """The radius statement ``name`` decided per instance (``holds``, ``values`` recorded) and
    accepted by the binomial test of P[holds] >= INSTANCE_RATE[name] at level INSTANCE_ALPHA."""
    per_instance(tc, name, np.asarray(values, dtype=float), np.asarray(holds, dtype=bool),
                 p=INSTANCE_RATE[name], alpha=INSTANCE_ALPHA, low_power=LOW_POWER)


def outside_radii(tc):
    """The configuration of `one_point_landscape` for the case: the far control's radii
    `OUTSIDE_RADII`, else the tier's."""
    return {"radii": OUTSIDE_RADII} if tc.control == "far_from_manifold" else {}


def far_from_manifold(breaks, why):
    """The hypothesis control of the local bounds: points at the radii `OUTSIDE_RADII` (their
    own projections and gradients; delta-closeness violated), every point checked."""
    return Control("hypothesis", breaks=[breaks],
                   description=f"points at r = 3, 6 and 12 sqrt(sigma_d(W*)) (their own projections; "
                               f"delta-closeness violated), the bound checked at all of them: {why}",
                   constants=dict(zip(("r_1", "r_2", "r_3"), OUTSIDE_RADII)))


def near_points(tc, run):
    """The points of the r <= NEAR window (the far control: all its points, every one outside)."""
    return run["r"] <= (np.inf if tc.control == "far_from_manifold" else NEAR)


@claim(
    f"{PAPER}.thm1.one_point_strong_convexity",
    source="Theorem 1 (part 3), eq. (3)",
    statement="Near the manifold, <grad L_reg(theta), theta - P_M(theta)>_F >= alpha "
              "||theta - P_M(theta)||^2_{Sigma_bar} with alpha > 0.",
    provenance="inferred",
    controls={
        "no_regularizer": Control(
            "hypothesis", breaks=[ALPHA_POSITIVE],
            description="lambda = 0: the minimizers of L alone form a GL(d) orbit, so the normal "
                        "pencil has flat directions and alpha_loc = 0"),
        "random_rotation": Control(
            "reference", breaks=[ALPHA_FAR, ALPHA_NEAR],
            description="theta_R for a Haar-random R in place of the projection P_M(theta)"),
    },
    calibration=["Windows and the slack 0.9 are the spec's (spec I1: min ratio 0.985 at r = 0.2, "
                 "0.6 at r = 0.8), checked on seeds 1, 2 and 0.",
                 "Until 2026-11-29 each statement was decided on every point of one instance a case "
                 "(51000-51049: alpha_loc/mu_max's left tail heavier than a log-normal's, the r = 0.8 sign "
                 "at 2.2 sd); now as rates over independent instances (random_rotation also declares the "
                 "r <= 0.2 bound, which it breaks too).",
        instance_rate_record(ALPHA_POSITIVE),
        instance_rate_record(ALPHA_NEAR),
        Calibrated(decision=ALPHA_FAR, threshold=0.9, calibration_seeds="51000-51049,76000-76049",
                   validation_seeds="76500-76549",
                   how="rate fixed before the blocks ran: the row 51000-51049 (one instance a seed) put this statement's"
                       " per-instance failure rate at a normal tail of 1.5% (95% upper 6.6%) -> 0.93 -> 0.9; on the "
                       "calibration block 250 of 250 instances held (99.9% Clopper-Pearson lower bound 0.973, the rule's"
                       " 0.95: 0.9 is the lower, fixed before); validation: 250 of 250 instances held (5 a seed on "
                       "76500-76549, drawn by a scratch script with streams (seed, instance))")],
    sizes=LANDSCAPE_SIZES,
)
def test_one_point_strong_convexity(tc):
    r"""rho_alpha = <grad L_reg(theta), Delta>_F / ||Delta||^2_{Sigma_bar}, Delta = theta - P_M(theta),
    at theta = theta_{R0} + r sqrt(sigma_d) u/||u|| (u: 8 Gaussian directions and +- the two
    softest normal modes on the quick tier, 200 + 4 on the full tier; r in {0.05, 0.2, 0.8},
    full {0.01, ..., 0.8}), projection by the multi-start weighted Procrustes solver,
    lambda = 1/4, on ``instances`` independent draws of the spread instance, R0 and the
    directions (`instance_runs`).  The neighbourhood of (3) is the instance's (the paper's
    delta is lost), so the statements at the spec's radii are claimed as rates over instances:
    per instance, (a) alpha_loc(R*) > 1e-6 mu_max at every projection (the statement's
    alpha > 0), (b) rho_alpha >= 0.9 alpha_loc(R*) at every point with r <= 0.2 (the spec's
    tolerance: the second-order expansion is exact as r -> 0, and the soft modes make the bound
    nearly tight) and (c) rho_alpha > 0 at every point up to r = 0.8; each accepted by the exact
    binomial test of P[holds] >= `INSTANCE_RATE` at level 1e-4.  Also alpha_loc(2 W*) = 2
    alpha_loc(W*) is a library test.
    """
    lam = 0.0 if tc.control == "no_regularizer" else 0.25
    reference = "random_rotation" if tc.control == "random_rotation" else "projection"
    runs = instance_runs(tc, lam=lam, reference=reference)
    rhos = [run["inner"] / run["dist"] ** 2 for run in runs]
    positive = np.array([np.min(run["alpha"] / run["beta"]) for run in runs])
    near = np.array([np.min((rho / run["alpha"])[run["r"] <= NEAR]) for rho, run in zip(rhos, runs)])
    far = np.array([np.min(rho) for rho in rhos])
    decide_instances(tc, ALPHA_POSITIVE, positive, positive >= 1e-6)
    decide_instances(tc, ALPHA_NEAR, near, near >= 0.9)
    decide_instances(tc, ALPHA_FAR, far, far > 0.0)
    run, rho = runs[0], rhos[0]
    ratios = rho / run["alpha"]
    tc.record("min rho_alpha/alpha_loc per radius (first instance)",
              {float(r): float(ratios[run["r"] == r].min()) for r in np.unique(run["r"])})
    tc.record("fraction of points with rho_alpha <= 0", float(np.mean(np.concatenate(rhos) <= 0)))
    tc.curve("ratio", "rho_alpha / alpha_loc", run["r"], ratios, xlabel="r / sqrt(sigma_d)", sort_x=True)


@claim(
    f"{PAPER}.thm1.one_point_smoothness",
    source="Theorem 1 (part 3), eq. (4)",
    statement="Near the manifold, ||Sigma_bar^{-1} grad L_reg(theta)||_{Sigma_bar} <= beta "
              "||theta - P_M(theta)||_{Sigma_bar}.",
    provenance="inferred",
    controls={
        "wrong_dual_norm": Control(
            "statement", breaks=[BETA_NEAR],
            description="the bound stated for sqrt(||g_V||^2 + tr(g_K^T Sigma g_K)) (the "
                        "geometry without the inverse covariance) instead of the Sigma^{-1} dual norm"),
        "far_from_manifold": far_from_manifold(BETA_FAR, "the gradient grows like dist^3 there"),
    },
    calibration=["Tolerances 1.1 and 1.5 are the spec's (spec observed <= 0.80 and <= 0.90; wrong "
                 "dual norm 8.2 beta_loc at r = 0.1), checked on seeds 1, 2 and 0.",
                 "Until 2026-11-29 decided on every point of one instance a case; now as rates over "
                 "independent instances.",
        instance_rate_record(BETA_NEAR),
        instance_rate_record(BETA_FAR)],
    sizes=LANDSCAPE_SIZES,
)
def test_one_point_smoothness(tc):
    r"""rho_beta = sqrt(||g_V||_F^2 + tr(g_K^T Sigma^{-1} g_K)) / ||theta - P_M(theta)||_{Sigma_bar}
    (g = grad L_reg, lambda = 1/4) on the points of the strong-convexity claim, on its
    ``instances`` independent draws.  Near M, Mbar^{-1} H maps the normal space to itself, so
    rho_beta -> the largest normal-pencil eigenvalue mu_max = beta_loc(R*) as r -> 0.  Per
    instance: max rho_beta <= 1.1 beta_loc for r <= 0.2 and <= 1.5 beta_loc for r <= 0.8 (the
    spec's tolerances), each claimed as a rate over instances (binomial test of P[holds] >=
    `INSTANCE_RATE` at level 1e-4; the neighbourhood is the instance's).  The instance has eig
    Sigma in [1, 10], where the Sigma-weighted dual norm (the wrong geometry) exceeds the bound
    by a factor of up to kappa(Sigma) (the control).
    """
    runs = instance_runs(tc, **outside_radii(tc))
    key = "dual_wrong" if tc.control == "wrong_dual_norm" else "dual"
    ratios = [run[key] / (run["beta"] * run["dist"]) for run in runs]
    near = np.array([np.max(ratio[near_points(tc, run)]) for ratio, run in zip(ratios, runs)])
    every = np.array([np.max(ratio) for ratio in ratios])
    decide_instances(tc, BETA_NEAR, near, near <= 1.1)
    decide_instances(tc, BETA_FAR, every, every <= 1.5)
    run, ratio = runs[0], ratios[0]
    tc.record("max rho_beta/beta_loc per radius (first instance)",
              {float(r): float(ratio[run["r"] == r].max()) for r in np.unique(run["r"])})
    tc.curve("ratio", "rho_beta / beta_loc", run["r"], ratio, xlabel="r / sqrt(sigma_d)", sort_x=True)


@claim(
    f"{PAPER}.lem2.descent",
    source="Lemma 2",
    statement="Near the manifold, L_reg(theta) - k sigma^2 <= (beta/2) ||theta - P_M(theta)||^2_{Sigma_bar}.",
    provenance="derived",
    controls={
        "alpha_for_beta": Control(
            "statement", breaks=[DESCENT],
            description="the stronger bound with alpha_loc in place of beta (the lower "
                        "quadratic growth constant)"),
        "far_from_manifold": far_from_manifold(DESCENT, "the quartic terms of L_reg exceed the quadratic bound"),
    },
    calibration=["Window r <= 0.2 from the spec (spec I2 max ratio 0.594), checked on seeds 1, 2 and 0.",
                 "Until 2026-11-29 decided on every point of one instance a case (51000-51049: 4.0 sd); now "
                 "as a rate over independent instances.",
        instance_rate_record(DESCENT)],
    sizes=LANDSCAPE_SIZES,
)
def test_descent(tc):
    r"""Integrating (4) along the segment from theta* = P_M(theta) to theta (every point of it
    projects to theta*) gives L_reg(theta) - k sigma^2 <= (beta/2) dist^2.  With beta =
    beta_loc(R*) the bound is tight only to second order, so it is tested where the expansion
    holds: per instance (``instances`` independent draws, `instance_runs`), max (L_reg - k
    sigma^2)/(beta_loc/2 dist^2) <= 1 over the points with r <= 0.2 (the spec's window;
    lambda = 1/4), claimed as a rate over instances (binomial test of P[holds] >=
    `INSTANCE_RATE` at level 1e-4; the neighbourhood is the instance's).  Statement control:
    alpha_loc in place of beta must fail (locally L_reg - k sigma^2 >= (alpha_loc/2) dist^2,
    with equality only along the softest mode).
    """
    runs = instance_runs(tc, **outside_radii(tc))
    constant = "alpha" if tc.control == "alpha_for_beta" else "beta"
    ratios = []
    for run in runs:
        near = near_points(tc, run)
        ratios.append(run["excess"][near] / (run[constant][near] / 2 * run["dist"][near] ** 2))
    worst = np.array([ratio.max() for ratio in ratios])
    decide_instances(tc, DESCENT, worst, worst <= 1.0)
    tc.record("max ratio", float(worst.max()))
    tc.record("min ratio", float(min(ratio.min() for ratio in ratios)))
