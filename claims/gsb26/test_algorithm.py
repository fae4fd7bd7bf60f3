r"""gsb26: Algorithm 1 (spectral initialization, balancing regularizer, preconditioned GD) with
the population gradient oracle: geometric convergence and its asymptotic rate.

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Algorithm 1 and Theorem 2 (optimization
part); the asymptotic rate is derived from Theorem 1 (3)-(4).
"""
import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck.checks import fit_slope
from theorycheck.patterns import per_instance

from .dynamics import population_oracle_run, window_log_contractions
from .setup import PAPER, decide_recipe, ill_conditioned, record_assumptions, settled_values

ALGO_SIZES = {tier: {"window": 100, "fit": 500, "instances": 4} for tier in ("quick", "full")}
#: round-off floors: L - k sigma^2 below 1e-13 (L = 0.04 + excess in float64) and
#: dist^2 below 1e-20 (the projection's first-order tolerance) carry no rate information
EXCESS_FLOOR, DIST2_FLOOR = 1e-13, 1e-20
DECREASE_DECADES = 12
"""The geometric-rate run lasts until the slowest normal mode predicted at its start, (1 - eta
alpha_loc)^{2t}, has fallen by 10^12: twice the 10^6 decrease the claim decides, a factor 2 on
the rate for the estimated regularizer and preconditioner (whose rate differs from the true-Sigma
alpha_loc by the estimation error) and the drift of R_t along M."""
SLOW_MODE_DECADES = 8
"""The asymptotic-rate run lasts until the slowest normal mode predicted at its start has fallen
by 10^8: a second mode with rate alpha_2 > alpha and initial weight w_0 relative to the slowest
biases the fitted slope by the relative amount (alpha_2/alpha - 1) w_0 e^{-2 eta (alpha_2 - alpha) t},
at most w_0 / (e D ln 10) = 2% of w_0 after D = 8 decades of the slowest mode (the maximum over
alpha_2), against the 5% tolerance."""
SLOW_MODE_SHARE = 0.05
"""The asymptotic-rate runs start with the slowest normal mode carrying at least this share of
dist^2 (`excite_slow_mode`): the asymptotic rate is that mode's, and from a start where it carries
almost nothing the faster modes take dist^2 to the round-off floor before it dominates, so the
fitted slope is the faster modes' (how the share was chosen: the claim's calibration record)."""
#: a window's log-contraction must reach this fraction of the rate the start predicts
RATE_FRACTION = 0.5
EVERY_WINDOW = ("every 100-step window contracts the excess loss at half the predicted rate "
                "(log10 factor <= 100 log10(1 - eta alpha_loc)), on an instance at P >= 0.95")
RUN_DECREASE = "excess loss falls by 10^6 over the run (log10 decrease <= -6), on an instance at P >= 0.95"
#: the rate at which an instance of thm2.geometric_rate meets each of its statements, and the level
#: of the exact binomial test over the case's instances: with 4 instances it rejects when at most 1
#: holds (P[Bin(4, 0.95) <= 1] = 4.8e-4 < 1e-3 < P[<= 2])
INSTANCE_RATE, INSTANCE_ALPHA = 0.95, 1e-3
LOW_POWER = ("4 independent instances a case, batched in one run as long as the slowest instance's predicted "
             "rate needs (more instances lengthen the run: its cost); the test rejects when 3 of 4 fail, and the "
             "unstable_step control fails both statements on every instance")


