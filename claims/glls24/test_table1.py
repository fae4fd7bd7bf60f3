"""glls24: Table 1 made empirical -- softmax vs ReLU vs exp networks on the same data (d = 1)."""
import numpy as np

from claims.glls24.setup import (
    SIGMA,
    activation_gd,
    constructor_probe,
    proven_width_order,
    quadratic_gd_steps,
    scaled_unit_inputs,
    unit_ball_norms,
)
from theorycheck import Calibrated, Control, claim
from theorycheck.errors import InvalidInputError
from theorycheck.patterns import per_instance
from theorycheck.solvers import exp_limit_kernel, softmax_limit_kernel

ACTIVATIONS = ("relu", "exp", "softmax")

SLOPE_GAP = 0.5
"""Table 1's step orders in n are the same power for the three networks: the fitted log-log slopes
of steps-to-epsilon against n may differ by at most this much."""


def trial_slopes(rows, draws):
    """Per trial, the least-squares slope against ``log n`` of the mean of ``log steps`` over the
    trial's ``draws`` consecutive instances, from the rows ((n, steps (K,), kappa (K,)) per n, K a
    multiple of ``draws``): one slope per trial, joining its draws at every n."""
    if any(len(st) % draws for _, st, _ in rows):
        raise InvalidInputError(f"trial_slopes: the instances per n ({[len(st) for _, st, _ in rows]}) must be "
                                f"a multiple of draws = {draws}")
    ns = np.log([float(n) for n, _, _ in rows])
    logs = np.stack([np.log(np.asarray(st, dtype=float)).reshape(-1, draws).mean(1) for _, st, _ in rows])
    return np.polyfit(ns, logs, 1)[0]


def kappa_slope(rows):
    """Least-squares slope of ``log steps`` against ``log kappa`` pooled over the trials of the rows
    ((n, steps (K,), kappa (K,)) per n)."""
    x = np.concatenate([np.asarray(kap, dtype=float) for _, _, kap in rows])
    y = np.concatenate([np.asarray(st, dtype=float) for _, st, _ in rows])
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


EPSILON = 1e-6
STEP_RATIO = "exp and softmax step counts agree within 25%"
STEP_RATIO_WINDOW = 1.25
TRIAL_RATE, TRIAL_ALPHA = 0.95, 0.05
"""(ii) and (iv) per independent draw or trial, each holding with probability at least TRIAL_RATE by
the exact one-sided binomial test at level TRIAL_ALPHA: (ii) the step-count ratio of a draw (an
instance of `activation_gd`: its softmax and exp share its inputs and start) within
[1/STEP_RATIO_WINDOW, STEP_RATIO_WINDOW], over the draws of every n; (iv) a trial's slope gaps
within SLOPE_GAP; both the framework's defaults, fixed before any seed."""
DRAWS_PER_TRIAL = 2
"""(iv)'s trial: this many consecutive draws at every n, whose mean ``log steps`` per n is fitted
against ``log n`` (`trial_slopes`).  A mean of two halves the variance of a trial's slope, whose
single-draw spread left too many trials outside SLOPE_GAP for the claim budget with 3 trials; the
blocks that chose and confirmed it are in the claim's calibration record (STEP_ORDER)."""
TRIAL_LOW_POWER = ("the draws are activation_gd's (6 per n and 3 n in the quick tier: 18 step ratios, 3 trials of "
                   "2 draws for the slopes over n), whose GD runs the claim's other decisions share; the paper's "
                   "quick tier is at its 60 s")
STEP_ORDER = "softmax's step order in n within 1/2 of ReLU's and exp's"


