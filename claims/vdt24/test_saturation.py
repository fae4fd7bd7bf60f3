r"""vdt24, fixed decoder: saturation of the attention, linear growth of the NGD iterate, and
the GD and Polyak versions of Theorem 1.

Vasudeva, Deora, Thrampoulidis, "Implicit Bias and Fast Convergence Rates for
Self-attention", arXiv 2402.05738, Section 3 and Appendix A (Lemmas 1, 5, 7; Theorems 6, 7).
Only W is trained; u is the decoder of the data set (Example 1, Assumption 2 exact).

Notation.  s_{i,o}(W) is the attention on sample i's optimal token, g_{i,tau}(W) =
(x_{i,o} - x_{i,tau})^T W x_{i,1} its logit gaps (sample i *violates* the W-SVM at W when
min_tau g_{i,tau} < 1), R_i = ||x_{i,1}|| max_{t != o} ||x_{i,o} - x_{i,t}||,
kappa = 1/(||W_mm||_F max_i R_i) and Delta_i = gamma_{i,o} - gamma_{i,t != o} (one value
under Assumption 2).  dev_t = 1 - al(W_t, W_mm).

The runs (NGD, GD and Polyak on Example 1; NGD and GD on the counterexample CE) are the
shared runs of `problems` and `fixed_decoder`.
"""
from __future__ import annotations

import numpy as np

from theorycheck import Calibrated, Control, TailBound, claim, discrepancy
from theorycheck.checks import fit_slope
from theorycheck.data import constraint_radii, score_gaps
from theorycheck.models.gradient_bounds import correlation_floor
from theorycheck.optim.directions import certificate_bound
from theorycheck.solvers import CERTIFICATE_TOL

from .problems import (
    ASSUMPTION2_ALPHA,
    ASSUMPTION2_CALIBRATION,
    NGD_STEPS,
    PAPER,
    TOKEN_SCALE,
    WITHOUT_ASSUMPTION1,
    assumption2_then,
    assumption2_trials,
    restricted,
)
from .fixed_decoder import (
    derivation_hypotheses,
    GD_RUN,
    POLYAK_CYCLE_RUN,
    POLYAK_RUN,
    STABLE_DUAL_CURVATURE,
    antipodal_polyak,
    dual_curvatures,
    lem5_runs,
    ngd_run_or_gd,
    saturation_rate,
    thm6_runs,
    thm7_run,
)


# ------------------------------------------------------------------ Lemma 5


def lem5_change_decision(method: str) -> str:
    """Lemma 5 (a) on one run, one outcome per data set."""
    return f"{method}: (a) data sets with s(t+1) >= s(t) at every violating (t, i) (binomial)"


def lem5_floor_decision(method: str) -> str:
    """Lemma 5 (b) on one run, one outcome per data set."""
    return f"{method}: (b) data sets with min_t s(t) >= min(s(0), 1/T) (binomial)"


LEM5_RATE = 0.95
"""The rate of data sets on which Lemma 5's binomials accept (a) and (b) (`LEM5_CALIBRATION`)."""
LEM5_LOW_POWER = ("5 data sets a seed (Example 1's TRIALS, shared with Lemmas 1, 7 and Theorems 6, 7): the "
                  "test rejects at <= 1 of 5 (level ASSUMPTION2_ALPHA); the counterexample control, where "
                  "every data set's s_opt falls while it violates, is what it must and does reject")
LEM5_CALIBRATION = Calibrated(
    decision=lem5_change_decision("GD eta=1.0"),
    threshold=f"binomial at LEM5_RATE = {LEM5_RATE} (level {ASSUMPTION2_ALPHA}), for (a) and (b) of every "
              "method; the round-off allowance tol('accumulated') unchanged",
    calibration_seeds="97000-97049", validation_seeds="97100-97149",
    how=("replaces 'every data set' (the least change and ratio over 5 data sets, steps and samples: "
         "normal margins at 3.7-4.1 sd, 1.5e-2 for the claim on 56000-56049). Rule stated before the "
         "block (that of ASSUMPTION2_RATE): LEM5_RATE = the one-sided 99.9% Clopper-Pearson lower bound "
         "of the per-data-set rate on the calibration block, least over the 8 decisions, rounded down to "
         "0.05. Calibration block 97000-97049 (at 1703d7d): every "
         "decision held on 250 of 250 data sets (bound 0.973), so 0.95; least (a) change 1.4e-3 (GD), "
         "least (b) ratio 1.008; claim 9.0e-7 (pooled trials), the counterexample control 0.0014 (0 of "
         "250 CE data sets). Validation block 97100-97149: 250 of 250 for every decision (least change "
         "1.4e-3, least ratio 1.006), claim 9.0e-7, control 0.0014"))
"""The calibration record of `LEM5_RATE`."""


