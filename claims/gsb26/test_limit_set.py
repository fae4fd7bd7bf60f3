r"""gsb26: where Algorithm 1 goes when its regularizer uses the sample covariance.

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Algorithm 1 with the empirical regularizer
R(.; Sigma_hat) (a derived consequence of Theorem 1 and the algorithm, not a numbered claim).
"""
from theorycheck import Calibrated, Control, claim

from .dynamics import empirical_regularizer_limit
from .setup import PAPER, decide_recipe, ill_conditioned, record_assumptions

NO_DIVERGENCE = "trials converge at eta = 1: rate over the trials"
OFF_MANIFOLD = "dist(theta_T, M) at least 0.1 ||Sigma_hat - Sigma||"
NEAR_MANIFOLD = "dist(theta_T, M) at most 10 ||Sigma_hat - Sigma||: rate over the trials"
#: the rate at which a trial (a training set's spectral start and Sigma_hat) does not diverge and
#: the rates at which its limit is off M by at least 0.1 ||Sigma_hat - Sigma|| and within
#: 10 ||Sigma_hat - Sigma|| of it, each tested over the
#: trials of a case by the exact binomial test at level TRIAL_ALPHA: the one-sided 99.9%
#: Clopper-Pearson lower bound of the rate on the calibration block, rounded down to 0.05 (the
#: records)
TRIAL_RATE, TRIAL_ALPHA = 0.95, 1e-4
TRIAL_LOW_POWER = "the 8 trials of one case (4 n x 2 training sets on the quick tier): their cost"

LIMIT_DECADES = 12
"""The run lasts until the slowest normal mode predicted at the slowest trial's start, (1 - eta
alpha_loc)^{2t}, has fallen by 10^12 (`rate_steps`): twice the decades the decisions need (the
spectral start is balanced in Sigma_hat, R = 0, and its excess, the OLS error ~ sigma^2 d k / n,
is below 1e-2 at n = 250, so 10^6 brings both terms below 1e-8), a factor 2 on the rate for
Sigma_hat in the regularizer and the preconditioner (their rate differs from the true-Sigma
alpha_loc by the estimation error) and the drift of R_t."""


