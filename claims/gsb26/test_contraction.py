r"""gsb26: the per-step contraction of dist^2(theta_t, M) in the proof of Theorem 2.

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Theorem 2 (proof): from (3), (4) and the
non-expansiveness of re-projection, Phi_{t+1} <= ||theta_{t+1} - theta*_t||^2 <= (1 - 2 eta
alpha + eta^2 beta^2) Phi_t, which at eta = alpha/beta^2 is (1 - alpha^2/beta^2) Phi_t.
"""
import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck.patterns import per_instance

from .dynamics import CONTRACTION_RADIUS, contraction_run
from .setup import decide_recipe, ill_conditioned, record_assumptions

CONTRACTS = ("Phi_{t+1} <= (1 - alpha^2/beta^2) Phi_t at every step from inside the neighbourhood, on an "
             "instance at P >= 0.95")
#: the contraction is claimed per instance at this rate, accepted by the exact binomial test over the
#: instances whose start is in the neighbourhood at this level: with 4 it rejects when at most one
#: contracts at every step, with 3 at most one, with 2 none (so the control, which fails every
#: instance, is rejected with two qualifying instances)
CONTRACTION_RATE, CONTRACTION_ALPHA = 0.95, 0.01
CONTRACTION_LOW_POWER = ("4 independent instances a case, batched in one run (each instance's uniform constants "
                         "sample 20 Haar R, its steps a projection each); the control fails every instance")
DELTA_CLOSE = "spectral start delta-close: dist <= 0.8 sqrt(sigma_d(W*)), on an instance"
#: the hypothesis per instance: the exact binomial of P[a start is in the neighbourhood] >= 0.8 at
#: level 0.01, which with 4 instances rejects only when none is
CLOSE_RATE, CLOSE_ALPHA = 0.8, 0.01
CLOSE_LOW_POWER = ("4 instances: the hypothesis is checked per instance and the contraction read on those that "
                   "meet it; the test rejects only when none does")