@claim(
    f"{PAPER}.lem5.opt_softmax_nondecreasing",
    source="Lemma 5 (Eq. (18), Scenarios 1 and 2); Theorems 6, 7",
    statement="Along NGD, GD and Polyak from a small initialization, the optimal-token attention "
              "s_{i,opt} does not decrease at any step where sample i violates the W-SVM, and never "
              "falls below min{s_{i,opt}(W_0), 1/T}."
              + WITHOUT_ASSUMPTION1,
    provenance="inferred",
    controls={
        "counterexample": Control(
            "hypothesis", breaks=[lem5_change_decision("NGD eta=0.1 on CE")],
            description="data violating Assumptions 1-2 (CE) started at Wbar_alpha + small noise,"
                        " NGD eta = 0.1: s_opt of a violating sample falls by hundreds of orders "
                        "of magnitude while the sample violates, on every data set"),
    },
    calibration=[ASSUMPTION2_CALIBRATION, LEM5_CALIBRATION],
    sizes={"quick": dict(steps=GD_RUN["quick"]["dense"]), "full": dict(steps=GD_RUN["full"]["dense"])},
)
def test_opt_softmax_nondecreasing(tc):
    r"""Lemma 5 (Assumptions 1-2, small init W_0 = (0.01/sqrt d) G), reconstructed:

    (a) if min_tau g_{i,tau}(W_t) < 1 then s_{i,o}(W_{t+1}) >= s_{i,o}(W_t);
    (b) s_{i,o}(W_t) >= min{s_{i,o}(W_0), 1/T} for every t (the inferred form of Eq. (18)).

    The threshold "1" of the violation and the form of (b) were stripped from the copy; both
    are the spec's reading.  Runs, every step, on Example 1 (K = 5 data sets): NGD with
    eta in {0.1, 1} (batched as 2K trials with per-trial step sizes), GD eta = 1 and uncapped
    Polyak (the shared runs), 300 steps (quick) / 2000 (full).

    Per data set and run: (a) holds when the worst change s(t+1) - s(t) over its violating
    (t, i) is >= -1e-12; (b) when min_t s(t)/min{s(0), 1/T} >= 1 - 1e-12 (over t >= 1: at t = 0
    it holds by definition, and that term would pin the ratio at exactly 1 whenever
    s(0) <= 1/T).  1e-12 is round-off of s = exp(log-softmax) (relative 1e-16, s <= 1), nothing
    more; the worst change and ratio of every data set are recorded.  The data violate
    Assumption 1 (the statement's note), so the lemma is tested outside its hypotheses and
    what a pass supports is a rate over data sets: pass when (a), and (b), hold on a fraction
    >= `LEM5_RATE` of the data sets (the exact one-sided binomial test at level
    `ASSUMPTION2_ALPHA`, one outcome per data set; with 5 it rejects at <= 1 of 5; the rate:
    `LEM5_CALIBRATION`).  A precondition asks for at least one violating (t, i) in the run
    (otherwise (a) would be vacuous; the counts are recorded).  Only (a) is conditioned on
    violation: with very large steps (eta = 10) s_opt can drop at samples already deep inside
    the feasible region (spec P12), so "never decreases" is not tested.
    """
    (runs, data), met = assumption2_then(tc, lambda: lem5_runs(tc), lambda returned: returned[1])
    allowance = tc.tol("accumulated")
    for method, traj in runs.items():
        traj = traj.restrict(met)
        s, gap = traj["s_opt"], traj["min_gap"]                   # (steps+1, K, n)
        violating = gap[:-1] < 1.0
        change = s[1:] - s[:-1]
        floor = np.minimum(s[0], 1.0 / data.T)                   # (K, n)
        worst_change = np.where(violating, change, np.inf).min(axis=(0, 2))   # per data set
        worst_ratio = (s[1:].min(0) / floor).min(-1)                          # per data set
        tc.precondition.at_least(f"{method}: number of violating (t, i)", int(violating.sum()), 1)
        tc.conclusion.binomial(lem5_change_decision(method), worst_change >= -allowance, p=LEM5_RATE,
                               alpha=ASSUMPTION2_ALPHA, low_power=LEM5_LOW_POWER)
        tc.conclusion.binomial(lem5_floor_decision(method), worst_ratio >= 1.0 - allowance, p=LEM5_RATE,
                               alpha=ASSUMPTION2_ALPHA, low_power=LEM5_LOW_POWER)
        tc.record(f"{method}: (a) min of s(t+1) - s(t) over violating (t, i), per data set (inf: none)",
                  worst_change)
        tc.record(f"{method}: (b) min_t s(t) / min(s(0), 1/T), per data set", worst_ratio)
        tc.record(f"{method}: steps with a violating sample", int(violating.any(-1).sum()))
        tc.record(f"{method}: min s(t+1) - s(t) over all (t, i)", change.min())
        tc.curve("s_opt", f"{method}, seed 0, worst sample", traj.t[1:], s[1:, 0].min(-1), xscale="log",
                 ylabel="min_i s_{i,opt}(W_t)", title="Lemma 5: optimal-token attention (seed 0)")
    tc.curve("s_opt", "min(s(0), 1/T), worst sample", traj.t[1:], np.full(len(traj.t) - 1, floor[0].min()),
             style="bound", xscale="log")


# ------------------------------------------------------------------ Lemma 7

LEM7_DECISION = "(<W_t, Wbar_mm> - (kappa eta t - ||W_0||)) / (||W_0|| + eta t)"
LEM7_ALLOWANCE = 1e-9
"""The relative round-off allowance of Lemma 7's lower bound (`LEM7_ROUNDOFF`)."""
LEM7_HYPOTHESES = ("data sets meeting the derivation's hypotheses along the run (fixed_decoder."
                   "derivation_hypotheses; binomial; the conclusion reads those data sets)")
LEM7_RATE = 0.95
"""The rate of data sets that `LEM7_HYPOTHESES`' binomial accepts (`LEM7_CALIBRATION`)."""
LEM7_LOW_POWER = ("5 data sets a seed (Example 1's TRIALS, shared with Lemmas 1, 5 and Theorems 1, 6, 7): the "
                  "test rejects at <= 1 of 5 (level ASSUMPTION2_ALPHA)")
LEM7_ROUNDOFF = TailBound(0.0, (
    "Quick tier (nT = 24, d = 32, t <= 2000, eta = 0.1). On a data set meeting fixed_decoder."
    "derivation_hypotheses every coefficient w_{i,t} = s_{i,t} (gbar_i - gamma_{i,t}) of -grad L = (1/n) "
    "sum_i e^{-gbar_i} sum_{t != o} w_{i,t} (x_{i,o} - x_{i,t}) x_{i,1}^T (exact for any scores) is >= 0 at "
    "every iterate, so <-grad L, W_mm> >= m_min S and ||grad L|| <= max_i R_i S (S = (1/n) sum_i S_i, "
    "S_i = e^{-gbar_i} sum_t w_{i,t}; m_min >= 1 - 1e-10 W_mm's least margin): each NGD step, of length "
    "eta along -grad L/||grad L||, has <W_{t+1} - W_t, Wbar_mm> >= m_min kappa eta, and telescoping from "
    "<W_0, Wbar_mm> >= -||W_0|| the exact ratio is >= -(1 - m_min) kappa >= -1.1e-10 (kappa <= 1/m_min). "
    "Forward error (u = 2^-53): a logit error is the exact gradient at other logits, which keeps the "
    "form above; |z| <= 4 ||W_t|| <= 810, so the log-attentions and log-deviations of scaled_grad_W err "
    "by <= 4e3 u and each coefficient by <= 1e4 u relative; that breaks a sample's balance c_o = "
    "sum_t c_t by <= 2e4 u S_i, adding <= 2e4 u sum_i S_i ||x_o|| ||x_1|| <= 8e4 u S to G against "
    "||G|| >= m_min S / ||W_mm|| >= S / 25: 2e6 u relative; summing the nT token terms (absolute sum "
    "<= 8 S) adds <= 24 x 8 x 25 u = 5e3 u. So each step's correlation is lowered by <= 2 x 2.1e6 u "
    "eta = 4.7e-10 eta; the update W_t + eta D adds u ||W_{t+1}||, <= 2000 u (||W_0|| + eta t) in all "
    "(2.2e-13 relative); the recorded norm x alignment and kappa err by O(d^2) u (1e-13). The total, "
    "< 6e-10, stays below the allowance 1e-9 on every draw: the decision fails only if the theorem or "
    "the code is wrong. (The full tier's sizes, t <= 20000 and nT = 512, give a crude bound above the "
    "allowance: no stated bound there.)"))
