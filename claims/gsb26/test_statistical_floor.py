r"""gsb26: the statistical term of Theorem 2, the floor of Algorithm 1 with the expected
gradient oracle, as a function of the sample size n.

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Theorem 2 (statistical part: "the bias
decreases at rate O~(1/n)").
"""
import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck.checks import fit_slope
from theorycheck.patterns import per_instance

from .dynamics import statistical_floor_run
from .setup import PAPER, decide_recipe, record_assumptions, well_conditioned

#: the fitted log-log exponent of an instance's floor must be at most -(p - MARGIN): p = 1 for the claim
EXPONENT_MARGIN = 0.2
DECAYS = "floor decays like n^-p on an instance: fitted exponent at most -(p - 0.2)"
#: the rate at which an independent draw of the recipe has the decaying floor, tested over the
#: case's instances by the exact binomial test at level INSTANCE_ALPHA: the one-sided 99.9%
#: Clopper-Pearson lower bound of the per-instance rate on the calibration block, rounded down to
#: 0.05 (the record)
INSTANCE_RATE, INSTANCE_ALPHA = 0.95, 1e-4
LOW_POWER = ("8 instances a case on the quick tier (each runs Algorithm 1 at every n; their cost): at level 1e-4 "
             "the test rejects when at most 3 of 8 instances decay (power 0.8 at a rate near 0.3), not at a rate "
             "a little below 0.95; the controls break the exponent on almost every instance")
#: the constant-bias control's oracle: fresh training sets of this size at every n
CONSTANT_ORACLE_N = 20
CONVERGE = "training sets converge (n in the theorem's regime): rate over the training sets"
#: the rate at which a training set's run converges (the theorem's n >= n_0), tested over the
#: training sets of a case (every n) by the exact binomial test at level CONVERGE_ALPHA: the
#: one-sided 99.9% Clopper-Pearson lower bound of the rate on the calibration block, rounded down
#: to 0.05 (the record)
CONVERGE_RATE, CONVERGE_ALPHA = 0.95, 1e-4


