r"""vdt24, experiments: the optimizer orderings of Figures 2, 5 (fixed decoder) and 3 (joint).

Vasudeva, Deora, Thrampoulidis, "Implicit Bias and Fast Convergence Rates for
Self-attention", arXiv 2402.05738: Fig. 2 (discussed in Section 3.2), Fig. 3 (Section 5.1),
Fig. 5 and the settings of all three (Appendix C).  The copy lost every numeric setting of these
figures (n, T, d, step sizes, caps, momentum); the values here are the reconstruction's (spec
section 3).  Only the *qualitative orderings* are the paper's.

What the figures state (quoted from the copy), and how it is read here:

* Fig. 2 (Example 1) and Fig. 5 (antipodal optimal tokens), u fixed, W trained by GD, NGD,
  NGD with momentum and Polyak: "NGD is significantly faster than standard GD", momentum
  "results in a performance boost", Polyak "leads to even faster convergence than NGD across
  all metrics, including the train loss".  Fig. 5 repeats Fig. 2 with antipodal opt tokens.
* Fig. 3 (data model DM, joint training of (u, W)) with GD, "NGD" (Eq. (13) without the
  time factor: each block normalized by its own gradient norm), "joint NGD" (Eq. (2) on
  theta, one joint norm) and Polyak: "all other algorithms are faster than GD, with Polyak
  step being the fastest", loss at "a similar rate for NGD and joint-NGD", and "for the other
  metrics, NGD is slightly faster".

The Polyak cap.  The paper caps its Polyak step (eta_t = min{(L - L_*)/||grad L||^2,
eta_max}) with a value the copy lost, and says itself (Section 3.2) that once the cap binds
the updates "are identical to standard GD updates ... Hence, the rates are much faster in the
beginning, but slow down as training progresses".  The uncapped step grows exponentially, so
any modest cap binds after a few steps.  Each figure therefore runs Polyak uncapped (the
theory's Polyak, Theorem 7) and with the spec's cap (10^3 for Figs. 2 and 5, 100 for Fig. 3);
"Polyak is faster" is checked for the uncapped one, and each claim checks the cap finding: the
capped Polyak leads NGD early and loses to it late.  For Fig. 3 the paper's "Polyak step being
the fastest" is refuted at any cap: NGD leads every Polyak run (uncapped, cap 100, cap 10) by
a decade in softmax saturation and 2x in W-alignment --
`vdt24.fig3.DISCREPANCY_polyak_fastest_as_written` (provenance inferred: the step sizes and
horizon were lost), with the dependence of the loss on the cap drawn as a plot.

Not checked, recorded: the spec's ordering "Polyak >~ NGD-mom" of Figs. 2/5 is not the
paper's (which compares Polyak with NGD) and depends on ||W_mm|| against eta/(1 - mu); in
Fig. 3, joint NGD and Polyak against GD in W-alignment.

Speed and controls.  The paper's methods of one figure run as ONE batched trajectory
(`theorycheck.optim.side_by_side`: trial group m follows method m, one gradient evaluation per
step for all of them), recorded at log-spaced checkpoints and cached.  Each negative control's
own setting (momentum with NGD's effective step, joint NGD with a smaller step, GD with its step
frozen at NGD's or at Polyak's first step) is an arm of the figure's shared run of its own,
which only the control's case computes, so a control reads its own run, never the claim's
under another label (the batch follows each method alone step for step: tests/test_optim.py
and tests/test_comparison.py).  Polyak capped at 10 is one of the paper's runs of Fig. 3 (the
discrepancy reads it), so the control `polyak_cap_10` re-reads a run the claim's case makes:
discrimination, beside the independent ones.  The runs and methods are the paper's
set-up, in `figures`.

Seeds: the SEEDS = 5 trials of the shared vdt24 data sets (`problems`), with
their small initialization W_0 (fixed decoder); for Fig. 3 the first 8 DM instances of the joint
claims (orderings decided at the median over them), from
u_0 = 0, W_0 = 0 (none selected by its outcome).
"""
from __future__ import annotations

import numpy as np

from theorycheck import Calibrated, Control, claim, discrepancy
from theorycheck.comparison import decades_ahead

