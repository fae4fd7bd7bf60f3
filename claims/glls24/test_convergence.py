"""glls24: linear convergence of GD on the softmax network in the NTK regime (Theorem 4.2,
Corollary 4.3, Lemma 5.3) and the lazy-regime scalings in the width."""
import numpy as np

from claims.glls24.convergence import (
    ENVELOPE,
    INDUCTION_STEP,
    REACHES,
    control_widths,
    convergence_measurements,
    decide_linear_convergence,
    finite_prefix,
    induction_base_case,
    linear_convergence_runs,
)
from claims.glls24.kernel import per_trial_width_slope_interval, width_slope_interval
from claims.glls24.setup import (
    CONVERGENCE_TARGET,
    contraction_factor,
    decide_pairing,
    decide_positive_kernel,
    gd_dims,
    log_contraction,
    movement_bound,
    paired_kernel_tail,
    relative_loss,
    softmax_gd,
)
from theorycheck import Calibrated, Control, claim
from theorycheck.patterns import per_instance

SMALL_WIDTH = {"m": 4, "n": 8, "d_in": 2}
"""The width-too-small instance of the spec: ``d_in m / 2 = 4 < n d`` for d = 2 (and d = 1)."""

LARGE_STEP = 2.5
"""The step factor c of the step-too-large controls: beyond the stable range c < 2."""

WIDTHS = {"quick": [256, 1024, 4096], "full": [1024, 4096, 16384, 65536]}

INSTANCE_RATE, INSTANCE_ALPHA = 0.95, 1e-4
"""Theorem 4.2's conclusions hold on a trial (an independent draw of data and initialization) at
this rate: tested over the claim's trials by the exact binomial test at level INSTANCE_ALPHA; the
one-sided 99.9% Clopper-Pearson lower bound of the per-trial rate on the calibration block, rounded
down to 0.05 (the claim's `Calibrated` record)."""
LOW_POWER = ("8 trials at each of 2 widths on the quick tier (their cost): at level 1e-4 the test over the "
             "claim's 16 rejects when at most 10 hold (power 0.8 at a rate near 0.55), over a control's 8 when at "
             "most 3 do; the controls break the conclusion on every trial")

ONE_DIM_CEILING = 50_000
"""The claim runs of Theorem 4.2 and Corollary 4.3 last the theorem's count ``log(1/epsilon) /
-log(1 - 1/(2 kappa)) ~ 46 kappa`` of their slowest trial, up to this many steps.  The run fails to reach epsilon only if a trial's
actual hitting time, about ``log(1/epsilon) / (2 / kappa) ~ 11.5 kappa`` (the linearized dynamics,
slowest mode ``(1 - 1/kappa)^{2t}``), exceeds it: ``kappa > 4300``.  ``lambda_min(H(0))`` of a random
PSD matrix has a density bounded near 0, so ``P(kappa > k) ~ c / k``, c fitted on the calibration
block (the fit and the resulting rate per run and per seed: the claim's `Calibrated` record)."""

BASE_CASE = "induction base case: first per-neuron step at most 0.01 (rate over the trials)"
RATIO = "per-step loss ratio at most 1 - m eta lambda / 2"
BASE_CASE_RATE, RATIO_RATE = 0.95, 0.95
"""The rates at which a trial meets Lemma 5.3's base case at our step (`induction_base_case`) and,
meeting it, the per-step ratio bound at every step: each tested over the claim's trials by the exact
binomial test at level INSTANCE_ALPHA; the one-sided 99.9% Clopper-Pearson lower bound of the
per-trial rate on the calibration block, rounded down to 0.05 (the claim's `Calibrated` record)."""
INDUCTION_LOW_POWER = ("Theorem 4.2's runs (8 trials at each of 2 widths on the quick tier, shared): at level 1e-4 "
                       "the test over 16 trials rejects when at most 10 hold (power 0.8 at a rate near 0.55), over "
                       "the control's 8 when at most 3 do; the control breaks the ratio on every trial")

SMALL_WIDTH_TRIALS = 16
"""Trials of Corollary 4.3's width_too_small control (its own run; the tier's runs have 3): every
trial stalls at the part of its labels the rank-deficient network cannot reach, a random fraction
of ||Y||^2 for random labels; the control fails as declared when the binomial test of "loss
reaches epsilon" rejects, at most 10 of the 16 trials reaching it (`ONE_DIM_LOW_POWER`)."""

ONE_DIM_LOW_POWER = ("3 trials at each of 3 sample sizes on the quick tier (the runs' cost: each lasts its slowest "
                     "trial's count): at level 1e-4 the test over the claim's 9 rejects when at most 4 hold (power "
                     "0.38 at a rate near 0.55), over a control's 8 when at most 3 do, over width_too_small's 16 "
                     "when at most 10 do; the controls break their conclusion on every trial")

ONE_DIM_CONTROL_TRIALS = 8
"""Trials of Corollary 4.3's duplicate_inputs and step_too_large controls (one run each at the
smallest n): the fewest at which the binomial test rejects when a wide majority breaks (at most 3
of 8 holding), where the claim's 3 per run could not (0 of 3 holding has probability 1.25e-4 > 1e-4
at rate 0.95)."""

ONE_DIM_CONTROL_STEPS = 2_000
"""The width_too_small control's runs (lambda = 0: the theorem's count is infinite) last this many
steps, more than any claim run of the calibration and validation blocks (their longest: the
`Calibrated` record), so that its stall is not the run's length.  The duplicate_inputs control
needs no such length: its loss cannot fall below the floor ``rel >= 2 y_1^2 / ||Y||^2`` at any
step (`duplicate_first_input`), so it runs the tier's cap."""


