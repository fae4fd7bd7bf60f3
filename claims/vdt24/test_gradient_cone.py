r"""vdt24, fixed decoder: along NGD the negative gradient correlates with W_mm (Lemma 6) and, at
large norms, meets the cone condition (Lemma 2).

Vasudeva, Deora, Thrampoulidis, "Implicit Bias and Fast Convergence Rates for
Self-attention", arXiv 2402.05738, Section 3 and Appendix A.  Only W is trained.  Under
Assumption 2 the negative gradient has the closed form (G) of `test_landscape.py` (its module
docstring), -grad L(W) = (1/n) sum_i c_i(W) (x_{i,o} - xtilde_i) x_{i,1}^T with
c_i = exp(-gbar_i) s_{i,o} (1 - s_{i,o}) Delta_i, and the constants are
R_i = ||x_{i,1}|| max_{t != o} ||x_{i,o} - x_{i,t}|| and kappa = 1/(||W_mm||_F max_i R_i).  The
quantities that involve the size of the gradient are formed in log space from the library's
scaled gradient grad L = exp(M) G, exact where the gradient underflows.
"""
from __future__ import annotations

import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck.models.gradient_bounds import correlation_floor, gradient_bounds
from theorycheck.optim import frobenius_norm

from .fixed_decoder import (
    FIXED_POINT_SCALES,
    bounds_along_run,
    GRADIENT_BOUNDS_EXACT,
    LANDSCAPE_RUN,
    counterexample_tensors,
    first_trials,
    fixed_points,
    gaussian_points,
    landscape_run_for,
    repeated,
    wrong_opt_reference,
)
from .setup import ASSUMPTION2_TOL
from .problems import ASSUMPTION2_ALPHA, ASSUMPTION2_CALIBRATION, PAPER, WITHOUT_ASSUMPTION1, restricted


# ---------------------------------------------------------------- Lemmas 6 and 2: along NGD


FIXED_POINTS_COSINE = (f"fixed points W = c Wbar_mm, c in {FIXED_POINT_SCALES}: "
                       "cosine(-grad L, W_mm) / kappa >= 1")
"""Lemma 6's decision at the seedless points of `fixed_decoder.fixed_points` (the one the
counterexample control breaks, by its construction)."""
NGD_COSINE = "NGD iterates: cosine(-grad L, W_mm) / kappa >= 1"
"""Lemma 6's decision at the points an NGD run visits (their recorded logits)."""
RANDOM_CORRELATION = "random W: <-grad L, W_mm> / ((1/n) sum c_i) >= 1"
RANDOM_COSINE = "random W: cosine(-grad L, W_mm) / kappa >= 1"
"""Lemma 6's decisions at the random points."""