from .figures import (
    CAPS,
    DEV_RESOLUTION,
    FASTER,
    FIXED_DECODER_ROLES,
    FROZEN_NGD,
    JOINT_METHODS,
    MUCH_FASTER,
    ORDER_ALPHA,
    ORDER_RATE,
    PAPER_POLYAK,
    SLIGHTLY_FASTER,
    check_everything_beats_gd,
    check_instance_rate,
    check_joint_ahead,
    check_joint_polyak,
    check_ngd_against_joint_ngd,
    documented,
    fixed_decoder_figure,
    joint_figure_runs,
    ordering_name,
    plot_cap_dependence,
    plot_joint,
    record_joint_run,
    roles_for,
    same_name_roles,
)
from .problems import ASSUMPTION2_CALIBRATION, DM_SIZES, E1_SIZES, PAPER


# ---------------------------------------------------------------- Figs. 2 and 5


def converging_name(role) -> str:
    """The name of Fig. 5's binomial decision that ``role``'s direction approaches W_mm."""
    return (f"{role}: 1 - al(W_t, W_mm) at the end >= {SLIGHTLY_FASTER:g}x below its value at t_early (or at "
            "the float64 floor), instances (binomial)")


FIXED_DECODER_CONTROLS = {
    "frozen_ngd_step": Control(
        "dynamics", breaks=[
            ordering_name(["NGD"], ["GD"], "alignment deficit", FASTER),
            ordering_name(["NGD"], ["capped Polyak"], "alignment deficit", FASTER),
        ],
        description="GD with its step frozen at eta/||grad L(W_0)|| (NGD's first step, then no "
                    "normalization; its own run) as 'NGD': 'NGD >> GD' and 'capped Polyak loses "
                    "to NGD late' must fail -- the lead is the normalization's"),
    "momentum_same_effective_step": Control(
        "dynamics", breaks=[ordering_name(["NGD-mom"], ["NGD"], "alignment deficit", FASTER)],
        constants={"eta": 0.01, "mu": 0.9, "effective_step": 0.1},
        description="heavy ball with eta = 0.01, mu = 0.9 (its own run): the effective step "
                    "eta/(1 - mu) = 0.1 is NGD's, so 'momentum helps' must fail -- the boost is "
                    "the larger effective step"),
    "frozen_polyak_step": Control(
        "dynamics", breaks=[
            ordering_name(["Polyak"], ["NGD"], "alignment deficit", FASTER),
            ordering_name(["Polyak"], ["NGD"], "excess loss", FASTER),
        ],
        description="GD with its step frozen at uncapped Polyak's first, (L(W_0) - L_*)/||grad "
                    "L(W_0)||^2 (its own run), as 'Polyak': without the adaptive step that grows "
                    "as the gradient vanishes, 'Polyak faster than NGD' must fail"),
}


ORDER_CALIBRATION = Calibrated(
    decision=ordering_name(["Polyak"], ["NGD"], "alignment deficit", FASTER),
    threshold=f"every ordering of Figs. 2 and 5: binomial at ORDER_RATE = {ORDER_RATE} (level {ORDER_ALPHA}) "
              "over the 5 instances; factors unchanged",
    calibration_seeds="78000-78049", validation_seeds="78500-78549",
    how="replaces 'every instance' (a per-seed least margin over 3 instances; on 27000-27030,27100-27128 "
        "Cantelli 1e-3 to 2e-2 on Fig. 5, where the ANT instances spread the margins) and, in excess loss "
        "and 1 - s_opt, NGD >> GD's geometric mean (Cantelli 3e-2) by a decade per instance (its lead there "
        "is 10-20 decades; in alignment, about 1.5, the geometric mean stays). The instances went from the "
        "first 3 of the data sets' trials to all 5, so that the binomial can reject at its level (at <= 1 of "
        "5) and a control failing on every instance is bounded through its pooled instances. Rule stated "
        "before the block (that of ASSUMPTION2_RATE): ORDER_RATE = the one-sided 99.9% Clopper-Pearson "
        "lower bound of the per-instance rate on the calibration block, rounded down to 0.05. Calibration "
        "block 78000-78049: every ordering of both figures held on 250 of 250 instances (bound 0.973), so "
        "0.95; claims 1.3e-6 (Fig. 2) and 1.8e-6 (Fig. 5); each control's broken orderings held on 0 of 250 "
        "instances, miss bounds 0.0014. Validation block 78500-78549: 250 of 250 on every ordering, claims "
        "1.3e-6 and 2.2e-6, every control 0 of 250 on its broken orderings (0.0014; they were 4.5e-6 to "
        "3.4e-5 in the normal tail and 0.049 counted for Fig. 5's frozen_polyak_step)")