LEM7_CALIBRATION = Calibrated(
    decision=LEM7_HYPOTHESES,
    threshold=f"binomial at LEM7_RATE = {LEM7_RATE} (level {ASSUMPTION2_ALPHA}); the conclusion's allowance "
              f"{LEM7_ALLOWANCE:g} unchanged, stated bound 0 (LEM7_ROUNDOFF)",
    calibration_seeds="97100-97149", validation_seeds="97200-97249",
    how=("replaces the lower bound decided on every data set without a stated bound (Cantelli at 25 sd, "
         "2.6e-3 on 27000-27030,27100-27128: its margins, the least of 5 data sets, are skewed low and "
         "neither normal nor log-normal). Rule stated before the block (that of ASSUMPTION2_RATE): "
         "LEM7_RATE = the one-sided 99.9% Clopper-Pearson lower bound of the per-data-set rate on the "
         "calibration block, rounded down to 0.05. Calibration block 97100-97149 (at b980ce1): 250 of 250 "
         "data sets met the hypotheses (bound 0.973), so 0.95; the conclusion held on every seed (least "
         "ratio 0.62, against the allowance -1e-9; Example 1's ||W_mm|| about 3 and max ||x_{i,t}|| ||x_{i,1}|| about 1.5 in the quick tier, 7.5 and 1.2 in the full tier, under the caps 25 and 4), claim 2.0e-7 (the two binomials through their pooled "
         "trials, the conclusion 0 by LEM7_ROUNDOFF), the gd control 2.0e-7 (normal at 18 sd). Validation "
         "block 97200-97249: 250 of 250, least ratio 0.60, claim 2.0e-7, gd control 2.0e-7 (normal at "
         "17 sd)"))
"""The calibration record of `LEM7_RATE`."""


@claim(
    f"{PAPER}.lem7.ngd_norm_growth",
    source="Lemma 7 / Eq. (12)",
    statement="Along NGD the iterate norm grows linearly: kappa eta t - ||W_0|| <= <W_t, Wbar_mm> "
              "<= ||W_t|| <= ||W_0|| + eta t.",
    provenance="derived",
    controls={
        "gd": Control(
            "dynamics", breaks=[LEM7_DECISION],
            description="constant-step GD (eta = 1, the shared GD run) in place of NGD: ||W_t|| "
                        "grows like log t, far below the linear kappa eta t"),
    },
    calibration=[ASSUMPTION2_CALIBRATION, LEM7_CALIBRATION],
    sizes={"quick": dict(steps=NGD_STEPS["quick"]), "full": dict(steps=NGD_STEPS["full"])},
)
def test_ngd_norm_growth(tc):
    r"""Lemma 7 (Assumption 2, NGD with step eta = 0.1, the shared run `e1_run`):

        kappa eta t - ||W_0||_F <= <W_t, Wbar_mm> <= ||W_t||_F <= ||W_0||_F + eta t,

    with kappa = 1/(||W_mm|| max_i R_i) the gradient-correlation floor of Lemma 6 (the
    paper's constant is stripped; this one is derived from identity (G): <-grad L, W_mm> >=
    (1/n) sum_i c_i and ||grad L|| <= (1/n) sum_i c_i R_i).  Each NGD step moves W by exactly
    eta with <step, Wbar_mm> >= kappa eta, so the lower bound telescopes from
    <W_0, Wbar_mm> >= -||W_0||; the upper bound is the triangle inequality.

    Assumption 2 holds in E1 to round-off only (a spread eps_i of the non-optimal scores), so
    the derivation is made for any scores (`LEM7_ROUNDOFF`): it needs every coefficient
    s_{i,t}(gbar_i - gamma_{i,t}) >= 0, which holds wherever s_{i,o} >= eps_i/(Delta_i + eps_i),
    and W_mm's constraints met (its computed margins >= 1 - 1e-10); the forward error analysis
    also caps ||W_mm|| (25) and max ||x_{i,t}|| ||x_{i,1}|| (4).  Those are checked per data set
    along the run (a precondition: the data sets meeting them at a rate >= `LEM7_RATE`, the
    exact binomial test at level `ASSUMPTION2_ALPHA`), and the conclusion reads the data sets
    meeting them (selected by the hypotheses, never by the outcome).

    Pass: the lower bound at every step t <= 2000 (quick) / 20000 (full), checked after
    dividing by ||W_0|| + eta t with allowance 1e-9 -- it is exact on those data sets, and the
    round-off of the run is below 6e-10 relative in the quick tier, so there the decision
    carries the stated bound 0 (`LEM7_ROUNDOFF`).  It is the part that depends on the run: every step must keep its
    correlation with W_mm.  The middle inequality (Cauchy-Schwarz) and the upper one (the
    triangle inequality for steps of length exactly eta) hold for any sequence of unit steps,
    so they are recorded, not decided.  The lower bound has room but is linear in t, which
    is what the lemma asserts; the control (GD, whose steps shrink) falls below it.
    """
    prob, traj, eta = ngd_run_or_gd(tc)
    met = assumption2_trials(tc, prob.data)
    prob, traj = restricted(prob, met), traj.restrict(met)
    hypotheses = derivation_hypotheses(prob, traj["s_opt"])
    tc.precondition.binomial(LEM7_HYPOTHESES, hypotheses, p=LEM7_RATE, alpha=ASSUMPTION2_ALPHA,
                             low_power=LEM7_LOW_POWER)
    kept = np.flatnonzero(hypotheses) if hypotheses.any() else np.arange(hypotheses.size)
    prob, traj = restricted(prob, kept), traj.restrict(kept)
    kappa = correlation_floor(prob.X, prob.opt, prob.W_mm).cpu().numpy()
    t = traj.t[:, None]
    norm = traj["W_norm"]
    along = norm * traj["W_alignment"]                                 # <W_t, Wbar_mm>
    scale = norm[0] + eta * t                                          # the upper bound
    lower = kappa * eta * t - norm[0]
    tc.conclusion.at_least(LEM7_DECISION, ((along - lower) / scale).min(), 0.0, margin=LEM7_ALLOWANCE,
                           tail_bound=LEM7_ROUNDOFF if tc.control is None and tc.tier == "quick" else None)
    tc.record("middle (Cauchy-Schwarz, cannot fail): min_t (||W_t|| - <W_t, Wbar_mm>) / (||W_0|| + eta t)",
              ((norm - along) / scale).min())
    tc.record("upper (triangle inequality for steps of length eta, cannot fail): max_t ||W_t|| / "
              "(||W_0|| + eta t)", (norm / scale).max())
    tc.record("kappa per trial", kappa)
    tc.record("||W_T|| / (eta T) per trial", norm[-1] / (eta * traj.t[-1]))
    tc.curve("norm", "||W_t||, seed 0", traj.t, norm[:, 0], ylabel="norm",
             title="Lemma 7: NGD iterate norm between its bounds (seed 0)")
    tc.curve("norm", "<W_t, Wbar_mm>, seed 0", traj.t, along[:, 0])
    tc.curve("norm", "||W_0|| + eta t", traj.t, scale[:, 0], style="bound")
    tc.curve("norm", "kappa eta t - ||W_0||", traj.t, lower[:, 0], style="bound")