@claim("glls24.thm4_2.linear_convergence", source="Theorem 4.2 = Theorem C.1",
       statement="With lambda = lambda_min(H(0)) > 0 and symmetric initialization, GD contracts "
                 "||F(t) - Y||_F^2 by at least 1 - m eta lambda / 2 per step and reaches epsilon "
                 "within log(||Y||^2/epsilon) / (-log(1 - m eta lambda / 2)) steps.",
       provenance="derived",
       calibration=["the quick tier's cap of 200 steps was chosen on seeds 1 and 2 so that every trial "
                    "reaches epsilon (not held out); on seed 630279474 of the unseen sweep a trial's "
                    "predicted count equalled the cap (201) and it ended at 2.9e-8",
                    Calibrated(
           decision="loss reaches epsilon within the run", threshold=CONVERGENCE_TARGET,
           calibration_seeds="7000-7024", validation_seeds="8000-8009",
           how="epsilon 1e-10 kept, no cap: the claim's runs last the theorem's count of their slowest "
               "trial (factor 1), up to ONE_DIM_CEILING steps (reached only at kappa > 4300). Calibration "
               "block (25 seeds): kappa up to 18.2, counts up to 828 steps, hitting times up to 178 (under "
               "the old cap of 200, but the slowest trial's count exceeded it on 21 of 25 seeds); validation "
               "block (10 seeds, cut by the session's CPU): kappa up to 10.3, counts up to 465. No claim "
               "failure, every control failed as declared on all 35 seeds"),
                    "control step_too_large on 12000-12049 (50 seeds, failed as declared on all): its "
                    "break's margin (the envelope exceeded by e^36 at least) is bounded below by log(1/epsilon) "
                    "and right-skewed by kappa, so Shapiro-Wilk rejects the normal model (p 0.0015); its "
                    "preconditions 'initialization is symmetric' and 'width allows lambda > 0' are "
                    "deterministic (no spread): the row is held at the counted bound 0.058 (1e-2 needs 299 seeds)",
                    "'loss reaches epsilon within the run' is declared scale='log' (shared with "
                    "glls24.cor4_3.one_dim, whose record has the block); not recalibrated: the row of "
                    "84000-84299 stays over the budget through the envelope (3.2 sd, 2.3e-3), lambda_min(H(0)) "
                    "> 0 (d = 2: no stated bound, Cantelli 9e-4) and the log-loss slope (Cantelli 8.1e-4)",
                    "'lambda_min(H(0)) > 0' states its proved bound (paired_kernel_tail: "
                    "two_output_kernel_tail at d = 2, 2.6e-5 for the 3 trials x 3 widths; was "
                    "Cantelli 1.1e-3 on 94301-94600); no check changed (every decision identical at "
                    "seed 111998 but the stated bound). The row (94301-94600) was not recalibrated: "
                    "its counted controls need 300 seeds to stay within 1e-2, beyond the session's "
                    "CPU",
                    "Redesign (2026-12-01, issue 31): the statement over trials. Before, 3 trials (data sets "
                    "shared by the widths 256, 1024, 4096) and every conclusion on every one of the 9: the row "
                    "94301-94600 was 4.3e-3, carried by the envelope (worst of 9 at 3.2 sd, normal 2.1e-3), the "
                    "slope (Cantelli 9.4e-4) and the steps (Cantelli 1.1e-4); its 3 controls counted (0.0099 at "
                    "300 seeds). Now 8 independent trials at each of m = 256 and 1024 (each its own data set: "
                    "data_key; 4096 dropped for the cost, 16 trials at about the old CPU), (i)-(iv) decided per "
                    "trial, each accepted by the exact binomial test of P >= INSTANCE_RATE at level 1e-4; the "
                    "controls run 8 trials each (the tests reject when at most 3 of 8 hold). No threshold "
                    "changed: the envelope, count, slope and epsilon are the theorem's",
                    Calibrated(
           decision=ENVELOPE, threshold="INSTANCE_RATE = 0.95 at level 1e-4 over 16 trials (the same for the "
                                        "count, the slope and epsilon)",
           calibration_seeds="126000-126049", validation_seeds="126100-126199",
           how="rate fixed at 0.95 before the block ran, confirmed by the rule (99.9% Clopper-Pearson "
               "lower bound of the per-trial rate, rounded down to 0.05): on the calibration block each of "
               "the four held on 800 of 800 trials (bound 0.9914 -> 0.95); the envelope's largest slack "
               "-0.149 in log (mean -1.35), the slope's largest excess over log q -0.030, the hitting "
               "time at least 48 steps inside the count, the final loss at least e^38 below epsilon. The "
               "claim 7.0e-5 (lambda_min(H(0)) > 0's stated bound for 16 trials; each binomial 2.1e-11, "
               "pooled trials); controls duplicate_inputs and width_too_small 2.1e-7 (0 of 400 trials "
               "reached epsilon), step_too_large 1.7e-3 (its lambda_min(H(0)) > 0, Cantelli; 0 of 400 "
               "inside the envelope). Validation (100 seeds, the same code): no failure; each of the four "
               "held on 1,600 of 1,600 trials (envelope's largest slack -0.254, slope's largest excess "
               "-0.054, hitting time at least 50 steps inside the count, final loss at least e^37 below "
               "epsilon); the claim 7.0e-5 (the stated bound; each binomial 3.4e-13, pooled trials); "
               "controls duplicate_inputs, step_too_large and width_too_small 1.3e-8 each (0 of 800 trials "
               "reached epsilon, 0 of 800 inside the envelope, 0 of 800 reached epsilon), all failed as "
               "declared on 100 of 100")],
       controls={
           "duplicate_inputs": Control(
               "hypothesis", breaks=[REACHES],
               description="x_2 := x_1 with y_2 := -y_1: lambda = 0 and the loss stalls at ||y_1||^2"),
           "step_too_large": Control(
               "dynamics", breaks=[ENVELOPE],
               description="eta = c / (m lambda_max(H(0))) with c = 2.5: beyond the stable range, the "
                           "loss grows (divergence recorded as a measurement)",
               constants={"c": LARGE_STEP}),
           "width_too_small": Control(
               "hypothesis", breaks=[REACHES],
               description="m = 4 with d_in = 2, n = 8, d = 2: d_in m / 2 = 4 < n d = 16, so lambda = 0 "
                           "at the symmetric initialization, and d_in (m - 1) = 6 effective weights (the "
                           "softmax is shift invariant) cannot fit 16 labels",
               constants={**SMALL_WIDTH, "d": 2, "n_d": 16, "effective_weights": 6}),
       },
       sizes={"quick": {"widths": WIDTHS["quick"][:2], "instances": 8},
              "full": {"widths": WIDTHS["full"], "instances": 5}})
def test_linear_convergence(tc):
    r"""Theorem 4.2 (reconstructed): with ``lambda = lambda_min(H*) > 0``, width and step as in the
    theorem, with high probability over the initialization ``||F(T) - Y||_F^2 <= epsilon`` after ``T =
    O((m eta lambda)^{-1} log(1/epsilon))`` steps, through the per-step contraction ``1 - m eta lambda /
    2`` of Lemma 5.3.  The theorem's ``eta = 0.1 lambda / (m n^2 d^2 e^{16B})`` needs ~1e12 steps here
    (e^{16B} n^2 d^2 >= 1e9), so the shape is tested with ``eta = c / (m lambda_max(H(0)))``, c = 1, on
    ``instances`` independent trials at each width (quick: 8 at m = 256 and 1024; each trial its own
    data set, ``data_key`` = the width, and its own initialization), each trial decided on its own:
    (i) ``rel(t) <= (1 - m eta lambda/2)^t`` until ``rel <= epsilon = 1e-10`` (``rel = ||F -
    Y||^2/||Y||^2``; beyond it round-off of ``m <a, S>`` dominates); (ii) steps to epsilon <= the
    predicted count (censored at the run length, the number censored is recorded); (iii) the fitted
    slope of log rel over the last three quarters of that window <= log(1 - m eta lambda / 2); (iv)
    rel <= epsilon at the end of the run.  For the linearized dynamics (a quadratic in function space,
    per-step factor ``(1 - eta m lambda_i)^2 <= 1 - lambda / lambda_max`` on every eigendirection at c =
    1) (i)-(iii) hold on every trial with room ``~ 1.5 / kappa`` in the log; at a step 1e9 times the
    theorem's the network's departure from them (the kernel's drift along the run) is a statistic of the
    draw that no proof here bounds.  So each of (i)-(iv) is a rate over the trials, the theorem's "with
    high probability": accepted unless the exact binomial test of ``P[it holds on a trial] >=
    INSTANCE_RATE`` rejects at level 1e-4 (`per_instance`; 16 trials: rejected when at most 10 hold).
    The claim's run lasts the predicted count of its slowest trial (by construction, `softmax_gd`), up to
    `ONE_DIM_CEILING` steps instead of the tier's cap: (i) holding, the loss is then below epsilon at the
    end by the theorem's own count, and the actual hitting time, about a quarter of the count, exceeds
    the ceiling only at kappa > 4300 (the derivation of `ONE_DIM_CEILING`, which holds for d = 2 as
    well: the count is ``2 kappa log(rel(0)/epsilon)`` at c = 1).  The controls keep the tier's cap
    (lambda = 0 or divergence: their count is infinite or irrelevant) and run 8 trials each, so that
    each can reject its binomial.  Margins 1e-9 in log are round-off.
    Preconditions: lambda > 0, the symmetric pairing (a property of the constructor, decided on its
    probe before the runs, `decide_pairing`; the drawn weights are checked exactly), and the width's
    rank condition ``d_in m / 2 >= n d`` (necessary for lambda > 0; the theorem's width ``Omega(lambda^-2
    n^2 d^2 e^{18B} ...)`` has an unspecified constant).  Control ``width_too_small`` violates it (m =
    4, d_in = 2, n = 8, d = 2; spec instance).  Precondition lambda > 0 states its bound on the claim's
    runs (`paired_kernel_tail`, i.e. `two_output_kernel_tail` at d = 2)."""
    K = tc.sizes["instances"]
    if tc.control == "width_too_small":
        configs = [dict(SMALL_WIDTH, d=2, instances=K)]
    else:
        c = LARGE_STEP if tc.control == "step_too_large" else 1.0
        dup = tc.control == "duplicate_inputs"
        cap = {"max_steps": ONE_DIM_CEILING} if tc.control is None else {}
        configs = [dict(m=m, c=c, duplicate=dup, instances=K, data_key=m, **cap) for m in control_widths(tc)]
    runs = linear_convergence_runs(tc, configs)
    # d = 2, +-1 signs, unit inputs, Def. 3.7's pairing: two Schur products (the controls' runs are not all so)
    decide_linear_convergence(tc, runs, kernel_tail=paired_kernel_tail(runs) if tc.control is None else None,
                              instances=(INSTANCE_RATE, INSTANCE_ALPHA, LOW_POWER))