@claim(
    f"{PAPER}.thm2.geometric_rate",
    source="Theorem 2 (optimization term); Algorithm 1",
    statement="From the spectral initialization, Algorithm 1 (Sigma_hat-preconditioned GD on the "
              "Sigma_hat-regularized loss) with the population gradient oracle decreases the "
              "excess population loss L - k sigma^2 geometrically.",
    provenance="inferred",
    controls={
        "unstable_step": Control(
            "dynamics", breaks=[RUN_DECREASE, EVERY_WINDOW],
            description="the same instances run at eta = 4/mu_max(R_0), mu_max(R_0) the largest normal "
                        "curvature at the projection of each start: 2/eta = mu_max(R_0)/2 lies below "
                        "mu_max(R) at every point of M the sweeps sampled (mu_max varies over M by less than "
                        "a factor 2: the calibration record), so no manifold point is a linearly stable fixed "
                        "point of the iteration",
            constants={"eta_factor": 4.0}),
    },
    constants={"rate_fraction": RATE_FRACTION, "window": 100, "decrease": 1e-6, "instance_rate": INSTANCE_RATE,
               "instance_alpha": INSTANCE_ALPHA},
    calibration=[
        "The spec's criterion (a single log-linear fit over 600 steps, slope < -0.005, R^2 > 0.99, "
        "excess < 1e-12 by T = 1000) held on the default seed but failed on seeds 1, 2, 3 (R^2 = 0.96 "
        "and 0.83: several normal modes decay at different rates; slopes down to -0.0054).  The window "
        "contraction 0.9 per 100 steps was chosen on seeds 1, 2, 3 and checked on 0: chosen after "
        "seeing the default seed's data.",
        "The control was 'no_preconditioner'; it passed unexpectedly on 6 of 19 seeds of the 20-seed "
        "sweep (7, 8, 9, 11, 12, 17: the unpreconditioned run also fell by more than 10^6 in 3000 "
        "steps).  Replaced by eta = 4/beta: min_R mu_max over 200 Haar R was 0.52-0.77 and beta "
        "0.75-0.80 on seeds 0-19, so 2/eta = 0.37-0.40; at eta = 2.5/beta seeds 0, 7 still converged.",
        "T = 3000 fell only 10^4.83 on unseen seed 630279474 (a slow instance); T now follows the rate.",
        "The window contraction 0.9 per 100 steps failed on the unseen seed 168935953 (sweep of "
        "2026-11-28 d): alpha_loc at the start 1.3e-4, a slow instance whose worst window contracted "
        "by 10^-0.0110, the predicted 2 x 100 log10(1 - alpha_loc) = -0.0113; a fixed factor is no "
        "consequence of the theorem (its rate is the instance's).  The window bound now follows the "
        "start's predicted rate, RATE_FRACTION = 1/2 of it (a slack for alpha_loc along the path, "
        "not fitted): over the 29 seeds of 955297912-955297931, 168935948-168935955 and 19000 the "
        "worst window reached 0.97-1.52 of the predicted rate.",
        "One instance a seed until 2026-12-01: the window rule (RATE_FRACTION = 1/2 of the start's predicted "
        "log-rate) was calibrated on 168935948-168935955 and validated on 18100-18149 (no failure in 50, worst "
        "window at 0.88-1.92 of the predicted rate, least relative margin 0.77), the 10^6 decrease with T "
        "following the rate (DECREASE_DECADES) on 7000-7009 / 8000-8008 (least relative margin 1.18); the "
        "table's row at 300 seeds had neither margin modelled (skewed, bimodal), counted near 1e-2.",
        *(Calibrated(decision=name, threshold="P[holds] >= INSTANCE_RATE = 0.95 over 4 instances, level 1e-3",
                     calibration_seeds="133200-133249", validation_seeds="133300-133349",
                     how="rate, level and instance count fixed before either block ran (the window rule and the "
                         "10^6 decrease unchanged), from the cost (4 instances batched in one run keep the "
                         "claim's CPU time at seed 0) and the control's miss (P[Bin(4, theta) > 1] small for a "
                         "control failing every instance). Calibration: 200 of 200 instances held both "
                         "statements (worst window 0.78-1.67 of the predicted log-rate, decrease 12.7-27.8 "
                         "decades, runs 3000-33,193 steps, median 3302); claim 2.6e-5 (pooled trials), "
                         "unstable_step failed every instance on every seed (miss 1.3e-3). Validation (the row): 199 of "
                         "200 instances held the window rule (one at 0.39 of the predicted rate, seed 133304, "
                         "its seed's test passing with 3 of 4), 200 of 200 the decrease (9.0-27.5 decades; one "
                         "slow instance, alpha_loc 1.2e-4, ran to STEP_CEILING); claim 6.4e-5, unstable_step "
                         "failed every instance (miss 1.3e-3)")
          for name in (EVERY_WINDOW, RUN_DECREASE)),
    ],
    sizes=ALGO_SIZES,
)
def test_geometric_rate(tc):
    r"""Population oracle grad L + lambda grad R(.; Sigma_hat), lambda = 1/4, preconditioner
    diag(I, Sigma_hat^{-1}), Sigma_hat and the spectral point from n = 4000 samples on the
    ill-conditioned instance (eig Sigma = geomspace(0.1, 1, 3)), eta = 1.  The run length follows
    the instance's predicted rate: T = max(3000, the least t with (1 - eta alpha_loc)^{2t} <=
    10^-12), alpha_loc the slowest normal mode of L + R/4 at the projection of the spectral start
    onto M (`start_rate`, `DECREASE_DECADES`: twice the decided 10^6), up to `STEP_CEILING` (a fixed
    T is too short for the slow instances of the family: the calibration record).  The
    population oracle isolates the optimization term of Theorem 2 (its statistical term is
    the floor of `thm2.statistical_floor`).  Geometric decrease e_t <= C rho^t e_0 is tested
    as a uniform contraction at the start's predicted rate: every window of 100 steps (while
    the excess is above the round-off floor EXCESS_FLOOR) multiplies L - k sigma^2 by at most
    (1 - eta alpha_loc)^{100}, half the log-rate (1 - eta alpha_loc)^{200} of the slowest
    normal mode at eta = 1 (RATE_FRACTION: the slack for alpha_loc moving along the path; the
    control is judged against the claim's prediction), and the excess falls by at least 10^6
    over the run.  Several normal modes decay at different rates, so a
    single log-linear fit is not a shape this instance family fixes; the window contraction
    is.  A3 is not needed with the population oracle (it governs the finite-n gradient
    approximation only): A1, A2 decided on every instance.  Divergence is recorded, not raised:
    the excess at T of a diverged run is its largest finite value (`settled_values`, on the log
    excess), so the 10^6 decrease fails on finite numbers, and a run that diverges before its
    first full window is judged on its average log-rate before the divergence
    (`window_log_contractions`).

    Instances: the paper states geometric convergence on every instance, but the window rule is
    the start's predicted rate with a fixed slack and the slowest mode along the path can fall
    below it (the worst window's ratio to the prediction is skewed over instances, the run's
    decrease bimodal: neither has a tail model, the calibration record), so each statement is
    claimed per instance at the rate `INSTANCE_RATE` = 0.95 over the tier's ``instances`` = 4
    independent draws (instance, spectral start; the first the draw without a stream key), all
    batched in one run as long as the slowest instance's prediction needs, and accepted by the
    exact binomial test of P[holds] >= 0.95 at level 1e-3, which rejects when at most one of
    the four holds (its power: 0.8 at a per-instance rate of 0.21; the control fails every
    instance).  The dynamics control is a step size beyond linear stability at every sampled
    point of M: the preconditioned step is stable at theta_R only if eta < 2/mu_max(R), and eta =
    4/mu_max(R_0) at the start's projection gives 2/eta = mu_max(R_0)/2, below min_R mu_max
    wherever mu_max varies over M by less than a factor 2.
    """
    decide_recipe(tc, ill_conditioned, a3=False)
    instances = tc.sizes["instances"]
    claim_run = tc.use(population_oracle_run, etas=(1.0,), instances=instances, track=False,
                       decades=DECREASE_DECADES)
    run = tc.use(population_oracle_run, eta_factor=4.0, instances=instances, track=False) \
        if tc.control == "unstable_step" else claim_run
    tc.record("alpha_loc at the start", claim_run["alpha_start"])
    record_assumptions(tc, run["problems"])
    tc.record("run length (steps)", len(run["t"]) - 1)
    tc.record("diverged at step", run["diverged_at"])
    worst = np.array([window_log_contractions(run["log_excess"][:, i], tc.sizes["window"],
                                              np.log(EXCESS_FLOOR)).max() for i in range(instances)]) / np.log(10.0)
    predicted = 2 * tc.sizes["window"] * np.log10(1.0 - claim_run["alpha_start"])    # eta = 1
    tc.record("predicted window log10 contraction 2 window log10(1 - eta alpha_loc)", predicted)
    per_instance(tc, EVERY_WINDOW, worst, worst <= RATE_FRACTION * predicted, p=INSTANCE_RATE,
                 alpha=INSTANCE_ALPHA, low_power=LOW_POWER)
    settled = settled_values(run["log_excess"], run["diverged_at"])    # finite: a diverged run's peak
    decrease = (settled - run["log_excess"][0]) / np.log(10.0)
    per_instance(tc, RUN_DECREASE, decrease, decrease <= -6.0, p=INSTANCE_RATE, alpha=INSTANCE_ALPHA,
                 low_power=LOW_POWER)
    for i in range(instances):
        tc.curve("excess", f"L(theta_t) - k sigma^2, instance {i}", run["t"], run["excess"][:, i], yscale="log")