"""The calibration record of `figures.ORDER_RATE` (every ordering of Figs. 2 and 5 uses it)."""


FIXED_DECODER_CALIBRATION = [
    ASSUMPTION2_CALIBRATION,
    ORDER_CALIBRATION,
    "the factors 2x, 10x were set on the quick tier over --tc-seed 0-19 (recorded values in the "
    "report)",
    "NGD >> GD: a per-seed decade failed on one ANT instance in 60 (||W_mm|| < 1), hence the "
    "geometric mean over seeds -- a threshold moved after seeing data",
    "the frozen-step controls (frozen_ngd_step, frozen_polyak_step) were written after seeing "
    "seed 0 (not held out), then checked on --tc-seed 1-5",
]


FIXED_DECODER_DOC = r"""

    Methods (spec section 3; the step sizes are the reconstruction's): GD eta = 1; NGD
    eta = 0.1; NGD-mom eta = 0.1, mu = 0.9 (heavy ball on the normalized step); Polyak
    uncapped (the theory's, Theorem 7) and with eta_max = 1e3 (the spec's cap).  K = 5 instances
    (the data sets' trials, each with its own small init W_0 = (0.01/sqrt d) G), 1000 (quick) or 20000 (full) iterations, read at
    log-spaced checkpoints.  Error series, each as a natural log: alignment deficit
    1 - al(W_t, W_mm), excess loss L - L_* (exact, log space) and 1 - mean_i s_{i,opt}.
    Assumption 1 (nearly orthogonal tokens) is not met by these data (the orthogonality ratio
    is recorded): the verdict tests the statement without it.  How the factors were set: the
    calibration record.

    Pass, at the last checkpoint, in each of the three error series, each ordering on a
    fraction >= ORDER_RATE of the instances (`figures.check_ahead_rate`: the exact binomial test
    of P[an instance shows it] >= ORDER_RATE at level ORDER_ALPHA, one outcome per instance; a
    figure over draws states its orderings as rates over them; the rate: calibration record):
      * Polyak faster than NGD ("Polyak step-size leads to even faster convergence than NGD
        across all metrics, including the train loss"): >= 2x;
      * momentum helps ("a performance boost"): NGD-mom >= 2x ahead of NGD;
      * NGD >> GD ("significantly faster"): in excess loss and 1 - s_opt NGD >= 10x (a decade)
        ahead; in alignment, whose lead is about 1.5 decades, >= 2x ahead and >= 10x in the
        geometric mean over the instances.
      2x is the separation asked of a plain "faster": a visible gap on the log-scale plots.
      ||W_t|| is recorded and plotted but not ordered: its growth is set by the step sizes
      (eta t, eta t/(1 - mu), about ||W_mm|| t).
    Not checked (recorded): the spec's "Polyak >~ NGD-mom".  The paper compares Polyak with
    NGD only.  Asymptotically log(1 - s_opt) falls by 1 per step for uncapped Polyak (its
    displacement tends to ||W_mm||) and by eta/((1 - mu) ||W_mm||) for NGD-mom, so Polyak leads
    NGD-mom iff ||W_mm|| > eta/(1 - mu) = 1, which holds on E1 and not on every ANT instance.
    The cap finding (spec P5, and the paper's own remark in Section 3.2): the capped Polyak
    is >= 2x ahead of NGD in excess loss at t = t_early and >= 2x behind it at the last
    checkpoint in alignment and loss (each at the rate ORDER_RATE over the instances); where it falls behind NGD in alignment is recorded.  So
    with a finite cap "Polyak faster" holds only for a horizon the cap allows (the figures'
    wording is about Polyak against NGD, which the uncapped run checks).
    Precondition: the instances meet Assumption 2 at a rate >= ASSUMPTION2_RATE (the binomial of
    `problems.assumption2_met`; calibration record); the orderings read the instances meeting it.
    Controls, each its own run: GD with the step frozen at NGD's first, eta/||grad L(W_0)||
    per seed (NGD without its normalization: "NGD >> GD" and the cap finding break), NGD-mom
    with eta = 0.01 (the same effective step as NGD: "momentum helps" breaks), GD with the step
    frozen at uncapped Polyak's first (Polyak without its adaptation: "Polyak faster than NGD"
    breaks).
    """