@claim("glls24.table1.activation_comparison", source="Table 1; Remark after Lemma 5.1; Sec. 4",
       statement="Softmax networks need about as many GD steps as ReLU and exp networks: all converge "
                 "linearly, with step orders in n within half a power of each other, and with unit inputs "
                 "the softmax and exp limit kernels are proportional (equal condition numbers and step "
                 "counts).  Table 1's width row is not tested: the proven width orders are recorded only.",
       provenance="inferred",
       constants={"slope_gap": SLOPE_GAP, "trial_rate": TRIAL_RATE, "trial_alpha": TRIAL_ALPHA,
                  "draws_per_trial": DRAWS_PER_TRIAL},
       calibration=["the run length rule: until the 20-seed sweep the runs had a fixed 300 steps, which "
                    "seeds 7 and 15 exceeded (bounds up to 499); each run now lasts 2 kappa log(1/epsilon) "
                    "steps of its slowest trial",
                    "the slope gap 1/2 of (iv) was set from Table 1's equal exponents before looking, and "
                    "checked on seeds 1-10 and seed 0",
                    "the other windows (25% step ratio) are the spec's, checked on seeds 1, 2 and 0",
                    Calibrated(
                        decision="run covers 2 kappa log(1/epsilon) steps",
                        threshold="the quick tier's step cap 50,000 (the full tier's; was 5,000)",
                        calibration_seeds="84000-84299", validation_seeds="143100-143399",
                        how="issue 31, 2026-12-03: on 84000-84299 the precondition was Cantelli 2.3e-3 against "
                            "the cap of 5,000 (a condition number with a heavy tail; at most 1,600 steps needed "
                            "there); the cap only bounds the cost of a rare ill-conditioned draw (a typical run "
                            "is a few hundred steps), so it is the full tier's. The same block chose two "
                            "one-sided decisions for each two-sided window of (ii)'s step ratio and (iv)'s "
                            "slope differences (their folded margins were rejected by Shapiro-Wilk there). "
                            "Validation 143100-143399 (300 seeds, the row): no failure; 'run covers' Cantelli "
                            "6.2e-6 (523 sd); the step ratio 0.999 +- 0.022 (extremes 0.89 and 1.16), its "
                            "sides 11.5 sd each, softmax's slope minus ReLU's 0.12 +- 0.09 (at most 0.41 of "
                            "the 0.5), its upper side 4.2 sd, all rejected by Shapiro-Wilk (p 1e-18, 5e-10, "
                            "0.003), so counted: the claim stays over (0.0099), the controls 0.0099 each "
                            "(300 of 300 failed as declared). With 6 draws per n (2026-12-05), the row's block "
                            "155100-155399: Cantelli 5.2e-6, the largest count 1.7% of the cap"),
                    Calibrated(
                        decision=STEP_RATIO,
                        threshold="per draw, softmax / exp steps to epsilon within [0.8, 1.25]: P >= TRIAL_RATE = "
                                  "0.95 by the exact binomial test at level TRIAL_ALPHA = 0.05 over the 18 draws",
                        calibration_seeds="155000-155049", validation_seeds="155100-155399",
                        how="issue 31, 2026-12-05 (thirty-third session): the ratio of the mean step counts over a "
                            "seed's 3 trials, two one-sided decisions (counted: ratios of integers, not normal), "
                            "replaced by the per-trial ratio (a trial's softmax and exp share its inputs and start) "
                            "decided as a binomial over the independent trials; the 25% window is the spec's, rate "
                            "and level the framework's defaults (nothing chosen on seeds). Scratch on 152000-152029 "
                            "(activation_gd directly, 270 trials): per-trial ratios 0.82 to 1.19; per-trial slope "
                            "gaps (softmax minus ReLU, one trial at each n) mean 0.14, sd 0.17, 1 of 90 outside "
                            "+-1/2 (why (iv) stays a pooled slope: over_budget). Calibration block (theorycheck "
                            "calibrate): 449 of 450 trials within (pooled trials, 9.3e-5); validation 153100-153399: "
                            "2694 of 2700 (dispersion p 0.56), 6.9e-6. (iv) then kept the row over, a pooled slope: "
                            "upper side counted 0.0099 (Shapiro-Wilk p 0.004 at 300 seeds; normal at 2.0e-4 on "
                            "the first 200), lower side Cantelli 0.0067 (next record). With (iv) per trial, "
                            "block 154100-154399: 2686 of 2700 (4.3e-5). Thirty-fourth session (2026-12-05): 6 "
                            "draws per n for (iv)'s trials of 2 (next record), so 18 ratios a seed; calibration "
                            "155000-155049: 895 of 900 within (4.9e-5); validation 155100-155399: 5377 of 5400 "
                            "(dispersion p 0.80), 3.8e-6"),
                    Calibrated(
                        decision=STEP_ORDER,
                        threshold="per trial (DRAWS_PER_TRIAL = 2 draws at every n), both gaps of its slopes over n "
                                  "(softmax minus ReLU, minus exp) within 1/2: P >= TRIAL_RATE = 0.95 by the exact "
                                  "binomial at level 0.05 over the 3 trials",
                        calibration_seeds="155000-155049", validation_seeds="155100-155399",
                        how="issue 31, 2026-12-05 (thirty-third session): (iv) was the least-squares slope pooled over "
                            "a seed's trials and ns, two one-sided decisions with no tail model over seeds (block "
                            "153100-153399 above: counted 0.0099). A slope needs every n, and a trial index joins one "
                            "draw at each n (independent over the index), so each trial gives its own slopes "
                            "(`trial_slopes`) and (iv) is a rate over trials; the window 1/2 unchanged (Table 1's "
                            "equal exponents), rate and level the framework's defaults. The rate measured before the "
                            "change, from the step counts block 153100-153399 recorded: 889 of 900 trials within "
                            "(softmax minus ReLU 0.13 +- 0.17; minus exp 0.00 +- 0.05). Calibration block: 149 of 150 "
                            "(2.9e-3 at 50 seeds); validation: 888 of 900 (dispersion p 0.60), the bound 1.4e-3, "
                            "over the budget (over_budget): with 3 trials the binomial rejects at 2 outside, "
                            "P[Bin(3, 0.022) >= 2] at the rate's 95% upper bound. Every other decision within it "
                            "(the step ratio 4.3e-5, 2686 of 2700; (i) Cantelli 1.6e-17); both controls failed as "
                            "declared on 300 of 300 (counted 0.0099 each). Thirty-fourth session (2026-12-05): a "
                            "trial's slope was one draw at each n (gap to ReLU 0.13 +- 0.17), so a trial is now "
                            "DRAWS_PER_TRIAL = 2 draws at every n, their mean log steps fitted (activation_gd's "
                            "quick instances 3 -> 6, full 5 -> 10); window, rate and level unchanged. Calibration "
                            "155000-155049: 150 of 150 trials (1.2e-3 at 50 seeds); validation 155100-155399: 898 "
                            "of 900 (dispersion p 0.49), bound 1.45e-4; the claim's row 1.5e-4, within the budget. "
                            "Controls on 300 of 300: non_unit_inputs normal tail 2.0e-10, "
                            "softmax_without_m_time_scale counted 0.0099")],
       controls={
           "softmax_without_m_time_scale": Control(
               "dynamics", breaks=["every network reaches epsilon within 2 kappa log(1/epsilon) steps"],
               description="the softmax network with the ReLU/exp step 1/lambda_max (no factor m): "
                           "m times too large, it oscillates and does not converge"),
           "non_unit_inputs": Control(
               "hypothesis", breaks=["exp and softmax limit kernels have equal condition numbers"],
               description="input norms drawn from [0.3, 1]: the exp and softmax limits are only "
                           "congruent (D K D), not proportional", constants={"min_norm": 0.3}),
       },
       sizes={"quick": {"ns": [4, 8, 16], "width": 1024}, "full": {"ns": [4, 8, 16, 32], "width": 8192}})