@claim(
    f"{PAPER}.lem6.grad_correlates_with_wmm",
    source="Lemma 6 (and the proof sketch of Lemma 7)",
    statement="Under Assumption 2, for every W the negative gradient correlates positively with "
              "W_mm: <-grad L, W_mm> >= (1/n) sum c_i >= 0 and "
              "<-grad L, Wbar_mm>/||grad L|| >= kappa = 1/(||W_mm|| max_i R_i).",
    provenance="derived",
    controls={
        "counterexample": Control(
            "hypothesis", breaks=[FIXED_POINTS_COSINE],
            description="CE (Assumption 2 violated): at W = -Wbar_mm the attention sits on tokens "
                        "0 and 1 and the cosine with W_mm is negative; decided on CE's "
                        "fixed construction before any draw (along NGD from Wbar_alpha and at the "
                        "random W it fails too, recorded)"),
        "wrong_opt": Control(
            "reference", breaks=[RANDOM_CORRELATION, RANDOM_COSINE, FIXED_POINTS_COSINE, NGD_COSINE],
            description="the W-SVM solved for the wrong optimal set opt+1 mod T in place of W_mm: "
                        "its margin on the true optimal token is negative, so the correlation and "
                        "cosine bounds must fail (at the random points, the fixed points and along NGD; "
                        "a miss needs all four to hold)"),
    },
    calibration=[ASSUMPTION2_CALIBRATION,
                 "2026-11-29 (issue 31): the fixed points W = c Wbar_mm, c in {0, -1, -3}, added and "
                 "decided first (no threshold chosen: Lemma 6's bound with the same 1e-9 round-off "
                 "allowance); the counterexample control breaks them, on CE's fixed construction "
                 "before any draw. Block 72000-72049 (quick): the counterexample control's miss bound "
                 "0 (seed-independent; was 0.058, counted), wrong_opt 0.002; the claim stays out "
                 "(0.058: 'random W: cosine/kappa', normal and log-normal rejected, counted)",
                 "2026-11-30 h13 (issue 31): the random-W correlation and cosine/kappa are decided against the "
                 "proven allowances of theorycheck.models.gradient_bounds (the derivation for any scores; nothing "
                 "chosen on data), stated bound 0 (GRADIENT_BOUNDS_EXACT); they replace the fixed 1e-9, which the "
                 "round-off at saturated points and Assumption 2's spread where s_o is small could exceed. Block "
                 "121500-121549 (at 4f65cef): 0 of 50 failed; least random-W cosine/kappa 1 + 8.5e-9 (the plain "
                 "bound held at every point), the largest allowance of a seed 1e-6 at the median, 0.039 at most "
                 "(a point whose s_o is far below Assumption 2's spread over Delta); "
                 "claim 0.0065 (was 0.058): the fixed points and NGD decisions, normal at 3.7 sd on this block "
                 "(5.8 sd on 72000-72049), 3.3e-3 each; wrong_opt 6.0e-10 (least element, normal), counterexample 0",
                 "2026-12-01 h19 (issue 31): the fixed points and the NGD iterates are decided against the same proven "
                 "allowances, the spread capped at ASSUMPTION2_TOL (unchanged on the trials read, which meet it; on CE "
                 "the uncapped allowance would absorb the negative cosine), NGD at the run's recorded logits "
                 "(gradient_bounds_at_logits; the step W_{t+1} - W_t, whose rounding had no proven bound, recorded), "
                 "stated bound 0 (GRADIENT_BOUNDS_EXACT); nothing chosen on data. Calibration block 125000-125049 "
                 "(at 4ddf696): 50 of 50 passed, claim 1.9e-11 (the Assumption 2 binomial), counterexample 0, wrong_opt "
                 "1.7e-3 (its random-W correlation, unchanged: normality rejected, Cantelli); NGD's least ratio at t = 0 "
                 "on every seed, within 2.2e-4 of the c = 0 point's (one event, formerly counted twice); allowances "
                 "<= 3.1e-10 (fixed points), 2.3e-9 (NGD). Block 125500-125549 (same code): claim 1.9e-11, but "
                 "wrong_opt 0.013 (least element of its lone random-W correlation, Cantelli), over the control "
                 "budget; so wrong_opt now declares the four conclusions it breaks (a miss needs all four to hold), "
                 "chosen on 125000-125049 (its row there 1.9e-11; the failure margin 3.5 +- 0.26, normal). "
                 "Validation block 125100-125149 (at 9ebef0c): 50 of 50 passed, claim 1.9e-11, counterexample 0, "
                 "wrong_opt 1.9e-11 (fails as declared 3.3e-31: least element, a fixed point, normal); least "
                 "cosine/kappa 1.87, allowances <= 3.1e-10 and 2.1e-9, NGD least at t = 0 on every seed"],
    sizes={"quick": dict(LANDSCAPE_RUN["quick"], random_per_instance=50, log10_scales=[-2, 2], ngd_every=1),
           "full": dict(LANDSCAPE_RUN["full"], random_per_instance=10, log10_scales=[-2, 2], ngd_every=20)},
)
def test_grad_correlates_with_wmm(tc):
    r"""From (G): <-grad L, W_mm> = (1/n) sum_i c_i (x_{i,o} - xtilde_i)^T W_mm x_{i,1} >=
    (1/n) sum c_i, because (x_o - xtilde)^T W_mm x_1 is a convex combination of W-SVM margins
    >= 1; with ||grad L|| <= (1/n) sum c_i R_i this gives the cosine bound kappa.  (The
    paper's constant is stripped; kappa is derived here.)

    Points: (i) random W = (10^U/sqrt d) G with U uniform on [-2, 2] (50 per data set: from
    near-uniform attention to strongly saturated), on E1, E1s and ANT in the quick tier (E1 only
    in the full tier); (ii) the iterates of an NGD run (eta = 0.1, 800 steps quick / 2000
    full) from the small initialization: every iterate in the quick tier, every 20th (t = 0
    included) in the full tier (`ngd_every`), each at the logits the run recorded (the gradient,
    hence Lemma 6, depends on W only through them; the run steps in coefficient space, where they
    are cheap); (iii) the fixed points W = c Wbar_mm, c in {0, -1, -3} (uniform attention, and
    attention pushed off the optimal token), decided first: on the counterexample control's CE
    they are computed from its fixed construction before any draw, so its failure there is
    seed-independent (at c < 0 CE's attention moves to tokens 0 and 1, whose difference has
    cosine -3/sqrt(10) with W_mm, so the cosine turns negative).

    Pass: at every point the ratios lie within the allowances of
    `theorycheck.models.gradient_bounds` (the same derivation for any scores: the data's spread of
    non-optimal scores, the reference's deficit on the program it solves -- opt+1 mod T for
    wrong_opt -- and the ratios' proven round-off): cosine/kappa >= 1 - A at the three kinds of
    points, and <-grad L, W_mm>/((1/n) sum c_i) >= 1 - A at the random points.  So they fail only
    through a wrong derivation or code: the stated bound 0 (`fixed_decoder.GRADIENT_BOUNDS_EXACT`).
    At the fixed points and along NGD the spread is capped at Assumption 2's tolerance
    (`setup.ASSUMPTION2_TOL`, 1e-8): every trial the claim reads meets it, so there the cap changes
    nothing and the allowance is proven (1e-10 to 1e-9 on E1, E1s and ANT); on CE (spread 1.5) the
    uncapped allowance would absorb the negative cosine (1 - A = -1.29 against -1.22 at c = -1), the
    capped one is 0.011, so the counterexample control fails because the conclusion fails without
    Assumption 2.  The NGD direction is no longer read off W_{t+1} - W_t (whose rounding has no
    proven bound in the run's coefficients; its cosine/kappa is recorded).  The bound can be nearly
    tight: at strongly saturated W one sample dominates, and on some data sets the least ratio over
    the fixed points and NGD comes close to 1 (the minimum of cosine/kappa is recorded; the
    calibration record has its values), so any tolerance beyond the proven allowances would hide a
    wrong constant.  That least ratio belongs to the data set more than to the point: NGD starts at
    W_0 of scale 0.01, nearly the point c = 0, where its least ratio lies.
    """
    sizes = tc.sizes
    wrong = tc.control == "wrong_opt"
    stated = None if tc.control else GRADIENT_BOUNDS_EXACT

    def at_fixed_points(X, y, u, opt, W_mm, W_ref):
        S = len(FIXED_POINT_SCALES)
        ref_opt = (opt + 1) % X.shape[2] if wrong else opt
        Xs, ys, us, opts, refs, ref_opts = repeated(S, X, y, u, opt, W_ref, ref_opt)
        fixed = gradient_bounds(Xs, ys, us, fixed_points(W_mm), opts, refs, ref_opts, spread_cap=ASSUMPTION2_TOL)
        ratio = fixed.cosine / correlation_floor(Xs, opts, refs)
        tc.conclusion.at_least(FIXED_POINTS_COSINE, ratio, 1.0 - fixed.cosine_allowance, tail_bound=stated)
        tc.record("fixed points: min cosine/kappa per c", ratio.reshape(-1, S).amin(0))
        tc.record("fixed points: largest allowance", fixed.cosine_allowance.max())

    if tc.control == "counterexample":       # CE's fixed construction: before any seeded event
        X, y, u, opt, W_mm = counterexample_tensors(tc)
        at_fixed_points(X, y, u, opt, W_mm, W_mm)
    every, met, run = landscape_run_for(tc)
    prob = restricted(every, met)
    W_ref = wrong_opt_reference(prob) if wrong else prob.W_mm
    if tc.control != "counterexample":
        at_fixed_points(prob.X, prob.y, prob.u, prob.opt, prob.W_mm, W_ref)

    P = sizes["random_per_instance"]
    X, y, u, opt, ref_pts = repeated(P, prob.X, prob.y, prob.u, prob.opt, W_ref)
    lo, hi = sizes["log10_scales"]
    W = gaussian_points(tc.rng("points"), 10 ** tc.rng("scales").uniform(lo, hi, X.shape[0]), X)
    at_random = gradient_bounds(X, y, u, W, opt, ref_pts, ref_opt=(opt + 1) % X.shape[2] if wrong else opt)
    kappa_pts = correlation_floor(X, opt, ref_pts)
    cos_ngd = run["cosines"][:, :, 1 + int(wrong)]                       # (steps+1, K)
    kappa_run = correlation_floor(prob.X, prob.opt, W_ref).cpu().numpy()
    every_ngd = sizes["ngd_every"]
    at_ngd, ngd_allowance = bounds_along_run(prob, run["logits"][::every_ngd], W_ref,
                                             (prob.opt + 1) % prob.X.shape[2] if wrong else prob.opt)
    tc.conclusion.at_least(RANDOM_CORRELATION, at_random.correlation, 1.0 - at_random.lower_allowance,
                           tail_bound=stated)
    tc.conclusion.at_least(RANDOM_COSINE, at_random.cosine / kappa_pts, 1.0 - at_random.cosine_allowance,
                           tail_bound=stated)
    tc.record("random W: largest allowances (correlation, cosine/kappa)",
              [at_random.lower_allowance.max(), at_random.cosine_allowance.max()])
    tc.conclusion.at_least(NGD_COSINE, at_ngd, 1.0 - ngd_allowance, tail_bound=stated)
    tc.record("kappa per trial", kappa_run)
    tc.record("random W: min cosine/kappa", (at_random.cosine / kappa_pts).min())
    least = np.unravel_index(np.argmin(at_ngd), at_ngd.shape)
    tc.record("NGD: min cosine/kappa, at iterate t", [at_ngd[least], every_ngd * least[0]])
    tc.record("NGD: largest allowance", ngd_allowance.max())
    tc.record("NGD: min cosine/kappa of the step direction W_{t+1} - W_t (recorded)", (cos_ngd / kappa_run).min())
    tc.record("min cosine (random W, NGD)", [at_random.cosine.min(), cos_ngd.min()])
    ratio = (at_random.cosine / kappa_pts).cpu().numpy()
    tc.curve("random", "sorted cosine / kappa at random W", np.arange(ratio.size) / ratio.size, np.sort(ratio),
             xlabel="quantile", ylabel="cosine(-grad L, W_mm) / kappa", yscale="log",
             title="Lemma 6: distribution over random W")
    tc.curve("random", "1 (the bound)", [0.0, 1.0], [1.0, 1.0], style="bound", yscale="log")
    t = run.t[::every_ngd]
    for k, label in first_trials(every, met):
        tc.curve("ngd", label, t[1:], at_ngd[1:, k], xscale="log", yscale="log",
                 ylabel="cosine(-grad L, W_mm) / kappa", title="Lemma 6 along NGD")
    tc.curve("ngd", "1 (the bound)", [1, t[-1]], [1.0, 1.0], style="bound", xscale="log", yscale="log")