@claim("glls24.cor4_3.one_dim", source="Corollary 4.3",
       statement="For scalar outputs (d = 1) GD contracts the loss at 1 - m eta lambda / 2 per step "
                 "and reaches epsilon within the predicted number of steps.",
       provenance="derived",
       calibration=[Calibrated(
           decision="loss reaches epsilon within the run", threshold=CONVERGENCE_TARGET,
           calibration_seeds="1000-1049", validation_seeds="2000-2049",
           how="epsilon 1e-10 kept; the run lasts the theorem's count of its slowest trial (46 kappa), up "
               "to ONE_DIM_CEILING steps, set from the hitting time 11.5 kappa and the 1/k tail of kappa "
               "(P(kappa > k) ~ c/k, c from the calibration block: 99% of runs below kappa 15.5, the largest "
               "36.7, counts up to 1,678 steps; so P(kappa > 4300) is about 4e-5 per run, 1e-4 per seed of 3 "
               "runs); validation block: largest kappa 39.2, count 1,794. Before: "
               "the quick tier's cap of 200 steps bound in 137 of 150 runs and one trial of the 10-seed "
               "sweep ended at 1.09e-10. Measured on both blocks: kappa of H(0) of every run (as the "
               "shared run draws it); the claim and its controls run on 1000-1024 and 2000-2024 (25 + 25 "
               "seeds, CPU): no failure, every control failed as declared"),
                    "control width_too_small on 12000-12049 (50 seeds): with 16 trials (was 3) its break's "
                    "margin is 8.3 sd (3.0 sd with 3 trials on 1000-1024), normal tail 7e-11; its 'violates "
                    "a hypothesis' part, 1 plus the round-off of lambda_min(H(0)) (~1e-16 over 1e-8 "
                    "lambda_max), fails Shapiro-Wilk (p 0.008), so the row stays at the counted bound 0.058; "
                    "validated on 17000-17049 (50 seeds, the 16 trials fixed before): failed as declared on "
                    "50 of 50, its break's margin 8.0 sd (Shapiro-Wilk p 0.58, normal tail 7e-16); the "
                    "'violates a hypothesis' part again 1 plus round-off (deterministic: d_in m / 2 = 4 < n "
                    "= 8 forces lambda = 0, so it cannot miss), normal model rejected (p 0.002): counted "
                    "bound 0.058 per block, 0.030 over the 100 seeds of both blocks (1e-2 needs 299); the "
                    "claim itself passed on all 50 (steps-to-count margin least 0.037, the lambda > 0 "
                    "precondition 4.5 sd)",
                    "'lambda_min(H(0)) > 0' states its bound on the claim's runs (`scalar_output_kernel_tail`, "
                    "4.5e-6 at the quick tier; was Cantelli 2.5e-4 on 52000-52049); no check changed. Block "
                    "69000-69029 (30 seeds, quick, cut by the session's time): no failure; the row stays counted "
                    "(0.095 at 30 seeds) through 'loss reaches epsilon within the run' (final loss at the "
                    "round-off floor: no spread), and the envelope is normal at 4.5 sd (9.9e-4); controls "
                    "duplicate_inputs 5.8e-3, width_too_small 8.4e-7",
                    "'loss reaches epsilon within the run' is declared scale='log' (a loss ratio, 1e-30 to 1e-27 "
                    "at the end against epsilon 1e-10: its margin 1 - final / epsilon is exactly 1 in float64, "
                    "while log(epsilon / final), formed from the record, keeps its spread); no threshold chosen, "
                    "the verdict unchanged. Block 89000-89049 (50 seeds, quick): no failure; log(epsilon / final) "
                    "41.4 +- 0.53 (least 39.3), Shapiro-Wilk p 0.0015 (a left tail: log-normal rejected), "
                    "Cantelli 3.7e-4 (was counted, 0.058). That model sees the spread of the round-off floor "
                    "only: the decision fails through the run's ceiling (kappa > 4300, about 1e-4 a seed by the "
                    "1/k fit above; the ceiling binds from kappa about 1090 and the final loss leaves the floor "
                    "on the way to 4300), a rare branch that 50 seeds do not show. The claim's bound 1.8e-3 is now carried by the "
                    "envelope, the worst of 9 trials at 4.0 sd (normal tail 1.4e-3; 4.3 sd and 5.6e-4 on "
                    "52000-52049): 50 seeds cannot bring it under 3e-4. Controls duplicate_inputs 4.4e-4 and "
                    "width_too_small 8.8e-69, each failed as declared on 50 of 50",
                    "Redesign (2026-12-01, issue 31): the corollary over trials, as Theorem 4.2's. Before, every "
                    "conclusion on every one of the 9 trials (3 per n): the row 89000-89049 was 1.8e-3, carried by the "
                    "envelope (worst of 9 at 4.0 sd, normal 1.4e-3) and the final loss (Cantelli 3.7e-4, a model of "
                    "the round-off floor, not of the run's ceiling). The envelope cannot fail for the linearized "
                    "dynamics at c = 1 (slack -1.5 t / kappa at least, on every trial): it tests the network's "
                    "departure from its linearization, a rate over the draws; each of the four is now decided per "
                    "trial and accepted by the exact binomial test of P >= INSTANCE_RATE at level 1e-4 (9 trials: "
                    "rejected at 4 or fewer). New control step_too_large (c = 2.5, 8 trials) breaks the envelope, "
                    "which no control broke before; duplicate_inputs runs 8 trials (3 could not reject) at the "
                    "tier's cap (its loss floor 2 y_1^2 / ||Y||^2 holds at any step; was 2,000 steps). No "
                    "threshold changed",
                    Calibrated(
           decision=ENVELOPE, threshold="INSTANCE_RATE = 0.95 at level 1e-4 over 9 trials (the same for the count, "
                                        "the slope and epsilon)",
           calibration_seeds="130000-130049", validation_seeds="130100-130149",
           how="rate fixed at 0.95 (Theorem 4.2's) before the block ran, confirmed by the rule (99.9% Clopper-"
               "Pearson lower bound of the per-trial rate, rounded down to 0.05): on the calibration block each of "
               "the four held on 450 of 450 trials (bound 0.985 -> 0.95); the envelope's largest slack -0.231 in "
               "log (mean -1.29), the slope's largest excess over log q -0.048, the hitting time at least 40 "
               "steps inside the count, the final loss at least e^40 below epsilon; the longest claim run 1,457 "
               "steps (under ONE_DIM_CONTROL_STEPS). The claim 4.5e-6 (lambda_min(H(0)) > 0's stated bound; each "
               "binomial 1.6e-9, pooled trials); controls duplicate_inputs 2.1e-7 (0 of 400 trials reached "
               "epsilon; the least final loss e^9.6 above it), step_too_large 7.2e-6 (0 of 400 inside the "
               "envelope, least excess 15.7 in log; its lambda > 0 stated bound 7.0e-6), width_too_small 8.5e-24 "
               "(0 of 800 reached epsilon). Validation (the same code): no failure; each of the four held on 450 "
               "of 450 trials (envelope's largest slack -0.336, slope's largest excess -0.061, hitting time at "
               "least 50 steps inside the count, final loss at least e^39 below epsilon, longest run 1,154 "
               "steps); the claim 4.5e-6, each binomial 1.6e-9; controls duplicate_inputs 2.1e-7, step_too_large "
               "7.2e-6 (least excess 11.2), width_too_small 8.5e-24, all failed as declared on 50 of 50")],
       controls={"duplicate_inputs": Control(
           "hypothesis", breaks=["loss reaches epsilon within the run"],
           description=f"x_2 := x_1 with y_2 := -y_1 ({ONE_DIM_CONTROL_TRIALS} trials at the smallest n): lambda = "
                       "0, and the loss cannot fall below 2 y_1^2 / ||Y||^2 at any step",
           constants={"trials": ONE_DIM_CONTROL_TRIALS}),
                 "step_too_large": Control(
           "dynamics", breaks=[ENVELOPE],
           description=f"eta = c / (m lambda_max(H(0))) with c = 2.5 ({ONE_DIM_CONTROL_TRIALS} trials at the "
                       "smallest n): beyond the stable range, the loss grows along the top eigendirection",
           constants={"c": LARGE_STEP, "trials": ONE_DIM_CONTROL_TRIALS}),
                 "width_too_small": Control(
           "hypothesis", breaks=["loss reaches epsilon within the run"],
           description="m = 4 with d_in = 2, n = 8: d_in m / 2 = 4 < n = 8, so lambda = 0 at the "
                       "symmetric initialization, and the softmax's shift invariance leaves d_in (m - 1) = 6 "
                       "effective weights for 8 generic labels; 16 trials of "
                       f"{ONE_DIM_CONTROL_STEPS} steps",
           constants={**SMALL_WIDTH, "effective_weights": 6, "trials": SMALL_WIDTH_TRIALS,
                      "steps": ONE_DIM_CONTROL_STEPS})},
       sizes={"quick": {"width": 512, "ns": [4, 8, 16]}, "full": {"width": 16384, "ns": [8, 16, 32, 64]}})