# ------------------------------------------------------------------ Lemma 1


@claim(
    f"{PAPER}.lem1.softmax_saturation_rate",
    source="Lemma 1 / Lemma 10",
    statement="Along NGD the attention saturates exponentially fast: 1 - s_{i,opt}(W_t) <= "
              "(T-1) exp(-ct + C), with the sharp rate -(1/t) log(1 - s_{i,opt}) -> eta/||W_mm|| "
              "for the worst sample."
              + WITHOUT_ASSUMPTION1,
    provenance="inferred",
    controls={
        "gd": Control(
            "dynamics", breaks=["Example 1: slope of max_i log(1 - s_opt) x ||W_mm|| / eta"],
            description="constant-step GD (eta = 1) instead of NGD, on both copies of the data: "
                        "the saturation is far slower than eta/||W_mm||"),
    },
    calibration=[ASSUMPTION2_CALIBRATION, 
        "the window, the envelope's start and the tolerance are the spec's (not chosen on seed "
        "0); checked on base seeds 1-9 besides the default 0",
    ],
    sizes={"quick": dict(window=(1000, 2000), envelope_from=500),
           "full": dict(window=(10000, 20000), envelope_from=5000)},
)
def test_softmax_saturation_rate(tc):
    r"""Lemma 1: for t >= t_0, 1 - s_{i,o}(W_t) <= (T-1) e^{-ct+C}.  Sharp form for NGD
    (derived, spec `vdt24.lem1`): ||W_t|| ~ eta t and W_t/||W_t|| -> Wbar_mm, so the gap
    g_{i,tau}(W_t) ~ eta t m_{i,tau}/||W_mm|| with m_{i,tau} >= 1 the W_mm margins, and

        ell(t) := max_i log(1 - s_{i,o}(W_t)) = -eta t/||W_mm||_F + O(1)

    (the worst sample is a support vector, m = 1).  Measured along NGD (eta = 0.1, K = 5)
    from the small init on two copies of the data: Example 1, and Example 1 with every token
    multiplied by 2 and the decoder divided by 2 (`e1_rescaled`: same scores, W_mm / 4, so the
    predicted rate is 4x faster).  The exponent of ||W_mm|| in the rate is what the second
    copy tests: a wrong power of ||W_mm|| cannot match both copies, whatever ||W_mm|| is.
    log(1 - s) is computed in log space.

    Pass, on each copy: (i) the least-squares slope r of ell(t) over the window [1000, 2000]
    (quick) / [10^4, 2 10^4] (full), per trial, satisfies |r ||W_mm||/eta + 1| <= 0.02 (the
    spec's tolerance; the O(1) term converges, so its change over the window is small against
    the fall of ell there); (ii) the exponential envelope ell(t) <= log(T-1) - c t for t >= 500
    (quick) / 5000 (full) with c = eta/(2 ||W_mm||) (half the sharp rate; C = 0).  The window,
    the envelope's start and the tolerance are the spec's (the fitted and the predicted slopes
    are recorded; how they were checked: the calibration record).  On the rescaled copy every
    time is divided by 4, the factor of its rate
    (the iterate reaches a given ||W_t||/||W_mm|| 4x sooner): window [250, 500] and envelope
    from 125 (quick), recorded every 5th step -- the same fall of ell over the window.  Both
    copies are read on the trials of Example 1 meeting Assumption 2 (`problems.assumption2_trials`,
    decided once: the copy's scores are Example 1's, so the same trials meet it).
    """
    prob, traj, eta = ngd_run_or_gd(tc)
    met = assumption2_trials(tc, prob.data)   # decided once: the rescaled copy has the same trials and scores
    saturation_rate(tc, "Example 1", met, prob, traj, eta, tc.sizes["window"], tc.sizes["envelope_from"])
    shrink = TOKEN_SCALE**2                   # the copy's rate is shrink x faster: its times / shrink
    window = tuple(int(w / shrink) for w in tc.sizes["window"])
    saturation_rate(tc, f"tokens x {TOKEN_SCALE:g}", met, *ngd_run_or_gd(tc, TOKEN_SCALE, every=5, steps=window[1]),
                     window, tc.sizes["envelope_from"] / shrink)


# ------------------------------------------------------------------ Theorem 6

DEV_DECISION = "dev at the last checkpoint <= dev_max (binomial over the data sets)"
DEV_RATE = 0.95
"""The rate at which a data set's dev at the last checkpoint is within ``dev_max`` (Theorem 6's
conclusion (c)): `DEV_CALIBRATION`."""
DEV_ALPHA = 0.01
"""The level of (c)'s binomial: with 5 data sets and `DEV_RATE` it rejects at 3 or more beyond."""
DEV_LOW_POWER = ("5 data sets a seed (Example 1's TRIALS, shared with Lemmas 1, 5 and 7): the test "
                 "rejects only when 3 of 5 are beyond dev_max; the counterexample control, where "
                 "every data set stays near W_alpha, is what it must and does reject")