CONE_DECISION = ("trials with <-grad L, W/||W||> <= (1+eps) <-grad L, Wbar_mm> at every iterate with "
                 "||W|| >= R_eps (binomial)")
"""Lemma 2's conclusion, one outcome per trial (the one the counterexample control breaks)."""
WINDOW_DECISION = "trials with a quarter of the run at ||W|| >= R_eps (binomial)"
CONE_RATE = 0.95
"""The rate of trials that Lemma 2's binomials accept (calibrated: `CONE_CALIBRATION`)."""
CONE_ALPHA = ASSUMPTION2_ALPHA
"""Level of the exact binomial tests at `CONE_RATE`: their false-failure rate when the trials' true
rate is at least CONE_RATE, by construction; chosen (not on data) as `ASSUMPTION2_ALPHA`.  With the
quick tier's 15 trials they reject at <= 9 of 15 (size 5.3e-5; power 0.8 at a rate of 0.52)."""
CONE_LOW_POWER = ("the alternative is a radius that fails on most trials (CE: on every trial), which "
                  "the test rejects; 15 trials cannot resolve a rate 0.15 below CONE_RATE at this level")
CONE_CALIBRATION = Calibrated(
    decision=CONE_DECISION,
    threshold=f"binomial at CONE_RATE = {CONE_RATE} (level {CONE_ALPHA}), for the window precondition too; "
              "eps = 0.01 and R_eps = 10 ||W_mm|| (the spec's) unchanged",
    calibration_seeds="78000-78049", validation_seeds="78500-78549",
    how="replaces 'every trial' (the largest excess a - (1+eps) b over the window, Cantelli 5.4e-3 at "
        "30.8 sd on 56000-56049, and the least window, Cantelli 1.1e-2). Rule stated before the block "
        "(that of ASSUMPTION2_RATE): CONE_RATE = the one-sided 99.9% Clopper-Pearson lower bound of the "
        "per-trial rate on the calibration block, rounded down to 0.05. Calibration block 78000-78049: "
        "750 of 750 trials met the condition and had the window (bound 0.991), so 0.95; claim 5.8e-11 "
        "(pooled trials), the counterexample control 0.0014 (0 of 250 CE trials met the condition). "
        "Validation block 78500-78549: 750 of 750, claim 5.8e-11, control 0.0014 (0 of 250; it was 0, "
        "bounded by the normal tail of the old margin)")