@claim(
    f"{PAPER}.fig2.fixed_decoder_optimizer_ordering",
    source="Figure 2 (Section 3.2, after Theorem 1 and on Polyak step-size; Appendix C)",
    statement="With a fixed decoder on Example-1 data, NGD converges significantly faster than GD, "
              "momentum speeds NGD up, and uncapped Polyak is faster than NGD in alignment with W_mm, "
              "loss and softmax saturation; a capped Polyak is faster only early.",
    provenance="stated",
    controls=FIXED_DECODER_CONTROLS,
    calibration=FIXED_DECODER_CALIBRATION,
    sizes={"quick": dict(E1_SIZES["quick"], steps=1000, t_early=10),
           "full": dict(E1_SIZES["full"], steps=20000, t_early=10)},
)
@documented(
    """Fig. 2: GD, NGD, NGD-mom and Polyak on Example 1 (E1-S quick: n=6, T=4, d=32; E1-L full:
    n=64, T=8, d=768; zeta = 3, least-squares decoder, Assumption 2 exact).""", FIXED_DECODER_DOC)
def test_fixed_decoder_optimizer_ordering(tc):
    fixed_decoder_figure(tc, "example1", "Fig. 2 (Example 1)")


@claim(
    f"{PAPER}.fig5.antipodal_ordering",
    source="Figure 5 (Appendix C: antipodal opt tokens, otherwise the Fig. 2 setting)",
    statement="With antipodal optimal tokens the Fig. 2 orderings persist (NGD significantly faster "
              "than GD, momentum helps, uncapped Polyak faster than NGD; capped Polyak faster only "
              "early) and every method's direction converges to W_mm.",
    provenance="stated",
    controls=FIXED_DECODER_CONTROLS,
    calibration=[
        *FIXED_DECODER_CALIBRATION,
        "The factor 1.25x of 'every method converges' (calibration block 9000-9024, validation 9100-9124): "
        "it replaced a zero-tolerance non-increase of log(1 - al) between every two checkpoints from t_early "
        "on (a shape read off the figure; failed by 0.002 on an unseen seed). 2x (FASTER) was tried first on "
        "the calibration block and failed on 3 of the first 8 seeds: capped Polyak's deficit falls only "
        "0.60-0.79 in log over [10, 1000] (seeds 9000-9009), the other methods 1.4-10; so the suite's "
        "smallest factor, 1.25x. Then one decision over all 25 (method, instance) pairs: calibration block "
        "9000-9024 no failure, least margin 0.063 (relative), 6.9 sd in the normal model; validation "
        "9100-9124 no failure, least margin 0.050, 5.6 sd; the table's row over 50 seeds put its normal "
        "tail at 9.5e-7.",
        Calibrated(
            decision=converging_name("capped Polyak"), threshold="1.25x on a fraction >= ORDER_RATE = 0.95 "
                                                                 "of the instances (level ORDER_ALPHA = 2e-4)",
            calibration_seeds="9000-9024", validation_seeds="134000-134049",
            how="the unseen sweep 1083702139-1083702158 at 4097fb7 failed the one decision over all 25 "
                "pairs on 1083702146 (capped Polyak on instance 2: its deficit fell 0.186 in log over "
                "[10, 1000], against log 1.25 = 0.223; GD on the same data set 0.232): the normal model of "
                "a least margin over 25 pairs had put that 6.7 sd out.  Directional convergence is an "
                "asymptotic statement, a finite window's decrease a property of the draw, so the figure's "
                "'every method converges' is decided per method as a rate over its 5 instances, the "
                "orderings' design (`check_ahead_rate`; rate and level theirs, nothing chosen on a seed; "
                "the factor 1.25x unchanged).  Calibration block 9000-9024 (the factor's): no pair "
                "failed, 125 of 125.  Validation 134000-134049 (the rule fixed; the table's row): every method "
                "converged on 250 of 250 instances, the claim passed 50 of 50 (bound 1.8e-6), the three "
                "controls failed as declared on 50 of 50 (miss bounds 1.4e-3)")],
    sizes={"quick": dict(n=6, T=4, d=32, steps=1000, t_early=10),
           "full": dict(n=64, T=8, d=768, steps=20000, t_early=10)},
)
@documented(
    """Fig. 5: the Fig. 2 methods on ANT (x_{i,opt} = y_i e_1 exactly, other tokens sigma P g,
    u = 3 e_1; quick n=6, T=4, d=32, full n=64, T=8, d=768).  The tokens are far from
    orthogonal (rho_perp recorded), so the near-orthogonality of Assumption 1 fails; the paper
    covers antipodal optimal tokens (spec 1.5).  In addition to Fig. 2's checks, "all methods
    converge to W_mm", per method (GD, NGD, NGD-mom, both Polyaks): an instance converges when
    its alignment deficit ``1 - al(W_t, W_mm)`` is at the last checkpoint at least 1.25x (the
    suite's smallest factor, SLIGHTLY_FASTER) below its value at t = t_early, or at the float64
    floor DEV_RESOLUTION; pass when the method's instances converge at a rate >= ORDER_RATE (the
    exact binomial test at level ORDER_ALPHA, the orderings' design: it rejects a method
    converging on at most 1 of its 5 instances).  Directional convergence is asymptotic, and a
    slow draw's decrease over a finite window is no counterexample to it (the calibration record
    has the unseen seed that showed one).  Capped Polyak is GD with the cap's step once the cap
    binds, and its deficit falls slowly over the window (its decrease: the calibration record),
    so a factor of 2 is not a bound the figure supports for it.
    Directional convergence says the deficit tends to 0, not that it falls between every two
    checkpoints (a step-by-step non-increase at tolerance 0 was a shape read off the figure and
    failed on an unseen seed); the statement decided is the decrease over the
    run's window, its threshold calibrated (record).""",
    FIXED_DECODER_DOC)