@claim(
    f"{PAPER}.thm2.statistical_floor",
    source="Theorem 2 (statistical term)",
    statement="With the expected-gradient oracle, the excess population loss of Algorithm 1 "
              "settles at a floor that is O~(1/n) in the number of samples n.",
    provenance="inferred",
    controls={
        "constant_bias_oracle": Control(
            "dynamics", breaks=[DECAYS],
            description="the oracle averages fresh training sets of the fixed size 20 at every n "
                        "(the regularizer, preconditioner and start still use the n samples): its "
                        "bias no longer shrinks with n, so the floor does not decay",
            constants={"oracle_n": CONSTANT_ORACLE_N}),
        "faster_rate": Control(
            "statement", breaks=[DECAYS],
            description="the stronger statement p = 3, beyond the derived Theta(1/n^2) of a "
                        "Theta(1/n) gradient bias through a quadratic loss (a discrimination check)",
            constants={"p": 3}),
    },
    constants={"p": 1, "exponent_margin": EXPONENT_MARGIN, "instance_rate": INSTANCE_RATE},
    calibration=[
        "Design: a fixed pool of batches reused at every step (the spec's common random numbers) "
        "put noise O(1/sqrt(M n)) into the fixed point, whose cross term with the O(1/n) bias moved "
        "the floor at n = 64 by 40-70% between M = 50 and 800 on seed 1; fresh batches with iterate "
        "averaging reproduce the floor within 5% across independent batch streams at 1/8 of the cost.",
        "n >= 20 was chosen on seeds 1-10 (1 of 3 training sets diverged at n = 16 on seed 10).",
        "History: the criterion was first the local exponent of log(n)^2/n (-0.44 at the window's "
        "centre); the degree had been raised from one after seed 2 failed (exponent -0.69 with "
        "degree one allowing -0.72): not held out.  The review (2026-11-26) asked for an exponent of "
        "at most -0.8 (the review's threshold, not tuned here) and for diverged training sets to be "
        "counted instead of dropped.",
        "Grid: on the old quick grid n = 20, 32, 48, 64 the exponent was -0.69 on seed 2 and -0.73 on "
        "seed 8 (pre-asymptotic at small n: n e(n) grows there; 5 training sets instead of 3 did not "
        "help, -0.57 on seed 8).  The grid n = 32, 64, 128 (the spec's GPU grid starts at 32) was "
        "chosen on seeds 2 and 8, then run on seeds 1-10: exponents -1.02 (seed 8) to -2.26, no "
        "diverged training set; seed 0: -1.43; held out on seeds 11-19: -1.36 to -2.21, no diverged "
        "training set.  The constant_bias_oracle control's exponent was -0.15 to +0.37 on seeds 0-19.",
        "The spec's criterion e_T <= 0.3 e_0 tests the start, not the floor (the spectral start is "
        "itself only O(1/n) above it: 0.50 e_0 on seed 1 at n = 32) and is not used.",
        "History (the single-instance design, 2026-11-28 to 2026-11-30): the unseen sweep "
        "955297912-955297931 measured an exponent -0.479 on one seed.  Calibration block 15000-15015 "
        "(scratch): the spread is the instance's, not the "
        "training sets' or the oracle's: with 12 training sets per n the exponents on 15000-15002 were "
        "-1.78, -1.84, -0.96 (per-n sd of log e(n) over the sets 0.1-0.4), and 64 instead of 16 oracle "
        "batches left 15002's exponent at -0.91 (-0.95). On the grid n = 64, 128, 256 (2 sets, 8 "
        "batches, about 1.3 times the cost) the exponents over 16 seeds were -1.07 .. -2.31 (mean -1.74, "
        "sd 0.30: -0.8 is 3.1 sd away, a normal tail near 1e-3, still over the budget; the p = 3 control "
        "3.5 sd), and at n = 256 8 batches leave an oracle-noise share of about 15% of the floor (15014: "
        "mean log e -10.11 against -10.26 at 32 batches).  A local exponent over a finite window is not "
        "implied by the theorem's O~(1/n) on every instance: the decision needs a larger-n regime or a "
        "statement over instances (a rate), not a window chosen by eye.",
        "Quick grid moved to n = 64, 128, 256 with 2 training sets and 8 oracle batches per n (lead, "
        "2026-11-28 d; cost about 1.3 times the old grid's), on the calibration block's measurement "
        "above: the window further into the asymptotic regime, where the derived n^-2 dominates the "
        "instance's pre-asymptotic terms; the threshold -0.8 unchanged.  The full tier's grid "
        "still starts at 32 (not calibrated).",
        "History: the grid n = 64, 128, 256 with 2 training sets of one instance, the exponent decided on "
        "that instance (calibration 15000-15015, validation 15100-15149: no failure in 50, mean -1.716, "
        "sd 0.27, a normal tail near 3e-4; row 76000-76049: bound 2.2e-3, over the budget).  The whole-suite "
        "unseen sweep 1844767216-1844767235 failed it on 1844767233 (-0.785; FLAKY against the row's "
        "normal tail: the exponent's upper tail is heavier than normal).  On a longer grid that instance's "
        "local exponents were -0.60, -0.97, -1.36 up to n = 512: pre-asymptotic, not a counterexample.",
        "Redesign (2026-12-01): the statement over instances.  Each case draws independent instances "
        "of the recipe (the first the draw without a stream key, as before), batched side by side, "
        "decides the exponent on each and accepts by the binomial test of P[exponent <= -0.8] >= "
        "INSTANCE_RATE at level 1e-4.  Its false-failure rate is the chance that most instances fail, "
        "bounded by counting instances over seeds (pooled trials) with no tail model of the exponent.  "
        "The grid, the threshold -0.8 and the controls are unchanged.  First tried with 4 instances, "
        "1 training set and 8 oracle batches (scratch block 124300-124349: 199 of 200 instances "
        "decayed, largest exponent -0.702; claim bound 3e-7), but at 4 instances the test rejects only "
        "when no instance decays, and the controls' miss bounds counted over 200 instances were 0.058 "
        "(the chance that one of 4 passes, at the 95% Clopper-Pearson rate 0.015), over the control "
        "budget: chosen instead, at the same cost, 8 instances with 4 oracle batches (the oracle noise "
        "is an instance's spread, which the count over instances absorbs).",
        Calibrated(
            decision=DECAYS, threshold="INSTANCE_RATE = 0.95 at level 1e-4 over 8 instances (the exponent "
                                       "-0.8, the review's, on the grid n = 64, 128, 256)",
            calibration_seeds="124500-124549", validation_seeds="124600-124649",
            how="rate fixed at 0.95 before the block ran, confirmed by the rule: on the calibration block "
                "397 of 400 instances decayed (8 a seed; largest exponent -0.679, mean -1.69; 99.9% "
                "Clopper-Pearson lower bound 0.968 -> 0.95), no diverged training set, every case passed; "
                "validation: 395 of 400 decayed (largest -0.643), no diverged training set, claim bound 6.4e-7 "
                "(pooled trials); constant_bias_oracle and faster_rate failed as declared on 50 of 50 (miss "
                "bounds 1.3e-6, 2.1e-7)"),
        Calibrated(
            decision=CONVERGE, threshold="CONVERGE_RATE = 0.95 at level 1e-4",
            calibration_seeds="15100-15149", validation_seeds="76000-76049",
            how="was 'a majority of the training sets converge at every n' (a count with no margin, so "
                "bounded by counting alone); the rule (99.9% Clopper-Pearson lower bound of the per-set "
                "rate, rounded down to 0.05) on the 300 training sets of 15100-15149, none diverged "
                "(the record above): 0.977 -> 0.95; validated on the row's block; since the redesign over 8 "
                "instances (24 training sets a case) no set diverged on 124500-124549 or 124600-124649 "
                "(1,200 each)"),
    ],
    sizes={"quick": {}, "full": {}},
)
def test_statistical_floor(tc):
    r"""e(n) = L(theta_bar) - k sigma^2 at the average theta_bar of the iterates over t in
    [T/2, T] of Algorithm 1 (spectral initialization, regularizer R(.; Sigma_hat) with
    lambda = 1/4 and preconditioner Sigma_hat^{-1} from n training samples, eta =
    0.2/sigma_1(W*)) with the expected-gradient oracle E grad Lhat_n, estimated at every step by
    fresh training sets of size n (`statistical_floor_run`), on ``instances`` independent draws
    of the well-conditioned recipe, over the grid of n of the run, the median over an
    instance's training sets per n.  The burn-in T/2 is ten times the time constant of the
    preconditioned contraction, so theta_bar averages the stationary regime.
    Reference: Theorem 2's statistical term C polylog(n)/n; the derived rate is Theta(1/n^2)
    (the gradient bias is Theta(1/n), `thm4.gradient_bias`, and the loss is quadratic near M).
    Per instance: the fitted log-log exponent of its floor over the n window is at most
    -(1 - 0.2) = -0.8: a floor of order n^{-1/2} (a noise-level floor) or flatter fails, and the
    derived n^{-2} passes with room for the polylog factor and the Monte Carlo noise of the
    oracle.  O~(1/n) is a statement about large n, and a finite window is pre-asymptotic on some
    draws, so the claim is a rate over instances: pass when the exact binomial test of
    P[the exponent is at most -0.8] >= `INSTANCE_RATE` over the instances does not reject at
    level 1e-4.  A training set whose run diverged (a spectral start outside the basin: the
    theorem assumes n >= n_0) is not dropped: it counts with an infinite floor in the median
    (an instance whose median is infinite, or not positive, does not decay), and the number of
    diverged sets per n is recorded; the training sets must converge at the rate `CONVERGE_RATE`
    (precondition, the exact binomial test over all the case's training sets at level 1e-4:
    otherwise n is below the theorem's n_0).  Controls: the oracle with a bias that does not
    shrink with n (its training sets of a fixed size) must fail the exponent on the instances;
    the stronger p = 3 is a discrimination check.  Preconditions A1-A3.
    """
    p = 3 if tc.control == "faster_rate" else 1
    config = {"oracle_n": CONSTANT_ORACLE_N} if tc.control == "constant_bias_oracle" else {}
    decide_recipe(tc, well_conditioned)
    run = tc.use(statistical_floor_run, **config)
    record_assumptions(tc, run["problems"])
    converged = run["diverged_at"] < 0                                    # (len(ns), instances, sets)
    tc.record("diverged training sets per n", (~converged).sum((1, 2)))
    tc.precondition.binomial(CONVERGE, converged.ravel(), p=CONVERGE_RATE, alpha=CONVERGE_ALPHA,
                             low_power="the training sets of one case (24 on the quick tier): their cost")
    n = run["n"]
    floors = np.median(np.where(converged, run["floor"], np.inf), axis=2).T      # (instances, len(ns))
    tc.record("floor e(n) per instance (median, a diverged set counting as infinite)", floors)
    tc.record("n e(n) per instance", n * floors)
    exponents = np.array([fit_slope(n, floor, window=(n[0], n[-1])).slope
                          if np.all(np.isfinite(floor) & (floor > 0)) else np.inf for floor in floors])
    per_instance(tc, DECAYS, exponents, exponents <= -(p - EXPONENT_MARGIN), p=INSTANCE_RATE,
                 alpha=INSTANCE_ALPHA, low_power=LOW_POWER)
    for j, floor in enumerate(floors):
        tc.curve("floor", f"e(n) at the averaged iterate, instance {j}", n, floor, xlabel="n", xscale="log",
                 yscale="log", ylabel="L - k sigma^2")
    tc.curve("floor", "e_0(n) (spectral start), instance 0", n, np.median(run["e0"][:, 0], axis=1),
             xscale="log", yscale="log")