@claim(
    f"{PAPER}.lem2.gradient_cone_condition",
    source="Lemma 2 / Lemma 9 (Eq. (6)); Lemma 10 of Tarzanagh et al. for general n",
    statement="Under Assumptions 1-2, for every eps > 0 there is R_eps such that iterates with "
              "||W|| >= R_eps satisfy <-grad L, W/||W||> <= (1 + eps) <-grad L, Wbar_mm>."
              + WITHOUT_ASSUMPTION1,
    provenance="inferred",
    controls={
        "counterexample": Control(
            "hypothesis", breaks=[CONE_DECISION],
            description="CE along NGD from Wbar_alpha: <-grad L, Wbar_mm> < 0 < <-grad L, "
                        "W/||W||> at every large norm"),
    },
    calibration=[ASSUMPTION2_CALIBRATION, CONE_CALIBRATION],
    sizes={"quick": dict(LANDSCAPE_RUN["quick"], eps=0.01, radius_in_wmm_norms=10.0),
           "full": dict(LANDSCAPE_RUN["full"], eps=0.01, radius_in_wmm_norms=10.0)},
)
def test_gradient_cone_condition(tc):
    r"""The orientation (1 + eps) on the W_mm side is the Tarzanagh et al. form and the only one
    that can hold when W is parallel to W_mm (Eq. (6) of the copy is stripped).

    Measured along NGD (eta = 0.1, from the small initialization; the "region kept by Lemma 5")
    on E1, E1s and ANT (quick; E1-L in the full tier): a_t = <Dhat_t, W_t/||W_t||> and
    b_t = <Dhat_t, Wbar_mm> with Dhat_t = -grad L/||grad L|| the NGD step direction.  A trial
    passes when a_t <= (1 + eps) b_t (tolerance tol('accumulated'), round-off) at every iterate
    with ||W_t|| >= R_eps, eps = 0.01, R_eps = 10 ||W_mm||_F (and that window is not empty).
    The lemma gives some R_eps per instance; R_eps = 10 ||W_mm|| is the spec's choice, so whether
    it suffices is a rate over the instances: pass when the trials pass at a rate >= CONE_RATE
    (the exact binomial test at level CONE_ALPHA, one outcome per trial; the rate: calibration
    record), and the window holds at least a quarter of the run on trials at that rate too (a
    precondition: otherwise the condition would be checked on almost nothing).  The spec's absolute R = 25 on E1-S is restated in
    units of ||W_mm|| so that it carries over to E1-L, whose ||W_mm|| is larger and whose
    logit gaps at a given norm are that much smaller.  The last norm (in
    units of ||W_mm||) at which a/b exceeds 1, 1 + eps and 1.1 is recorded per trial: the
    eps = 0 version can need a far larger radius than eps = 0.01 (on ANT instances whose
    queries are all optimal), which the lemma allows (it claims eps > 0), but a certificate
    that assumes eps = 0 from a fixed t0 (Theorem 1's) is not safe beyond E1.  The check is written as
    a - (1 + eps) b <= 0 rather than as the ratio a/b, which flips when b < 0 (the CE control).
    """
    sizes, eps = tc.sizes, tc.sizes["eps"]
    every, met, run = landscape_run_for(tc)
    prob = restricted(every, met)
    norms, a, b = run["W_norm"], run["cosines"][:, :, 0], run["cosines"][:, :, 1]   # (steps+1, K)
    in_wmm_norms = norms / frobenius_norm(prob.W_mm).cpu().numpy()
    window = in_wmm_norms >= sizes["radius_in_wmm_norms"]
    tc.record("iterates per trial with ||W|| >= R_eps", window.sum(0))
    tc.precondition.binomial(WINDOW_DECISION, window.sum(0) >= sizes["steps"] / 4, p=CONE_RATE,
                             alpha=CONE_ALPHA, low_power=CONE_LOW_POWER)
    excess = np.where(window, a - (1 + eps) * b, -np.inf).max(0)
    tc.record("max over ||W|| >= R_eps of <-grad L, W/||W||> - (1+eps) <-grad L, Wbar_mm> (per trial; "
              "-inf: empty window)", excess)
    tc.conclusion.binomial(CONE_DECISION, window.any(0) & (excess <= tc.tol("accumulated")), p=CONE_RATE,
                           alpha=CONE_ALPHA, low_power=CONE_LOW_POWER)
    ratio = a / b
    for level in (0.0, eps, 0.1):
        tc.record(f"last ||W||/||W_mm|| with a/b > 1 + {level:g} (per trial)",
                  np.where(ratio > 1 + level, in_wmm_norms, 0.0).max(0))
    tc.record("R_eps per trial", sizes["radius_in_wmm_norms"] * frobenius_norm(prob.W_mm))
    tc.record("a/b at the last iterate", ratio[-1])
    for k, label in first_trials(every, met):
        tc.curve("cone", label, in_wmm_norms[1:, k], ratio[1:, k], xscale="log",
                 xlabel="||W_t|| / ||W_mm||", ylabel="<-grad L, W/||W||> / <-grad L, Wbar_mm>",
                 title="Lemma 2 along NGD")
    tc.curve("cone", "1 + eps for ||W|| >= R_eps", [sizes["radius_in_wmm_norms"], in_wmm_norms.max()],
             [1 + eps, 1 + eps], style="bound", xscale="log")