def test_antipodal_ordering(tc):
    runs, roles = fixed_decoder_figure(tc, "antipodal", "Fig. 5 (antipodal)")
    early = int(np.flatnonzero(runs.t == tc.sizes["t_early"])[0])
    deficits = {role: runs.series[roles[role]]["alignment deficit"][[early, -1]] for role in FIXED_DECODER_ROLES}
    tc.record("every method: log(1 - al(W_t, W_mm)) at t_early and at the end",
              np.concatenate(list(deficits.values()), axis=1))
    for role, (start, end) in deficits.items():
        converging = end <= np.maximum(start - np.log(SLIGHTLY_FASTER), np.log(DEV_RESOLUTION))
        check_instance_rate(tc, converging_name(role), converging,
                            "a method whose direction does not approach W_mm on most instances")


# ---------------------------------------------------------------- Fig. 3

JOINT_ROLES = same_name_roles("GD", "NGD", "joint NGD", "Polyak", capped=PAPER_POLYAK)
JOINT_CONTROL_ROLES = {"frozen_ngd_step": {"NGD": FROZEN_NGD},
                       "joint_ngd_small_step": {"joint NGD": "joint NGD (eta 0.01)"},
                       "polyak_cap_10": {"Polyak": "Polyak (cap 10)"}}