#: thm2.asymptotic_rate: the fitted slope of log dist^2 within SLOPE_RTOL of the prediction (the
#: spec's 5%) with R^2 above SLOPE_MIN_R2, at both step sizes of an instance
SLOPE_RTOL, SLOPE_MIN_R2 = 0.05, 0.99
ASYMPTOTIC_SLOPE = ("slope of log dist^2 matches 2 log(1 - eta alpha_loc) at both step sizes, on an instance "
                    "at P >= 0.95")
ASYMPTOTIC_LOW_POWER = ("4 independent instances a case (the rate is asymptotic: each trial runs until its slowest "
                        "mode has fallen 10^8, thousands of projected steps, and more instances lengthen the batched "
                        "run); the test rejects when at most 1 of 4 holds, and both controls fail every instance")
#: the step sizes' stability hypothesis eta <= 2/(alpha_loc + mu_max), read at the final projection
#: of each instance: a precondition per instance, the exact binomial of P[an instance meets it] >=
#: STABLE_RATE at level STABLE_ALPHA, which with 4 instances rejects only when none does; the slope is
#: decided on the instances that meet it
STABLE_STEP = "eta <= 2/(alpha_loc + mu_max) at both step sizes, on an instance"
STABLE_RATE, STABLE_ALPHA = 0.8, 0.01
STABLE_LOW_POWER = ("4 instances: the hypothesis is checked per instance, and the slope read on those that meet "
                    "it; the test rejects only when none does")


