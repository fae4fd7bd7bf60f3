r"""gsb26: the per-step contraction of dist^2(theta_t, M) in the proof of Theorem 2.

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Theorem 2 (proof): from (3), (4) and the
non-expansiveness of re-projection, Phi_{t+1} <= ||theta_{t+1} - theta*_t||^2 <= (1 - 2 eta
alpha + eta^2 beta^2) Phi_t, which at eta = alpha/beta^2 is (1 - alpha^2/beta^2) Phi_t.
"""
import numpy as np

from theorycheck import Calibrated, Control, claim

from .dynamics import CONTRACTION_RADIUS, contraction_run
from .setup import decide_recipe, ill_conditioned, record_assumptions

CONTRACTS = "Phi_{t+1} <= (1 - alpha^2/beta^2) Phi_t at every step from inside the neighbourhood"


@claim(
    "gsb26.thm2.per_step_contraction",
    source="Theorem 2 (proof step), from Theorem 1 (3)-(4)",
    statement="With the population oracle, the true-Sigma regularizer and preconditioner and "
              "eta = alpha/beta^2, every step inside the neighbourhood contracts "
              "dist^2(theta, M) by at least 1 - alpha^2/beta^2.",
    provenance="derived",
    over_budget=("Phi_{t+1} <= (1 - alpha^2/beta^2) Phi_t at every step keeps it over, with the start's "
                 "precondition: the slowest step contracts by about 1 - 2 eta alpha_loc(R_t), so the margin 1 - ratio/rho "
                 "scales with the instance's alpha^2/beta^2, which spans decades (no tail model; counting bounds it near "
                 "1e-2), and the chosen draw's start distance is truncated by the choice. Decided as the fraction of "
                 "Phi removed per step over alpha^2/beta^2 on the log scale (tried, not kept), the claim's tail is "
                 "log-normal but of order 1e-3 at 50 seeds, and the unstable control's margins then span decades too "
                 "(counted), so that design needs rows of several hundred seeds, each a projected run; the steps of "
                 "one trajectory are no independent instances for a rate. The verdict reports the largest "
                 "ratio against rho on the seed's instance."),
    controls={
        "unstable_step": Control(
            "dynamics", breaks=[CONTRACTS],
            description="the same iteration from the same spectral point at eta = 4/beta instead "
                        "of alpha/beta^2 (its own run): 2/eta = beta/2 lies below mu_max at every "
                        "sampled point of M, so the step condition behind (1 - 2 eta alpha + eta^2 "
                        "beta^2) < 1 fails, M is not linearly stable and dist^2 grows from the "
                        "first steps (as thm2.geometric_rate's unstable_step)",
            constants={"eta_factor": 4.0}),
    },
    calibration=["The spec observed max Phi_{t+1}/Phi_t = 0.99943 against rho = 0.999968.",
                 "delta was first 0.5; the spectral initialization from n = 4000 samples was at 0.62 on "
                 "seed 2, so delta was aligned with the one-point claims' radius 0.8 after seeing it "
                 "(not held out; the conclusion held there as well).",
                 "The control was 'unbalanced_without_regularizer' (lambda = 0 from a minimizer of L off "
                 "M): the gradient vanishes there, so Phi_{t+1}/Phi_t = 1 > rho by construction "
                 "(audit 2026-11-28).  Replaced by unstable_step (eta = 4/beta, thm2.geometric_rate's "
                 "factor); a scratch run on seeds 3000-3003 left the neighbourhood within 4-6 steps, "
                 "largest ratio inside 4-7.7, diverged by step 15 (at 2.5/beta two of four seeds "
                 "still contracted: 4 is beyond the edge at every sampled point).",
                 "One instance a seed until the unseen sweep: on seed 630279474 the spectral start lay at "
                 "0.826 > 0.8 (hypotheses not met).  Now the first of NEIGHBOURHOOD_DRAWS = 8 independent "
                 "draws whose start is in the neighbourhood (the hypothesis, checked before any step), "
                 "radius 0.8 unchanged.",
                 Calibrated(decision="spectral start delta-close: dist <= 0.8 sqrt(sigma_d(W*))", threshold=0.8,
                            calibration_seeds="7000-7011", validation_seeds="8000-8009",
                            how="radius unchanged; 8 draws. Calibration block (12 seeds, cut by the "
                                "session's CPU): the first draw qualified on every seed (start 0.15 .. "
                                "0.78); validation block (10 seeds): 0.11 .. 0.50. No claim failure on the "
                                "22 seeds (run with the earlier control; unstable_step's misses: the "
                                "table's row). P(no draw qualifies) = p^8 for a per-draw miss rate p (1 of 10 unseen seeds before: p^8 ~ 1e-8)")],
    sizes={"quick": {}, "full": {}},
)
def test_per_step_contraction(tc):
    r"""alpha = min_R alpha_loc(R), beta = max_R beta_loc(R) over 20 Haar R (100 on the full
    tier) of L + R/4 on the ill-conditioned instance (eig Sigma = geomspace(0.1, 1, 3)), eta =
    alpha/beta^2, rho = 1 - 2 eta alpha + eta^2 beta^2 = 1 - alpha^2/beta^2.  From the spectral
    initialization (n = 4000 samples), 300 steps (1000 full) of theta <- theta - eta
    diag(I, Sigma^{-1}) grad L_reg(theta), Phi_t = dist^2_{Sigma_bar}(theta_t, M) at every step
    (multi-start weighted Procrustes, then warm-started) while theta_t stays in the
    neighbourhood dist <= 0.8 sqrt(sigma_d(W*)) (the radius at which the one-point claims test
    (3)-(4)).  Pass: Phi_{t+1}/Phi_t <= rho at every step whose theta_t is in the neighbourhood
    (no tolerance: the projections are accurate to their first-order tolerance, far below
    1 - rho of Phi); an iterate can leave the neighbourhood only through a step that grew Phi,
    so the statement's "every step inside" is tested in full.  Preconditions: A1, A2, the
    spectral start inside the neighbourhood; the instance is the first of
    `NEIGHBOURHOOD_DRAWS` independent draws (instance and spectral start) whose start lies in
    the neighbourhood, chosen by the hypothesis before any step, never by the outcome (the draws
    examined and their start distances are recorded).  The constants are sampled on R, so min/max over a
    finite sample is an estimate of the uniform constants (the spec's recipe; the full tier
    uses 100 R).  Control: the step eta = 4/beta, beyond linear stability at every sampled
    point of M (eta < 2/mu_max(R) fails), judged against the theorem's rho.
    """
    decide_recipe(tc, ill_conditioned, a3=False)
    run = tc.use(contraction_run, eta_factor=4.0 if tc.control == "unstable_step" else None)
    problem = run["problem"]
    record_assumptions(tc, problem)
    tc.record("instance draw (first with its start in the neighbourhood)", run["draw"])
    tc.record("start dist / sqrt(sigma_d(W*)) of the draws examined", run["examined"])
    dist = np.sqrt(run["phi"]) / np.sqrt(problem.singular_values()[-1])
    tc.precondition.at_most("spectral start delta-close: dist <= 0.8 sqrt(sigma_d(W*))", dist[0],
                            CONTRACTION_RADIUS)
    rho = 1 - run["alpha"] ** 2 / run["beta"] ** 2
    ratios = (run["phi"][1:] / run["phi"][:-1])[dist[:-1] <= CONTRACTION_RADIUS]
    tc.conclusion.at_most(CONTRACTS, ratios, rho)
    tc.record("rho", rho)
    tc.record("eta", run["eta"])
    tc.record("steps judged (from inside the neighbourhood)", len(ratios))
    tc.record("max Phi_{t+1}/Phi_t", float(ratios.max()))
    tc.curve("phi", "dist^2(theta_t, M)", run["t"], run["phi"], yscale="log")
    tc.curve("phi", "rho^t Phi_0", run["t"], run["phi"][0] * rho ** run["t"], style="bound")