def test_one_dim(tc):
    r"""Corollary 4.3 is Theorem 4.2 with d = 1 (Lemma 5.1 then reads ``||Delta H||_F <= R n
    e^{10B}``); its constants are inferred, so the same shape checks run as for
    `glls24.thm4_2.linear_convergence` (envelope, steps to epsilon <= predicted count, fitted
    slope <= log(1 - m eta lambda/2), rel <= 1e-10 at the end) on ``n`` in {4, 8, 16} with
    ``d_in = 2n`` (so that lambda stays away from 0, spec pitfall 5), width m, 3 independent trials
    per n (each its own data and initialization), ``eta = 1 / (m lambda_max)``.  Each run lasts the
    theorem's count of its slowest trial, up to `ONE_DIM_CEILING` steps (not the tier's cap: the
    count, about 46 kappa, is 300-1,800 steps here), so that "loss reaches epsilon within the run"
    is the corollary's conclusion on any trial but one with kappa > 4300 (see `ONE_DIM_CEILING`).
    Can the envelope fail?  For the linearized dynamics (kernel H(0) frozen) at c = 1 every
    eigendirection contracts by ``(1 - lambda_i / lambda_max)^2 <= (1 - 1/kappa)^2`` per step, so
    ``log rel(t) - t log q <= t (2 log(1 - 1/kappa) - log(1 - 1/(2 kappa))) ~ -1.5 t / kappa < 0``
    on every trial, whatever the labels: there it cannot fail, and the worst slack (about ``log
    rel(1)``, the labels' weight on the directions the first step does not remove) measures the
    labels, not the theorem.  What the decision tests is the network's departure from its
    linearization at a step about 1e9 times the theorem's (the kernel's drift along the run), a
    statistic of the draw that no proof here bounds; and the envelope is the corollary's own, ``q =
    1 - m eta lambda / 2``: a tighter one (the linearization's ``(1 - 1/kappa)^2``) would be a
    statement of ours.  So, as for Theorem 4.2 ("with high probability over the initialization"),
    each of the four conclusions is a rate over the trials: accepted unless the exact binomial test
    of ``P[it holds on a trial] >= INSTANCE_RATE`` rejects at level 1e-4 (`ONE_DIM_LOW_POWER`).
    The envelope fails when the step leaves the stable range: control ``step_too_large`` (c = 2.5,
    the top eigendirection grows by ``(1 - 2.5)^2`` per step) recomputes the dynamics and breaks it.
    The other controls are Theorem 4.2's: duplicated inputs (lambda = 0 and a loss floor, at the
    tier's cap), and a width below the rank condition ``d_in m / 2 >= n`` (m = 4, d_in = 2, n = 8,
    on `SMALL_WIDTH_TRIALS` trials of `ONE_DIM_CONTROL_STEPS` steps: lambda = 0 makes their count
    infinite); the controls run 8 or 16 trials, so that each can reject its binomial.
    Precondition lambda > 0 states its bound on the claim's runs and the step control's (H(0)
    does not depend on the step)
    (`scalar_output_kernel_tail`: with d = 1 the kernel at the pairing is a Schur product of the
    inputs' Gram matrix and a PSD matrix of diagonal >= m, so lambda_min is bounded below by the
    inputs' sigma_min^2, a Gaussian condition number's tail)."""
    if tc.control == "width_too_small":
        configs = [dict(SMALL_WIDTH, d=1, max_steps=ONE_DIM_CONTROL_STEPS, instances=SMALL_WIDTH_TRIALS)]
    elif tc.control is None:
        configs = [dict(m=tc.sizes["width"], n=n, d_in=2 * n, d=1, max_steps=ONE_DIM_CEILING) for n in tc.sizes["ns"]]
    else:
        n, c = tc.sizes["ns"][0], LARGE_STEP if tc.control == "step_too_large" else 1.0
        configs = [dict(m=tc.sizes["width"], n=n, d_in=2 * n, d=1, c=c, duplicate=tc.control == "duplicate_inputs",
                        instances=ONE_DIM_CONTROL_TRIALS)]
    runs = linear_convergence_runs(tc, configs)
    # d = 1, unit inputs, Def. 3.7's pairing: lambda_min(H(0)) >= c m sigma_min(X)^2 (the hypothesis controls break it)
    tail = paired_kernel_tail(runs) if tc.control in (None, "step_too_large") else None
    decide_linear_convergence(tc, runs, kernel_tail=tail,
                              instances=(INSTANCE_RATE, INSTANCE_ALPHA, ONE_DIM_LOW_POWER))