@claim(
    f"{PAPER}.thm2.asymptotic_rate",
    source="Theorem 1 (3)-(4) with the preconditioned update (derived)",
    statement="With the population oracle, the true-Sigma regularizer and preconditioner "
              "diag(I, Sigma^{-1}), dist^2(theta_t, M) decays at the asymptotic per-step "
              "log-rate 2 log(1 - eta alpha_loc(R_inf)) predicted by the normal-space Hessian.",
    provenance="derived",
    controls={
        "no_preconditioner": Control(
            "dynamics", breaks=[ASYMPTOTIC_SLOPE],
            description="the same iteration without the preconditioner (Sigma^{-1} replaced "
                        "by I): several times slower"),
        "no_regularizer": Control(
            "dynamics", breaks=[ASYMPTOTIC_SLOPE],
            description="lambda = 0: the iterates stop at an unbalanced minimizer of L, off "
                        "the manifold, and dist^2 plateaus"),
    },
    constants={"rtol": SLOPE_RTOL, "min_r2": SLOPE_MIN_R2, "instance_rate": INSTANCE_RATE,
               "instance_alpha": INSTANCE_ALPHA},
    calibration=[
        "The spec's fixed window t in [500, 1000] of a 1000-step run held on the default seed but "
        "failed on seeds 1 (-0.0123 vs -0.0050: the slowest normal mode starts with a tiny component "
        "and dominates only after Phi ~ 1e-15) and 2 (-0.0027 vs -0.0030, pre-asymptotic).  The run "
        "is now 3000 steps and the window, per step size, the last 500 steps with Phi_t above the "
        "round-off floor DIST2_FLOOR; chosen on seeds 1, 2, checked on 0: chosen after seeing the "
        "default seed's data.",
        "After the 20-seed sweep dist is tracked from t = 0 (it was from t = 1000, so on seeds 7, 8, "
        "11 the window held <= 2 points or floor values); the rule is unchanged.  Scratch run, seeds "
        "0-19, both step sizes: slope/prediction 0.994-1.007.",
        "The spec's tolerance 5% (it reported -0.00867 vs -0.00850 and -0.01706 vs -0.01704).",
        "The last 500 steps of a 3000-step run were pre-asymptotic on unseen seed 630279474 (-0.001273 vs "
        "-0.00139 at eta = 1/2); the run length now follows the rate.",
        "One instance a seed until 2026-12-03 (the decision then 'slope of log dist^2 matches 2 log(1 - eta "
        "alpha_loc)'): rtol 0.05 kept, SLOW_MODE_SHARE = 0.05 of the start, calibration 25000-25049, validation "
        "42000-42049: the 5% kept; on 25000-25049 the claim failed on 25006 and 25022, both slopes steeper "
        "than the prediction (by 21-28% on 25006), whose spectral starts gave the slowest "
        "normal mode 2.1e-4 and 1.4e-3 of dist^2 (linearized at the start's projection; the "
        "seeds 25000-25005 that passed: 0.007 to 0.64). SLOW_MODE_SHARE = 0.05 set on that "
        "block, not fitted to a margin. Validation 42000-42049 (the whole paper "
        "calibrated): no failure; 19 of the 50 spectral starts carried less than 0.05 "
        "(least 3.5e-4) and were moved; slope within 3.2% of the prediction at worst "
        "(margin >= 0.36 of the 5%, mean 0.49); both controls failed as declared on 50 of "
        "50",
        "One instance a seed: rtol 0.05, calibration 7000-7009, validation 8000-8008: tolerance unchanged; T = "
        "max(3000, steps for the start's slowest mode to fall 10^8 "
        "at eta = 1/2, SLOW_MODE_DECADES). Calibration block (10 seeds, cut by the session's "
        "CPU): runs up to 8,074 steps, slope within 2.6% of the prediction (margin >= 0.49 of "
        "the 5%); validation (9 seeds): up to 5,052 steps, margin >= 0.50. Both controls "
        "failed as declared on all 19",
        "Until 2026-12-03 over the budget: at one instance a seed the slope's error (the faster modes' weight "
        "left in the fit window) had a heavy tail, counted near 1e-2 at 300 seeds (83300-83599), and the step "
        "precondition was Cantelli of order 1e-3.",
        Calibrated(decision=ASYMPTOTIC_SLOPE, threshold="P[an instance holds] >= INSTANCE_RATE = 0.95 over 4 "
                                                        "instances, level 1e-3 (rtol 0.05, R^2 0.99 unchanged)",
                   calibration_seeds="146000-146049", validation_seeds="145500-145799",
                   how="issue 31, 2026-12-03 (twenty-ninth session): 4 instances a case batched in one run, as "
                       "thm2.geometric_rate; the step hypothesis per instance (STABLE_STEP: P >= 0.8 at level 0.01, "
                       "rejecting only when no instance meets it) and the slope over the instances that meet it; "
                       "rate, level and count fixed before either block (geometric_rate's). Calibration: 1 of 200 "
                       "instances missed the 5% (pooled trials 5.1e-5), the hypothesis held on 200 of 200, both "
                       "controls failed every instance (miss 1.3e-3). Validation (the row): 6 of 1,200 instances "
                       "missed the 5% (largest error 0.21; one a seed at most), the hypothesis held on 1,200 of "
                       "1,200 (largest eta (alpha + mu)/2 0.41); claim 3.8e-6, no_preconditioner and no_regularizer "
                       "failed every instance on every seed (miss 3.7e-5 each). About 1.8 s more of the quick "
                       "tier at seed 0 (4.4 -> 6.2 s with the controls)"),
    ],
    sizes=ALGO_SIZES,
)
def test_asymptotic_rate(tc):
    r"""Phi_t = dist^2_{Sigma_bar}(theta_t, M), measured every ``every`` steps of
    `population_oracle_run` (its sizes) by the weighted Procrustes projection (warm-started
    along the run), for eta in {0.5, 1} side by side, on the tier's ``instances`` = 4 independent
    draws (instance, spectral start; the first the draw without a stream key) batched in one run.
    Near M the preconditioned step is
    theta - eta Mbar^{-1} H (theta - theta*) in the normal space, so Phi_t ~ (1 - eta
    alpha_loc)^{2t} with alpha_loc the smallest eigenvalue of the normal-space pencil
    (N^T H N, N^T Mbar N) at the projection of the final iterate (`local_constants`), valid for
    eta <= 2/(alpha_loc + mu_max) (a precondition per instance, `STABLE_STEP`: the exact binomial
    of P[an instance meets it] >= 0.8 at level 0.01, which rejects only when none of the 4 does;
    no proved bound keeps the final projection's curvatures below 2/eta at eta = 1).  The rate is
    the slowest normal mode's, so the
    start is the spectral initialization moved along that mode (at the start's projection) until
    it carries at least `SLOW_MODE_SHARE` of Phi_0 (`excite_slow_mode`; the spectral start's own
    share is recorded): a start where it carries almost nothing reaches the round-off floor before
    the mode dominates, and the rate is not observable in float64.  The rate is asymptotic, so the run lasts
    until the slowest mode predicted at the start has fallen by 10^8 at eta = 1/2
    (`SLOW_MODE_DECADES`; at least the tier's 3000 steps, at most `STEP_CEILING`; the controls
    run as long as the claim, their start being the same), and the fit window is, per step
    size, the last ``fit`` steps at which Phi_t is above the round-off floor DIST2_FLOOR (the
    projection's first-order tolerance: dist is computed directly from theta_t and its
    projection, so its round-off is ~eps ||theta||).  Pass, per instance that meets the
    precondition: the fitted slope of log Phi_t there within 5% of 2 log(1 - eta alpha_loc) (the
    spec's tolerance) with R^2 > 0.99, at both step sizes.  The slope's error is the faster
    normal modes' weight left in the fit window, whose spread over instances has a heavy tail (no
    normal or log-normal model: the calibration record), so the statement is claimed per instance
    at the rate `INSTANCE_RATE` = 0.95 and accepted by the exact binomial test of P[holds] >= 0.95
    at level 1e-3 over the qualifying instances (with 4 it rejects when at most one holds; both
    controls fail every instance).  A1, A2 decided on every instance.
    """
    precondition = "none" if tc.control == "no_preconditioner" else "true"
    lam = 0.0 if tc.control == "no_regularizer" else 0.25
    decide_recipe(tc, ill_conditioned, a3=False)
    instances, etas = tc.sizes["instances"], (0.5, 1.0)
    config = dict(etas=etas, instances=instances, regularizer="true", decades=SLOW_MODE_DECADES,
                  slow_share=SLOW_MODE_SHARE)
    run = tc.use(population_oracle_run, precondition=precondition, lam=lam, **config)
    record_assumptions(tc, run["problems"])
    tc.record("run length (steps)", len(run["t"]) - 1)
    tc.record("slowest normal mode's share of dist^2 at the spectral start (before it is raised to "
              "SLOW_MODE_SHARE)", run["slow_share_before"])
    # the rate is predicted with the lambda = 1/4 constants of the statement
    reference = run if lam > 0 else tc.use(population_oracle_run, precondition="true", lam=0.25, **config)
    alphas = np.array([c.alpha for c in reference["constants"]])          # trials, instance-major
    mus = np.array([c.mu_max for c in reference["constants"]])
    stable = (run["etas"] <= 2 / (alphas + mus)).reshape(instances, len(etas)).all(1)
    per_instance(tc, STABLE_STEP, (run["etas"] * (alphas + mus) / 2).reshape(instances, len(etas)).max(1), stable,
                 p=STABLE_RATE, alpha=STABLE_ALPHA, role="precondition", low_power=STABLE_LOW_POWER)
    predicted = 2 * np.log(1 - run["etas"] * alphas)
    error, linear = np.empty(len(predicted)), np.empty(len(predicted), dtype=bool)
    for j, eta in enumerate(run["etas"]):
        phi = run["dist"][:, j] ** 2
        above = run["dist_t"][phi > DIST2_FLOOR]
        hi = above.max() if above.size else run["dist_t"][-1]
        fit = fit_slope(run["dist_t"], phi, window=(hi - tc.sizes["fit"], hi), x_transform="linear")
        error[j], linear[j] = abs(fit.slope / predicted[j] - 1), fit.r2 > SLOPE_MIN_R2
        tc.curve("dist", f"dist^2, eta = {eta}, instance {j // len(etas)}", run["dist_t"], phi, yscale="log")
    tc.record("predicted slopes (trial)", predicted)
    tc.record("alpha_loc (trial)", alphas)
    holds = ((error <= SLOPE_RTOL) & linear).reshape(instances, len(etas)).all(1)
    if stable.any():    # none: the precondition's binomial has rejected
        per_instance(tc, ASYMPTOTIC_SLOPE, error.reshape(instances, len(etas)).max(1)[stable], holds[stable],
                     p=INSTANCE_RATE, alpha=INSTANCE_ALPHA, low_power=ASYMPTOTIC_LOW_POWER)
