r"""vdt24, fixed decoder: directional convergence and rates of NGD, GD and Polyak.

Vasudeva, Deora, Thrampoulidis, "Implicit Bias and Fast Convergence Rates for
Self-attention", arXiv 2402.05738, Section 3 and Appendix A.  Only W is trained; u is the
decoder of the data set.  dev_t = 1 - <W_t/||W_t||, W_mm/||W_mm||> is the alignment
deficit with the W-SVM solution.
"""
import numpy as np

from theorycheck import Calibrated, Control, claim
from theorycheck.optim.directions import certificate_bound, unit

from .problems import (
    ASSUMPTION2_CALIBRATION,
    NGD_ETA,
    PAPER,
    WITHOUT_ASSUMPTION1,
    assumption2_then,
    e1_or_counterexample,
)
from .fixed_decoder import thm1_reference, thm1_runs


LAST_DEV_RATE = 0.95
"""The rate at which a data set's dev at the last step is within ``dev_max`` that Theorem 1's (a)
accepts (`LAST_DEV_CALIBRATION`)."""
LAST_DEV_ALPHA = 0.01
"""The level of (a)'s binomial: with 5 data sets and `LAST_DEV_RATE` it rejects at 3 or more beyond."""
LAST_DEV_LOW_POWER = ("5 data sets a seed (Example 1's TRIALS): the test "
                      "rejects only when 3 of 5 are beyond dev_max; the controls (constant-step GD, the "
                      "wrong reference, CE near W_alpha) leave every data set beyond, which it rejects")


def last_dev_decision(label: str) -> str:
    """The name of (a)'s decision for the start ``label``."""
    return f"{label}: dev at the last step <= dev_max (binomial over the data sets)"


LAST_DEV_CALIBRATION = Calibrated(
    decision=last_dev_decision("small random"),
    threshold=f"binomial at LAST_DEV_RATE = {LAST_DEV_RATE} (level {LAST_DEV_ALPHA}), every start; "
              "dev_max 1e-3 (the spec's) kept",
    calibration_seeds="92000-92049", validation_seeds="92100-92149",
    how="replaces 'dev at the last step <= dev_max' on every data set (an at_most whose margin is the "
        "least over the 5 data sets: 4.3e-4 on 72000-72049 from the log-normal tail at 7.8-9.2 sd after "
        "the normal model was rejected, 1.1e-4 on 56000-56049, 4.9e-5 on 92000-92049 where the normal "
        "model held, 3.5e-4 to 3.8e-4 each on 92100-92149, recomputed from the recorded devs, log-normal "
        "again: the bound moves with which model a block accepts). Rule stated before the "
        "calibration block (that of ASSUMPTION2_RATE and Theorem 6's DEV_RATE): LAST_DEV_RATE = the "
        "one-sided 99.9% Clopper-Pearson lower bound of the per-data-set rate on the calibration block, "
        "least over the three starts, rounded down to 0.05; level 0.01 (DEV_ALPHA's). Calibration block "
        "(main at 7abc554, the per-data-set devs of the old decision): 250 of 250 data sets within 1e-3 "
        "at t = 2000 for every start (largest dev 4.9e-4, 4.9e-4 and 6.1e-4 for the small random, "
        "opposite and large random starts): bound 0.973, so 0.95. Validation block (rate and level fixed "
        "before it): 250 of 250 data sets within for every start (largest dev 5.6e-4, 5.6e-4, 6.8e-4), no "
        "seed failing; each binomial 1.7e-5 (pooled trials), the claim 1.6e-4 (its seed-0 slope, normal "
        "at 5.0 sd, 8.9e-5 of it); the three controls failed as declared on 50 of 50 (1.7e-5 each, pooled "
        "trials: every data set beyond)")