@claim("glls24.lem5_3.induction", source="Lemma 5.3; Lemmas C.2-C.4; Definition A.2; Claim E.5",
       statement="Along GD: ||F(t+1) - Y||^2 <= (1 - m eta lambda/2) ||F(t) - Y||^2, every neuron stays "
                 "within D = 4 e^{3B} sqrt(nd) ||F(0) - Y||_F / (m lambda) of its initialization, "
                 "eta ||Delta w_r|| <= 0.01, and lambda_min(H(t)) >= lambda / 2.",
       provenance="derived",
       calibration=["until the 20-seed sweep every instance was used; on seed 16 one instance at the "
                    "smallest width took a first step above 0.01, so the conclusions were restricted to "
                    "the instances meeting the base case (a hypothesis of the induction, not the outcome)",
                    "'lambda_min(H(0)) > 0' states its proved bound (paired_kernel_tail: "
                    "two_output_kernel_tail at d = 2, 2.6e-5 for the 3 trials x 3 widths; was "
                    "Cantelli 9e-4 on 84000-84299); no check changed (every decision identical at "
                    "seed 111998 but the stated bound). The row (84000-84299) was not recalibrated: "
                    "its counted controls need 300 seeds to stay within 1e-2, beyond the session's "
                    "CPU",
                    "Redesign (2026-12-01, issue 31): the induction over trials. Before, 3 trials x 3 widths of the "
                    "shared default runs (data sets shared by the widths, 200 steps), the base case a count per "
                    "width ('at least one instance per width', counted: 9.9e-3 at 300 seeds) and the per-step "
                    "ratio on every qualifying instance (worst at 2.7 sd, normal 9.5e-3). Now Theorem 4.2's runs "
                    "(shared with glls24.thm4_2.linear_convergence: 8 independent trials at m = 256 and 1024, each "
                    "its own data set, the theorem's count); the base case is not proved at our step (eta = 1/(m "
                    "lambda_max), about 1e9 times the lemma's: the first step's size depends on B and lambda_max of "
                    "the draw), so it and the ratio are rates over the trials, each accepted by the exact binomial "
                    "test at level 1e-4; the control runs 8 trials. No threshold changed",
                    Calibrated(
           decision=BASE_CASE, threshold="BASE_CASE_RATE = RATIO_RATE = 0.95 at level 1e-4 over 16 trials",
           calibration_seeds="126100-126149", validation_seeds="126150-126199",
           how="rates fixed at 0.95 before the block ran, confirmed by the rule (99.9% Clopper-Pearson lower "
               "bound of the per-trial rate, rounded down to 0.05): base case 789 of 800 trials (all 11 misses "
               "at m = 256, 2.75% there, none at 1024; largest first step 0.0171; bound 0.968 -> 0.95), ratio "
               "789 of 789 qualifying trials (largest ratio / bound 0.944; 0.991 -> 0.95); the claim passed on "
               "50 of 50, control step_too_large failed as declared on 50 of 50 (0 of 398 ratios within the "
               "bound). Validation: no failure; base case 788 of 800 (bound 1.3e-6, pooled trials), ratio 788 of "
               "788 (largest 0.948; 2.3e-11); neurons within D, the per-neuron step and lambda_min(H(t)) as "
               "before (normal 0 and 4.6e-17, Cantelli 1.1e-9); the claim 7.1e-5 (lambda_min(H(0)) > 0's stated "
               "bound); control step_too_large 1.6e-5 (0 of 398 ratios within the bound; its base case 398 of "
               "400, the 2.5 times larger first step above 0.01 on 2)"),
               "Unseen sweep of 89f5efb (seeds 314596286-314596305; issue 31), seed 314596297: control "
               "step_too_large ERRORED, its run's predicted count NaN: one of its 8 trials at m = 1024 "
               "had lambda / lambda_max >= 0.8, so q = 1 - 1.25 lambda / lambda_max <= 0 and log q "
               "undefined (a step beyond the theorem's range, eta >= 2 / (m lambda)).  Such a trial now "
               "has the count 1 and a bound no positive loss meets (`predicted_steps`, `log_contraction`; "
               "its ratio over the bound infinite): it fails the ratio, as the control declares.  No "
               "threshold changed, and every seed whose q stayed positive decides as before, so the rows "
               "stand (a non-positive q on a calibration seed would have errored there: none did)."],
       controls={"step_too_large": Control(
           "dynamics", breaks=[RATIO],
           description="eta = c / (m lambda_max(H(0))) with c = 2.5: ratios above 1, then divergence "
                       "(recorded)", constants={"c": LARGE_STEP})},
       sizes={"quick": {"widths": WIDTHS["quick"][:2], "instances": 8},
              "full": {"widths": WIDTHS["full"], "instances": 5}})