@claim(
    f"{PAPER}.fig3.joint_optimizer_ordering",
    source="Figure 3 (Section 5.1, joint training on the data model DM; Appendix C)",
    statement="Training (u, W) jointly on DM, NGD, joint NGD and uncapped Polyak beat GD in loss, "
              "u-alignment and softmax (in W-alignment NGD does); NGD (per-block "
              "normalization) and joint NGD reduce the loss at a similar rate while NGD is faster in "
              "the other metrics; uncapped Polyak is fastest in loss and u-alignment, but NGD leads it "
              "in W-alignment and softmax; a capped Polyak is fastest only early.",
    provenance="inferred",
    controls={
        "frozen_ngd_step": Control(
            "dynamics", breaks=[
                "NGD & joint NGD & Polyak ahead of GD by >= 2x in the median over seeds: loss, decades",
                "NGD ahead of capped Polyak by >= 2x in the median over seeds: loss, decades",
            ],
            description="GD with its step frozen at eta/||grad L(theta_0)|| (per-block NGD's first "
                        "step, then no normalization; its own run) as 'NGD': 'everything beats GD' "
                        "and 'capped Polyak loses to NGD late' must fail"),
        "joint_ngd_small_step": Control(
            "dynamics", breaks=[
                "similar loss rate: decrease of log L over [t_end / 10, t_end], NGD / joint NGD (median over seeds)",
            ],
            constants={"eta": 0.01, "eta_ratio": 10.0},
            description="joint NGD with eta = 0.01 (its own run): a 10x smaller step makes its "
                        "loss decrement about 10x smaller, so 'a similar rate' must fail"),
        "polyak_cap_10": Control(
            "dynamics", breaks=[
                "Polyak ahead of NGD & joint NGD & GD & capped Polyak by >= 2x in the median over seeds: "
                "loss, decades",
            ],
            constants={"cap": 10.0},
            description="Polyak capped at 10 (its own run) as 'Polyak': GD with step 10 once the "
                        "cap binds, so 'uncapped Polyak fastest in loss' must fail"),
    },
    calibration=[
        "the orderings moved from every one of 3 instances to the geometric mean over 8 (the "
        "figure as a statement over draws) after 2 of 10 unseen seeds failed; the factors were "
        "not changed, except NGD ahead of uncapped Polyak in W-alignment: 10x in the mean "
        "failed on validation seed 2006 (0.93 decades; margins 0.36-0.7 decades above 10x on "
        "1000-1013), so it is now 2x, the suite's plain 'leads' and the discrepancy's "
        "W-alignment factor -- a threshold moved after seeing a validation seed, so it was "
        "validated again on a fresh block (the record below)",
        "NGD ahead of Polyak in W-alignment by 2x (the suite's plain 'leads' factor, taken after "
        "the 10x of the first design failed on validation seed 2006) was confirmed on the fresh "
        "block 3000-3024 with the claim and its three controls, in the geometric mean",
        "the geometric mean over the instances failed on unseen seed 1982921646 (NGD ahead of joint "
        "NGD in u-alignment: -0.20 decades against 0.10): on 2 of its 8 instances per-block NGD had "
        "driven W to a non-optimal token selection (margin ratio -0.91 and -0.29, 1 - s_opt = 0.13, "
        "u-alignment deficit 0.3-0.5 where the other instances reach 3e-5); so the orderings read the "
        "median instance (`JOINT_TYPICAL`), factors unchanged (the record below)",
        Calibrated(
            decision="NGD ahead of joint NGD by >= 1.25x in the median over seeds: u alignment "
                     "deficit, decades",
            threshold="the factors 1.25x, 2x, 10x unchanged, read at the median of the K = 8 instances",
            calibration_seeds="3000-3024,168935948-168935967,630279474,630279476-630279483,"
                              "955297912-955297931,1400593500-1400593519,1982921628-1982921647",
            validation_seeds="50000-50049",
            how="the statistic, not a threshold, was chosen on the calibration block, from the "
                "per-instance decades its runs recorded (114 seeds, 912 instances): per-block NGD "
                "ended at a non-optimal token selection (margin ratio < 0.9) on 29 instances "
                "(0, 1 and 2 of 8 on 87, 25 and 2 seeds), uncapped Polyak on 6 and joint NGD on 5; "
                "in the geometric mean the t_end margins of the claim were skewed (Shapiro-Wilk "
                "p < 1e-10) with a failure on 1982921646 and a W-alignment margin down to -0.07, "
                "at the median every t_end margin is normal (p >= 0.15) at 26-520 sd, and the "
                "loss-rate ratio's at 6000 sd; the median over 8 moves only when 4 instances go "
                "elsewhere (about 7e-5 at 3.2% each); the validation block ran the claim, its "
                "three controls and the discrepancy afresh (rows in reports/calibration-quick.json)"),
        "the factors 1.25x, 2x, 10x were set on --tc-seed 0-19 at d = 64 with instances selected "
        "by their first step, and re-checked without selection at d = 128 on --tc-seed 1-5 before "
        "seed 0",
        "joint NGD and Polyak against GD in W-alignment were behind GD on a few instances at "
        "d = 64: recorded, not checked",
        "the frozen_ngd_step control was written after seeing seed 0 (not held out), then checked "
        "on --tc-seed 1-5",
    ],
    sizes={"quick": dict(DM_SIZES["quick"], steps=1000, t_early=10),
           "full": dict(DM_SIZES["full"], steps=5000, t_early=10)},
)
def test_joint_optimizer_ordering(tc):
    r"""Fig. 3: joint training from u_0 = 0, W_0 = 0 on DM (T = 2, optimal token at index 1 with
    norm ratio rho = 2; quick DM-S n=8, d=128 = 16n; full DM-L n=64, d=1024), on the first
    K = 8 DM instances of the joint claims (none selected by its outcome; Condition 1's parameters are the
    preconditions).  Methods (the reconstruction's steps): GD eta = 1 on theta; "NGD" =
    Eq. (13) without the time factor, eta = 0.1, each block normalized by its own gradient
    norm; "joint NGD" = Eq. (2), eta = 0.1, one joint norm; Polyak on theta with L_* = 0,
    uncapped and with the spec's cap 100.  Eq. (13) with eta = 1, alpha = 2/3 (Theorem 2's
    method) runs alongside for the theory curves only, and the controls' own settings run in
    arms of their own.  Quick tier: 1000 iterations (the spec's 3000 would triple the figure's
    cost); full tier: DM-L, 5000 iterations.

    Paper (Section 5.1): "all other algorithms are faster than GD, with Polyak step being the
    fastest ... the train loss converges at a similar rate for NGD and joint-NGD, while for the
    other metrics, NGD is slightly faster compared to joint-NGD."  "Polyak fastest" is
    contradicted at any cap (NGD leads every Polyak run in softmax and W-alignment): that is
    the discrepancy `vdt24.fig3.DISCREPANCY_polyak_fastest_as_written`; this claim is the
    corrected statement.  Error series (natural logs): loss log L (L_* = 0), alignment deficits
    1 - al(W_t, W_mm) and 1 - al(u_t, u_mm), and 1 - mean_i s_{i,opt}.  Factors: 1.25x for
    "slightly", 2x for "faster" (a visible gap on a log plot), 10x (a decade) for "much" (how
    they were set: the calibration record).  Pass, at the last checkpoint, at the median of the
    K instances (`JOINT_TYPICAL`; per-instance decades recorded): a statement about the typical
    draw -- decided one by one, an instance reversed an ordering on 2 of 10 unseen seeds, and a
    geometric mean is moved by decades by one instance whose W reached a non-optimal token
    selection.  The similar-rate check compares the median over the instances of the
    per-instance ratio:
      * everything beats GD: NGD, joint NGD and uncapped Polyak >= 2x ahead of GD in loss,
        u-alignment and softmax; in W-alignment NGD >= 2x.  Joint NGD and Polyak in
        W-alignment against GD are recorded, not checked (their joint step is dominated by
        grad_u, so W moves slowly);
      * similar loss rate: over [t_end/10, t_end] the decreases of log L of NGD and of joint
        NGD agree to 10%.  Both decrease log L by about eta t/||u_mm|| (the alpha = 0 case of
        Theorem 2's asymptotics); their curves are offset by a constant, so the decrement, not
        the value, is compared;
      * NGD faster than joint NGD in the other series: u-alignment >= 1.25x ("slightly", as
        the paper says); softmax >= 10x and W-alignment >= 10x -- far more than "slightly";
      * uncapped Polyak fastest in loss and u-alignment: >= 2x ahead of each other method.
        In softmax and W-alignment NGD leads it (>= 10x in softmax, >= 2x
        in W-alignment);
      * the cap finding: the capped Polyak (cap 100) is >= 2x ahead of NGD, joint NGD and GD in
        loss at t = t_early and >= 2x behind NGD at the last checkpoint (after a few
        iterations it is GD with step 100).
    Controls run their own settings: GD with the step frozen at per-block NGD's first,
    eta/||grad L(theta_0)|| per seed (NGD without its normalization: "everything beats GD" and
    the cap finding break), joint NGD with eta = 0.01, and Polyak capped at 10 as "Polyak".
    """
    t_early, t_end = tc.sizes["t_early"], tc.sizes["steps"]
    runs = joint_figure_runs(tc, JOINT_CONTROL_ROLES)
    roles = roles_for(tc, JOINT_ROLES, JOINT_CONTROL_ROLES)
    check_everything_beats_gd(tc, runs, roles, t_end)
    check_ngd_against_joint_ngd(tc, runs, roles, t_end)
    check_joint_polyak(tc, runs, roles, t_early, t_end)
    record_joint_run(tc, runs)
    if tc.control is None:
        plot_joint(tc, runs, [m.label for m in JOINT_METHODS])