DEV_CALIBRATION = Calibrated(
    decision=f"small random: {DEV_DECISION}",
    threshold=f"binomial at DEV_RATE = {DEV_RATE} (level {DEV_ALPHA}); dev_max 0.03 (the spec's) kept",
    calibration_seeds="27000-27030,27100-27128", validation_seeds="30000-30049",
    how=("replaces 'every data set within 0.03 at t = 3000', which failed on 2 of these 60 seeds (27109, "
         "27115: one data set of 5 each, both starts; the other 298 of 300 data sets within). Rule "
         "(that of ASSUMPTION2_RATE): the one-sided 99.9% Clopper-Pearson lower bound of the per-data-set "
         "rate, 298 of 300: 0.963, rounded down to 0.05: 0.95; level 0.01 as jta24's SET_ALPHA. At the "
         "calibration block's rate 1/150 a seed fails with probability 3e-6 (1.3e-4 at the 95% upper "
         "bound 0.024 of the per-data-set failure rate). Validation block (rate and level fixed before it): 1 of 250 "
         "data sets beyond 0.03 at t = 3000 (both starts), no seed failing; the row's pooled-trials bound "
         "6.5e-5 per start, the claim 1.3e-4; the counterexample control failed as declared on 50 of 50 "
         "(every data set beyond)"))
"""The calibration record of `DEV_RATE`."""