def test_activation_comparison(tc):
    r"""Table 1 compares sufficient conditions: width ReLU ``Omega(lambda^-2 n^2 log n)``, exp and
    softmax ``Omega(lambda^-2 n^{2+o(1)} log^2 n)``, steps ``Omega(lambda^-2 n^{2(+o(1))} log(n/eps))``
    (log powers inferred).  Its content made measurable (spec Sec. 3.2): d = 1, ``d_in = 2n``,
    unit inputs, sigma = 0.5, 6 draws (instances) per n, width m, symmetric initialization for all three networks,
    ``eta = 1/(s lambda_max(H(0)))`` with ``s = m`` for softmax (its kernel carries 1/m) and 1
    otherwise.  Pass: (i) every network reaches ``rel loss <= 1e-6`` within ``2 kappa log(1e6)``
    steps (``kappa = lambda_max/lambda_min`` of its own H(0); gradient descent on a quadratic needs
    ``kappa log(1e6)/2``); (ii) for unit inputs the exp and softmax limit kernels are proportional
    (factor e^{sigma^2}), so their condition numbers agree to ``tc.tol("conditioned")`` (an SVD of
    well-conditioned matrices; an identity of the two closed forms, a check of the code, not
    evidence for the table) and their step counts at width m agree within 25% (the measured
    part of (ii), per draw: softmax and exp of a draw share its inputs and start, so the
    ratio of its two counts is within [0.8, 1.25] with probability at least TRIAL_RATE = 0.95,
    by the exact binomial test at level TRIAL_ALPHA = 0.05 over the independent draws of
    every n; a threshold on a mean of integer counts had no tail model); (iii) at equal m the softmax network moves less and its
    kernel drifts less than the ReLU and exp networks (O(1/m) vs O(m^{-1/2})); (iv) Table 1's step
    orders in n are the same power for the three networks, so the least-squares slopes of ``log
    steps-to-epsilon`` against ``log n`` of softmax and of ReLU, and of softmax and exp, differ
    by at most 1/2 (half a power of n: the o(1) and log factors of the table cannot move an
    exponent that far over one octave of n).  A slope needs every n, and the draws at
    different n are different instances (inputs of dimension 2n), so a trial k is DRAWS_PER_TRIAL
    = 2 consecutive draws at every n, and its slope per network fits the mean of their ``log
    steps`` at each n against ``log n`` (`trial_slopes`: independent over k, an estimate of the
    same exponent as a pooled fit, noisier); (iv) holds for a trial when both of its gaps are
    within 1/2, with probability at least TRIAL_RATE by the binomial test over the trials (a
    pooled slope's margin had no tail model over seeds).  The slopes against
    ``log kappa`` are recorded beside them (GD's step count is linear in kappa).  The proven orders
    evaluated at the measured lambda are recorded beside the measured steps: they exceed the
    measured needs by orders of magnitude (Table 1 bounds worst cases), which the report states.
    The width row itself is not tested: every network here runs at one width m, which all three
    need; a test would need the smallest sufficient width per network, which the bounds' unknown
    constants do not fix.
    Each run lasts ``2 kappa log(1e6)`` steps of its slowest draw (`quadratic_gd_steps`), so the
    precondition "run covers ..." holds by construction unless the tier's cap is reached: it is
    decided as every draw's count against the cap (the quantity that decides it; the run's length,
    the count clamped at the cap, would give it no margin).  The unit-norm inputs are a property of
    the inputs' construction (norms drawn from ``[1, 1]``), decided on its probe before the runs
    (seed-independent); `activation_gd` checks the drawn norms exactly."""
    s = tc.sizes
    unit = tc.control != "non_unit_inputs"
    norms = (1.0, 1.0) if unit else (0.3, 1.0)
    ns = s["ns"] if tc.control is None else s["ns"][:1]
    step_scale = "unmatched" if tc.control == "softmax_without_m_time_scale" else "matched"
    probe_norms = unit_ball_norms(*(scaled_unit_inputs(constructor_probe(), 1, n, 2 * n, norms) for n in ns))
    tc.precondition.at_most("unit-norm inputs", np.abs(probe_norms - 1), tc.tol("exact"))
    at_bound, bound_steps, kappa_gap, step_ratio, moves_less, drifts_less = [], [], [], [], [], []
    measured, proven, by_activation = {}, {}, {}
    for n in ns:
        runs = {a: tc.use(activation_gd, activation=a, n=n, m=s["width"], epsilon=EPSILON,
                          step_scale=step_scale if a == "softmax" else "matched", input_norms=norms)
                for a in ACTIVATIONS}
        steps = {}
        for a, r in runs.items():
            hit = r["rel_loss"] <= EPSILON
            steps[a] = np.where(hit.any(0), hit.argmax(0), len(hit))
            bound = quadratic_gd_steps(r["kappa"], EPSILON)
            bound_steps.append(bound)
            reached = np.minimum(bound, len(hit) - 1)
            at_bound.append(r["rel_loss"][reached, np.arange(len(bound))])
            measured[f"{a}_n{n}_steps"] = steps[a]
            proven[f"{a}_n{n}_width_order"] = proven_width_order(a, r["lambda"], n)
        X = runs["softmax"]["X"]
        Xt = tc.tensor(X)
        conds = [np.linalg.cond(f(Xt, Xt, SIGMA).cpu().numpy()) for f in (exp_limit_kernel, softmax_limit_kernel)]
        kappa_gap.append(np.abs(conds[0] / conds[1] - 1))
        step_ratio.append(steps["softmax"] / steps["exp"])
        for a in ACTIVATIONS:
            by_activation.setdefault(a, []).append((n, steps[a], runs[a]["kappa"]))
        for other in ("relu", "exp"):
            moves_less.append(runs["softmax"]["rms_movement"] / runs[other]["rms_movement"])
            drifts_less.append(runs["softmax"]["kernel_drift"] / runs[other]["kernel_drift"])
        measured[f"kappa_limit_n{n}"] = {"exp": conds[0], "softmax": conds[1]}
    tc.record("measured", measured)
    tc.record("proven_width_orders_at_measured_lambda", proven)
    step_ratio = np.concatenate(step_ratio)
    tc.precondition.at_most("run covers 2 kappa log(1/epsilon) steps", np.ravel(bound_steps),
                            activation_gd.sizes_of(tc.tier)["max_steps"])
    tc.conclusion.at_most("every network reaches epsilon within 2 kappa log(1/epsilon) steps",
                          np.ravel(at_bound), EPSILON)
    tc.conclusion.at_most("exp and softmax limit kernels have equal condition numbers",
                          np.ravel(kappa_gap), tc.tol("conditioned"))
    per_instance(tc, STEP_RATIO, step_ratio, np.abs(np.log(step_ratio)) <= np.log(STEP_RATIO_WINDOW),
                 p=tc.constants["trial_rate"], alpha=tc.constants["trial_alpha"], low_power=TRIAL_LOW_POWER)
    tc.conclusion.at_most("softmax moves less than ReLU and exp", np.ravel(moves_less), 1.0)
    if len(ns) > 1:
        slopes = {a: trial_slopes(rows, tc.constants["draws_per_trial"]) for a, rows in by_activation.items()}
        tc.record("steps-to-epsilon slope in n, per trial", slopes)
        tc.record("steps-to-epsilon slope in kappa", {a: kappa_slope(rows) for a, rows in by_activation.items()})
        for a, rows in by_activation.items():
            tc.curve("steps to epsilon vs n", a, ns, [np.mean(r[1]) for r in rows], xscale="log", yscale="log")
        gaps = np.stack([slopes["softmax"] - slopes[a] for a in ("relu", "exp")], 1)
        per_instance(tc, STEP_ORDER, gaps, (np.abs(gaps) <= SLOPE_GAP).all(1), p=tc.constants["trial_rate"],
                     alpha=tc.constants["trial_alpha"], low_power=TRIAL_LOW_POWER)
    tc.conclusion.at_most("softmax kernel drifts less than ReLU and exp", np.ravel(drifts_less), 1.0)