@claim(
    f"{PAPER}.thm1.ngd_global_direction_rate",
    source="Theorem 1 (Theorem 5, Eq. (5), Remark 1)",
    statement="From any small initialization, normalized GD on W converges in direction to the "
              "W-SVM solution W_mm, with 1 - alignment = O(log t / t)."
              + WITHOUT_ASSUMPTION1,
    provenance="inferred",
    controls={
        "wrong_opt": Control(
            "reference", breaks=[last_dev_decision("small random")],
            description="the W-SVM solved for the wrong optimal set opt+1 mod T as the reference: "
                        "the run converges to W_mm, not to it"),
        "gd": Control(
            "dynamics", breaks=[last_dev_decision("small random")],
            description="constant-step GD (eta = 1) instead of NGD: its direction converges only "
                        "logarithmically, so dev stays above dev_max at every seed (its slope "
                        "stays above -1 too; that decision is seed 0's trial alone, so it is not "
                        "declared: the control must fail the decision made on every trial)"),
        "counterexample": Control(
            "hypothesis", breaks=[last_dev_decision("near W_alpha")],
            description="data violating Assumptions 1-2 (CE) started near the local direction "
                        "W_alpha: the run stays near W_alpha, away from W_mm"),
    },
    calibration=[ASSUMPTION2_CALIBRATION, LAST_DEV_CALIBRATION,
        "thresholds, checkpoints and t0 are the spec's; re-checked on base seeds 1-9 besides the "
        "default 0 (the seed sweep of the rework), not chosen on seed 0",
        "2026-11-29 (issue 31): the gd control declares only 'small random: dev at the last step' "
        "(then an at_most on every trial, since 2026-11-30 the binomial of LAST_DEV_CALIBRATION; "
        "seed 0's slope no longer declared). Block 72000-72049 "
        "(quick): gd's miss bound 3.9e-5 (normal tail, 5.2 sd; was 0.058, counted); the claim's "
        "row 4.3e-4 on this block (its three 'dev at the last step' decisions, log-normal at "
        "7.8-9.2 sd; unchanged decisions, 1.1e-4 on 56000-56049)",
    ],
    sizes={"quick": dict(steps=2000, checkpoints=[100, 200, 500, 1000, 2000], t0=300, dev_max=1e-3),
           "full": dict(steps=20000, checkpoints=[1000, 3000, 10000, 20000], t0=3000, dev_max=1e-4)},
)
def test_ngd_global_direction_rate(tc):
    r"""NGD: W_{t+1} = W_t - eta grad L(W_t)/||grad L(W_t)||_F, eta = 0.1, on Example 1
    (K = 5 seeds; W_0 = (0.01/sqrt d) G).  The paper proves 1 - al(W_t, W_mm) <= C log t / t
    for t >= t_0 with constants lost in the copy, so the claim tests shapes and a bound:

    (a) dev at the last step <= 1e-3 (quick, t = 2000) or 1e-4 (full, t = 20000) (the spec's
        thresholds), on a fraction >= `LAST_DEV_RATE` of the data sets (the exact one-sided
        binomial test at level `LAST_DEV_ALPHA`, one outcome per data set: with 5 it fails when 3
        or more are beyond).  The theorem's C log t / t has an instance-dependent C (lost in the
        copy), so a threshold at a finite t holds at a rate over the data sets, not on every one
        (the rate measured: `LAST_DEV_CALIBRATION`) -- a finding about the spec's threshold, as
        for Theorem 6;
    (b) c(t) = dev_t t / ln t does not grow by more than 10% between consecutive checkpoints
        and ends below where it starts -- i.e. dev decays at least as fast as log t / t.
        (The decay may be faster: the part of W_0 outside span{x_{i,t} x_{i,1}^T} never
        moves, so a slope test "== -1" would be wrong);
    (c) dev_t <= B(t)(1 + 1e-6) + 1e-12 for t in (t0, steps], B the certificate bound of
        `certificate_bound` (derived from NGD's update and Lemma 2 with eps = 0, assumed from
        t0 on: t0 = 300 quick / 3000 full, the spec's choice).  B can be nearly tight right
        after t0 (max dev/B is recorded), so the tolerance only absorbs round-off;
    (d) globality: (a)-(b) again from W_0 = -0.05 Wbar_mm (the opposite direction) and from
        a large random W_0 = (3/d) G;
    (e) the fitted slope of log dev vs log t over t >= 100 is <= -1.
    Precondition: the trials meet Assumption 2 at a rate >= ASSUMPTION2_RATE (the binomial of
    `problems.assumption2_trials`; the counterexample control violates it on every trial), and
    the conclusions read the trials meeting it.
    Thresholds, checkpoints and t0 are the spec's (calibration record).
    """
    sizes, eta = tc.sizes, NGD_ETA
    prob, met = assumption2_then(tc, lambda: e1_or_counterexample(tc))
    W_ref = thm1_reference(tc, prob)
    d = prob.X.shape[-1]
    starts = {
        "small random": prob.W0,
        "opposite of W_mm": -0.05 * unit(prob.W_mm),
        "large random": tc.tensor(3.0 / d * tc.rng("large init").standard_normal(tuple(prob.W0.shape))),
    }
    if tc.control == "counterexample":
        starts = {"near W_alpha": prob.W0}
    checkpoints = np.asarray(sizes["checkpoints"])
    t = np.arange(sizes["steps"] + 1)
    for s, (label, run) in enumerate(thm1_runs(tc, starts, W_ref).items()):
        run = run.restrict(met)
        dev = 1.0 - run["W_alignment"]                            # (steps+1, K)
        c = dev[checkpoints] * checkpoints[:, None] / np.log(checkpoints)[:, None]
        tc.conclusion.binomial(last_dev_decision(label), dev[-1] <= sizes["dev_max"], p=LAST_DEV_RATE,
                               alpha=LAST_DEV_ALPHA, low_power=LAST_DEV_LOW_POWER)
        tc.record(f"{label}: dev at the last step per data set", dev[-1])
        tc.conclusion.at_most(f"{label}: c(t_k+1)/c(t_k) at consecutive checkpoints",
                              (c[1:] / c[:-1]).max(), 1.1)
        tc.conclusion.at_most(f"{label}: c(last)/c(first)", (c[-1] / c[0]).max(), 1.0)
        tc.record(f"{label}: dev at checkpoints (mean over seeds)", dev[checkpoints].mean(1))
        tc.record(f"{label}: c(t) at checkpoints (seed 0)", c[:, 0])
        if s > 0:
            continue
        bound = certificate_bound(run["W_norm"], 1.0 - dev, eta, sizes["t0"])
        tc.conclusion.at_most("certificate: max over t > t0 of dev_t - B(t)(1 + 1e-6)",
                              (dev[sizes["t0"] + 1:] - bound * (1 + 1e-6)).max(), tc.tol("accumulated"))
        tc.record("max dev/B", (dev[sizes["t0"] + 1:] / bound).max())
        tc.conclusion.slope("slope of log dev vs log t over t >= 100 (seed 0)", t[1:], dev[1:, 0],
                            window=(100, sizes["steps"]), at_most=-1.0)
        tc.curve("dev", "1 - al(W_t, W_mm), seed 0", t[1:], dev[1:, 0], xscale="log",
                 yscale="log", ylabel="alignment deficit",
                 title="Theorem 1: NGD direction vs W_mm (seed 0)")
        tc.curve("dev", "certificate B(t)", t[sizes["t0"] + 1:], bound[:, 0], style="bound",
                 xscale="log", yscale="log")
        tc.curve("dev", "c(t_first) log t / t", t[2:], c[0, 0] * np.log(t[2:]) / t[2:],
                 style="theory", xscale="log", yscale="log")