def test_induction(tc):
    r"""The three induction hypotheses of Lemma 5.3 at every step of GD with ``eta = c / (m
    lambda_max(H(0)))`` on Theorem 4.2's runs (shared with `glls24.thm4_2.linear_convergence`: 8
    independent trials, each its own data set and initialization, at m = 256 and 1024 on the quick
    tier, each run lasting the theorem's count of its slowest trial): (1) the per-step ratio ``rho_t =
    ||F(t+1)-Y||^2 / ||F(t)-Y||^2 <= 1 - m eta lambda/2`` (for t before ``rel <= 1e-10``, where
    round-off starts); (2) ``max_r ||w_r(t) - w_r(0)|| <= D`` with ``B = B_emp = max(1, max |<w_r(0),
    x_i>|)`` (the event of Lemma B.1 Part 1; the paper's ``C`` is unspecified); (3) ``max_r eta ||Delta
    w_r(t)|| <= 0.01``; and Claim E.5's ``lambda_min(H(t)) >= lambda/2`` (recorded for the first
    ``dense_steps`` steps and at the end, where the kernel is cheap to track; the loss is below 1e-6 by
    then).  All four are bounds from the proof: no tolerance beyond ``tc.tol("accumulated")`` of
    round-off in the ratios.  The lemma is an induction: its premise at s = 0 is the first step ``max_r
    eta ||Delta w_r(0)|| <= 0.01`` (`induction_base_case`), which our step ``eta = 1/(m lambda_max)``
    (not the theorem's, ~1e9 times smaller) does not guarantee at small m: it holds on a trial at a
    rate (the draw's), so it is a precondition decided per trial and accepted unless the exact binomial
    test of ``P[base case] >= BASE_CASE_RATE`` rejects at level 1e-4.  The conclusions are decided on
    the trials that meet it, (3) over t >= 1.  (1) is proved for the linearized dynamics at c = 1 (every
    eigendirection contracts by ``(1 - eta m lambda_i)^2 <= 1 - lambda / lambda_max``); at our step the
    network's departure from it is a statistic of the draw that no proof here bounds, so it too is a
    rate over the trials (``RATIO_RATE``, the same test); (2), (3) and Claim E.5 hold on every trial
    with wide margins (their models in the row).  Def. 3.7's pairing is decided on the constructor's
    probe before the runs (`decide_pairing`; the drawn weights are checked exactly).  Precondition
    lambda > 0 states its bound (`paired_kernel_tail`: d = 2, +-1 signs, unit inputs; H(0) does not
    depend on the step, so the control's runs meet its hypotheses too).  The control runs 8 trials at
    the second width, where the 2.5 times larger first step stays below 0.01 on almost every trial
    (398 of 400 on the validation block)."""
    K = tc.sizes["instances"]
    widths = tc.sizes["widths"][1:2] if tc.control == "step_too_large" else tc.sizes["widths"]
    decide_pairing(tc, [(*gd_dims(tc), m) for m in widths])
    if tc.control == "step_too_large":
        runs = [tc.use(softmax_gd, m=m, c=LARGE_STEP, instances=K, data_key=m) for m in widths]
    else:   # Theorem 4.2's runs (`glls24.thm4_2.linear_convergence`: the same configuration, shared)
        runs = [tc.use(softmax_gd, m=m, c=1.0, duplicate=False, instances=K, data_key=m, max_steps=ONE_DIM_CEILING)
                for m in widths]
    ratios, moves, steps, lams, base = [], [], [], [], []
    for r in runs:
        rel = relative_loss(r)
        meas = convergence_measurements(r)
        q = contraction_factor(r)
        n, d = r["Y"].shape[1:]
        residual0 = np.sqrt(2 * np.exp(r["log_loss"][0]))
        D = movement_bound(r["B_emp"], n, d, r["m"], residual0, r["lambda"])
        finite = finite_prefix(r)
        lam_t = np.concatenate([r["lambda_min"], r["kernel_at_end"]["lambda_min"][None]])
        holds = induction_base_case(r)
        base.append(holds)
        for k in np.flatnonzero(holds):
            upto = meas["end"][k]
            # the worst ratio over the bound q (`log_contraction`: infinite where q <= 0)
            ratios.append(np.max(rel[1: upto + 1, k] / rel[:upto, k]) * np.exp(-log_contraction(q[k])))
            moves.append(np.max(r["max_movement"][: finite[k] + 1, k]) / D[k])
            steps.append(np.max(r["max_step_per_neuron"][1: finite[k], k], initial=0.0))
            lams.append(np.nanmin(lam_t[:, k]) / r["lambda"][k])
    decide_positive_kernel(tc, runs, tail_bound=paired_kernel_tail(runs))   # symmetric, +-1 signs, unit inputs
    tc.record("instances_meeting_the_base_case", {str(r["m"]): [int(b.sum()), len(b)] for r, b in zip(runs, base)})
    first_steps = np.concatenate([r["max_step_per_neuron"][0] for r in runs])
    per_instance(tc, BASE_CASE, first_steps, np.concatenate(base), p=BASE_CASE_RATE, alpha=INSTANCE_ALPHA,
                 role="precondition", low_power=INDUCTION_LOW_POWER)
    tc.record("max_step_per_neuron", steps)
    tc.record("min_lambda_t_over_lambda", lams)
    if not ratios:          # no trial meets the base case: the precondition's test has rejected
        return
    ratios = np.asarray(ratios)
    per_instance(tc, RATIO, ratios, ratios <= 1.0 + tc.tol("accumulated"), p=RATIO_RATE, alpha=INSTANCE_ALPHA,
                 low_power=INDUCTION_LOW_POWER)
    tc.conclusion.at_most("neurons stay within D", moves, 1.0)
    tc.conclusion.at_most("per-neuron step at most 0.01", steps, INDUCTION_STEP)
    tc.conclusion.at_least("lambda_min(H(t)) at least lambda / 2", lams, 0.5)


LAZY_ALPHA = 1e-4
"""One minus the confidence of the recorded t interval of the mean of the trials' fixed-neuron
max-movement slopes (and of the recorded all-neuron and B_emp slopes' intervals)."""

RMS_AT_LEAST = "rms movement slope at least -1.15"
RMS_AT_MOST = "rms movement slope at most -0.85"
"""The spec's window [-1.15, -0.85] on the rms movement's slope, as two one-sided decisions: each
margin is linear in the slope, where the window's margin (the distance to the nearer edge) folds it
at the window's centre, near which the slope lies (-1), and is not normal."""

MAX_MOVEMENT_AT_LEAST = "fixed neurons' max movement slope at least -1.15"
MAX_MOVEMENT_AT_MOST = "fixed neurons' max movement slope at most -0.75"
"""The spec's window [-1.15, -0.75] on the max movement's slope, on the first ``widths[0]`` neurons
(`fixed_neurons_max_movement`), as two one-sided decisions (as `RMS_AT_LEAST`): the least-squares
slope of the log of the trials' geometric mean, i.e. the mean of the trials' own slopes, whose
margins are linear in a mean of independent trials."""


def fixed_neurons_max_movement(run, neurons):
    """Per trial, ``max_{r < neurons} ||w_r(T) - w_r(0)||``: the largest movement among the first
    ``neurons`` neurons (``neurons / 2`` symmetric pairs), whose initializations have the same
    distribution at every width."""
    moved = run["W_final"][..., :neurons] - run["W0"][..., :neurons]
    return np.linalg.norm(moved, axis=1).max(axis=1)