@claim(
    "gsb26.thm2.per_step_contraction",
    source="Theorem 2 (proof step), from Theorem 1 (3)-(4)",
    statement="With the population oracle, the true-Sigma regularizer and preconditioner and "
              "eta = alpha/beta^2, every step inside the neighbourhood contracts "
              "dist^2(theta, M) by at least 1 - alpha^2/beta^2.",
    provenance="derived",
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
                 "The first of 8 draws with its start in the neighbourhood until 2026-12-03 (radius 0.8 unchanged, "
                 "calibration 7000-7011, validation 8000-8009): the first draw qualified on every seed (start 0.15 "
                 ".. 0.78, then 0.11 .. 0.50); no claim failure on the 22 seeds; P(no draw qualifies) = p^8 for a "
                 "per-draw miss rate p (1 of 10 unseen seeds before).  Until 2026-12-03 over the budget: "
                 "every step of the one instance's run, whose margin 1 - ratio/rho scales with alpha^2/beta^2 "
                 "(decades, no tail model), was counted near 1e-2 at 300 seeds (83300-83599).",
                 *(Calibrated(decision=name, threshold=threshold, calibration_seeds="146500-146549",
                              validation_seeds="146600-146899",
                              how="issue 31, 2026-12-03 (twenty-ninth session): 4 independent instances a case "
                                  "batched in one run, the start hypothesis per instance and the contraction "
                                  "over the instances whose start is inside; rates, levels and the count fixed "
                                  "before either block (the rate 0.95 of thm2.geometric_rate, the level 0.01 so "
                                  "that two qualifying instances can reject the control). Calibration: 4 of 200 "
                                  "starts outside (largest 1.08), no failing instance in 196 (largest ratio/rho "
                                  "0.99994); claim 6.9e-4 at 50 seeds, unstable_step 1.4e-3. Validation (the "
                                  "row): 25 of 1,200 starts outside (at most 2 a seed, largest 1.97; pooled 7e-7), "
                                  "no failing instance in 1,175 (ratio/rho 0.9961 to 0.99999); claim 2e-5; "
                                  "unstable_step failed every qualifying instance on every seed (ratio/rho 1.25 "
                                  "to 18), miss 5.1e-3 (seeds with two qualifying instances)")
                   for name, threshold in ((CONTRACTS, "P[an instance contracts] >= 0.95, level 0.01"),
                                           (DELTA_CLOSE, "P[a start is inside] >= 0.8, level 0.01 (radius 0.8)"))),
                 ],
    sizes={"quick": {}, "full": {}},
)
def test_per_step_contraction(tc):
    r"""On each of the tier's ``instances`` = 4 independent draws (ill-conditioned instance, eig
    Sigma = geomspace(0.1, 1, 3), and spectral initialization from n = 4000 samples; the first the
    draw without a stream key), batched in one run: alpha = min_R alpha_loc(R), beta = max_R
    beta_loc(R) over 20 Haar R (100 on the full tier) of L + R/4, eta = alpha/beta^2, rho = 1 -
    2 eta alpha + eta^2 beta^2 = 1 - alpha^2/beta^2; 300 steps (1000 full) of theta <- theta -
    eta diag(I, Sigma^{-1}) grad L_reg(theta), Phi_t = dist^2_{Sigma_bar}(theta_t, M) at every
    step (multi-start weighted Procrustes, then warm-started) while theta_t stays in the
    neighbourhood dist <= 0.8 sqrt(sigma_d(W*)) (the radius at which the one-point claims test
    (3)-(4)).  An instance contracts when Phi_{t+1}/Phi_t <= rho at every step whose theta_t is
    in the neighbourhood (no tolerance: the projections are accurate to their first-order
    tolerance, far below 1 - rho of Phi); an iterate can leave the neighbourhood only through a
    step that grew Phi, so the statement's "every step inside" is tested in full.
    Preconditions: A1, A2 on every instance; the spectral start inside the neighbourhood per
    instance (`DELTA_CLOSE`: the exact binomial of P[a start is inside] >= 0.8 at level 0.01,
    which rejects only when no start is), decided before any step.  Pass: the instances whose
    start is inside contract at the rate 0.95 (the exact binomial test at level 0.01: with 4 it
    rejects when at most one contracts): the margin 1 - ratio/rho scales with the instance's
    alpha^2/beta^2, which spans decades and has no tail model, so the statement is claimed at a
    rate over instances (the steps of one trajectory are no independent instances).  The
    constants are sampled on R, so min/max over a finite sample is an estimate of the uniform
    constants (the spec's recipe; the full tier uses 100 R).  Control: the step eta = 4/beta,
    beyond linear stability at every sampled point of M (eta < 2/mu_max(R) fails), judged
    against the theorem's rho.
    """
    decide_recipe(tc, ill_conditioned, a3=False)
    run = tc.use(contraction_run, eta_factor=4.0 if tc.control == "unstable_step" else None)
    record_assumptions(tc, run["problems"])
    scale = np.array([np.sqrt(problem.singular_values()[-1]) for problem in run["problems"]])
    start = np.array([np.sqrt(phi[0]) for phi in run["phi"]]) / scale
    inside = start <= CONTRACTION_RADIUS
    per_instance(tc, DELTA_CLOSE, start, inside, p=CLOSE_RATE, alpha=CLOSE_ALPHA, role="precondition",
                 low_power=CLOSE_LOW_POWER)
    rho = 1 - run["alpha"] ** 2 / run["beta"] ** 2
    worst, judged = np.full(len(rho), np.inf), np.zeros(len(rho), dtype=int)
    for i, phi in enumerate(run["phi"]):
        ratios = (phi[1:] / phi[:-1])[np.sqrt(phi[:-1]) / scale[i] <= CONTRACTION_RADIUS]
        judged[i] = len(ratios)
        if ratios.size:      # none from a start inside: the run left the finite numbers at once
            worst[i] = ratios.max() / rho[i]
        tc.curve("phi", f"dist^2(theta_t, M), instance {i}", run["t"][:len(phi)], phi, yscale="log")
    tc.record("rho", rho)
    tc.record("eta", run["eta"])
    tc.record("steps judged (from inside the neighbourhood)", judged)
    if inside.any():    # none: the precondition's binomial has rejected
        per_instance(tc, CONTRACTS, worst[inside], worst[inside] <= 1.0, p=CONTRACTION_RATE, alpha=CONTRACTION_ALPHA,
                     low_power=CONTRACTION_LOW_POWER)