DISCREPANCY_CONTROL_ROLES = {"frozen_ngd_step": {"NGD": FROZEN_NGD}}
POLYAK_RUNS = tuple(CAPS)
"""Every Polyak run of the Fig. 3 batch (caps 10, 100 and none): the refutation is checked
against each."""


@discrepancy(
    f"{PAPER}.fig3.DISCREPANCY_polyak_fastest_as_written",
    source="Figure 3 (Section 5.1); its step sizes, cap and horizon were lost (Appendix C), the "
           "spec reconstructs them",
    statement="Training (u, W) jointly on DM, the Polyak step is the fastest of GD, NGD, joint NGD "
              "and Polyak (in every metric of the figure).",
    corrected_by=f"{PAPER}.fig3.joint_optimizer_ordering",
    provenance="inferred",
    constants={"softmax_lead": MUCH_FASTER, "alignment_lead": FASTER},
    controls={
        "frozen_ngd_step": Control(
            "dynamics", breaks=[
                "NGD ahead of " + " & ".join(POLYAK_RUNS) + " by >= 10x in the median over seeds: "
                "1 - s_opt, decades",
                "NGD ahead of " + " & ".join(POLYAK_RUNS) + " by >= 2x in the median over seeds: "
                "W alignment deficit, decades",
            ],
            description="GD with its step frozen at eta/||grad L(theta_0)|| (per-block NGD's first "
                        "step, then no normalization; its own run) as 'NGD': the counterexample "
                        "rests on NGD's normalization and must disappear"),
    },
    calibration=[
        "the factors 10x (softmax) and 2x (W-alignment) are those of the figure claim's 'NGD "
        "leads uncapped Polyak' checks, set on --tc-seed 0-19 at d = 64 and re-checked at d = 128 "
        "on --tc-seed 1-5 before seed 0; their extension to the capped runs was checked on the "
        "default seed (not held out), then checked on --tc-seed 1-5",
        "decided at the median instance since the figure claim's orderings are (its calibration "
        "record: one instance whose W reached a non-optimal token selection moves a geometric "
        "mean by decades); factors unchanged; validated with it on 50000-50049",
    ],
    sizes={"quick": dict(DM_SIZES["quick"], steps=1000, t_early=10),
           "full": dict(DM_SIZES["full"], steps=5000, t_early=10)},
)
def test_polyak_fastest_as_written(tc):
    r"""The paper (Section 5.1): "all other algorithms are faster than GD, with Polyak step being
    the fastest".  Its experiments cap the Polyak step, eta_t = min{L/||grad L||^2, eta_max}
    (L_* = 0 in joint training), with a cap the copy lost.  The refutation does not depend on
    the cap: at the last checkpoint NGD (Eq. (13) without the time factor, eta = 0.1) is
    >= 10x ahead of every Polyak run of the batch -- uncapped, cap 100 (the spec's) and cap
    10 -- in 1 - mean_i s_opt, and >= 2x ahead of each in the W-alignment deficit, in the
    median of the K = 8 instances of the figure claim (`check_joint_ahead`).  Why a cap cannot
    rescue Polyak: a cap only shortens Polyak's steps, and
    even the uncapped step, which makes Polyak fastest in loss and u-alignment, leaves the
    softmax and W behind: Polyak's step is set by the loss, which the u block drives down,
    while NGD normalizes the W block on its own.  The counterexample under the spec's cap 100
    in the loss (NGD >= 2x ahead of the capped run at the end, since the capped step is GD
    with step 100 once the cap binds) is recorded with its decades, not decided: it rests on
    a cap the paper does not give.  How the loss depends on the cap is the plot "cap
    dependence", with the first checkpoint at which NGD leads each run recorded.  The
    corrected statement is `vdt24.fig3.joint_optimizer_ordering`.  Provenance inferred: the
    step sizes and horizon are the spec's reconstruction.
    """
    t_end = tc.sizes["steps"]
    runs = joint_figure_runs(tc, DISCREPANCY_CONTROL_ROLES)
    roles = roles_for(tc, {"NGD": "NGD", **{label: label for label in POLYAK_RUNS}}, DISCREPANCY_CONTROL_ROLES)
    check_joint_ahead(tc, runs, roles, ["NGD"], list(POLYAK_RUNS), "1 - s_opt", t_end, MUCH_FASTER)
    check_joint_ahead(tc, runs, roles, ["NGD"], list(POLYAK_RUNS), "W alignment deficit", t_end, FASTER)
    tc.record(f"NGD ahead of {PAPER_POLYAK} in the loss at t={t_end}, decades per seed (the spec's cap)",
              decades_ahead(runs, ["NGD"], [PAPER_POLYAK], "loss", t_end, roles))
    plot_cap_dependence(tc, runs)