@claim(
    f"{PAPER}.thm6.gd_global_asymptotic",
    source="Theorem 6; Remark 1",
    statement="Constant-step GD from a small initialization of any direction converges in "
              "direction to W_mm (no rate given; the observed decay is about 1/log t)."
              + WITHOUT_ASSUMPTION1,
    provenance="stated",
    controls={
        "counterexample": Control(
            "hypothesis", breaks=[f"near W_alpha (CE): {DEV_DECISION}"],
            description="data violating Assumptions 1-2 (CE) from Wbar_alpha + small noise: the "
                        "iterates stay near the local direction, whose alignment with W_mm is "
                        "negative"),
    },
    calibration=[ASSUMPTION2_CALIBRATION, DEV_CALIBRATION,
        "quick tier: the spec's checkpoints, rate_from = 100 and 0.03, checked on base seeds 1-9 "
        "besides the default 0",
        "full tier: rate_from = 1000 was MOVED from the spec's 100 after seeing base seed 0 of "
        "the full tier; not re-chosen on other seeds (not held out)",
        "(b) is recorded, not decided: \"dev ln t non-increasing at every checkpoint\" failed by "
        "5.8e-4 on one of ten unseen seeds, and \"lower at the window's end than at its start\" "
        "held with a margin of 2.2 standard deviations over seeds 1000-1024 (a false-failure "
        "rate near 1.5%)",
    ],
    sizes={"quick": dict(checkpoints=GD_RUN["quick"]["checkpoints"], rate_from=100, dev_max=0.03),
           "full": dict(checkpoints=GD_RUN["full"]["checkpoints"], rate_from=1000, dev_max=0.01)},
)
def test_gd_global_asymptotic(tc):
    r"""Theorem 6: under Assumptions 1-2 with a small constant step, GD
    W_{t+1} = W_t - eta grad L(W_t) satisfies lim_t al(W_t, W_mm) = 1 from a small
    initialization of arbitrary direction.  A limit cannot be observed in finite time, so
    the claim tests the trend that extrapolates to it, on Example 1 (K = 5) with eta = 1
    from two starts: the small random init and -0.05 Wbar_mm (the opposite direction):

    (a) dev_t strictly decreasing over the checkpoints {100, 300, 1000, 3000}
        (full: also 10^4, 3 10^4), decided on its continuous margin: the largest ratio
        dev(t_{k+1})/dev(t_k) over the checkpoints and trials is at most 1 (a ratio of exactly 1,
        a tie in float64, is the one case the strict statement would tell apart);
    (b) recorded, not decided: dev_t ln t at the last checkpoint over its value at t = rate_from
        (below 1 when dev decays at least like 1/log t).  Theorem 6 gives no rate, and the
        observed decay is close to 1/log t over the window, so a decision on it sits on a knife
        edge (both forms tried failed the false-failure budget: calibration record);
    (c) dev at the last checkpoint <= 0.03 (quick, t = 3000; the spec's threshold) or
        <= 0.01 (full, t = 3 10^4), on a fraction >= `DEV_RATE` of the data sets (the exact
        one-sided binomial test at level `DEV_ALPHA`, one outcome per data set; with 5 data sets it
        fails when 3 or more are beyond the threshold).  The theorem says every data set's limit
        is W_mm but gives no rate, so a threshold at a finite t holds at a rate, not for every
        data set (the rate measured: `DEV_CALIBRATION`), a finding about the spec's threshold, not
        the theorem.

    Windows and thresholds.  Quick tier: the spec's checkpoints, rate_from = 100 and 0.03.
    Full tier: rate_from = 1000 (on E1-L the opposite start reaches a transient plateau early,
    so dev ln t rises from t = 100 to 300 before it falls; how it was chosen: the calibration
    record).  (a) and (c) use every checkpoint from 100 in both tiers.

    Not tested: a large random init is outside the theorem's small-init hypothesis.
    """
    (runs, data), met = assumption2_then(tc, lambda: thm6_runs(tc), lambda returned: returned[1])
    checkpoints = np.asarray(tc.sizes["checkpoints"])
    tc.record("rate window start rate_from (full tier: moved to 1000 after seeing seed 0, not "
              "re-chosen on other seeds)", tc.sizes["rate_from"])
    for label, run in runs.items():
        run = run.restrict(met)
        t, series = run.t, 1.0 - run["W_alignment"]
        shown = t >= max(checkpoints[0] // 10, 2)
        dev = 1.0 - run.at("W_alignment", checkpoints)             # (checkpoints, K)
        scaled = dev * np.log(checkpoints)[:, None]
        tc.conclusion.at_most(f"{label}: dev strictly decreasing over the checkpoints (max ratio of "
                              "consecutive devs <= 1)", (dev[1:] / dev[:-1]).max(), 1.0)
        window = scaled[checkpoints >= tc.sizes["rate_from"]]
        tc.record(f"{label}: dev ln t at the last checkpoint / at t = rate_from, per seed (recorded, "
                  "not decided: the theorem gives no rate)", window[-1] / window[0])
        tc.record(f"{label}: dev at the last checkpoint per data set", dev[-1])
        tc.conclusion.binomial(f"{label}: {DEV_DECISION}", dev[-1] <= tc.sizes["dev_max"], p=DEV_RATE,
                               alpha=DEV_ALPHA, low_power=DEV_LOW_POWER)
        tc.record(f"{label}: dev at the checkpoints (seed 0)", dev[:, 0])
        tc.record(f"{label}: dev ln t at the checkpoints (seed 0)", scaled[:, 0])
        tc.curve("dev", f"{label}, seed 0", t[shown], series[shown, 0], xscale="log", yscale="log",
                 ylabel="1 - al(W_t, W_mm)", title="Theorem 6: GD direction vs W_mm (seed 0)")
    tc.curve("dev", "dev(t_1) ln t_1 / ln t", t[shown], scaled[0, 0] / np.log(t[shown]),
             style="theory", xscale="log", yscale="log")


# ------------------------------------------------------------------ Theorem 7


POLYAK_STABLE = "data sets with a stable Polyak fixed point (dual curvature mu_max <= 1.9)"
POLYAK_DEV_DECISION = "dev at the last step <= dev_max (binomial over the data sets)"
POLYAK_DEV_LOW_POWER = ("5 data sets a seed (Example 1's TRIALS, shared with the other fixed-decoder "
                        "claims): the test rejects only when 3 of 5 are beyond dev_max; the statement "
                        "is O(log t/t), which the certificate (d) checks at every t")
POLYAK_DEV_CALIBRATION = Calibrated(
    decision=POLYAK_DEV_DECISION,
    threshold=f"binomial at DEV_RATE = {DEV_RATE} (level {DEV_ALPHA}); dev_max 1e-4 (the spec's) kept",
    calibration_seeds="157000-157049", validation_seeds="157100-157149",
    how=("replaces 'every data set within 1e-4 at t = 300': over 157000-157049,157100-157149 no data set "
         "was beyond, but the least margin (dev 6.6e-5) put the log-normal tail of the worst of 5 at 1.7e-3, "
         "over the budget; the theorem gives O(log t/t), not a constant at t = 300, so the threshold "
         "holds at a rate.  Rule: Theorem 6's (DEV_CALIBRATION), the one-sided 99.9% Clopper-Pearson lower "
         "bound of the per-data-set rate on the calibration block (250 of 250: 0.972) rounded down to "
         "0.05: 0.95 (validation block 250 of 250)"))
POLYAK_LIMIT = "stable data sets: D_t / ||W_mm|| over the second half"
POLYAK_PROJECTION = "every data set: D_t / (||W_mm|| cos(W_t+1 - W_t, W_mm)) over the second half"
POLYAK_SLOPE = "stable data sets: slope of max_i log(1 - s_opt) per step"


def second_half(t, steps):
    """The mask of the recorded times t in [steps // 2, steps): the run's second half, its last
    state excluded (the displacement recorded there is a step not taken)."""
    return (t >= steps // 2) & (t < steps)


def polyak_step_cosines(norm, align, D):
    """cos(W_{t+1} - W_t, W_mm) = (||W_{t+1}|| al_{t+1} - ||W_t|| al_t) / D_t for t < steps."""
    along = norm * align
    return (along[1:] - along[:-1]) / D[:-1]


@claim(
    f"{PAPER}.thm7.polyak_direction_rate",
    source="Theorem 7; 'Extension to Polyak step-size'",
    statement="Uncapped Polyak converges to W_mm in direction at rate O(log t / t) with "
              "||W_t|| = Theta(t); its displacement is D_t = ||W_mm|| cos(W_{t+1} - W_t, W_mm) in the "
              "limit, and where the dual curvature of the W-SVM is below 2 (a stable fixed point) "
              "D_t tends to ||W_mm|| and log(1 - s_opt) falls by 1 per step."
              + WITHOUT_ASSUMPTION1,
    provenance="inferred",
    controls={
        "capped": Control(
            "dynamics", breaks=[POLYAK_LIMIT, POLYAK_PROJECTION, POLYAK_SLOPE],
            description="Polyak capped at eta_max = 1 (the cap binds from t = 0, so it is GD with"
                        " eta = 1): the displacement tends to 0 instead of ||W_mm|| cos"),
    },
    calibration=[ASSUMPTION2_CALIBRATION, POLYAK_DEV_CALIBRATION,
        "the thresholds and t0 are the spec's or derived; re-checked on base seeds 1-9 besides "
        "the default 0",
        "2026-12-06 (issue 31): D_t -> ||W_mm|| and the slope -1 failed on seed 1740758191 of the "
        "whole-suite sweep 1740758173-1740758192 (data set 0: D_t/||W_mm|| = 0.98108 and slope "
        "-0.9625 at every t from 25 to 3000).  Not a threshold: a period-2 cycle of the step "
        "direction (cos between consecutive steps 0.92505 = 2 (0.98108)^2 - 1), predicted by the "
        "dual curvature 2.175 > 2 (derivation in the docstring).  (b) and (e) now read the data "
        "sets the derivation calls stable; the limit as written is vdt24.thm7.DISCREPANCY_polyak_"
        "displacement_limit",
    ],
    sizes={"quick": dict(steps=POLYAK_RUN["quick"]["steps"], t0=30, dev_max=1e-4),
           "full": dict(steps=POLYAK_RUN["full"]["steps"], t0=200, dev_max=1e-4)},
)
def test_polyak_direction_rate(tc):
    r"""Theorem 7 (Assumptions 1-2), Polyak W_{t+1} = W_t - eta_t grad L with
    eta_t = (L - L_*)/||grad L||^2 uncapped, L_* = (1/n) sum_i exp(-gamma_{i,o}).  The
    displacement D_t = ||W_{t+1} - W_t|| = (L - L_*)/||grad L|| obeys (derived from (G):
    L - L_* = (1/n) sum_i e^{-gamma_o}(e^{x_i} - 1), x_i = (1 - s_{i,o}) Delta_i, with
    <-grad L, Wbar_mm> <= ||grad L|| <= (1/n) sum_i c_i R_i)

        e^{-Delta_max}/max_i R_i <= D_t <= ||W_mm||/min_i s_{i,o}(W_t),

    so ||W_t|| = Theta(t) and dev_t = O(log t/t), as for NGD.  Once the inactive constraints
    are negligible, L - L_* = <-grad L, W_mm> to first order, so D_t = ||W_mm|| cos(-grad L,
    W_mm): D_t -> ||W_mm|| (the spec's limit) iff the step direction tends to W_mm.  It need
    not: with weights p_k ~ exp(-<F_k, W_t>) on the active constraints F_k of the W-SVM, the
    uncapped step is W_{t+1} - W_t = F p / ||F p||^2 (F p = sum_k p_k F_k), so
    log p_k falls by (K p)_k / p^T K p per step (K the Gram kernel): multiplicative weights
    with a unit step, whose fixed point p ~ lambda (the SVM multipliers; step W_mm, D = ||W_mm||)
    has Jacobian I - K diag(lambda).  Its eigenvalues 1 - mu lie in (-1, 1) iff the dual
    curvature mu_max of Lambda^(1/2) K Lambda^(1/2) is below 2 (`dual_curvature`); above 2 the
    weights settle on a period-2 cycle, the steps alternate about W_mm at an angle theta,
    D_t -> ||W_mm|| cos theta and log(1 - s_opt) falls by cos^2 theta per step, while the
    direction still converges (the discrepancy vdt24.thm7.DISCREPANCY_polyak_displacement_limit
    exhibits such data sets).

    Pass, on Example 1 (K = 5), 300 steps (quick, E1-S) / 2000 (full, E1-L):
    (a) both displacement bounds at every step: the lower with relative margin 1e-9 (it is
        loose), the upper, asymptotically tight, with relative margin CERTIFICATE_TOL = 1e-6,
        the accuracy to which the W-SVM certificate guarantees ||W_mm|| (the round-off of
        D = ||W_{t+1} - W_t|| in float64 at large ||W|| is below 1e-12);
    (b) on the data sets with mu_max <= `STABLE_DUAL_CURVATURE` (the precondition's binomial,
        rate 0.95 at level 2e-4, fails at 4 or more of 5 above it): |D_t/||W_mm|| - 1| <= 0.01
        for every t in the second half (the spec asks it at the last step only);
    (b') on every data set: |D_t / (||W_mm|| cos(W_{t+1} - W_t, W_mm)) - 1| <= 0.01 over the
        second half (the cosine from the recorded norms and alignments,
        `polyak_step_cosines`);
    (c) dev at the last step <= 1e-4 (the spec's threshold) on a fraction >= DEV_RATE of the
        data sets (Theorem 6's binomial, level DEV_ALPHA: it fails at 3 or more of 5 beyond; the
        theorem's O(log t/t) fixes no constant at t = 300: `POLYAK_DEV_CALIBRATION`);
    (d) the certificate of Theorem 1 with eta replaced by D_s,
        dev_t <= B(t) = (||W_t0|| - <W_t0, Wbar_mm> + sum_{s=t0}^{t-1} D_s^2/(2||W_s||))/||W_t||
        for t in (t0, steps] -- the NGD derivation goes through for any step length, given
        Lemma 2 with eps = 0 after t0 (t0 = 30 quick / 200 full, where ||W|| is already
        many times ||W_mm||); tolerance 1e-6 relative + 1e-12 as in Theorem 1 (max dev/B is
        recorded);
    (e) on the stable data sets, the saturation rate: the least-squares slope of
        max_i log(1 - s_{i,o}(W_t)) over the second half is -1 per step within 2% (the gap of
        an active constraint grows by ||W_mm|| x 1/||W_mm|| per step).
    The thresholds and t0 are the spec's or derived above (calibration record).
    """
    every, traj = thm7_run(tc)
    met = assumption2_trials(tc, every.data)
    prob, traj = restricted(every, met), traj.restrict(met)
    steps, t0, data = tc.sizes["steps"], tc.sizes["t0"], prob.data
    t = traj.t
    D, norm, align = traj["displacement"], traj["W_norm"], traj["W_alignment"]
    norm_mm = prob.W_mm_norm
    curvature = dual_curvatures(prob)
    stable = curvature <= STABLE_DUAL_CURVATURE
    tc.record("dual curvature mu_max per data set", curvature)
    tc.precondition.binomial(POLYAK_STABLE, stable, p=0.95, alpha=ASSUMPTION2_ALPHA,
                             low_power="it guards (b) and (e) against reading almost no data set; 5 "
                                       "data sets cannot resolve a rate 0.15 below 0.95 at this level, "
                                       "and on Example 1 mu_max > 1.9 is rare (calibration record)")
    delta_max = score_gaps(data.scores(), data.opt).max(-1)
    lower = np.exp(-delta_max) / constraint_radii(data.X, data.opt).max(-1)
    upper = norm_mm / traj["s_opt"].min(-1)
    tc.conclusion.at_least("min_t D_t / (e^{-Delta_max}/max R)", (D / lower).min(), 1.0, margin=1e-9)
    tc.conclusion.at_most("max_t D_t / (||W_mm||/min_i s_opt(W_t))", (D / upper).max(), 1.0,
                          margin=CERTIFICATE_TOL)
    tail = second_half(t, steps)
    tc.conclusion.close(POLYAK_LIMIT, (D[tail] / norm_mm)[:, stable], 1.0, atol=0.01)
    projected = norm_mm * polyak_step_cosines(norm, align, D)
    tc.conclusion.close(POLYAK_PROJECTION, D[tail] / projected[tail[:-1]], 1.0, atol=0.01)
    dev = 1.0 - align
    tc.record("dev at the last step per data set", dev[-1])
    tc.conclusion.binomial(POLYAK_DEV_DECISION, dev[-1] <= tc.sizes["dev_max"], p=DEV_RATE, alpha=DEV_ALPHA,
                           low_power=POLYAK_DEV_LOW_POWER)
    bound = certificate_bound(norm, align, D[t0:-1], t0)
    tc.conclusion.at_most("certificate: max over t > t0 of dev_t - B(t)(1 + 1e-6)",
                          (dev[t0 + 1:] - bound * (1 + 1e-6)).max(), tc.tol("accumulated"))
    ell = traj["log_one_minus_s_opt"].max(-1)
    fits = [fit_slope(t[tail], ell[tail, k], window=(steps // 2, steps - 1), x_transform="linear",
                      y_transform="linear") for k in range(data.K)]
    tc.conclusion.close(POLYAK_SLOPE, [fit.slope for fit, keep in zip(fits, stable) if keep], -1.0, rtol=0.02)
    tc.record("D at the last step / ||W_mm|| per data set", D[steps - 1] / norm_mm)
    tc.record("slope of max_i log(1 - s_opt) per data set", [fit.slope for fit in fits])
    tc.record("max dev/B", (dev[t0 + 1:] / bound).max())
    tc.record("||W_T|| / (||W_mm|| T)", norm[-1] / (norm_mm * steps))
    tc.curve("displacement", "D_t / ||W_mm||, seed 0", t, D[:, 0] / norm_mm[0], yscale="log",
             ylabel="displacement / ||W_mm||",
             title="Theorem 7: Polyak displacement tends to ||W_mm|| (seed 0)")
    tc.curve("displacement", "limit 1", t, np.ones(len(t)), style="theory", yscale="log")
    tc.curve("displacement", "upper ||W_mm||/min s_opt", t, upper[:, 0] / norm_mm[0], style="bound",
             yscale="log")
    tc.curve("displacement", "lower e^{-Delta_max}/max R", t, np.full(len(t), lower[0] / norm_mm[0]),
             style="bound", yscale="log")
    tc.curve("dev", "1 - al(W_t, W_mm), seed 0", t[1:], dev[1:, 0], xscale="log", yscale="log",
             ylabel="alignment deficit", title="Theorem 7: Polyak direction vs W_mm (seed 0)")
    tc.curve("dev", "certificate B(t)", t[t0 + 1:], bound[:, 0], style="bound", xscale="log",
             yscale="log")
    tc.curve("saturation", "max_i log(1 - s_opt), seed 0", t, ell[:, 0], ylabel="log(1 - s_opt)",
             title="Theorem 7: saturation at one unit per step (seed 0)")
    tc.curve("saturation", "-t + fitted offset", t, fits[0].intercept - t, style="theory")


POLYAK_CYCLES = ("largest deficit 1 - D_t/||W_mm|| held over the whole second half, over the antipodal "
                 "data sets read (a counterexample to D_t -> ||W_mm|| where >= 0.01)")
POLYAK_CYCLE_CALIBRATION = Calibrated(
    decision=POLYAK_CYCLES,
    threshold="240 data sets a run (POLYAK_CYCLE_RUN; 80 before)",
    calibration_seeds="157600-157649,157700-157749", validation_seeds="157800-157849,157900-157949",
    how=("at 80 data sets the normal model of the margin put the false-failure bound at 9.5e-3 (mean 2.9 sd; "
         "0 failures in 100 seeds; 157000-157049,157100-157149 with a count as the statistic: 2.7e-3): the "
         "number of data sets with mu_max > 2 (17.6% of antipodal data sets) varies from seed to seed.  Rule "
         "stated before the blocks: the least of 80, 160, 240 data sets at which a bootstrap of the "
         "calibration block's 8000 data sets (4000 resamples) puts the statistic's normal margin >= 4.5 sd: "
         "80: 3.2, 160: 4.0, 240: 4.7 sd; then the validation block by `theorycheck calibrate`"))


@discrepancy(
    f"{PAPER}.thm7.DISCREPANCY_polyak_displacement_limit",
    source="Theorem 7; 'Extension to Polyak step-size' and the footnote to Assumption 1 (antipodal "
           "optimal tokens); the limit is the spec's derivation",
    statement="Under Assumptions 1-2 (or antipodal optimal tokens), the uncapped Polyak displacement "
              "D_t tends to ||W_mm|| and log(1 - s_opt) falls by 1 per step, on every data set.",
    corrected_by=f"{PAPER}.thm7.polyak_direction_rate",
    provenance="derived",
    constants={"stable": STABLE_DUAL_CURVATURE, "held_deficit": 0.01},
    calibration=[POLYAK_CYCLE_CALIBRATION],
    controls={
        "stable_fixed_point": Control(
            "statement", breaks=[POLYAK_CYCLES],
            description="the refutation on fresh antipodal data sets with dual curvature <= 1.9 "
                        "(the corrected statement's hypothesis): their fixed point is stable, D_t "
                        "tends to ||W_mm||, and no counterexample is left"),
    },
    sizes=POLYAK_CYCLE_RUN,
)
def test_polyak_displacement_limit(tc):
    r"""The statement as written fails where the dual curvature mu_max of the W-SVM exceeds 2
    (derivation: `test_polyak_direction_rate`): the multiplicative-weights map of the active
    constraints' weights has an unstable fixed point, the step direction settles on a period-2
    cycle about W_mm, and D_t -> ||W_mm|| cos theta < ||W_mm||.  On Example 1 such data sets are
    rare (the first seen is in the corrected claim's calibration record); on the footnote's
    antipodal data (optimal tokens +-e_1) they are common.  Here `POLYAK_CYCLE_RUN` (240) fresh antipodal data sets at E1-S sizes, uncapped
    Polyak; a data set's held deficit is min over the second half of 1 - D_t/||W_mm||, and a
    counterexample is a data set with mu_max > 2 (read by the hypothesis, not the outcome) whose
    held deficit is >= 0.01.  Refutation: the largest held deficit over the data sets with
    mu_max > 2 is >= 0.01 (0 where none has; its false-failure rate: the calibration table).
    Control (statement): the same largest held deficit over fresh antipodal data sets with
    mu_max <= 1.9, where no deficit can persist.
    """
    stable_only = tc.control == "stable_fixed_point"
    prob, traj = tc.use(antipodal_polyak, stream="stable" if stable_only else "cycles")
    curvature = dual_curvatures(prob)
    steps = tc.sizes["steps"]
    tail = second_half(traj.t, steps)
    held = (1.0 - traj["displacement"][tail] / prob.W_mm_norm).min(0)
    read = curvature <= tc.constants["stable"] if stable_only else curvature > 2.0
    tc.record("dual curvature mu_max per data set", curvature)
    tc.record("deficit 1 - D_t/||W_mm|| held over the second half per data set", held)
    tc.record("data sets read; counterexamples among them (held deficit >= 0.01)",
              [int(read.sum()), int((held[read] >= tc.constants["held_deficit"]).sum())])
    tc.conclusion.at_least(POLYAK_CYCLES, held[read].max(initial=0.0), tc.constants["held_deficit"])