@claim("glls24.thm4_2.lazy_regime_scaling", source="Lemma 5.3 (D = O(1/m)); Lemma 5.1",
       statement="Under symmetric initialization the rms neuron movement scales as 1/m, the max "
                 "movement over a fixed set of neurons as 1/m (Lemma 5.3's D at a fixed B), and the "
                 "kernel drift ||H(T) - H(0)||_F faster than m^{-1.5}.",
       provenance="derived",
       calibration=["the rms and drift windows are the spec's, checked on seeds 1, 2 and 0 (not re-chosen "
                    "on seeds 1-10); on 17000-17049 / 17100-17129 (16 trials a width) the rms slope's "
                    "margin is 44.8 / 40.9 sd and the drift's 13.4 / 12.8 sd (normal tails below 1e-20): "
                    "within the budget as they stand",
                    Calibrated(
                        decision=RMS_AT_MOST,
                        threshold="control independent_init over the claim's widths (was: three doublings from the smallest)",
                        calibration_seeds="9200-9214", validation_seeds="9300-9314",
                        how="the control misfired on 2 of the first 6 seeds of the unseen sweep "
                            "630279476- (slopes over 256-1024 inside the claim's windows) and on 1 of 15 "
                            "of 9200-9214 (its break's margin 1.24 +- 0.74); over the claim's widths "
                            "256-4096 it failed as declared on 15 of 15 of 9200-9214 (margin 1.16 +- "
                            "0.51, least 0.56) and 15 of 15 of 9300-9314 (1.28 +- 0.53, least 0.47): "
                            "about 2.4 sd, a normal-tail miss rate near the 1e-2 budget (3 instances "
                            "a width then; 16 since the max-movement redesign)"),
                    "until 2026-11-30 (thirteenth session) the fixed-neuron decisions were a one-sample t-test "
                    "of the 16 trials' slopes against -1 (Lemma 5.3) at LAZY_ALPHA = 1e-4 two-sided, calibrated "
                    "on 17000-17049 and validated on 17100-17129: no threshold chosen from data (-1 and the "
                    "level are the design). History: the "
                    "spec's window [-1.15, -0.75] on the max over all m neurons failed on seed 9310 (its "
                    "extreme grows with B_emp), so the decision moved to the first widths[0] neurons; "
                    "first tested by a pooled paired regression, whose t statistic had sd 1.05 on "
                    "12000-12049 but 1.25 on 12100-12140 (KS against t(31) p = 0.02: it took the "
                    "skewed max's errors as i.i.d. across widths, a rate near 1e-3), now by the "
                    "trials' own slopes (independent trials: exact t(15) whatever the errors within "
                    "a trial). Calibration block (50 seeds): slope -1.001 +- 0.023, t statistic mean "
                    "-0.10, sd 1.09 (t(15): 1.07), largest |t| 2.97 (critical 5.24), KS against t(15) "
                    "p = 0.54, so the rate is LAZY_ALPHA; the two decisions' margins 3.1 and 3.9 sd "
                    "(their normal model overstates the rate: the interval's width is itself random). "
                    "Validation (30 seeds, cut by the session's CPU): no failure, slope -1.007 +- "
                    "0.020, t mean -0.33, sd 0.88, largest |t| 1.74, KS p = 0.12. Control "
                    "independent_init: failed as declared on 50 of 50 and 30 of 30 (margin 6.8 and 5.6 "
                    "sd, normal tails 8e-8 and 5e-5 upper), carried by the rms window (control slopes "
                    "-0.40 to -0.64); its fixed-neuron t statistic 9.1 +- 2.3 passed the t-test on 1 "
                    "of the 80 seeds (t 4.67), the per-trial slopes of i.i.d. initializations being "
                    "widely spread",
                    "the two t-test decisions are NullTests on T = (slope + 1) / stderr against t(15) at "
                    "LAZY_ALPHA / 2 each (the same critical value 5.24 and verdict as the interval; their level "
                    "is their stated bound, checked by the calibration against the recorded T). Blocks "
                    "89100-89149 / 89200-89249 (50 + 50 seeds, quick, no threshold chosen): no failure; T mean "
                    "-0.03 / 0.10, sd 1.12 / 1.02 (t(15): 1.07), largest |T| 3.59 / 3.02, null fit p 1.0 and "
                    "0.79 / 1.0 and 0.79; the two decisions 4.7e-3 and 2.6e-3 (normal tails, 52000-52049) -> "
                    "5e-5 each. The claim read 1.0e-4 on each block, but 1.3e-3 over both pooled: "
                    "lambda_min(H(0)) > 0's log ratio (15.7 +- 0.45) has a left tail heavier than the "
                    "log-normal's (Shapiro-Wilk p 0.28 and 0.011 on the blocks, rejected over the 100 seeds and "
                    "on 52000-52049, whose least ratio was 2.5e-3), so Cantelli 1.2e-3 decides it: at d = 2 "
                    "no stated bound was proved then (the d = 1 argument of `scalar_output_kernel_tail` needs "
                    "lambda_min(G) > 0, and the inputs' Gram matrix repeated over the d x d output blocks has "
                    "rank n < n d). Control independent_init "
                    "failed as declared on 100 of 100 (4.5e-10, 1.5e-8)",
                    "'lambda_min(H(0)) > 0' states its bound (`two_output_kernel_tail`, 1.4e-4 at the quick tier's "
                    "16 trials x 3 widths; its parameters minimize the formula on a grid, no seed read): with +-1 "
                    "signs H(0)'s spectrum is the union of two Schur products, one per sign type of the columns. "
                    "Block 94000-94049 (50 seeds, quick, the rms window then one decision): no failure, the claim "
                    "2.4e-4 (the two t-tests 5e-5 each, the rms window normal at 35.6 sd, Shapiro-Wilk p 0.12), "
                    "control independent_init 1.5e-8 (50 of 50). The rms window is now two one-sided decisions "
                    "(RMS_AT_LEAST, RMS_AT_MOST: the same edges and verdict; the window's margin, the distance to "
                    "the nearer edge, folds the slope at the window's centre -1, near which it lies, which is "
                    "why its normal model was near rejection: p 0.017 over 89100-89149,89200-89249, 0.006 on "
                    "52000-52049). Block 94050-94099 (50 seeds, quick; no threshold chosen): no failure, the "
                    "claim 2.4e-4; the one-sided rms decisions 36.3 and 38.5 sd (normal, p 0.46), the drift "
                    "12.9 sd (p 0.46), the t statistics' null fit p 1.0 and 0.79; control independent_init "
                    "6.2e-5 (50 of 50, least element: the rms slope's upper edge, normal tail). Validation "
                    "94100-94149 (50 seeds): no failure, the claim 2.4e-4, rms 44.6 / 47.6 sd (p 0.51), drift "
                    "13.1 sd, null fits p 0.09 and 1.0, control 6.7e-9 (50 of 50); the two blocks pooled "
                    "(94050-94149, 100 seeds): the claim 2.4e-4, rms 39.9 / 42.5 sd (Shapiro-Wilk p 0.81), drift "
                    "13.1 sd (p 0.18), null fits p 0.54 and 1.0, control 2.0e-7 (100 of 100)",
                    "2026-11-30, twelfth session (lead): FINDING, the unseen sweep 1430086168-1430086187 "
                    "failed 'slope not below -1 (t-test)' on seed 1430086169: T = -5.42 against the "
                    "critical -5.24, the 16 trials' slopes mean -1.075, sd 0.055, 13 of 16 below -1 (the "
                    "rms and drift slopes -1.007 and -2.005, in their windows). A slope of a maximum over "
                    "neurons is skewed, and a one-sample t statistic of skewed values has one tail "
                    "heavier than t(15)'s: the KS fit of the null (p 0.80 over the row below) sees the "
                    "bulk, not the far tail the level 5e-5 a side lives in, so the stated level did not "
                    "hold. Row: 116000-116030 with the sweep's 20 seeds (51 seeds, one failure, nothing "
                    "chosen): the decision is counted, the claim over the budget (over_budget)",
                    "2026-11-30, thirteenth session: the fixed neurons' max movement is decided by the spec's "
                    "window [-1.15, -0.75] for the max movement's slope (MAX_MOVEMENT_AT_LEAST / _AT_MOST, on "
                    "the mean of the 16 trials' slopes; no threshold chosen from data). The trials' slopes "
                    "(lead's row, 816 trials): mean -1.0014 (standard error 0.0033), sd 0.094, skew 0.28, 51.6% "
                    "below -1; the seed means' sd 0.0244 is the trials' / 4 (0.0236): independent trials, no "
                    "bias at 0.003, and the failing seed (mean -1.075, sd 0.055, 14 of 16 below -1, not 13) a "
                    "3 sd seed mean with a small sd, the heavy left tail of t for right-skewed values. A sign "
                    "test (p = 1/2, level 5e-5 a side) ran on 118000-118013 (14 seeds, no failure, 54% of 224 "
                    "slopes below -1, skew 0.31): its pooled-trials bound on the 'not below' side 2.6e-4, with "
                    "lambda's stated 1.4e-4 over the budget there, and its level rests on a median of exactly "
                    "-1, so it was set aside for the window (a design choice on that sub-block). Row "
                    "118100-118149 (50 seeds, disjoint): no failure, the claim 1.4e-4 (lambda_min(H(0)) > 0's "
                    "stated bound; the window's lower edge 7.1 sd, normal, Shapiro-Wilk p 0.34, 2.2e-8; upper "
                    "12.0 sd; rms 28.8 / 30.9 sd; drift 15.3 sd), slopes mean -1.0016, skew 0.07, 51.8% of 800 "
                    "below -1; control independent_init 3.1e-8 (50 of 50, its fixed-neuron slope -0.50 +- 0.06 "
                    "against -0.75)"],
       controls={"independent_init": Control(
           "hypothesis", breaks=[RMS_AT_MOST, MAX_MOVEMENT_AT_MOST,
                                 "kernel drift slope at most -1.5"],
           description="i.i.d. (unpaired) initialization: F(0) = Theta(sqrt m), movement ~ m^-1/2")},
       sizes={"quick": {"widths": WIDTHS["quick"], "instances": 16}, "full": {"widths": WIDTHS["full"]}})