@claim(
    f"{PAPER}.alg1.limit_set_with_empirical_regularizer",
    source="Algorithm 1 with the empirical regularizer (derived from Theorem 1)",
    statement="With the population gradient oracle and the regularizer R(.; Sigma_hat), the iterates converge "
              "to a point with V Sigma K = W* (L = k sigma^2) and R(.; Sigma_hat) = 0 that is not on the "
              "manifold M: dist(theta_T, M) = Theta(||Sigma_hat - Sigma||).",
    provenance="derived",
    controls={
        "true_regularizer": Control(
            "dynamics", breaks=[OFF_MANIFOLD],
            description="the same iteration with the true-Sigma regularizer R(.; Sigma): the "
                        "iterates converge to M itself"),
    },
    calibration=["Seeds 1, 2: L - k sigma^2 and R at most 2e-13 after 3000 steps; ratios 0.46-1.71, "
                 "against at most 6e-4 with the true-Sigma regularizer.",
                 "The fixed T = 3000 left one trial at L - k sigma^2 = 4.1e-7 and R = 5.9e-8 on seed "
                 "630279474 of the unseen sweep (a slow instance); the run length now follows the "
                 "predicted rate (LIMIT_DECADES), thresholds 1e-8 unchanged.",
                 Calibrated(decision="L(theta_T) - k sigma^2 at most 1e-8", threshold=1e-8,
                            calibration_seeds="7000-7009", validation_seeds="8000-8008",
                            how="threshold unchanged; T = max(3000, steps for the slowest start's "
                                "(1 - eta alpha_loc)^{2t} to fall 10^12). Calibration block (10 seeds, cut by "
                                "the session's CPU): smallest alpha_loc 0.0015, runs up to 8,982 steps; "
                                "validation block (9 seeds): 0.0034, up to 4,116. No claim failure (both "
                                "1e-8 decisions at margin 1: values far below), the control failed as "
                                "declared on all 19"),
                 Calibrated(decision=NO_DIVERGENCE, threshold="TRIAL_RATE = 0.95 at level 1e-4",
                            calibration_seeds="51000-51049", validation_seeds="76000-76049",
                            how="was 'no trial diverged at eta = 1' (a holds, bounded by counting alone); "
                                "the rule (99.9% Clopper-Pearson lower bound of the per-trial rate, rounded "
                                "down to 0.05) on the 400 trials of the table's row 51000-51049, none "
                                "diverged: 0.983 -> 0.95; validated on the new row's block"),
                 Calibrated(decision=OFF_MANIFOLD, threshold="TRIAL_RATE = 0.95 at level 1e-4",
                            calibration_seeds="51000-51049", validation_seeds="76000-76049",
                            how="was the least ratio of the case's 8 trials (a normal tail at 3.0 sd); "
                                "the rule on the 400 trials of 51000-51049, every ratio at least 0.1 (the least "
                                "0.22): 0.983 -> 0.95; validated on the new row's block"),
                 Calibrated(decision=NEAR_MANIFOLD, threshold="TRIAL_RATE = 0.95 at level 1e-4 (ratio 10 unchanged)",
                            calibration_seeds="95000-95049", validation_seeds="95050-95099",
                            how="was 'dist at most 10 ||Sigma_hat - Sigma||' on every trial (an at_most over the "
                                "8 trials, its bound 2.4e-3 from a log-normal tail on 76000-76049, over the budget); "
                                "now the upper side of Theta as its lower side: the rate over the trials, the "
                                "constant being the instance's.  The rule (99.9% Clopper-Pearson lower bound of the "
                                "per-trial rate, rounded down to 0.05) on the 400 trials of the calibration block, "
                                "ratios 0.24-4.88, none above 10: 0.983 -> 0.95, the existing TRIAL_RATE; "
                                "validation block (the rule fixed): 400 trials, ratios 0.22-4.44, none above 10; claim "
                                "3.8e-9 on each block (pooled trials), true_regularizer failed as declared on 50 of "
                                "50 on each (miss 2.1e-7)")],
    sizes={"quick": {}, "full": {}},
)
def test_limit_set_with_empirical_regularizer(tc):
    r"""Algorithm 1 with the population oracle grad L + lambda grad R(.; Sigma_hat), lambda = 1/4,
    preconditioner diag(I, Sigma_hat^{-1}), eta = 1, T = max(3000 (quick), the steps in which
    the slowest normal mode predicted at the slowest trial's start falls by 10^12: LIMIT_DECADES,
    `start_rate`, at most `STEP_CEILING`; the control runs as long), from the spectral
    initialization of n samples, n in {250, 1000, 4000, 16000} x 2 training sets, on the
    ill-conditioned instance (eig Sigma = geomspace(0.1, 1, 3)).  Every fixed point with
    V Sigma K = W* and V^T V = Sigma_hat K K^T Sigma_hat minimizes L + lambda R(.; Sigma_hat); it
    is on M only if Sigma_hat K K^T Sigma_hat = Sigma K K^T Sigma, so the limit sits off M by an
    amount proportional to Sigma_hat - Sigma.  Pass, for every trial: L(theta_T) - k sigma^2
    <= 1e-8 and R(theta_T; Sigma_hat) <= 1e-8 (converged into the zero set of both terms), and
    0.1 <= dist(theta_T, M)/||Sigma_hat - Sigma|| <= 10, each side at the rate `TRIAL_RATE` over the
    trials (Theta of the deviation over a 64-fold range of n; the exact binomial test at level
    1e-4: the trials are independent training sets of one instance, and the constants of Theta
    are the instance's, so a statement about every trial is not the derived claim's; with the
    true-Sigma regularizer, the control, the limit is on M and every trial fails the lower side).  dist by the
    extended-covariance projection (started in both components of O(d); 8 more Haar starts on
    the full tier).  The spec's fixed band 0.005 <= dist <= 0.1 at n = 4000 is replaced by the
    ratio, which covers every n.  A1, A2 recorded (A3 plays no role with the population
    oracle); the trials must converge at the rate `TRIAL_RATE` (precondition on the step size,
    the binomial test over the trials at level 1e-4).
    """
    regularizer = "true" if tc.control == "true_regularizer" else "estimated"
    decide_recipe(tc, ill_conditioned, a3=False)
    run = tc.use(empirical_regularizer_limit, regularizers=(regularizer,),   # the control's arm: its own run
                 decades=LIMIT_DECADES)
    record_assumptions(tc, run["problem"])
    tc.record("run length (steps)", run["steps"])
    tc.record("smallest alpha_loc at the starts", run["alpha_start"])
    part = run[regularizer]
    tc.precondition.binomial(NO_DIVERGENCE, part["diverged_at"] < 0, p=TRIAL_RATE, alpha=TRIAL_ALPHA,
                             low_power=TRIAL_LOW_POWER)
    ratio = part["dist"] / part["deviation"]
    tc.record("dist(theta_T, M)", part["dist"])
    tc.record("dist / ||Sigma_hat - Sigma||", ratio)
    tc.conclusion.at_most("L(theta_T) - k sigma^2 at most 1e-8", part["excess"], 1e-8)
    tc.conclusion.at_most("R(theta_T; Sigma_hat) at most 1e-8", part["R_estimated"], 1e-8)
    tc.conclusion.binomial(OFF_MANIFOLD, ratio >= 0.1, p=TRIAL_RATE, alpha=TRIAL_ALPHA, low_power=TRIAL_LOW_POWER)
    tc.conclusion.binomial(NEAR_MANIFOLD, ratio <= 10.0, p=TRIAL_RATE, alpha=TRIAL_ALPHA, low_power=TRIAL_LOW_POWER)
    tc.curve("limit", "dist(theta_T, M)", part["deviation"], part["dist"], xlabel="||Sigma_hat - Sigma||",
             xscale="log", yscale="log", sort_x=True)
