r"""gsb26: Algorithm 1 (spectral initialization, balancing regularizer, preconditioned GD) with
the population gradient oracle: geometric convergence and its asymptotic rate.

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Algorithm 1 and Theorem 2 (optimization
part); the asymptotic rate is derived from Theorem 1 (3)-(4).
"""
import numpy as np

from theorycheck import Control, claim

from .setup import population_oracle_run, record_assumptions

PAPER = "gsb26"
ALGO_SIZES = {"quick": {"fit_steps": 600, "window": [500, 1000]},
              "full": {"fit_steps": 600, "window": [500, 1500]}}


def _excess_fit(tc, run, trial, fit_steps):
    """Fit window of log(L - k sigma^2): the first ``fit_steps`` steps where the excess exceeds
    1e-13 (below that, round-off of L at k sigma^2 = 0.04 dominates)."""
    excess = run["excess"][:, trial]
    usable = np.flatnonzero(excess > 1e-13)
    end = int(min(fit_steps, usable[-1] if usable.size else 0))
    return run["t"], excess, end


@claim(
    f"{PAPER}.thm2.geometric_rate",
    source="Theorem 2 (optimization term); Algorithm 1",
    statement="From the spectral initialization, Algorithm 1 (Sigma_hat-preconditioned GD on the "
              "Sigma_hat-regularized loss) with the population gradient oracle decreases the "
              "excess population loss L - k sigma^2 geometrically.",
    provenance="inferred",
    controls={
        "unstable_step": Control(
            "dynamics", breaks=["log excess loss decreases linearly in t (slope)"],
            description="step size eta = 4, above the stability threshold 2/mu_max: the "
                        "iteration diverges (recorded as a measurement)"),
    },
    sizes=ALGO_SIZES,
)
def test_geometric_rate(tc):
    r"""Population oracle grad L + lambda grad R(.; Sigma_hat), lambda = 1/4, preconditioner
    diag(I, Sigma_hat^{-1}), Sigma_hat and the spectral point from n = 4000 samples on the
    ill-conditioned instance (eig Sigma = geomspace(0.1, 1, 3)), eta = 1.  The population
    oracle isolates the optimization term of Theorem 2 (its statistical term is the floor
    of `thm2.statistical_floor`).  Pass: a least-squares fit of log(L(theta_t) - k sigma^2)
    against t over the first 600 steps where the excess exceeds 1e-13 has slope < -0.005 per
    step and R^2 > 0.99 (the spec's window and thresholds), and the excess at the last step is
    below 1e-12.  The thresholds were set before looking at this instance; seeds 1 and 2 gave
    slopes of the order -0.017.  A3 (kappa sigma_1 = 2 here) is not needed with the population
    oracle: it governs the finite-n gradient approximation only, so only A1, A2 are recorded.
    Divergence is recorded, not raised (the unstable_step control).
    """
    eta = 4.0 if tc.control == "unstable_step" else 1.0
    run = tc.use(population_oracle_run, etas=(eta,), track=False)
    record_assumptions(tc, run["problem"], a3=False)
    t, excess, end = _excess_fit(tc, run, 0, tc.sizes["fit_steps"])
    tc.record("diverged at step", int(run["diverged_at"][0]))
    tc.record("fit end", end)
    finite = np.isfinite(excess[: end + 1]) & (excess[: end + 1] > 0)
    tc.conclusion.slope("log excess loss decreases linearly in t (slope)", t[: end + 1][finite],
                        excess[: end + 1][finite], window=(0, max(end, 1)), x_transform="linear",
                        at_most=-0.005, min_r2=0.99)
    tc.conclusion.at_most("excess loss at the last step", excess[-1], 1e-12)
    tc.curve("excess", "L(theta_t) - k sigma^2", t, excess, yscale="log")


@claim(
    f"{PAPER}.thm2.asymptotic_rate",
    source="Theorem 1 (3)-(4) with the preconditioned update (derived)",
    statement="With the population oracle, the true-Sigma regularizer and preconditioner "
              "diag(I, Sigma^{-1}), dist^2(theta_t, M) decays at the asymptotic per-step "
              "log-rate 2 log(1 - eta alpha_loc(R_inf)) predicted by the normal-space Hessian.",
    provenance="derived",
    controls={
        "no_preconditioner": Control(
            "dynamics", breaks=["slope of log dist^2 matches 2 log(1 - eta alpha_loc)"],
            description="the same iteration without the preconditioner (Sigma^{-1} replaced "
                        "by I): several times slower"),
        "no_regularizer": Control(
            "dynamics", breaks=["slope of log dist^2 matches 2 log(1 - eta alpha_loc)"],
            description="lambda = 0: the iterates stop at an unbalanced minimizer of L, off "
                        "the manifold, and dist^2 plateaus"),
    },
    sizes=ALGO_SIZES,
)
def test_asymptotic_rate(tc):
    r"""Phi_t = dist^2_{Sigma_bar}(theta_t, M), measured every 50 steps (10 on the full tier) by the weighted Procrustes
    projection (warm-started along the run), for eta in {0.5, 1} side by side.  Near M the
    preconditioned step is theta - eta Mbar^{-1} H (theta - theta*) in the normal space, so
    Phi_t ~ (1 - eta alpha_loc)^{2t} with alpha_loc the smallest eigenvalue of the normal-space
    pencil (N^T H N, N^T Mbar N) at the projection of the final iterate (`local_constants`),
    valid for eta <= 2/(alpha_loc + mu_max).  Pass: the fitted slope of log Phi_t over
    t in [500, 1000] is within 5% of 2 log(1 - eta alpha_loc) (the spec's tolerance; it
    reported -0.00867 vs -0.00850 and -0.01706 vs -0.01704), R^2 > 0.99.  A1, A2 recorded;
    eta within the stability range recorded as a precondition.
    """
    precondition = "none" if tc.control == "no_preconditioner" else "true"
    lam = 0.0 if tc.control == "no_regularizer" else 0.25
    run = tc.use(population_oracle_run, etas=(0.5, 1.0), precondition=precondition,
                 regularizer="true", lam=lam)
    record_assumptions(tc, run["problem"], a3=False)
    # the rate is predicted with the lambda = 1/4 constants of the statement
    reference = run if lam > 0 else tc.use(population_oracle_run, etas=(0.5, 1.0), precondition="true",
                                           regularizer="true", lam=0.25)
    alphas = np.array([c.alpha for c in reference["constants"]])
    mus = np.array([c.mu_max for c in reference["constants"]])
    tc.precondition.at_most("eta <= 2/(alpha_loc + mu_max)", run["etas"], 2 / (alphas + mus))
    predicted = 2 * np.log(1 - run["etas"] * alphas)
    lo, hi = tc.sizes["window"]
    fitted = []
    for j, eta in enumerate(run["etas"]):
        tc.conclusion.slope("slope of log dist^2 matches 2 log(1 - eta alpha_loc)", run["dist_t"],
                            run["dist"][:, j] ** 2, window=(lo, hi), x_transform="linear",
                            expected=predicted[j], rtol=0.05, min_r2=0.99)
        tc.curve("dist", f"dist^2, eta = {eta}", run["dist_t"], run["dist"][:, j] ** 2, yscale="log")
    tc.record("predicted slopes", predicted)
    tc.record("alpha_loc", alphas)