def test_lazy_regime_scaling(tc):
    r"""Derived from Lemma 5.3 (``D = O(1/m)``): the network ``m <a, S>`` is ``sqrt m`` times the
    usual NTK scaling, so the neurons move ``O(1/m)``; with paired neurons moving in opposite
    directions the first-order kernel change cancels in each pair and ``||H(T) - H(0)||_F =
    O(m^{-2})`` (not stated in the paper).  GD runs (``eta = 1/(m lambda_max)``, `softmax_gd`: the
    theorem's count of the slowest trial, capped at the tier's steps) on ``instances`` trials per
    width (quick: 16, runs of their own; full: the shared runs' trials), the data of trial k the
    same at every width.  Pass: (i) the log-log slope of the geometric mean over the trials of the
    rms movement in [-1.15, -0.85] (two one-sided decisions, `RMS_AT_LEAST` and `RMS_AT_MOST`) and
    (iii) of the kernel drift <= -1.5 (the spec's windows around the derived exponents -1 and -2); (ii) Lemma 5.3's bound ``D = 4 e^{3B} sqrt(nd) ||Y||_F / (m
    lambda)`` is ``O(1/m)`` at a fixed ``B``, and to first order neuron r moves ``v(w_r(0), a_r) /
    m`` with v independent of m, so the max movement over a fixed set of neurons -- the first
    ``widths[0]`` of each width (`fixed_neurons_max_movement`), their initialization distributed
    alike at every width -- has slope -1 up to O(1/m): the slope of the log of its geometric mean over
    the trials against log m in the spec's window [-1.15, -0.75] for the max movement
    (`MAX_MOVEMENT_AT_LEAST`, `MAX_MOVEMENT_AT_MOST`), i.e. the mean of the trials' own slopes
    (`per_trial_width_slope_interval` records them, their mean and its t interval at ``1 -
    LAZY_ALPHA``).  Not a test of -1 itself: the widths being equally spaced in log m, a trial's
    slope is -1 plus a difference of the first and last width's ``log (m max movement)``, symmetric
    about 0 only in the limit; at finite width their law is skewed, so a t-test of their mean has a
    heavier far tail than Student's (its stated level failed on an unseen seed), and a sign test's
    level rests on a median of exactly -1, which also holds only in the limit (the measured numbers:
    the claim's calibration record).  The window's margins are linear in a mean of 16 independent
    trials.  The max over all m neurons (the spec's statistic) is
    recorded with its slope: it falls more slowly, because the extreme over more neurons grows
    with ``B_emp`` (``~ sigma sqrt(2 log(m n))``, its slope recorded too): the paper's B is
    independent of m, a union bound over the m neurons makes it grow like ``sqrt(log m)``.  Precondition
    lambda > 0 states its bound on the claim's runs (`two_output_kernel_tail`: with d = 2 and +-1 signs the
    kernel at the pairing splits into two Schur products of the inputs' Gram matrix, one per sign
    type of the columns, so lambda_min / lambda_max is bounded below by the inputs' condition number,
    a Gaussian condition number's tail, and sums of the m/2 independent pairs' exponentials).  Def. 3.7's pairing is decided on
    the constructor's probe before the runs (`decide_pairing`; the drawn weights are checked
    exactly).  Control (Def. 3.7 violated): i.i.d. initialization, ``F(0) = Theta(sqrt m)`` and the movement
    ``Theta(m^{-1/2})``."""
    init = "independent" if tc.control == "independent_init" else "symmetric"
    widths = tc.sizes["widths"]
    decide_pairing(tc, [(*gd_dims(tc), m) for m in widths], init)
    runs = [tc.use(softmax_gd, m=m, init=init, instances=tc.sizes.get("instances")) for m in widths]

    def geomean(values):
        return float(np.exp(np.mean(np.log(values))))

    rms = [geomean(r["rms_movement"][-1]) for r in runs]
    peak = {m: r["max_movement"][-1] for m, r in zip(widths, runs)}
    fixed = {m: fixed_neurons_max_movement(r, widths[0]) for m, r in zip(widths, runs)}
    drift = [geomean(r["kernel_at_end"]["kernel_drift"]) for r in runs]
    # d = 2, +-1 signs, unit inputs, Def. 3.7's pairing: two Schur products (none for the i.i.d. control)
    decide_positive_kernel(tc, runs, tail_bound=paired_kernel_tail(runs) if tc.control is None else None)
    tc.record("rms_movement", rms)
    tc.record("max_movement_slope_all_neurons", width_slope_interval(peak, 1 - LAZY_ALPHA, paired=True))
    tc.record("B_emp_slope_against_log_m", width_slope_interval(
        {m: np.exp(r["B_emp"]) for m, r in zip(widths, runs)}, 1 - LAZY_ALPHA, paired=True))
    tc.record("kernel_drift", drift)
    curves = {"rms movement": rms, "max movement": [geomean(v) for v in peak.values()],
              "fixed neurons' max movement": [geomean(v) for v in fixed.values()], "kernel drift": drift}
    for label, values in curves.items():
        tc.curve("lazy regime", label, widths, values, xscale="log", yscale="log")
    tc.record("max_movement", curves["max movement"])
    window = (widths[0], widths[-1])
    tc.conclusion.slope(RMS_AT_LEAST, widths, rms, window=window, at_least=-1.15)
    tc.conclusion.slope(RMS_AT_MOST, widths, rms, window=window, at_most=-0.85)
    fit = per_trial_width_slope_interval(fixed, 1 - LAZY_ALPHA)
    tc.record("fixed_neurons_max_movement_slope", {**fit, "trials_below_-1": int(np.sum(np.asarray(fit["slopes"]) < -1))})
    fixed_curve = curves["fixed neurons' max movement"]
    tc.conclusion.slope(MAX_MOVEMENT_AT_LEAST, widths, fixed_curve, window=window, at_least=-1.15)
    tc.conclusion.slope(MAX_MOVEMENT_AT_MOST, widths, fixed_curve, window=window, at_most=-0.75)
    tc.conclusion.slope("kernel drift slope at most -1.5", widths, drift, window=window, at_most=-1.5)
